"""Sites are workers: with an active distributed Client, one site per worker (sorted by address)."""
from __future__ import annotations

from dataclasses import dataclass

from .. import config


@dataclass(frozen=True)
class Sites:
    count: int
    workers: tuple | None  # worker address per site, or None (local schedulers: no pins)
    memory_limit: int | None
    client: object = None

    def site_of(self, address) -> int:
        return self.workers.index(address)


def active_client():
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def current_sites(sites=None) -> Sites:
    """Sites for planning now: an explicit count, else the active Client's workers, else config."""
    limit = config.get("memory_limit")
    if sites is not None:
        return Sites(int(sites), None, limit)
    client = active_client()
    if client is not None and client.status == "running":
        info = client.scheduler_info(n_workers=-1)["workers"]
        if info:
            workers = tuple(sorted(info))
            if limit is None:
                limits = [w.get("memory_limit") or 0 for w in info.values()]
                limit = min(limits) if all(limits) else None
            return Sites(len(workers), workers, limit, client)
    return Sites(int(config.get("sites")), None, limit)

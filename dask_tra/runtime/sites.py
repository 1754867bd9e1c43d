"""Sites are workers: with an active distributed Client, one site per worker (sorted by address);
without one, the local schedulers' one site (nothing moves between threads), or the count set in
``config`` (``sites``)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import config


@dataclass(frozen=True)
class Sites:
    count: int
    workers: tuple | None  # worker address per site, or None (local schedulers: no pins)
    memory_limit: int | None
    client: object = None
    threads: int = 0  # the most tasks a worker runs at once (its thread count); 0: unknown
    local: str = ""  # the local plan: the scheduler that runs it ("threaded scheduler"); "": sites were asked for

    def site_of(self, address) -> int:
        if self.workers is None:
            raise ValueError(f"no site is a worker ({self.local or 'no Client'}): {address!r} is not one")
        return self.workers.index(address)


def active_client():
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def in_event_loop(client) -> bool:
    """True inside the client's event loop (e.g. ``wait``/``progress`` asking for futures),
    where blocking scheduler queries are impossible; plans made there skip placement lookups."""
    import asyncio

    try:
        return asyncio.get_running_loop() is client.loop.asyncio_loop
    except RuntimeError:
        return False


def local_scheduler() -> str:
    """The local scheduler that runs a graph computed now, in words: dask's ``scheduler`` setting,
    else the threaded scheduler (a RelArray's default, as dask.array's)."""
    import dask

    name = dask.config.get("scheduler", None)
    if name is None or name in ("threads", "threading"):
        return "threaded scheduler"
    if name in ("sync", "synchronous", "single-threaded"):
        return "synchronous scheduler"
    if name in ("processes", "multiprocessing"):
        return "processes scheduler"
    return "local scheduler"


def current_sites(sites=None, backends=("numpy",), info=None) -> Sites:
    """Sites for planning now: an explicit count, else the active Client's workers (``info``:
    their info when already fetched, ``backends.cluster.workers_info``), else the count set in config,
    else one site: the local plan (nothing moves between a local scheduler's threads).

    For GPU chunks (``backends`` holds "cupy", or a CUDA ``device`` is configured) the sites are
    the workers with a GPU resource, and the per-site limit is the smaller of host and GPU memory.
    """
    from ..backends import cluster as gpu

    limit = config.get("memory_limit")
    device, glimit = config.get("device"), config.get("gpu_memory_limit")
    if sites is not None:
        return Sites(int(sites), None, gpu.site_memory_limit(limit, backends, None, glimit, device))
    client = active_client()
    if client is not None and client.status == "running":
        if info is None:
            info = gpu.workers_info(client)
        if info and gpu.uses_device_memory(backends, device):
            info = {a: info[a] for a in gpu.gpu_workers(client, info)} or info
        if info:
            workers = tuple(sorted(info))
            if limit is None:
                limit = min((w.get("memory_limit") or 0 for w in info.values() if w.get("memory_limit")), default=None)
            limit = gpu.site_memory_limit(limit, backends, client, glimit, device, info)
            threads = max((w.get("nthreads") or 0 for w in info.values()), default=0)
            return Sites(len(workers), workers, limit, client, threads)
    limit = gpu.site_memory_limit(limit, backends, None, glimit, device)
    count = config.get("sites")
    if count is None:
        return Sites(1, None, limit, local=local_scheduler())
    return Sites(int(count), None, limit)

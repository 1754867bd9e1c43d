"""Measuring what a computation moved between workers, next to what its plan predicted."""
from __future__ import annotations

import time

_ACTIVE: list = []


def register(explain, computed=False):
    """Called when a RelArray's graph is built (and again, ``computed``, when its result is
    gathered by compute): measures open now report its plan once."""
    for m in _ACTIVE:
        if all(e is not explain for e in m.explains):
            m.explains.append(explain)
        if computed and all(e is not explain for e in m.computed):
            m.computed.append(explain)


def unregister_computed(explain):
    """Persisting also asks for the compute finalizer; it gathers nothing, so drop its gather."""
    for m in _ACTIVE:
        m.computed = [e for e in m.computed if e is not explain]


class measure:
    """``with measure() as m: x.compute()`` then ``m.bytes_moved`` (worker-to-worker bytes,
    from the workers' incoming transfer logs) and ``m.predicted_bytes`` (the plans built
    inside, plus, for arrays computed, dask's gathering of the result blocks on one worker).

    Each RelArray's ``explain()`` shows the measured bytes too when it was the only plan
    computed in the block.
    """

    def __init__(self, client=None):
        self.client = client
        self.explains = []
        self.computed = []
        self.bytes_moved = None
        self.complete = True

    @property
    def predicted_bytes(self) -> int:
        return sum(e.predicted_bytes for e in self.explains) + sum(e.gather_bytes for e in self.computed)

    def __enter__(self):
        if self.client is None:
            from distributed import default_client
            self.client = default_client()
        self.workers = set(self.client.scheduler_info(n_workers=-1)["workers"])
        self.t0 = self.client.run(_now)
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        _ACTIVE.remove(self)
        rows = self.client.run(_incoming_since, self.t0, sorted(self.workers))
        self.bytes_moved = sum(r[0] for r in rows.values())
        self.complete = all(r[1] for r in rows.values())
        if len(self.explains) == 1:
            self.explains[0].measured_bytes = self.bytes_moved
        return False

    def __repr__(self):
        return f"measure(bytes_moved={self.bytes_moved}, predicted_bytes={self.predicted_bytes})"


def _now(dask_worker):
    return time.time() + dask_worker.scheduler_delay


def _incoming_since(t0s, workers, dask_worker):
    """(bytes received from other workers since t0, whether the bounded log still reaches t0)."""
    t0 = t0s[dask_worker.address]
    log = dask_worker.transfer_incoming_log
    total = sum(e["total"] for e in log if e["start"] >= t0 and e["who"] in workers
                and e["who"] != dask_worker.address)
    complete = len(log) < log.maxlen or (log and log[0]["start"] < t0)
    return total, complete


__all__ = ["measure", "register"]

"""Measuring what a computation moved between workers, next to what its plan predicted."""

from __future__ import annotations

import time

_ACTIVE: list = []


def register(explain, computed=False, owner=None, outputs=()):
    """Called when a RelArray's graph is built (and again, ``computed``, when its result is
    gathered by compute): measures open now report its plan once. ``owner`` names the
    collection: dask asks a collection for its graph several times per compute, and if the
    cluster changed in between (a replica dropped, a worker gone) it plans again; only the
    last graph runs, so its report replaces the owner's earlier one. ``outputs``: the key names
    of the collection's result blocks (named after the array: they are a plan's too)."""
    for m in _ACTIVE:
        m.outputs.update(outputs)
        if owner is not None and not computed:
            earlier = m.owned.get(owner)
            if earlier is not None and earlier is not explain:
                m.explains = [e for e in m.explains if e is not earlier]
                m.computed = [e for e in m.computed if e is not earlier]
            m.owned[owner] = explain
        if all(e is not explain for e in m.explains):
            m.explains.append(explain)
        if computed and all(e is not explain for e in m.computed):
            m.computed.append(explain)


def register_reads(keys):
    """Keys a plan reads that it did not make (inputs read by key): their transfers are plan bytes."""
    for m in _ACTIVE:
        m.reads.update(keys)


def unregister_computed(explain):
    """Persisting also asks for the compute finalizer; it gathers nothing, so drop its gather."""
    for m in _ACTIVE:
        m.computed = [e for e in m.computed if e is not explain]


class measure:
    """``with measure() as m: x.compute()`` then ``m.bytes_moved`` (worker-to-worker bytes,
    from the workers' incoming transfer logs) and ``m.predicted_bytes`` (the plans built
    inside, plus, for arrays computed, dask's gathering of the result blocks on one worker).

    ``m.other_bytes`` is the part of ``bytes_moved`` that carried keys no plan made (names that
    are not a plan task's, ``emit.is_plan_name``, nor the computed arrays' result blocks): transfers inside a
    wrapped dask.array's own graph (e.g.
    ``da.from_array``'s one key holding the whole array, sent to every worker that cuts a
    block, or a lazy block behind further work, made once and fetched by a second site that
    reads it) or other work running at the same time. ``m.plan_bytes`` is the rest: what the
    plans moved, the number ``predicted_bytes`` predicts.

    ``m.seconds``: the block's wall time. Each RelArray's ``explain()`` shows the measured bytes
    and time too when it was the only plan computed in the block.
    """

    def __init__(self, client=None):
        self.client = client
        self.explains = []
        self.computed = []
        self.owned = {}  # collection name -> the report of its last graph
        self.bytes_moved = None
        self.other_bytes = None
        self.seconds = None
        self.reads = set()
        self.outputs = set()  # names of result blocks' keys (a plan's, though named after the array)
        self.complete = True

    @property
    def predicted_bytes(self) -> int:
        return sum(e.predicted_bytes for e in self.explains) + sum(e.gather_bytes for e in self.computed)

    def __enter__(self):
        if self.client is None:
            from distributed import default_client

            self.client = default_client()
        self.workers = set(self.client.scheduler_info(n_workers=-1)["workers"])
        # Planning never calibrates (``dask.rates``): no task but the block's own runs inside it.
        # A ``dask_tra.calibrate()`` called inside counts in ``other_bytes`` (its keys are no plan's).
        self.marks = self.client.run(_log_mark)
        _ACTIVE.append(self)
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.started
        _ACTIVE.remove(self)
        # only the workers measured at the start (a worker that joined meanwhile has no mark;
        # one that left has taken its log with it: the measurement is then incomplete)
        alive = set(self.client.scheduler_info(n_workers=-1)["workers"])
        rows = self.client.run(
            _incoming_since,
            self.marks,
            sorted(self.workers),
            self.reads,
            sorted(self.outputs),
            workers=sorted(alive & set(self.marks)),
            on_error="return",
        )
        rows = {w: r for w, r in rows.items() if isinstance(r, tuple)}
        self.bytes_moved = sum(r[0] for r in rows.values())
        self.other_bytes = sum(r[2] for r in rows.values())
        self.complete = all(r[1] for r in rows.values()) and set(rows) == set(self.marks)
        if len(self.explains) == 1:
            self.explains[0].measured_bytes = self.bytes_moved
            self.explains[0].measured_seconds = self.seconds
            self.explains[0].measured_gather = any(e is self.explains[0] for e in self.computed)
        return False

    @property
    def plan_bytes(self):
        return None if self.bytes_moved is None else self.bytes_moved - self.other_bytes

    def __repr__(self):
        return (
            f"measure(bytes_moved={self.bytes_moved}, predicted_bytes={self.predicted_bytes}, "
            f"other_bytes={self.other_bytes})"
        )


def _log_mark(dask_worker):
    """The newest entry of the worker's incoming transfer log (its id; None if empty). Entries
    after it are this measurement's: marking by position, not by clock, since the workers'
    clock offsets (``scheduler_delay``) drift under load."""
    log = dask_worker.transfer_incoming_log
    return id(log[-1]) if log else None


def _incoming_since(marks, workers, reads, outputs, dask_worker):
    """(bytes received from other workers since the mark, whether the bounded log still holds
    the mark, the part of those bytes carrying keys that are not a plan's)."""
    mark = marks[dask_worker.address]
    entries = list(dask_worker.transfer_incoming_log)
    since = 0
    if mark is not None:
        since = next((i + 1 for i in range(len(entries) - 1, -1, -1) if id(entries[i]) == mark), 0)
    complete = mark is None and len(entries) < dask_worker.transfer_incoming_log.maxlen or since > 0
    total = other = 0
    outputs = set(outputs)
    for e in entries[since:]:
        if e["who"] in workers and e["who"] != dask_worker.address:
            total += e["total"]
            theirs = sum(n for k, n in e["keys"].items() if not _is_plan_key(k, outputs) and k not in reads)
            other += round(e["total"] * theirs / max(sum(e["keys"].values()), 1))
    return total, complete, other


def _is_plan_key(key, outputs) -> bool:
    """A plan's task (named by ``emit``: ``is_plan_name``), a result block, or a block dask_tra
    placed itself (``tra-scattered-…``)."""
    from .dask.emit import is_plan_name

    name = key[0] if isinstance(key, tuple) else key
    return isinstance(name, str) and (is_plan_name(name) or name.startswith("tra-") or name in outputs)


__all__ = ["measure", "register"]

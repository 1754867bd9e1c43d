"""Measuring what a computation moved between workers, next to what its plan predicted."""

from __future__ import annotations

import time
import warnings

from .backends.cluster import workers_info

_ACTIVE: list = []
READ_TRIES = 3  # reads of a worker's transfer log before ``measure`` gives up on it (and warns)


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
    """Measure what a block of work moved between workers, next to what its plans predicted.

    ``with measure() as m: x.compute()``, then ``m.bytes_moved`` (worker-to-worker bytes,
    from the workers' incoming transfer logs) and ``m.predicted_bytes`` (the plans built
    inside, plus, for arrays computed, dask's gathering of the result blocks on one worker).

    ``m.other_bytes`` is the part of ``bytes_moved`` that carried keys no plan made (names that
    are not a plan task's, ``emit.is_plan_name``, nor the computed arrays' result blocks):
    transfers inside a wrapped dask.array's own graph (e.g. ``da.from_array``'s one key holding
    the whole array, sent to every worker that cuts a block, or a lazy block behind further
    work, made once and fetched by a second site that reads it) or other work running at the
    same time. ``m.plan_bytes`` is the rest: what the plans moved, the number
    ``predicted_bytes`` predicts.

    ``m.complete`` is False when ``bytes_moved`` counts only part of the block's transfers: a
    worker's log could not be read (after ``READ_TRIES`` tries), a worker left, or a worker's
    bounded log (``distributed.admin.low-level-log-length``) no longer reaches back to the
    block's start; a ``RuntimeWarning`` then says which.

    ``m.seconds``: the block's wall time. Each RelArray's ``explain()`` shows the measured bytes
    and time too when it was the only plan computed in the block.

    ``measure(memory=True)`` measures memory too (the worker plugin of ``runtime/memory.py``,
    installed by the first such measure): ``m.memory`` is, per worker, its peak managed memory
    (``peak_bytes``: task results held in RAM), its peak process memory and that peak above the
    process memory it had when the block began (``process_bytes_above_start``: what the block's
    tasks added, temporaries inside a task included), and bytes spilled; ``m.peak_memory`` and
    ``m.process_memory`` the busiest worker's two peaks (the latter above its start), next to
    ``m.predicted_peak_memory``, the busiest site's peak of the plans built inside (the
    largest). The prediction is an upper bound of what the plan's tasks hold at once, made
    inside tasks or held between them; managed memory sees only what is held between tasks, so
    ``process_memory`` is the number to compare it with (``docs/reliability.md``).

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster measured; default ``distributed.default_client()`` (a Client is needed).
    memory : bool, optional
        Measure the workers' peak memory too (default False).

    See Also
    --------
    dask_tra.RelArray.explain

    Examples
    --------
    >>> from distributed import Client  # doctest: +SKIP
    >>> from dask_tra.diagnostics import measure  # doctest: +SKIP
    >>> client = Client(n_workers=4)  # doctest: +SKIP
    >>> x = da.random.random((4000, 4000), chunks=1000)  # doctest: +SKIP
    >>> with measure() as m:  # doctest: +SKIP
    ...     (x @ x.T).sum().compute()
    >>> print(m)  # doctest: +SKIP
    measure(bytes_moved=..., predicted_bytes=..., other_bytes=...)
    """

    def __init__(self, client=None, memory=False):
        self.client = client
        self.measure_memory = memory
        self.memory = None  # per worker, with ``memory=True``: its peaks (``runtime/memory.py: peaks``)
        self.peak_memory = self.process_memory = None
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
        self.workers = set(workers_info(self.client))
        # Planning never calibrates (``dask.rates``): no task but the block's own runs inside it.
        # A ``dask_tra.calibrate()`` called inside counts in ``other_bytes`` (its keys are no plan's).
        self.marks = self.client.run(_log_mark)
        if self.measure_memory:
            from .runtime import memory

            self.memory_start = memory.reset(self.client)
        _ACTIVE.append(self)
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.started
        _ACTIVE.remove(self)
        # only the workers measured at the start (a worker that joined meanwhile has no mark;
        # one that left has taken its log with it: the measurement is then incomplete)
        alive = set(workers_info(self.client))
        rows, failed = {}, {}
        asked = sorted(alive & set(self.marks))
        for _ in range(READ_TRIES):  # a read that failed (a busy worker's comm) is asked again
            got = self.client.run(
                _incoming_since,
                self.marks,
                sorted(self.workers),
                self.reads,
                sorted(self.outputs),
                workers=asked,
                on_error="return",
            )
            rows.update((w, r) for w, r in got.items() if isinstance(r, tuple))
            failed = {w: r for w, r in got.items() if not isinstance(r, tuple)}
            asked = sorted(failed)
            if not asked:
                break
        self.bytes_moved = sum(r[0] for r in rows.values())
        self.other_bytes = sum(r[2] for r in rows.values())
        self.complete = all(r[1] for r in rows.values()) and set(rows) == set(self.marks)
        if not self.complete:
            warnings.warn(self._undercount(rows, failed), RuntimeWarning, stacklevel=2)
        if self.measure_memory:
            self._read_memory()
        if len(self.explains) == 1:
            self.explains[0].measured_bytes = self.bytes_moved
            self.explains[0].measured_seconds = self.seconds
            self.explains[0].measured_gather = any(e is self.explains[0] for e in self.computed)
        return False

    def _undercount(self, rows, failed) -> str:
        """Why ``bytes_moved`` counts less than the block moved (``complete`` is False)."""
        why = [f"worker {w} could not be read ({type(e).__name__}: {e})" for w, e in sorted(failed.items())]
        why += [f"worker {w} left during the block" for w in sorted(set(self.marks) - set(rows) - set(failed))]
        overrun = sorted(w for w, r in rows.items() if not r[1])
        if overrun:
            why.append(
                f"the transfer log of {', '.join(overrun)} no longer reaches back to the block's start "
                "(raise distributed.admin.low-level-log-length)"
            )
        return f"measure(): bytes_moved counts only part of what moved: {'; '.join(why)}"

    def _read_memory(self):
        from .runtime import memory

        rows = memory.peaks(self.client)
        for w, r in rows.items():
            start = (self.memory_start.get(w) or {}).get("peak_process_bytes")
            peak = r.get("peak_process_bytes")
            r["process_bytes_above_start"] = None if start is None or peak is None else max(0, peak - start)
        self.memory = rows
        self.peak_memory = max((r["peak_bytes"] for r in rows.values()), default=None)
        above = [r["process_bytes_above_start"] for r in rows.values() if r["process_bytes_above_start"] is not None]
        self.process_memory = max(above, default=None)

    @property
    def predicted_peak_memory(self):
        """The busiest site's predicted peak over the plans built inside (None without a plan)."""
        peaks = [max(e.predicted_peak_memory.values(), default=0) for e in self.explains]
        return max(peaks, default=None)

    @property
    def plan_bytes(self):
        return None if self.bytes_moved is None else self.bytes_moved - self.other_bytes

    def __repr__(self):
        memory = ""
        if self.memory is not None:
            memory = (
                f", peak_memory={self.peak_memory}, process_memory={self.process_memory}, "
                f"predicted_peak_memory={self.predicted_peak_memory}"
            )
        return (
            f"measure(bytes_moved={self.bytes_moved}, predicted_bytes={self.predicted_bytes}, "
            f"other_bytes={self.other_bytes}{memory})"
        )


def _log_mark(dask_worker):
    """The newest entry of the worker's incoming transfer log (its id; None if empty). Entries
    after it are this measurement's: marking by position, not by clock, since the workers'
    clock offsets (``scheduler_delay``) drift under load."""
    from .runtime import compat

    log = compat.transfer_incoming_log(dask_worker)
    return id(log[-1]) if log else None


def _incoming_since(marks, workers, reads, outputs, dask_worker):
    """(bytes received from other workers since the mark, whether the bounded log still holds
    the mark, the part of those bytes carrying keys that are not a plan's)."""
    from .runtime import compat

    mark = marks[dask_worker.address]
    log = compat.transfer_incoming_log(dask_worker)
    entries = list(log)
    since = 0
    if mark is not None:
        since = next((i + 1 for i in range(len(entries) - 1, -1, -1) if id(entries[i]) == mark), 0)
    complete = mark is None and len(entries) < log.maxlen or since > 0
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
    from .runtime.emit import is_plan_name

    name = key[0] if isinstance(key, tuple) else key
    return isinstance(name, str) and (is_plan_name(name) or name.startswith("tra-") or name in outputs)


__all__ = ["measure", "register"]

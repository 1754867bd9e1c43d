"""Spilling that keeps pace with dask_tra's tasks on a worker with a memory limit.

distributed spills by *process* memory only on its memory monitor's tick
(``distributed.worker.memory.monitor-interval``, 100 ms): above the ``spill`` fraction of the
limit it evicts the oldest results to disk until the process is under the ``target`` fraction;
at ``pause`` it stops starting tasks, and the nanny restarts the worker at ``terminate``
(95%). Its spill buffer evicts on its own only by *managed* bytes (results' ``sizeof``, at
``target``), which leaves out what the process holds besides results: a worker that has
imported NumPy, dask and dask_tra holds about 190 MiB, half of a 400 MB limit.

dask_tra pins its tasks (``allow_other_workers=False``), so the scheduler hands a worker its
whole share at once and its threads make blocks back to back. Between two ticks the threads
can finish several blocks: persisting a 3.2 GB ``random.uniform`` on two 400 MB workers (32 MB
blocks) reached the terminate threshold in some runs, the nanny restarted the worker, and the
run finished only after the lost blocks were computed again elsewhere (``faults.py``).

``SpillAsMade``, a worker plugin installed with the scheduler plugin (``session.install``),
does at the end of each of dask_tra's tasks what the monitor does at its next tick: if the
process is above the spill threshold, it evicts results (the spill buffer's own ``evict``, oldest
first) until the process is under the target or nothing is left in memory to evict. The
thresholds are the worker's own. The process memory is read (``psutil``, on the worker's event
loop) only when the last reading, plus the results' managed bytes stored since, comes within 10%
of the spill threshold, or is older than 100 ms: a task end well under the threshold costs no
read. A worker without a memory limit, with spilling disabled
(``spill: False``) or without a spill buffer is left alone, and so are other clients' tasks:
their ends trigger nothing (the monitor still acts for them as before). Then a worker's process
memory, at the end of any dask_tra task, is at most the spill threshold (or what it holds
besides results), plus the blocks of the tasks still running (memory the process takes besides
results is seen at the next read, within 100 ms, as the monitor would see it).
"""

from __future__ import annotations

import time

from distributed.diagnostics.plugin import WorkerPlugin

from . import compat
from .ownership import ANNOTATION

NAME = "dask-tra-spill"


class SpillAsMade(WorkerPlugin):
    """Evict results to disk at the end of dask_tra's tasks, as distributed's memory monitor
    would at its next tick (see the module doc)."""

    name = NAME
    idempotent = True  # one per worker, whichever client registers it first

    def setup(self, worker):
        self.worker = worker
        self.evicted = 0  # results this plugin spilled (for tests and diagnostics)
        self.bytes = 0  # their managed bytes
        self.reads = 0  # process memory reads (for tests: most task ends need none)
        self._read: tuple[float, int, int] | None = None  # (when, process memory, managed bytes) last read

    def transition(self, key, start, finish, **kwargs):
        if start != "executing" or finish != "memory":
            return
        if compat.worker_task_annotations(self.worker, key).get(ANNOTATION) is not True:
            return
        self.spill()

    def spill(self) -> int:
        """Evict results while the process is above the target, once it is above the spill
        threshold; returns the number evicted."""
        limit, spill, target = compat.worker_spill_thresholds(self.worker)
        data = self.worker.data
        if not limit or spill is False or not hasattr(data, "evict") or not hasattr(data, "fast"):
            return 0
        if self._clearly_below(limit * spill, data):
            return 0
        memory = self._memory(data)
        if memory <= limit * spill:
            return 0
        floor = limit * (target or spill)
        n = 0
        while memory > floor and data.fast:
            weight = data.evict()
            if weight == -1:  # could not evict (pickling error, disk full, max-spill reached)
                break
            n += 1
            self.bytes += weight
            memory = self._memory(data)
        self.evicted += n
        return n

    def _memory(self, data) -> int:
        """The process memory, read now (``psutil``: a read of ``/proc`` on the worker's event
        loop, tens of microseconds), with the managed bytes it was read at."""
        memory = compat.worker_process_memory(self.worker)
        self._read = (time.monotonic(), memory, _managed(data))
        self.reads += 1
        return memory

    def _clearly_below(self, threshold: float, data) -> bool:
        """Whether the process is still well under ``threshold`` by the last read, recent enough,
        plus the results stored since (their managed bytes): most task ends then read nothing."""
        if self._read is None:
            return False
        when, memory, managed = self._read
        if time.monotonic() - when > REREAD_S:
            return False
        return memory + max(0, _managed(data) - managed) < MARGIN * threshold


REREAD_S = 0.1  # the process memory is read again at least this often (the memory monitor's tick)
MARGIN = 0.9  # and whenever the estimate reaches this fraction of the spill threshold


def _managed(data) -> int:
    """The managed bytes of the results held in memory (the spill buffer's fast store)."""
    return int(getattr(data.fast, "total_weight", 0))


def install(client) -> None:
    """Register ``SpillAsMade`` on the client's cluster (workers that join later get it too)."""
    client.register_plugin(SpillAsMade(), name=NAME)


__all__ = ["NAME", "SpillAsMade", "install"]

"""Per-worker peaks of managed memory and bytes spilled, for any tasks (dask_tra's or not).

``reset(client)`` opens a window on every worker; ``peaks(client)`` reads it::

    memory.reset(client)
    x.sum().compute()
    memory.peaks(client)  # {address: {"peak_bytes": ..., "spilled_bytes": ..., ...}}

The numbers come from a worker plugin, ``MemoryPeaks`` (name ``dask-tra-memory``), registered
by the first ``reset``/``peaks`` on a client and never as a side effect of building or
running a graph. Registration is idempotent (``idempotent = True``: a second registration, from
any client, keeps the first), and workers that join later get it from the scheduler.

What is measured, per worker (all from the worker's own state, read on the worker's event loop
at every task transition, so a peak that lasts one transition is seen):

- ``peak_bytes``: the most *managed memory* held in RAM at once: the ``sizeof`` of task results
  the worker keeps (computed or fetched from other workers), the fast part of its
  ``SpillBuffer`` (``worker.data.fast.total_weight``), or, for a worker without a spill buffer
  (no memory limit), ``worker.state.nbytes``. A result being computed is not managed memory
  until its task ends, nor is what a task allocates while running.
- ``spilled_bytes``: bytes written to disk by the spill buffer in the window (pickled size,
  ``SpillBuffer.cumulative_metrics["disk-write", "bytes"]``).
- ``peak_spilled_bytes``: the most bytes on disk at once (``sizeof`` of the spilled values,
  ``SpillBuffer.spilled_total.memory``).
- ``peak_managed_bytes``: the most managed memory, in RAM or spilled (``worker.state.nbytes``).
- ``peak_process_bytes``: the most resident memory of the worker process: on Linux the kernel's
  own high-water mark (``VmHWM`` in ``/proc/self/status``, reset at the window's start by writing
  5 to ``/proc/self/clear_refs``), so a peak inside a task is never missed; elsewhere sampled at
  transitions at most every ``RSS_INTERVAL_S`` (None where psutil is missing). Unmanaged memory
  (allocator caches, a task's temporaries) shows here only. In-process workers share one
  process: each reports the process's peak.
- ``transitions``: transitions seen in the window.

Between transitions (a long task), a periodic callback samples the process's memory every
``SAMPLE_S``. A window starts at ``reset``: the peaks restart from what the worker holds then. A
worker that joined after the reset reports from when it joined. So that a worker that dies (a
``KilledWorker``: the nanny ends a process over its memory limit) does not take its peaks with
it, each worker sends its window's numbers to the scheduler's event log (topic ``NAME``) when
they rise, at most every ``PUBLISH_S``; ``peaks`` reports the last numbers of a worker no longer
there, marked ``"lost": True``.
"""

from __future__ import annotations

import time
import uuid

from distributed.diagnostics.plugin import WorkerPlugin

from . import compat

NAME = "dask-tra-memory"
RSS_INTERVAL_S = 0.01  # the process's resident memory is read at most this often at transitions
SAMPLE_S = 0.1  # between transitions, the periodic callback's period
PUBLISH_S = 0.25  # the numbers go to the scheduler's event log at most this often, when they rose
CALLBACK = "dask-tra-memory-sample"  # the worker's periodic callback


class MemoryPeaks(WorkerPlugin):
    name = NAME
    idempotent = True  # one per worker, whichever client registers it first

    def setup(self, worker):
        self.worker = worker
        try:
            import psutil

            self._proc = psutil.Process()
        except Exception:  # psutil missing or unusable: no process peak
            self._proc = None
        self.window = None
        self.published = None  # the numbers last sent to the scheduler
        self.publish_time = 0.0
        self.reset()
        from tornado.ioloop import PeriodicCallback

        pc = PeriodicCallback(self.tick, SAMPLE_S * 1000)
        compat.worker_periodic_callbacks(worker)[CALLBACK] = pc
        pc.start()

    def teardown(self, worker):
        pc = compat.worker_periodic_callbacks(worker).pop(CALLBACK, None)
        if pc is not None:
            pc.stop()

    # -- what the worker holds now ------------------------------------------------------

    def _fast(self) -> int:
        data = self.worker.data
        fast = getattr(data, "fast", None)
        weight = getattr(fast, "total_weight", None)
        if isinstance(weight, (int, float)):
            return int(weight)
        return compat.worker_nbytes(self.worker)

    def _spill_written(self) -> float:
        metrics = getattr(self.worker.data, "cumulative_metrics", None)
        return float(metrics.get(("disk-write", "bytes"), 0.0)) if metrics is not None else 0.0

    def _on_disk(self) -> int:
        total = getattr(self.worker.data, "spilled_total", None)
        return int(getattr(total, "memory", 0) or 0)

    def _hwm(self) -> int | None:
        """The process's peak resident memory since the window began (Linux), or None."""
        if not self.hwm:
            return None
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    def _rss(self) -> int | None:
        if self._proc is None:
            return None
        try:
            return int(self._proc.memory_info().rss)
        except Exception:
            return None

    # -- the window ---------------------------------------------------------------------

    def reset(self, window=None) -> dict:
        """Start a window (named ``window``): every peak restarts from what the worker holds now."""
        self.window = window
        self.published = None
        self.started = time.time()
        self.spill_mark = self._spill_written()
        self.peak_bytes = self._fast()
        self.peak_managed = compat.worker_nbytes(self.worker)
        self.peak_on_disk = self._on_disk()
        try:  # reset the kernel's high-water mark of resident memory (Linux)
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.hwm = True
        except OSError:
            self.hwm = False
        self.peak_rss = self._rss()
        self.rss_read = time.monotonic()
        self.transitions = 0
        return self.report()

    def sample(self) -> None:
        fast = self._fast()
        if fast > self.peak_bytes:
            self.peak_bytes = fast
        managed = compat.worker_nbytes(self.worker)
        if managed > self.peak_managed:
            self.peak_managed = int(managed)
        if fast < managed:  # something is spilled
            on_disk = self._on_disk()
            if on_disk > self.peak_on_disk:
                self.peak_on_disk = on_disk
        hwm = self._hwm()
        if hwm is not None and (self.peak_rss is None or hwm > self.peak_rss):
            self.peak_rss = hwm
        if self._proc is not None:
            now = time.monotonic()
            if now - self.rss_read >= RSS_INTERVAL_S:
                self.rss_read = now
                rss = self._rss()
                if rss is not None and (self.peak_rss is None or rss > self.peak_rss):
                    self.peak_rss = rss

    def transition(self, key, start, finish, *args, **kwargs):
        self.transitions += 1
        self.sample()
        self.publish()

    def tick(self) -> None:
        self.rss_read = 0.0  # read the process's memory now
        self.sample()
        self.publish()

    def publish(self) -> None:
        """Send the window's peaks to the scheduler's event log if they rose since last sent
        (and ``PUBLISH_S`` has passed): what is left of a worker that dies."""
        if self.window is None:
            return
        now = time.monotonic()
        if now - self.publish_time < PUBLISH_S:
            return
        peaks = (self.peak_bytes, self.peak_managed, self.peak_on_disk, self.peak_rss, self._spill_written())
        if peaks == self.published:
            return
        self.published, self.publish_time = peaks, now
        try:
            self.worker.log_event(NAME, {"window": self.window, "worker": self.worker.address, **self.report(False)})
        except Exception:  # a closing worker: nothing to keep
            pass

    def report(self, sample=True) -> dict:
        if sample:
            self.sample()
        return {
            "peak_bytes": int(self.peak_bytes),
            "spilled_bytes": int(round(self._spill_written() - self.spill_mark)),
            "peak_spilled_bytes": int(self.peak_on_disk),
            "peak_managed_bytes": int(self.peak_managed),
            "peak_process_bytes": self.peak_rss,
            "memory_limit": getattr(getattr(self.worker, "memory_manager", None), "memory_limit", None),
            "transitions": self.transitions,
            "seconds": time.time() - self.started,
        }


def ensure_installed(client) -> None:
    """Register ``MemoryPeaks`` on the client's cluster (once per client; on a cluster that has
    it already, from any client, registering again changes nothing)."""
    if getattr(client, "_dask_tra_memory_plugin", None) == client.scheduler.address:
        return
    client.register_plugin(MemoryPeaks(), name=NAME)
    client._dask_tra_memory_plugin = client.scheduler.address


def _reset(window, dask_worker):
    plugin = dask_worker.plugins.get(NAME)
    return None if plugin is None else plugin.reset(window)


def _report(dask_worker):
    plugin = dask_worker.plugins.get(NAME)
    return None if plugin is None else plugin.report()


def reset(client, workers=None) -> dict:
    """Start a window on every worker (or ``workers``): the peaks restart from what each holds
    now. Returns each worker's numbers at the start ({address: row}, as ``peaks``): what it held
    then, e.g. its process memory, the baseline of a measurement."""
    ensure_installed(client)
    client._dask_tra_memory_window = window = uuid.uuid4().hex
    rows = client.run(_reset, window, workers=workers, on_error="return")
    return {w: r for w, r in rows.items() if isinstance(r, dict)}


def peaks(client, workers=None) -> dict:
    """{worker address: {"peak_bytes", "spilled_bytes", "peak_spilled_bytes", "peak_managed_bytes",
    "peak_process_bytes", "memory_limit", "transitions", "seconds"}} since each worker's window
    started (``reset``, or the plugin's registration). Workers that cannot answer are left out;
    a worker that died since this client's last ``reset`` is there with the last numbers it
    sent (``"lost": True``; with ``workers``, only if named)."""
    ensure_installed(client)
    rows = client.run(_report, workers=workers, on_error="return")
    out = {w: r for w, r in rows.items() if isinstance(r, dict)}
    window = getattr(client, "_dask_tra_memory_window", None)
    if window is not None:
        lost = {}
        for _, msg in client.get_events(NAME):  # in order: a worker's last numbers win
            if isinstance(msg, dict) and msg.get("window") == window:
                lost[msg.get("worker")] = {k: v for k, v in msg.items() if k not in ("window", "worker")}
        for w, r in lost.items():
            if w not in rows and (workers is None or w in workers):
                out[w] = {**r, "lost": True}
    return out


def busiest(rows: dict) -> dict:
    """The max over workers of each number in ``peaks``' rows (spilled bytes: the sum)."""
    if not rows:
        return {"peak_bytes": None, "spilled_bytes": None, "peak_process_bytes": None}
    out = {k: max(r[k] for r in rows.values()) for k in ("peak_bytes", "peak_managed_bytes", "peak_spilled_bytes")}
    out["spilled_bytes"] = sum(r["spilled_bytes"] for r in rows.values())
    rss = [r["peak_process_bytes"] for r in rows.values() if r.get("peak_process_bytes") is not None]
    out["peak_process_bytes"] = max(rss) if rss else None
    return out


__all__ = ["MemoryPeaks", "NAME", "busiest", "ensure_installed", "peaks", "reset"]

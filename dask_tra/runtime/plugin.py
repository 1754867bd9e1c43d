"""The one scheduler plugin dask_tra installs on a cluster, and the client's calls into it.

``DaskTraPlugin`` (registered once per scheduler, whichever client comes first; later
registrations are no-ops) does four things, the first three only for dask_tra's own tasks
(``ownership.py``):

- replaces the active memory manager's ``ReduceReplicas`` with ``amm.KeepPinnedReplicas``,
  which suggests exactly what ``ReduceReplicas`` does for every key dask_tra's tasks do not
  read;
- releases dask_tra's pins from a worker that left (``faults.py``);
- answers planning's placement query (``dask_tra_snapshot``, a request/reply handler; read
  only, or holding the replicas it reports for the plan about to run) and
  the one-way hold of scattered replicas (``dask_tra_hold``, a stream handler);
- keeps the cluster's calibrated rates (``dask_tra_rates``, a request/reply handler: one
  entry, the latest ``dask_tra.calibrate``'s, replaced by the next), so that every client of
  the cluster plans with them; the placement query's reply carries them too (``rates.py``).

Handlers validate what they are sent: a bad query or rates gets an error reply, a bad hold message is
logged and dropped (a stream handler that raised would close the sender's stream). The hold
table is bounded and purged on a timer and when a client leaves. Nothing of ``Scheduler`` or
``Client`` is replaced: the plugin uses distributed's hooks and handler tables only.
``docs/reliability.md`` lists what stays on a cluster.
"""

from __future__ import annotations

import logging
import math
import statistics
import time

from distributed.diagnostics.plugin import SchedulerPlugin
from tornado.ioloop import PeriodicCallback

from . import amm, compat, faults
from .amm import HOLD_S, Holds, KeepPinnedReplicas, bad_keys

NAME = "dask-tra"
SNAPSHOT_OP = "dask_tra_snapshot"  # client -> scheduler, request/reply
HOLD_OP = "dask_tra_hold"  # client -> scheduler, one-way on the client's stream
RATES_OP = "dask_tra_rates"  # client -> scheduler, request/reply: read or store calibrated rates
MAX_WORKERS = 100_000  # the most worker addresses a stored calibration names
PURGE = "dask-tra-purge-holds"  # the scheduler's periodic callback
MEASURED = ("bandwidth", "task_overhead", "flop_rate")  # what a calibration measures

logger = logging.getLogger("distributed.scheduler.dask_tra")  # in the scheduler's own log


class DaskTraPlugin(SchedulerPlugin):
    name = NAME
    idempotent = True  # one per scheduler, whichever client registers it

    def __init__(self, hold_s: float = HOLD_S):
        self.hold_s = hold_s

    def start(self, scheduler):
        compat.require(scheduler, "scheduler")  # a distributed without a hook: a clear error, here
        self.scheduler = scheduler
        self.holds = Holds(self.hold_s)
        self.calibration = None  # {"rates", "workers", "time"}: the latest calibration stored
        self.generation = 0  # how many calibrations were stored
        compat.handlers(scheduler)[SNAPSHOT_OP] = self.handle_snapshot
        compat.handlers(scheduler)[RATES_OP] = self.handle_rates
        compat.stream_handlers(scheduler)[HOLD_OP] = self.handle_hold
        purge = PeriodicCallback(self.holds.purge, max(self.hold_s / 3, 0.05) * 1000)
        compat.periodic_callbacks(scheduler)[PURGE] = purge
        purge.start()
        compat.replace_policy(scheduler, amm.ReduceReplicas, lambda: KeepPinnedReplicas(self.holds))

    def handle_snapshot(self, keys=(), hold=True, **unexpected):
        """The placement query's reply; with ``hold`` the replicas it reports are held for the
        plan about to run, without it a read that changes nothing (``read_snapshot``'s, at
        the cost of a handler call rather than a function sent to run)."""
        problem = _bad_message(keys, unexpected) or (None if isinstance(hold, bool) else "hold must be a bool")
        if problem is not None:
            return {"error": problem}
        return {**amm.snapshot(self.scheduler, self.holds if hold else None, keys), "rates": self.rates_reply()}

    def handle_rates(self, store=None, workers=(), **unexpected):
        """No arguments: the rates reply. ``store`` (a dict of measured rates, ``MEASURED``)
        and ``workers`` (the addresses it measured): replace the stored calibration."""
        if unexpected:
            return {"error": f"unexpected arguments {sorted(unexpected)}"}
        if store is None:
            return self.rates_reply()
        problem = valid_rates(store) or (None if store else "no rates to store") or _bad_workers(workers)
        if problem is not None:
            return {"error": problem}
        self.calibration = {"rates": {k: float(v) for k, v in store.items()}, "workers": sorted(workers)}
        self.calibration["time"] = time.time()
        self.generation += 1
        return self.rates_reply()

    def rates_reply(self) -> dict:
        """What this cluster knows of the time objective's rates (``rates_reply``)."""
        return rates_reply(self.scheduler, self.calibration, self.generation)

    def handle_hold(self, keys=(), client=None, **unexpected):
        problem = _bad_message(keys, unexpected)
        if problem is not None:
            logger.warning("dask_tra: ignored a %s message from client %s: %s", HOLD_OP, client, problem)
            return
        skipped = self.holds.hold(keys, client)
        if skipped:
            logger.warning("dask_tra: %d replica holds over the bound of %d were not kept", skipped, amm.MAX_KEYS)

    def update_graph(self, scheduler, *, keys, tasks=(), **kwargs):
        faults.unpin_orphans(scheduler, tasks)

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "forgotten":
            self.holds.forget(key)

    def remove_worker(self, scheduler, worker, **kwargs):
        faults.repin_after_loss(scheduler, worker)

    def remove_client(self, scheduler, client):
        self.holds.drop_client(client)

    async def close(self):
        purge = compat.periodic_callbacks(self.scheduler).pop(PURGE, None)
        if purge is not None:
            purge.stop()


def valid_rates(rates) -> str | None:
    """What is wrong with a dict of measured rates (None: nothing): names among ``MEASURED``,
    values positive finite numbers."""
    if not isinstance(rates, dict):
        return f"rates must be a dict, not {type(rates).__name__}"
    for k, v in rates.items():
        if k not in MEASURED:
            return f"unknown rate {k!r}; known: {list(MEASURED)}"
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            return f"rate {k!r} must be a positive finite number, not {v!r}"
    return None


def _bad_message(keys, unexpected: dict) -> str | None:
    return bad_keys(keys) or (f"unexpected arguments {sorted(unexpected)}" if unexpected else None)


def _bad_workers(workers) -> str | None:
    if not isinstance(workers, (list, tuple)) or len(workers) > MAX_WORKERS:
        return f"workers must be a list of at most {MAX_WORKERS} addresses"
    if not all(isinstance(w, str) and len(w) <= 1000 for w in workers):
        return "workers must be address strings"
    return None


def rates_reply(scheduler, calibration: dict | None, generation: int) -> dict:
    """On the scheduler: what the cluster knows of the time objective's rates: the latest
    calibration (None if none; ``generation`` counts this scheduler's calibrations, ``scheduler``
    is its id), and the scheduler's own bandwidth estimate (None until workers measured a
    transfer of over 1 MB): the median over worker pairs of ``Scheduler.bandwidth_workers``."""
    pairs = [float(v) for v in compat.bandwidth_workers(scheduler).values() if v > 0]
    c = calibration or {}
    return {
        "scheduler": scheduler.id,
        "generation": generation,
        "calibrated": c.get("rates"),
        "workers": c.get("workers"),
        "time": c.get("time"),
        "bandwidth": statistics.median(pairs) if pairs else None,
    }


def _installed(scheduler):
    """The scheduler's dask_tra plugin, or None (nothing installed: a pure read answers)."""
    plugin = scheduler.plugins.get(NAME)
    return plugin if hasattr(plugin, "rates_reply") else None


def read_snapshot(keys=(), dask_scheduler=None) -> dict:
    """Run on the scheduler (``Client.run_on_scheduler``): the placement query's reply, read
    only. Nothing is installed, held or changed: what planning reads on a cluster where
    dask_tra installed nothing, or outside ``compute``/``persist``."""
    problem = bad_keys(keys)
    if problem is not None:
        return {"error": problem}
    plugin = _installed(dask_scheduler)
    rates = rates_reply(dask_scheduler, None, 0) if plugin is None else plugin.rates_reply()
    return {**amm.snapshot(dask_scheduler, None, keys), "rates": rates}


def read_rates(dask_scheduler=None) -> dict:
    """Run on the scheduler: the rates reply, read only (``read_snapshot``)."""
    plugin = _installed(dask_scheduler)
    return rates_reply(dask_scheduler, None, 0) if plugin is None else plugin.rates_reply()

"""The one scheduler plugin dask_tra installs on a cluster, and the client's calls into it.

``DaskTraPlugin`` (registered once per scheduler, whichever client comes first; later
registrations are no-ops) does three things, each only for dask_tra's own tasks
(``ownership.py``):

- replaces the active memory manager's ``ReduceReplicas`` with ``amm.KeepPinnedReplicas``,
  which suggests exactly what ``ReduceReplicas`` does for every key dask_tra's tasks do not
  read;
- releases dask_tra's pins from a worker that left (``faults.py``);
- answers planning's placement query (``dask_tra_snapshot``, a request/reply handler) and
  the one-way hold of scattered replicas (``dask_tra_hold``, a stream handler).

Handlers validate what they are sent: a bad query gets an error reply, a bad hold message is
logged and dropped (a stream handler that raised would close the sender's stream). The hold
table is bounded and purged on a timer and when a client leaves. Nothing of ``Scheduler`` or
``Client`` is replaced: the plugin uses distributed's hooks and handler tables only.
``docs/reliability.md`` lists what stays on a cluster.
"""

from __future__ import annotations

import logging

from distributed.diagnostics.plugin import SchedulerPlugin
from tornado.ioloop import PeriodicCallback

from . import amm, faults
from .amm import HOLD_S, Holds, KeepPinnedReplicas, bad_keys

NAME = "dask-tra"
SNAPSHOT_OP = "dask_tra_snapshot"  # client -> scheduler, request/reply
HOLD_OP = "dask_tra_hold"  # client -> scheduler, one-way on the client's stream
PURGE = "dask-tra-purge-holds"  # the scheduler's periodic callback

logger = logging.getLogger("distributed.scheduler.dask_tra")  # in the scheduler's own log


class DaskTraPlugin(SchedulerPlugin):
    name = NAME
    idempotent = True  # one per scheduler, whichever client registers it

    def __init__(self, hold_s: float = HOLD_S):
        self.hold_s = hold_s

    def start(self, scheduler):
        self.scheduler = scheduler
        self.holds = Holds(self.hold_s)
        scheduler.handlers[SNAPSHOT_OP] = self.handle_snapshot
        scheduler.stream_handlers[HOLD_OP] = self.handle_hold
        purge = PeriodicCallback(self.holds.purge, max(self.hold_s / 3, 0.05) * 1000)
        scheduler.periodic_callbacks[PURGE] = purge
        purge.start()
        policies = getattr(scheduler.extensions.get("amm"), "policies", ())
        for policy in [p for p in policies if type(p) is amm.ReduceReplicas]:
            scheduler.extensions["amm"].policies.discard(policy)
            scheduler.extensions["amm"].add_policy(KeepPinnedReplicas(self.holds))

    def handle_snapshot(self, keys=(), **unexpected):
        problem = bad_keys(keys) or (f"unexpected arguments {sorted(unexpected)}" if unexpected else None)
        if problem is not None:
            return {"error": problem}
        return amm.snapshot(self.scheduler, self.holds, keys)

    def handle_hold(self, keys=(), client=None, **unexpected):
        problem = bad_keys(keys) or (f"unexpected arguments {sorted(unexpected)}" if unexpected else None)
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
        purge = self.scheduler.periodic_callbacks.pop(PURGE, None)
        if purge is not None:
            purge.stop()


def ensure_installed(client):
    """Register the plugin on the client's scheduler (once per client; the scheduler keeps
    the first registration of any client)."""
    if getattr(client, "_dask_tra_plugin", None) == client.scheduler.address:
        return
    client.register_plugin(DaskTraPlugin(), name=NAME)
    client._dask_tra_plugin = client.scheduler.address


def query_snapshot(client, keys) -> tuple:
    """(workers' info, {key: [worker, ...]} for ``keys`` in memory, [keys being computed]) from
    the client's scheduler in one round trip; the replicas reported are held for planning."""
    ensure_installed(client)
    out = client.sync(getattr(client.scheduler, SNAPSHOT_OP), keys=list(keys))
    if "error" in out:
        raise ValueError(f"dask_tra's scheduler plugin refused the placement query: {out['error']}")
    return out["workers"], out["who_has"], out["computing"]


def send_hold(client, keys) -> None:
    """Ask the scheduler (one-way) to hold ``keys``' replicas for ``HOLD_S`` seconds."""
    if keys:
        ensure_installed(client)
        client._send_to_scheduler({"op": HOLD_OP, "keys": list(keys)})

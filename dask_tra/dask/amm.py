"""Dask's active memory manager, taught to keep the replicas a plan's pinned tasks will read.

A plan's move is a dependency: the consumer pinned at the destination reads the origin's key,
and dask copies it there, leaving one replica per worker that reads it. distributed's default
policy, ``ReduceReplicas``, keeps as many replicas as a key has waiting dependents and drops
the rest from the workers with the most memory. A pinned dependent still waiting for its other
inputs is not yet "processing" on its worker, so the replica there may go, and dask fetches
it again when the dependent runs: bytes the plan never predicted.

``KeepPinnedReplicas`` is ``ReduceReplicas`` except that a replica on a worker where a waiting
dependent is pinned (``allow_other_workers=False``) is never dropped. Keys without pinned
dependents (a dask.array's) are treated as ``ReduceReplicas`` treats them.
"""

from __future__ import annotations

from distributed.active_memory_manager import ReduceReplicas, Suggestion
from distributed.diagnostics.plugin import SchedulerPlugin

NAME = "dask-tra-keep-pinned-replicas"


class KeepPinnedReplicas(ReduceReplicas):
    """Drop a key's replicas beyond its waiting dependents' needs, never one a pinned
    dependent will read."""

    def run(self):
        workers = self.manager.scheduler.workers
        for ts in self.manager.scheduler.replicated_tasks:
            needed, unplaced = set(), 0  # workers a waiter reads on; waiters with no worker yet
            for waiter in ts.waiters or ():
                if waiter.processing_on is not None:
                    needed.add(waiter.processing_on)
                elif waiter.worker_restrictions and not waiter.loose_restrictions:
                    needed.update(workers[a] for a in waiter.worker_restrictions if a in workers)
                else:
                    unplaced += 1
            ndrop = len(ts.who_has) - max(1, len(needed & ts.who_has) + unplaced)
            if ts in self.manager.pending:
                pending_repl, pending_drop = self.manager.pending[ts]
                ndrop += len(pending_repl) - len(pending_drop)
            candidates = ts.who_has - needed
            for _ in range(min(ndrop, len(candidates))):
                yield Suggestion("drop", ts, candidates)


class UseKeepPinnedReplicas(SchedulerPlugin):
    """Scheduler plugin: replace the active memory manager's ``ReduceReplicas`` policies."""

    name = NAME
    idempotent = True  # one replacement per scheduler, whichever client registers it

    def start(self, scheduler):
        amm = scheduler.extensions.get("amm")
        if amm is None:
            return
        for policy in [p for p in amm.policies if type(p) is ReduceReplicas]:
            amm.policies.discard(policy)
            amm.add_policy(KeepPinnedReplicas())


def ensure_installed(client):
    """Install the policy on the client's scheduler once."""
    if getattr(client, "_dask_tra_amm", False):
        return
    client.register_plugin(UseKeepPinnedReplicas(), name=NAME)
    client._dask_tra_amm = True

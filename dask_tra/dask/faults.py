"""Worker loss: pins are strict while their worker lives, and released when it dies.

Tasks are pinned with ``allow_other_workers=False`` so that work stealing cannot move
them (loose pins are stealable). A pinned task whose worker died would wait forever, so
this scheduler plugin, on ``remove_worker``, drops the dead worker from every task's
restrictions; tasks left with none may run anywhere, and those already stuck in
``no-worker`` are rescheduled. Dask recomputes lost chunks from lineage as usual, so the
result stays correct; only the lost worker's share of the plan runs elsewhere.

A graph planned before a worker left may reach the scheduler after it left: on
``update_graph`` its tasks pinned only to workers that are gone are released the same way
(before the scheduler first places them). Workers that join meanwhile simply get no task
of that graph; the next plan uses them.
"""

from __future__ import annotations

from distributed.diagnostics.plugin import SchedulerPlugin

NAME = "dask-tra-repin-on-worker-loss"


class RepinOnWorkerLoss(SchedulerPlugin):
    name = NAME

    def remove_worker(self, scheduler, worker, **kwargs):
        stuck = {}
        for ts in scheduler.tasks.values():
            if ts.worker_restrictions and worker in ts.worker_restrictions:
                ts.worker_restrictions = ts.worker_restrictions - {worker}
                if not ts.worker_restrictions:
                    ts.worker_restrictions = None
                    ts.loose_restrictions = True
                if ts.state == "no-worker":
                    stuck[ts.key] = "processing"
        if stuck:
            scheduler.transitions(stuck, stimulus_id=f"dask-tra-repin-{worker}")

    def update_graph(self, scheduler, *, tasks, **kwargs):
        live = scheduler.workers
        for key in tasks:
            ts = scheduler.tasks.get(key)
            if ts is not None and ts.worker_restrictions and not any(w in live for w in ts.worker_restrictions):
                ts.worker_restrictions = None
                ts.loose_restrictions = True


def ensure_installed(client):
    """Register the plugin on the client's scheduler once."""
    if getattr(client, "_dask_tra_repin", False):
        return
    client.register_plugin(RepinOnWorkerLoss(), name=NAME)
    client._dask_tra_repin = True

"""Worker loss: dask_tra's pins are strict while their worker lives, and released when it dies.

dask_tra pins its tasks with ``allow_other_workers=False`` so that work stealing cannot move
them (loose pins are stealable). A pinned task whose worker died would wait forever, so on
``remove_worker`` the plugin (``plugin.py``) drops the dead worker from the restrictions of
dask_tra's tasks (``ownership.py``); those left with none may run anywhere, and those already
stuck in ``no-worker`` are rescheduled. Dask recomputes lost chunks from lineage as usual, so
the result stays correct; only the lost worker's share of the plan runs elsewhere. Other
clients' tasks keep their restrictions exactly as they were.

A graph planned before a worker left may reach the scheduler after it left: on
``update_graph`` dask_tra's tasks pinned only to workers that are gone are released the same
way (before the scheduler first places them). Workers that join meanwhile simply get no task
of that graph; the next plan uses them.
"""

from __future__ import annotations

from . import compat
from .ownership import is_ours


def repin_after_loss(scheduler, worker: str):
    """dask_tra's tasks pinned to ``worker`` (gone) lose that pin; stuck ones are rescheduled."""
    stuck = {}
    for ts in scheduler.tasks.values():
        if ts.worker_restrictions and worker in ts.worker_restrictions and is_ours(ts):
            ts.worker_restrictions = ts.worker_restrictions - {worker}
            if not ts.worker_restrictions:
                ts.worker_restrictions = None
                ts.loose_restrictions = True
            if ts.state == "no-worker":
                stuck[ts.key] = "processing"
    if stuck:
        compat.transitions(scheduler, stuck, stimulus_id=f"dask-tra-repin-{worker}")


def unpin_orphans(scheduler, keys):
    """dask_tra's new tasks pinned only to workers that are gone may run anywhere."""
    live = scheduler.workers
    for key in keys:
        ts = scheduler.tasks.get(key)
        if ts is not None and ts.worker_restrictions and is_ours(ts):
            if not any(w in live for w in ts.worker_restrictions):
                ts.worker_restrictions = None
                ts.loose_restrictions = True

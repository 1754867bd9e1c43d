"""Every private distributed API dask_tra uses, each behind one function here.

distributed is pinned from below only, and these attributes are not part of its public API:
a new release may rename or drop one. Each hook is named in ``HOOKS`` (where it lives, and
what dask_tra needs it for) and read through ``_get``, which turns a missing attribute into a
``MissingHook`` error naming the installed distributed version and the one the hooks were
checked against (``CHECKED``). ``missing(obj, owner)`` lists the hooks an object lacks;
``require`` raises for them all at once: the scheduler plugin calls it when it starts, and
``install`` on the client, so a cluster whose distributed lacks a hook says so before any plan
runs. ``tests/test_compat.py`` reads every hook on a live scheduler, worker and client.

The public APIs dask_tra uses (``Client.register_plugin``, ``run_on_scheduler``, ``scatter``,
``who_has``, ``SchedulerPlugin``/``WorkerPlugin`` hooks, ``Scheduler.plugins``, the task state
fields the scheduler documents, the active memory manager's policy interface) are used
directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

CHECKED = "2026.8.0"  # the distributed release every hook below was read from


class MissingHook(RuntimeError):
    """A private distributed API dask_tra needs is not there (another distributed release)."""


@dataclass(frozen=True)
class Hook:
    owner: str  # "scheduler", "worker" or "client"
    what: str  # the attribute, as distributed spells it
    why: str  # what dask_tra needs it for
    get: Callable  # owner -> the attribute (AttributeError, KeyError or TypeError when missing)


def _amm(scheduler):
    ext = scheduler.extensions["amm"]
    _ = (ext.policies, ext.add_policy)  # both are needed
    return ext


HOOKS: dict[str, Hook] = {
    "handlers": Hook(
        "scheduler",
        "Scheduler.handlers",
        "the plugin's request/reply handlers (placement query, calibrated rates)",
        lambda s: s.handlers,
    ),
    "stream_handlers": Hook(
        "scheduler",
        "Scheduler.stream_handlers",
        "the plugin's one-way hold of replicas about to be scattered",
        lambda s: s.stream_handlers,
    ),
    "periodic_callbacks": Hook(
        "scheduler",
        "Scheduler.periodic_callbacks",
        "the plugin's timer purging expired holds",
        lambda s: s.periodic_callbacks,
    ),
    "amm": Hook(
        "scheduler",
        'Scheduler.extensions["amm"].policies and .add_policy',
        "replacing the memory manager's ReduceReplicas with KeepPinnedReplicas",
        _amm,
    ),
    "replicated_tasks": Hook(
        "scheduler",
        "Scheduler.replicated_tasks",
        "KeepPinnedReplicas: the keys with more than one replica",
        lambda s: s.replicated_tasks,
    ),
    "bandwidth_workers": Hook(
        "scheduler",
        "Scheduler.bandwidth_workers",
        "the scheduler's measured bandwidth, a planning rate",
        lambda s: s.bandwidth_workers,
    ),
    "transitions": Hook(
        "scheduler",
        "Scheduler.transitions",
        "rescheduling dask_tra's tasks stuck on a worker that left",
        lambda s: s.transitions,
    ),
    "send_to_scheduler": Hook(
        "client",
        "Client._send_to_scheduler",
        "the one-way hold of replicas about to be scattered",
        lambda c: c._send_to_scheduler,
    ),
    "client_futures": Hook(
        "client",
        "Client.futures",
        "whether a result is still held by live futures (read, not planned again)",
        lambda c: c.futures,
    ),
    "worker_periodic_callbacks": Hook(
        "worker",
        "Worker.periodic_callbacks",
        "the memory-peaks plugin's sampling timer",
        lambda w: w.periodic_callbacks,
    ),
    "worker_nbytes": Hook(
        "worker",
        "Worker.state.nbytes",
        "the memory-peaks plugin: managed memory held by the worker",
        lambda w: w.state.nbytes,
    ),
    "worker_memory_manager": Hook(
        "worker",
        "Worker.memory_manager (memory_limit, memory_spill_fraction, memory_target_fraction)",
        "spilling as dask_tra's tasks end: the worker's own thresholds",
        lambda w: (
            w.memory_manager.memory_limit,
            w.memory_manager.memory_spill_fraction,
            w.memory_manager.memory_target_fraction,
        ),
    ),
    "worker_process_memory": Hook(
        "worker",
        "Worker.monitor.get_process_memory",
        "spilling as dask_tra's tasks end: the process memory the thresholds apply to",
        lambda w: w.monitor.get_process_memory,
    ),
    "worker_task_annotations": Hook(
        "worker",
        "Worker.state.tasks[key].annotations",
        "spilling as dask_tra's tasks end: which tasks are dask_tra's",
        lambda w: w.state.tasks,
    ),
    "transfer_incoming_log": Hook(
        "worker",
        "Worker.transfer_incoming_log",
        "diagnostics.measure(): the bytes each worker received from the others",
        lambda w: w.transfer_incoming_log,
    ),
}


def distributed_version() -> str:
    try:
        import distributed
    except ImportError:  # pragma: no cover
        return "(not installed)"
    return str(getattr(distributed, "__version__", "(unknown)"))


def _message(names) -> str:
    what = "; ".join(f"{HOOKS[n].what} ({HOOKS[n].why})" for n in names)
    return (
        f"dask_tra needs distributed's private {what}, which distributed {distributed_version()} "
        f"does not have. dask_tra's hooks into distributed were checked against distributed {CHECKED}: "
        f"install that release, or report this with both versions (dask_tra/runtime/compat.py)"
    )


def _get(name: str, obj):
    try:
        return HOOKS[name].get(obj)
    except (AttributeError, KeyError, TypeError) as e:
        raise MissingHook(_message([name])) from e


def missing(obj, owner: str) -> list:
    """The names of ``owner``'s hooks ("scheduler", "worker", "client") that ``obj`` lacks."""
    out = []
    for name, hook in HOOKS.items():
        if hook.owner == owner:
            try:
                hook.get(obj)
            except (AttributeError, KeyError, TypeError):
                out.append(name)
    return out


def require(obj, owner: str) -> None:
    """Raise ``MissingHook`` naming every hook of ``owner`` that ``obj`` lacks."""
    gone = missing(obj, owner)
    if gone:
        raise MissingHook(_message(gone))


# -- the hooks -------------------------------------------------------------------------------


def handlers(scheduler) -> dict:
    return _get("handlers", scheduler)


def stream_handlers(scheduler) -> dict:
    return _get("stream_handlers", scheduler)


def periodic_callbacks(scheduler) -> dict:
    return _get("periodic_callbacks", scheduler)


def amm_policies(scheduler) -> set:
    """The active memory manager's policies (the live set)."""
    return _get("amm", scheduler).policies


def replace_policy(scheduler, old: type, new: Callable) -> int:
    """Every policy of exactly type ``old`` replaced by ``new()``; returns how many."""
    ext = _get("amm", scheduler)
    found = [p for p in ext.policies if type(p) is old]
    for policy in found:
        ext.policies.discard(policy)
        ext.add_policy(new())
    return len(found)


def replicated_tasks(scheduler):
    return _get("replicated_tasks", scheduler)


def bandwidth_workers(scheduler) -> dict:
    return _get("bandwidth_workers", scheduler)


def transitions(scheduler, recommendations: dict, stimulus_id: str) -> None:
    _get("transitions", scheduler)(recommendations, stimulus_id=stimulus_id)


def send_to_scheduler(client, msg: dict) -> None:
    """A one-way message on the client's stream to the scheduler."""
    _get("send_to_scheduler", client)(msg)


def client_futures(client) -> dict:
    """{key: the client's state of its future} for the futures this client holds."""
    return _get("client_futures", client)


def worker_periodic_callbacks(worker) -> dict:
    return _get("worker_periodic_callbacks", worker)


def worker_nbytes(worker) -> int:
    return int(_get("worker_nbytes", worker))


def worker_spill_thresholds(worker) -> tuple:
    """(memory_limit, spill fraction, target fraction) of the worker's memory manager (a
    fraction may be False: disabled; the limit None or 0: no limit)."""
    return _get("worker_memory_manager", worker)


def worker_process_memory(worker) -> int:
    return int(_get("worker_process_memory", worker)())


def worker_task_annotations(worker, key) -> dict:
    ts = _get("worker_task_annotations", worker).get(key)
    return (getattr(ts, "annotations", None) or {}) if ts is not None else {}


def transfer_incoming_log(worker):
    return _get("transfer_incoming_log", worker)


__all__ = ["CHECKED", "HOOKS", "MissingHook", "missing", "require"]

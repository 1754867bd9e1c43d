"""Every private distributed API dask_tra uses (``dask_tra/runtime/compat.py``) is there.

One test per hook, on a live scheduler, worker and client of one in-process LocalCluster: if
a distributed release renames or drops the attribute a hook reads, its test fails (and
``compat`` names the distributed version in its error).
"""
import types

import distributed
import pytest
from distributed import Client, LocalCluster

from dask_tra.runtime import compat


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c, set_as_default=False) as client:
        yield c, client


def _owner(cluster, owner):
    c, client = cluster
    return {"scheduler": c.scheduler, "worker": next(iter(c.workers.values())), "client": client}[owner]


@pytest.mark.parametrize("name", sorted(compat.HOOKS))
def test_hook_is_there(cluster, name):
    hook = compat.HOOKS[name]
    obj = _owner(cluster, hook.owner)
    assert name not in compat.missing(obj, hook.owner)
    assert compat._get(name, obj) is not None


def test_the_hooks_read_the_live_objects(cluster):
    c, client = cluster
    s, w = c.scheduler, next(iter(c.workers.values()))
    assert compat.handlers(s) is s.handlers and "register_scheduler_plugin" in s.handlers
    assert compat.stream_handlers(s) is s.stream_handlers and "update-graph" in s.stream_handlers
    assert compat.periodic_callbacks(s) is s.periodic_callbacks
    assert compat.amm_policies(s) is s.extensions["amm"].policies
    assert compat.replicated_tasks(s) is s.replicated_tasks
    assert compat.bandwidth_workers(s) is s.bandwidth_workers
    assert compat.client_futures(client) is client.futures
    assert compat.worker_periodic_callbacks(w) is w.periodic_callbacks
    assert compat.worker_nbytes(w) == w.state.nbytes
    assert compat.transfer_incoming_log(w) is w.transfer_incoming_log
    compat.require(s, "scheduler"), compat.require(w, "worker"), compat.require(client, "client")


def test_replace_policy_swaps_exactly_that_type():
    class Old:
        pass

    class New:
        pass

    old, other = Old(), object()
    ext = types.SimpleNamespace(policies={old, other})
    ext.add_policy = ext.policies.add
    fake = types.SimpleNamespace(extensions={"amm": ext})
    assert compat.replace_policy(fake, Old, New) == 1
    assert other in ext.policies and old not in ext.policies and [type(p) for p in ext.policies].count(New) == 1


def test_a_missing_hook_names_the_distributed_version():
    bare = types.SimpleNamespace()
    assert set(compat.missing(bare, "scheduler")) == {n for n, h in compat.HOOKS.items() if h.owner == "scheduler"}
    with pytest.raises(compat.MissingHook, match=f"distributed {distributed.__version__} does not have") as e:
        compat.handlers(bare)
    assert "Scheduler.handlers" in str(e.value) and compat.CHECKED in str(e.value)
    with pytest.raises(compat.MissingHook, match="Client._send_to_scheduler"):
        compat.require(bare, "client")


def test_the_plugin_refuses_a_scheduler_without_its_hooks():
    from dask_tra.runtime.plugin import DaskTraPlugin

    with pytest.raises(compat.MissingHook, match="Scheduler.stream_handlers"):
        DaskTraPlugin().start(types.SimpleNamespace(handlers={}))

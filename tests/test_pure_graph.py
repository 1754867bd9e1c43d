"""Graph construction changes nothing on a cluster (issue 32, item 2).

One LocalCluster (in-process workers) on which dask_tra was never used: ``__dask_graph__``,
``.dask``, ``to_dask()``, ``is_dask_collection``, ``explain()`` leave the scheduler's plugins,
handlers, stream handlers, memory-manager policies and worker plugins as they were; the
results are still right, by ``dask.compute`` and ``Client.compute`` too (client arrays ride
inside such graphs). ``compute()`` installs dask_tra (``dask_tra.install`` alike), and only it.
"""
import dask
import numpy as np
import pytest
from dask.base import is_dask_collection
from distributed import Client, LocalCluster

import dask_tra as dt
from dask_tra.runtime import plugin


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        yield c


def _state(dask_scheduler=None) -> dict:
    """What a graph must not change: names and identities of the scheduler's tables."""
    return {
        "plugins": {n: id(p) for n, p in dask_scheduler.plugins.items()},
        "handlers": {n: id(h) for n, h in dask_scheduler.handlers.items()},
        "stream_handlers": {n: id(h) for n, h in dask_scheduler.stream_handlers.items()},
        "policies": sorted((type(p).__name__, id(p)) for p in dask_scheduler.extensions["amm"].policies),
        "worker_plugins": sorted(dask_scheduler.worker_plugins),
    }


def _tasks(dask_scheduler=None) -> int:
    return len(dask_scheduler.tasks)


def _reads_scattered(graph) -> bool:
    """Whether a graph's tasks read blocks scattered from the client (``tra-scattered-…`` keys)."""
    nodes = [node for layer in graph.layers.values() for node in dict(layer).values()]
    deps = {d for node in nodes for d in getattr(node, "dependencies", ())}
    return any(isinstance(k, tuple) and str(k[0]).startswith("tra-scattered") for k in deps)


def _inputs(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((40, 30)), rng.standard_normal((30, 20))
    return a, b, dt.from_array(a, chunks=(9, 8)), dt.from_array(b, chunks=(8, 6))


def test_graph_construction_changes_nothing_on_the_cluster(client):
    before, tasks = client.run_on_scheduler(_state), client.run_on_scheduler(_tasks)
    assert plugin.NAME not in before["plugins"]  # a cluster dask_tra was never used on
    a, b, x, y = _inputs(1)
    r = dt.random.uniform(-1, 1, (30, 20), chunks=(8, 6), seed=3)
    z = (x @ y + x @ r).sum(axis=0)
    assert is_dask_collection(z)
    graph = z.__dask_graph__()
    assert len(graph) > z.npartitions  # a real plan's tasks, pinned to workers
    assert any(layer.annotations and "workers" in layer.annotations for layer in z.dask.layers.values())
    dz = z.to_dask()
    assert dz.chunks == z.chunks
    z.explain()
    assert client.run_on_scheduler(_state) == before
    assert client.run_on_scheduler(_tasks) == tasks  # nothing scattered, nothing submitted
    assert not _reads_scattered(graph)  # the client arrays ride inside the graph
    want = (a @ b + a @ r.compute(scheduler="sync")).sum(axis=0)
    np.testing.assert_allclose(dask.compute(z)[0], want)  # through __dask_graph__: nothing installed
    np.testing.assert_allclose(client.compute(z).result(), want)
    np.testing.assert_allclose(dz.compute(), want)
    assert client.run_on_scheduler(_state) == before


def test_compute_installs_once_and_a_graph_after_it_changes_nothing(client):
    a, b, x, y = _inputs(2)
    z = x @ y
    assert not _reads_scattered(z.dask)  # made before any compute: the arrays inside the graph
    with dt.diagnostics.measure() as m:
        np.testing.assert_allclose(z.compute(), a @ b)
    assert m.bytes_moved == m.predicted_bytes > 0  # compute scattered the inputs where the plan put them
    assert _reads_scattered(z.dask)  # asked for after the run: the graph that ran
    installed = client.run_on_scheduler(_state)
    assert plugin.NAME in installed["plugins"]
    assert {plugin.SNAPSHOT_OP, plugin.RATES_OP} <= set(installed["handlers"])
    assert plugin.HOLD_OP in installed["stream_handlers"]
    assert [n for n, _ in installed["policies"]] == ["KeepPinnedReplicas"]
    w = (x @ y.T.T).T
    w.__dask_graph__(), w.dask, w.to_dask(), is_dask_collection(w)
    np.testing.assert_allclose(dask.compute(w)[0], (a @ b).T)
    dt.install(client)  # explicit, and idempotent
    assert client.run_on_scheduler(_state) == installed

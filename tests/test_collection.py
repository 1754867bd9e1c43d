"""RelArray as a Dask collection without a cluster: threaded and synchronous schedulers, interop."""
import numpy as np
import pytest

import dask
import dask.array as da
import dask_tra as dt


@pytest.fixture
def ab():
    rng = np.random.default_rng(7)
    return rng.standard_normal((23, 17)), rng.standard_normal((17, 11))


@pytest.mark.parametrize("scheduler", ["threads", "sync"])
def test_same_code_on_local_schedulers(ab, scheduler):
    a, b = ab
    z = dt.from_array(a, chunks=(5, 4)) @ dt.from_array(b, chunks=(4, 3))
    np.testing.assert_allclose(z.compute(scheduler=scheduler), a @ b)
    (r,) = dask.compute(z, scheduler=scheduler)
    np.testing.assert_allclose(r, a @ b)
    np.testing.assert_allclose(z.persist(scheduler=scheduler).compute(), a @ b)


def test_sites_setting_changes_the_plan(ab):
    a, b = ab
    z = dt.from_array(a, chunks=(5, 4)) @ dt.from_array(b, chunks=(4, 3))
    with dt.config.set(sites=1):
        assert z.explain(sites=None).predicted_bytes == 0
        assert z.planned()[0].cost.bytes_moved == 0
    assert z.planned(sites=1)[0].cost.bytes_moved == 0
    assert z.planned(sites=4)[0].cost.bytes_moved > 0
    np.testing.assert_allclose(z.compute(), a @ b)


def test_from_dask_to_dask_round_trip_is_lazy():
    calls = []

    def make():
        calls.append(1)
        return np.arange(12.0).reshape(3, 4)
    x = da.from_delayed(dask.delayed(make)(), shape=(3, 4), dtype=float)
    r = dt.from_dask(x)
    back = r.to_dask()
    assert isinstance(back, da.Array) and back.shape == (3, 4) and back.chunks == x.chunks
    assert calls == []  # nothing computed
    np.testing.assert_array_equal(back.compute(), np.arange(12.0).reshape(3, 4))
    assert calls == [1]


def test_from_dask_matmul_and_random_are_seeded(ab):
    a, b = ab
    x = dt.from_dask(da.from_array(a, chunks=(6, 5)))
    y = dt.from_dask(da.from_array(b, chunks=(5, 4)))
    np.testing.assert_allclose((x @ y).compute(), a @ b)
    r1 = dt.random.standard_normal((9, 7), chunks=(4, 3), seed=11).compute()
    r2 = dt.random.standard_normal((9, 7), chunks=(4, 3), seed=11).compute()
    np.testing.assert_array_equal(r1, r2)
    assert r1.std() > 0.3 and not np.array_equal(r1, dt.random.standard_normal((9, 7), chunks=(4, 3), seed=12).compute())


def test_repr_and_visualize_graph(ab):
    a, b = ab
    z = dt.from_array(a, chunks=(5, 4)) @ dt.from_array(b, chunks=(4, 3))
    assert "tra_ops=2" in repr(z) and "shape=(23, 11)" in repr(z)
    with dt.config.set(force="cmm", sites=4):  # partial products, then their aggregation: two stages
        layers = list((dt.from_array(a, chunks=(5, 4)) @ dt.from_array(b, chunks=(4, 3))).dask.layers)
    assert any(n.startswith("matmul-partial-") for n in layers)
    assert z.__dask_keys__()[0][0] == (z.name, 0, 0)


def test_to_dask_feeds_dask_array_operations(ab):
    a, b = ab
    z = dt.from_array(a, chunks=(5, 4)) @ dt.from_array(b, chunks=(4, 3))
    d = z.to_dask()
    assert z.name in d.__dask_graph__().layers  # the collection's layer exists
    np.testing.assert_allclose((d.T @ d + 1).compute(), (a @ b).T @ (a @ b) + 1)
    np.testing.assert_allclose(d.persist().compute(), a @ b)


def test_keep_setting_changes_the_cached_plan():
    """(A@B)@C on 3 sites: the whole-chain search (default keep) beats greedy (keep=1); the plan
    cache must not hand one's plan to the other."""
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal((64, 64)) for _ in range(3))
    z = (dt.from_array(a, chunks=16) @ dt.from_array(b, chunks=16)) @ dt.from_array(c, chunks=16)
    whole = z.planned(sites=3)[0].cost
    with dt.config.set(keep=1):
        greedy = z.planned(sites=3)[0].cost
    assert whole.bytes_moved < greedy.bytes_moved
    assert z.planned(sites=3)[0].cost == whole
    np.testing.assert_allclose(z.compute(), a @ b @ c)


def test_an_asynchronous_clients_results_are_planned_not_read_from_futures():
    """Off its event loop, an asynchronous client's loop can't be waited on (to let queued
    releases run): its outputs are planned, whatever its futures say, and its loop is not called."""
    from types import SimpleNamespace

    from dask_tra.runtime.collection import _live_outputs

    keys = [("tra-out-x", 0), ("tra-out-x", 1)]
    calls = []
    client = SimpleNamespace(
        asynchronous=True,
        futures={k: SimpleNamespace(status="finished") for k in keys},
        sync=lambda f: calls.append(f),
    )
    assert _live_outputs(client, keys) is None
    assert calls == []
    client.futures = {keys[0]: SimpleNamespace(status="finished")}  # one output not held
    client.asynchronous = False
    assert _live_outputs(client, keys) is None
    assert calls == []


def test_a_result_larger_than_free_memory_is_refused_before_running():
    """zeros((10**6, 10**6)).compute() would gather 7.28 TiB into this process (it hung)."""
    from dask_tra.optimizer import MemoryLimitError
    x = dt.zeros((10**6, 10**6))
    with pytest.raises(MemoryLimitError, match=r"gathers the whole result, 7\.28 TiB, into this process"):
        x.compute()
    assert x[:3, :3].compute().tolist() == [[0.0] * 3] * 3  # a part that fits still computes


def test_type_checks_and_metadata_plan_nothing(monkeypatch, ab):
    """xarray asks ``is_dask_collection`` of every intermediate: that, and reading keys, chunks
    or dtype, must not plan; computing plans once."""
    import pickle

    from dask.base import is_dask_collection
    from xarray.namedarray.utils import is_duck_dask_array

    from dask_tra.runtime.collection import DaskCollection

    made = []
    make = DaskCollection._make_plan
    monkeypatch.setattr(DaskCollection, "_make_plan", lambda self, *a, **k: made.append(1) or make(self, *a, **k))
    a, b = ab
    x = dt.from_array(a, chunks=(5, 4))
    z = ((x + 1) @ dt.from_array(b, chunks=(4, 3))).sum(axis=0)
    graph = z.__dask_graph__()
    assert is_dask_collection(z) and is_duck_dask_array(z)
    assert z.__dask_keys__() and z.chunks and z.dtype == np.float64 and z.dask is not None
    assert made == []
    copy = pickle.loads(pickle.dumps(graph))  # pickled (as sent to a scheduler): the real graph
    assert type(copy).__name__ == "HighLevelGraph" and set(copy) == set(graph)
    assert made == [1]
    np.testing.assert_allclose(z.compute(), ((a + 1) @ b).sum(axis=0))
    assert made == [1]  # the plan was cached

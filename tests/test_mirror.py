"""The placement mirror (``dask_tra.dask.mirror``): the scheduler pushes where a client's
persisted blocks are, so a repeated plan asks it nothing, and is still exact. One 4-worker
LocalCluster for the module."""
import time
import types
from collections import namedtuple

import numpy as np
import pytest
from distributed import wait

import dask_tra as dt
from dask_tra import diagnostics
from dask_tra.dask import amm, mirror


def _until(cond, timeout=5.0):
    """Pushes arrive on the client's stream after the call that caused them returned."""
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "the mirror was not updated"
        time.sleep(0.01)


def _mirror(client):
    return client._dask_tra_mirror


def _watched(dask_scheduler=None):
    return len(dask_scheduler.plugins[amm.NAME].watches.watchers)


def _holds(keys, dask_scheduler=None):
    now = time.monotonic()
    return [amm._held.get(k, 0.0) - now for k in keys]


def test_the_mirror_follows_where_persisted_blocks_are(client, monkeypatch):
    rng = np.random.default_rng(0)
    x = dt.from_array(rng.standard_normal((50, 33)), chunks=(13, 11)).persist()
    (x + 1).compute()  # a plan: the client mirrors from now on
    y = (x * 2.5 - 1).persist()
    keys = [k for k in y.__dask_graph__()]
    wait(list(y.__dask_graph__().values()))
    m = _mirror(client)
    truth = client.who_has(list(y.__dask_graph__().values()))
    _until(lambda: all(m.who.get(k) == tuple(sorted(truth[k])) for k in keys))
    assert m.workers is not None and sorted(m.workers) == sorted(client.scheduler_info(n_workers=-1)["workers"])

    one = keys[0]
    f = y.__dask_graph__()[one]
    others = [w for w in m.workers if w not in m.who[one]]
    client.replicate([f], workers=others[:1])  # a copy no plan made
    assert not m.live()  # answered off the stream: the next plan asks, and the mirror syncs
    asked = []
    real = amm.query_snapshot
    monkeypatch.setattr(amm, "query_snapshot", lambda c, keys: asked.append(len(keys)) or real(c, keys))
    (y + 0).planned()
    assert asked == [len(keys)]
    _until(m.live)
    _until(lambda f=f: set(m.who[one]) == set(client.who_has([f])[f.key]) and len(m.who[one]) == 2)
    del f

    np.testing.assert_allclose(y.compute(), x.compute() * 2.5 - 1)
    before = client.run_on_scheduler(_watched)
    del y
    _until(lambda: one not in m.who)  # forgotten on the scheduler: gone from the mirror
    assert client.run_on_scheduler(_watched) <= before - len(keys)


def test_a_training_loop_plans_from_the_mirror_exactly(client, monkeypatch):
    rng = np.random.default_rng(1)
    Xn, yn = rng.standard_normal((90, 14)), rng.standard_normal((90, 3))
    X = dt.from_array(Xn, chunks=(17, 14)).persist()
    y = dt.from_array(yn, chunks=(17, 3)).persist()
    w = dt.from_array(rng.standard_normal((14, 3)), chunks=(7, 3)).persist()
    wn = w.compute()
    asked = []
    real = amm.query_snapshot
    monkeypatch.setattr(amm, "query_snapshot", lambda c, keys: asked.append(len(keys)) or real(c, keys))
    for step in range(5):
        asked.clear()
        with diagnostics.measure() as m:
            w = (w - 1e-3 * (X.T @ (X @ w - y))).persist()
            wait(list(w.__dask_graph__().values()))
        wn = wn - 1e-3 * (Xn.T @ (Xn @ wn - yn))
        assert m.bytes_moved == m.predicted_bytes, step
        if step >= 1:  # last step's output was watched from its graph on: nothing to ask
            assert asked == [], step
    np.testing.assert_allclose(w.compute(), wn, rtol=1e-10)
    # every read renewed the hold on the replicas the plan counted on
    keys = list(X.__dask_graph__())
    assert min(client.run_on_scheduler(_holds, keys=keys)) > amm.HOLD_S - 10


def test_a_mirror_that_does_not_know_a_key_asks(client):
    m = _mirror(client) if hasattr(client, "_dask_tra_mirror") else mirror.mirror_of(client, amm.HOLD_S)
    assert m.read([("not-a-key", 0)]) is None
    _until(m.live)
    info, who = m.read([])  # nothing held: the workers alone, with no round trip
    assert who == {} and len(info) == 4


def test_workers_that_join_or_leave_reach_the_mirror(client):
    x = dt.from_array(np.arange(40.0).reshape(8, 5), chunks=(3, 5))
    x.sum().compute()
    m = _mirror(client)
    _until(lambda: m.live() and len(m.workers) == 4)
    client.cluster.scale(5)
    client.wait_for_workers(5)
    _until(lambda: len(m.workers) == 5)
    assert (x @ x.T).planned()[1].count == 5
    np.testing.assert_allclose((x @ x.T).compute(), x.compute() @ x.compute().T)
    client.cluster.scale(4)
    _until(lambda: len(client.scheduler_info(n_workers=-1)["workers"]) == 4, timeout=30)
    _until(lambda: len(m.workers) == 4)
    assert set(m.workers) == set(client.scheduler_info(n_workers=-1)["workers"])


def test_without_the_replica_methods_nothing_is_pushed():
    sent = []
    comm = types.SimpleNamespace(send=sent.append)
    sched = types.SimpleNamespace(stream_handlers={}, client_comms={"c": comm}, tasks={}, workers={})
    held = []
    w = mirror.Watches(sched, hold=held.extend, workers_info=lambda s: {})
    assert not w.enabled
    w.watch("c", ["k"])
    assert sent == []
    # holds still reach the memory-manager policy: scattering sends them with or without a mirror
    sched.stream_handlers[mirror.HOLD_OP](keys=["k"], client="c")
    assert held == ["k"]


@pytest.mark.parametrize("holders", [("a",), ("a", "b")])
def test_the_replica_methods_are_wrapped_and_push_changes(holders):
    sent = []
    ts = types.SimpleNamespace(key="k", who_has=set())

    def add_replica(ts, ws):
        ts.who_has.add(ws)

    def remove_replica(ts, ws):
        ts.who_has.discard(ws)

    def remove_all_replicas(ts):
        ts.who_has = None

    sched = types.SimpleNamespace(
        stream_handlers={}, client_comms={"c": types.SimpleNamespace(send=sent.append)}, tasks={"k": ts},
        workers={}, add_replica=add_replica, remove_replica=remove_replica, remove_all_replicas=remove_all_replicas)
    w = mirror.Watches(sched, hold=lambda keys: None, workers_info=lambda s: {"w": 1})
    w.watch("c", ["k"])
    assert sent == [{"op": mirror.PUSH_OP, "workers": {"w": 1}}, {"op": mirror.PUSH_OP, "who": [("k", ())]}]
    for a in holders:
        sched.add_replica(ts, namedtuple("Worker", "address")(a))
    assert sent[-1] == {"op": mirror.PUSH_OP, "who": [("k", holders)]}
    sched.remove_all_replicas(ts)
    assert sent[-1] == {"op": mirror.PUSH_OP, "who": [("k", ())]}
    w.forget("k")
    assert sent[-1] == {"op": mirror.PUSH_OP, "gone": ("k",)} and w.watchers == {}

"""A shared cluster: what dask_tra installs changes nothing for other clients' work.

One LocalCluster. Each plain-user scenario (a strictly pinned task whose worker retires, replicas
the memory manager reduces, a dask.array result) runs first on the cluster before dask_tra was
ever used on it, then again after dask_tra installed its plugin and while a dask_tra client
works; both runs must observe the same. The plugin's handlers are sent forged and malformed
messages; the methods of ``Scheduler`` and ``Client`` are compared before and after.
"""
import threading
import time
import types

import dask
import dask.array
import numpy as np
import pytest
from distributed import Client, Event, LocalCluster, wait
from distributed.active_memory_manager import ActiveMemoryManagerExtension, ReduceReplicas
from hypothesis import given, settings
from hypothesis import strategies as st

import dask_tra.array as da
from dask_tra.backends.cluster import workers_info
from dask_tra.runtime import amm, plugin, rates, session
from dask_tra.runtime.amm import KeepPinnedReplicas
from dask_tra.runtime.ownership import ANNOTATION

N_WORKERS = 4


def _methods(obj) -> dict:
    """{name: function} of ``obj``'s class and instance callables (an instance attribute set at
    runtime shadows the class's method)."""
    out = {n: v for n, v in vars(type(obj)).items() if callable(v)}
    out.update({f"instance.{n}": v for n, v in vars(obj).items() if callable(v) and not isinstance(v, type)})
    return out


def _scheduler_state(dask_scheduler) -> dict:
    """Read in this process (the LocalCluster's scheduler lives here): identities survive."""
    return {
        "methods": _methods(dask_scheduler),
        "handlers": dict(dask_scheduler.handlers),
        "stream_handlers": dict(dask_scheduler.stream_handlers),
        "plugins": sorted(dask_scheduler.plugins),
        "policies": sorted(type(p).__name__ for p in dask_scheduler.extensions["amm"].policies),
    }


def _identical(before: dict, after: dict) -> list:
    """Names present before whose value is not the very same object after."""
    return [n for n, v in before.items() if after.get(n) is not v]


@pytest.fixture(scope="module")
def cluster():
    # worker processes: the memory manager drops replicas from the worker with the most memory,
    # which in-process workers (one shared process size) would make a matter of chance
    with LocalCluster(n_workers=N_WORKERS, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="2GiB") as c:
        yield c


@pytest.fixture(scope="module")
def fresh(cluster):
    """What the plain user sees before dask_tra touches the cluster, and the scheduler's
    methods then."""
    with Client(cluster) as plain:
        before = _scheduler_state(cluster.scheduler)
        seen = {"pinned": _strictly_pinned_task_on_retired_worker(plain, cluster),
                "amm": _replicas_left_by_the_memory_manager(plain),
                "result": _plain_dask_array_result(plain)}
    return before, seen


def _tra_work(client, seed=0):
    """A dask_tra client's work: scattered inputs, moves, a persisted array read again."""
    a = np.random.default_rng(seed).standard_normal((240, 180))
    x = da.from_array(a, chunks=60)
    p = (x @ x.T).persist()
    wait(p)
    np.testing.assert_allclose((p + 1).sum(0).compute(), (a @ a.T + 1).sum(0), rtol=1e-9)


@pytest.fixture(scope="module")
def tra(cluster, fresh):
    """A client that used dask_tra (its plugin is installed from then on)."""
    with Client(cluster, set_as_default=False) as c:
        _CLIENT_METHODS.update(_methods(c))
        with c.as_current():
            _tra_work(c)
        yield c


_CLIENT_METHODS: dict = {}  # the dask_tra client's methods before it used dask_tra


def _wait_for(name):
    Event(name).wait()
    return 1


def _strictly_pinned_task_on_retired_worker(client, cluster) -> dict:
    """A task pinned with ``allow_other_workers=False`` to a worker that retires before it can
    run (a worker added for it, retired by scaling back): distributed leaves it waiting for
    that worker ("no-worker")."""
    old = set(workers_info(client))
    cluster.scale(N_WORKERS + 1)
    client.wait_for_workers(N_WORKERS + 1)
    (target,) = set(workers_info(client)) - old
    gate = f"gate-{time.monotonic_ns()}"
    blocker = client.submit(_wait_for, gate, workers=[min(old)], pure=False)
    task = client.submit(np.add, blocker, 1, workers=[target], allow_other_workers=False, pure=False)
    cluster.scale(N_WORKERS)
    _until(lambda: target not in workers_info(client))
    Event(gate, client=client).set()
    wait(blocker)
    _until(lambda: client.run_on_scheduler(_task_state, key=task.key)["state"] in ("no-worker", "memory"))
    seen = client.run_on_scheduler(_task_state, key=task.key)
    seen["restrictions"] = seen["restrictions"] == [target]
    client.cancel(task)
    return seen


def _task_state(key, dask_scheduler=None) -> dict:
    ts = dask_scheduler.tasks[key]
    return {"state": ts.state, "restrictions": sorted(ts.worker_restrictions or ()), "loose": ts.loose_restrictions}


def _replicas_left_by_the_memory_manager(client) -> list:
    """Replicated plain keys, some with waiting strictly pinned dependents, after one run of
    the cluster's memory-manager policies: how many replicas each keeps, and whether one stays
    on the first worker (which holds the most memory, so distributed drops its replicas first,
    even the one a pinned waiter there will read)."""
    workers = client.run_on_scheduler(_workers)
    client.amm.stop()
    gate = f"gate-{time.monotonic_ns()}"
    try:
        ballast = client.submit(np.ones, 16_000_000, workers=[workers[0]], pure=False)  # 128 MB
        xs = [client.submit(np.arange, 1000 + i, workers=[workers[0]], pure=False) for i in range(3)]
        wait([ballast, *xs])
        client.replicate(xs, n=N_WORKERS)
        blocker = client.submit(_wait_for, gate, workers=[workers[0]], pure=False)
        waiting = [client.submit(np.add, xs[0], blocker, workers=[workers[0]], allow_other_workers=False, pure=False),
                   client.submit(np.add, xs[1], blocker, workers=[workers[1]], allow_other_workers=False, pure=False)]
        _until(lambda: client.run_on_scheduler(_waiters, keys=[x.key for x in xs]) == [1, 1, 0])  # they arrived
        client.run_on_scheduler(_run_policies_once)
        who = client.who_has(xs)
        seen = [(len(who[x.key]), workers[0] in who[x.key]) for x in xs]
        Event(gate, client=client).set()
        assert [w.result()[0] for w in waiting] == [1, 1]
        return seen
    finally:
        client.amm.start()


def _waiters(keys, dask_scheduler=None):
    return [len(dask_scheduler.tasks[k].waiters or ()) for k in keys]


def _workers(dask_scheduler=None):
    return sorted(dask_scheduler.workers)


def _run_policies_once(dask_scheduler=None):
    dask_scheduler.extensions["amm"].run_once()


def _plain_dask_array_result(client):
    x = dask.array.random.default_rng(3).standard_normal((300, 200), chunks=50)
    return client.compute((x @ x.T).sum(axis=0)).result()


def test_a_plain_users_work_is_as_without_dask_tra(cluster, fresh, tra):
    """The same scenarios, with dask_tra's plugin installed, its persisted blocks on the
    cluster and its work running between the plain user's steps."""
    _, seen_before = fresh
    with tra.as_current():
        held = da.ones((400, 400), chunks=100).persist()
        wait(held)
    with Client(cluster) as plain:
        seen = {"pinned": _strictly_pinned_task_on_retired_worker(plain, cluster)}
        with tra.as_current():
            _tra_work(tra, seed=1)
        seen["amm"] = _replicas_left_by_the_memory_manager(plain)
        with tra.as_current():
            _tra_work(tra, seed=2)
        seen["result"] = _plain_dask_array_result(plain)
    assert seen_before["pinned"]["state"] == "no-worker" and seen_before["pinned"]["restrictions"]
    assert seen["pinned"] == seen_before["pinned"]
    assert seen_before["amm"][0] == (1, False)  # distributed drops the replica its waiter reads
    assert seen["amm"] == seen_before["amm"]
    np.testing.assert_allclose(seen["result"], seen_before["result"], rtol=1e-12)  # dask's own sum order varies
    with tra.as_current():
        assert float(held.sum().compute()) == 400 * 400


def test_no_scheduler_or_client_method_is_replaced(cluster, fresh, tra):
    before, _ = fresh
    after = _scheduler_state(cluster.scheduler)
    assert _identical(before["methods"], after["methods"]) == []
    assert [n for n in after["methods"] if n not in before["methods"]] == []
    assert _identical(before["handlers"], after["handlers"]) == []
    assert _identical(before["stream_handlers"], after["stream_handlers"]) == []
    assert set(after["handlers"]) - set(before["handlers"]) == {plugin.SNAPSHOT_OP, plugin.RATES_OP}
    assert set(after["stream_handlers"]) - set(before["stream_handlers"]) == {plugin.HOLD_OP}
    assert _identical(_CLIENT_METHODS, _methods(tra)) == []
    assert [n for n in _methods(tra) if n not in _CLIENT_METHODS] == []


def test_one_plugin_per_cluster_whatever_the_clients(cluster, tra):
    first = tra.run_on_scheduler(_plugin_id)
    for _ in range(2):
        with Client(cluster, set_as_default=False) as c:
            with c.as_current():
                _tra_work(c, seed=7)
    assert tra.run_on_scheduler(_plugin_id) == first
    logs = [m for _, m in tra.get_scheduler_logs(n=10_000) if "overwriting" in m]
    assert logs == []
    state = _scheduler_state(cluster.scheduler)
    assert [p for p in state["plugins"] if "tra" in p] == [plugin.NAME]
    assert state["policies"].count("KeepPinnedReplicas") == 1 and "ReduceReplicas" not in state["policies"]


def _plugin_id(dask_scheduler=None):
    return id(dask_scheduler.plugins[plugin.NAME])


def test_a_forged_query_changes_nothing_and_gets_an_error(cluster, tra):
    with Client(cluster, set_as_default=False) as other:
        out = other.sync(other.scheduler.dask_tra_snapshot, keys=[], client=tra.id, synced=10**18)
        assert "unexpected arguments ['client', 'synced']" in out["error"]
        out = other.sync(other.scheduler.dask_tra_snapshot, keys="x")
        assert "keys must be a list" in out["error"]
        with pytest.raises(ValueError, match="refused the placement query: not a dask key"):
            session.query_snapshot(other, ["x", {"a": 1}])
    with tra.as_current():
        _tra_work(tra, seed=11)


def test_a_graph_made_outside_compute_asks_the_handler_and_holds_nothing():
    """Where the plugin is installed, a plan made outside ``compute``/``persist`` (a graph
    dask.compute takes) asks dask_tra's handler where its inputs are, read only: no replica is
    held, and nothing is sent to run on the scheduler (no ``run-function`` event)."""
    def runs():
        return sum(e[1].get("action") == "run-function" for e in c.get_events("all"))

    with LocalCluster(n_workers=2, processes=False, dashboard_address=":0") as local, \
            Client(local, set_as_default=False) as c, c.as_current():
        x = da.random.random((120, 40), chunks=30, seed=3).persist()  # installs the plugin
        wait(x)
        want = x.compute()
        _until(lambda: c.run_on_scheduler(_held) == 0)  # the computes' holds expired
        before = runs()
        y = x.T @ x
        assert (y.name, 0, 0) in dict(y.__dask_graph__())  # planned where x's blocks are
        assert runs() == before
        assert c.run_on_scheduler(_held) == 0
        np.testing.assert_allclose(dask.compute(y)[0], want.T @ want, rtol=1e-10)
        out = c.sync(c.scheduler.dask_tra_snapshot, keys=[], hold="yes")
        assert "hold must be a bool" in out["error"]


def _older_handler(dask_scheduler=None):
    """The placement handler as a plugin registered by an older dask_tra has it: no ``hold``."""
    installed = dask_scheduler.plugins[plugin.NAME]

    def handle_snapshot(keys=(), **unexpected):
        if unexpected:
            return {"error": f"unexpected arguments {sorted(unexpected)}"}
        return installed.handle_snapshot(keys=keys)

    dask_scheduler.handlers[plugin.SNAPSHOT_OP] = handle_snapshot


def test_a_plugin_from_an_older_client_is_read_without_hold():
    """A cluster whose plugin an older dask_tra registered (its handler takes no ``hold``): a
    plan made outside ``compute`` falls back to the read-only function, and ``compute`` still
    asks the handler."""
    with LocalCluster(n_workers=2, processes=False, dashboard_address=":0") as local, \
            Client(local, set_as_default=False) as c, c.as_current():
        x = da.random.random((120, 40), chunks=30, seed=4).persist()
        wait(x)
        want = x.compute()
        c.run_on_scheduler(_older_handler)
        y = x.T @ x
        assert (y.name, 0, 0) in dict(y.__dask_graph__())
        np.testing.assert_allclose(dask.compute(y)[0], want.T @ want, rtol=1e-10)
        np.testing.assert_allclose((x @ x.T).compute(), want @ want.T, rtol=1e-10)


def test_a_malformed_hold_message_does_not_drop_the_sender(cluster, tra):
    with Client(cluster, set_as_default=False) as c:
        session.ensure_installed(c)
        c._send_to_scheduler({"op": plugin.HOLD_OP, "keys": 5})
        c._send_to_scheduler({"op": plugin.HOLD_OP, "keys": [("k", 1)], "extra": 1})
        assert c.submit(np.add, 1, 2, pure=False).result() == 3  # answered on the same stream
        assert c.id in tra.run_on_scheduler(_clients)
    logs = [m for _, m in tra.get_scheduler_logs(n=10_000) if "ignored a dask_tra_hold message" in m]
    assert len(logs) == 2
    assert any("keys must be a list" in m for m in logs) and any("unexpected arguments ['extra']" in m for m in logs)


def _clients(dask_scheduler=None):
    return list(dask_scheduler.client_comms)


def test_junk_holds_are_purged_within_their_expiry():
    """A million held keys that name nothing, sent by a client on a scheduler whose holds last
    10 s (long enough to see them held on a loaded machine): all gone once they expired (the
    plugin's timer), and a leaving client's holds at once."""
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        c.register_plugin(plugin.DaskTraPlugin(hold_s=10.0), name=plugin.NAME)
        c._send_to_scheduler({"op": plugin.HOLD_OP, "keys": [f"junk-{i}" for i in range(10**6)]})
        _until(lambda: c.run_on_scheduler(_held) == 10**6)
        _until(lambda: c.run_on_scheduler(_held) == 0)
        with Client(cluster, set_as_default=False) as leaving:
            leaving._send_to_scheduler({"op": plugin.HOLD_OP, "keys": ["a", "b"]})
            _until(lambda: c.run_on_scheduler(_held) == 2)
            c.run_on_scheduler(_long_holds)
        _until(lambda: c.run_on_scheduler(_held) == 0)


def _held(dask_scheduler=None):
    return len(dask_scheduler.plugins[plugin.NAME].holds)


def _long_holds(dask_scheduler=None):
    """The holds outlive the test from now: only the client's leaving can purge them."""
    holds = dask_scheduler.plugins[plugin.NAME].holds
    for k in holds.until:
        holds.until[k] += 3600


def _until(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_threads_computing_one_array_submit_each_key_with_one_spec(tra):
    """Four threads compute one RelArray at once: one plan, one graph, one set of scattered
    inputs, so the scheduler never sees a key again with other dependencies."""
    before = sum("run_spec" in m for _, m in tra.get_scheduler_logs(n=10_000))
    with tra.as_current():
        for trial in range(3):
            a = np.random.default_rng(trial).standard_normal((400, 300))
            y = (da.from_array(a, chunks=100) @ da.from_array(a, chunks=100).T).sum(0)
            out = [None] * 4

            def run(i, y=y):
                with tra.as_current():
                    try:
                        out[i] = y.compute()
                    except Exception as e:  # seen by the assertions below
                        out[i] = e
            threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for o in out:
                np.testing.assert_allclose(o, (a @ a.T).sum(0), rtol=1e-9)
    assert sum("run_spec" in m for _, m in tra.get_scheduler_logs(n=10_000)) == before


def test_the_rates_probe_survives_an_empty_worker_list(tra, monkeypatch):
    """The probe measures the workers it is given, even when the worker list it reads for their
    threads comes back empty (a worker set changing under it)."""
    workers = tuple(sorted(workers_info(tra)))
    monkeypatch.setattr(rates, "workers_info", lambda client: {})
    out = rates.measure(tra, workers)
    assert out["bandwidth"] > 0 and out["task_overhead"] > 0 and out["flop_rate"] > 0
    assert rates.calibrate(tra, ()) == {}  # nothing measured, nothing stored


# -- the memory-manager policy: ReduceReplicas's suggestions for every key not dask_tra's --------


class _Task:
    def __init__(self, key, who_has=(), waiters=(), annotations=None, restrictions=None, loose=False, on=None):
        self.key, self.who_has, self.waiters = key, set(who_has), set(waiters)
        self.annotations, self.worker_restrictions = annotations, restrictions
        self.loose_restrictions, self.processing_on = loose, on


@st.composite
def _replicated_tasks(draw):
    workers = [f"w{i}" for i in range(draw(st.integers(2, 5)))]
    tasks = []
    for i in range(draw(st.integers(1, 8))):
        who = draw(st.sets(st.sampled_from(workers), min_size=2))
        waiters = []
        for j in range(draw(st.integers(0, 4))):
            pinned, where = draw(st.booleans()), draw(st.sampled_from(workers))
            waiters.append(_Task(
                f"t{i}-{j}",
                annotations={ANNOTATION: True} if draw(st.booleans()) else None,
                restrictions={where} if pinned else None,
                loose=not pinned,
                on=draw(st.sampled_from([None, where] if pinned else [None, *workers])),  # runs where pinned
            ))
        tasks.append(_Task(f"x{i}", who, waiters))
    return workers, tasks


def _suggestions(policy, workers, tasks):
    manager = types.SimpleNamespace(
        scheduler=types.SimpleNamespace(replicated_tasks=list(tasks), workers={w: w for w in workers}),
        pending={},
    )
    policy.manager = manager
    return [(s.op, s.ts.key, frozenset(s.candidates or ())) for s in policy.run()]


@settings(max_examples=200, deadline=None)
@given(_replicated_tasks())
def test_the_policy_suggests_what_reduce_replicas_does_for_other_keys(case):
    workers, tasks = case
    ours = {t.key for t in tasks if any(w.annotations and w.worker_restrictions and not w.loose_restrictions
                                        for w in t.waiters)}
    theirs = [s for s in _suggestions(ReduceReplicas(), workers, tasks) if s[1] not in ours]
    kept = _suggestions(KeepPinnedReplicas(), workers, tasks)
    assert [s for s in kept if s[1] not in ours] == theirs
    for t in tasks:
        if t.key in ours:  # never a replica a pinned waiter of dask_tra's will read
            pinned = {w.worker_restrictions and next(iter(w.worker_restrictions)) for w in t.waiters
                      if w.annotations and not w.loose_restrictions}
            dropped = [s for s in kept if s[1] == t.key]
            assert all(not (cands & pinned) for _, _, cands in dropped)


def test_held_keys_keep_every_replica():
    holds = amm.Holds()
    tasks = [_Task("x", {"w0", "w1", "w2"}), _Task("y", {"w0", "w1"})]
    holds.hold(["x"])
    kept = _suggestions(KeepPinnedReplicas(holds), ["w0", "w1", "w2"], tasks)
    assert [s[1] for s in kept] == ["y"]
    assert [s[1] for s in _suggestions(ReduceReplicas(), ["w0", "w1", "w2"], tasks)] == ["x", "x", "y"]


def test_the_hold_table_is_bounded(monkeypatch):
    monkeypatch.setattr(amm, "MAX_KEYS", 5)
    holds = amm.Holds()
    assert holds.hold(list("abc"), client="c1") == 0
    assert holds.hold(list("defg"), client="c2") == 2  # two over the bound are not kept
    assert len(holds) == 5
    assert holds.hold(list("ab"), client="c1") == 0  # renewing takes no room
    holds.drop_client("c2")
    assert sorted(holds.until) == ["a", "b", "c"]
    assert amm.bad_keys(list("abcdef")) == "at most 5 keys per message, got 6"


DYING_CLIENT = """
import sys, time
import numpy as np
from distributed import Client, wait
import dask_tra.array as da
client = Client(sys.argv[1])
x = da.from_array(np.random.default_rng(0).random((400, 300)), chunks=100)
p = (x @ x.T).persist()
wait(p)
q = (p + 1).sum(0).persist()
wait(q)
print(client.id, flush=True)
time.sleep(600)
"""


def test_a_killed_client_leaves_nothing_behind(tmp_path):
    """A client process that persisted dask_tra arrays is killed: the scheduler forgets the
    client, its keys and the holds made for it, and logs no error from dask_tra."""
    import os
    import signal
    import subprocess
    import sys
    script = tmp_path / "dying.py"
    script.write_text(DYING_CLIENT)
    with LocalCluster(n_workers=2, processes=False, protocol="tcp", dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as watcher:
        proc = subprocess.Popen([sys.executable, str(script), cluster.scheduler_address],
                                stdout=subprocess.PIPE, text=True)
        try:
            client_id = proc.stdout.readline().strip()
            assert client_id.startswith("Client-"), client_id
            assert watcher.run_on_scheduler(_wanted_by, client=client_id) > 0
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        _until(lambda: client_id not in watcher.run_on_scheduler(_clients))
        _until(lambda: watcher.run_on_scheduler(_n_tasks) == 0)
        assert watcher.run_on_scheduler(_held) == 0
        errors = [m for _, m in watcher.get_scheduler_logs(n=10_000) if "ERROR" in m or "Error transitioning" in m]
        assert errors == []


def _wanted_by(client, dask_scheduler=None):
    return len(dask_scheduler.clients[client].wants_what)


def _n_tasks(dask_scheduler=None):
    return len(dask_scheduler.tasks)

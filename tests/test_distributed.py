"""On a LocalCluster of 4 single-thread worker processes: exact results, placement held,
measured bytes within 10% of the plan's prediction, the collection protocol, memory limits."""
import gc
import os
import time
import warnings

import numpy as np
import pytest
from distributed import Future, futures_of, get_task_stream, progress, wait

import dask
import dask_tra as dt
from dask_tra.backends.cluster import workers_info
from dask_tra.optimizer import MemoryLimitError

SHAPES = {  # the TRA paper's three shapes, scaled to this machine
    "general": (1000, 1000, 1000),
    "common large dim": (250, 16000, 250),
    "two large dims": (2000, 250, 2000),
}


def pins_of(x):
    """dask key -> worker address, from the emitted graph's annotations."""
    out = {}
    for layer in x.dask.layers.values():
        if layer.annotations:
            for k in layer:
                out[k] = layer.annotations["workers"](k)[0]
    return out


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("strategy", [None, "bmm", "cmm", "rmm"])
def test_matmul_exact_placed_and_measured(client, shape, strategy):
    i, k, j = SHAPES[shape]
    a = dt.random.uniform(-1, 1, (i, k), chunks=(-(-i // 4), -(-k // 8)), seed=1)
    b = dt.random.uniform(-1, 1, (k, j), chunks=(-(-k // 8), -(-j // 4)), seed=2)
    with dt.config.set(force=strategy):
        z = a @ b
        with get_task_stream(client) as ts, dt.diagnostics.measure() as m:
            got = z.compute()
        explain = z.explain()
        pins = pins_of(z)
    np.testing.assert_allclose(got, a.compute() @ b.compute(), rtol=1e-9, atol=1e-9)
    if strategy is not None:
        assert explain.operators[0].strategy == strategy
    ran = [(t["key"], t["worker"]) for t in ts.data if t["key"] in pins]
    assert len(ran) == len(pins)
    assert all(pins[key] == worker for key, worker in ran)  # every chunk ran where the plan put it
    assert m.predicted_bytes > 0
    assert abs(m.bytes_moved - m.predicted_bytes) <= 0.1 * m.predicted_bytes, (m.bytes_moved, m.predicted_bytes)
    assert explain.measured_bytes == m.bytes_moved


def test_task_names_group_by_stage(client):
    from dask.utils import key_split
    x = dt.random.random((40, 40), chunks=10, seed=0)
    with dt.config.set(force="cmm"):  # partial products, then their aggregation
        y = x @ x
        stages = {key_split(k) for k in y.dask}
    out = key_split(y.name)  # the output blocks carry the array's name, after its last stage
    assert out == "matmul" and {"matmul-partial", out} <= stages  # join fused with its local fold
    assert not [s for s in stages if s.startswith("tra-")]


def test_collection_protocol(client):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((30, 20)), rng.standard_normal((20, 10))
    x, y = dt.from_array(a, chunks=(7, 6)), dt.from_array(b, chunks=(6, 4))
    z = x @ y
    r1, r2 = dask.compute(z, x)
    np.testing.assert_allclose(r1, a @ b)
    np.testing.assert_array_equal(r2, a)
    np.testing.assert_allclose(client.compute(z).result(), a @ b)
    p = client.persist(z)
    wait(p)
    fs = futures_of(p)
    assert len(fs) == z.npartitions and all(f.status == "finished" for f in fs)
    progress(p, notebook=False)
    np.testing.assert_allclose(p.compute(), a @ b)
    assert (z.shape, z.ndim, z.numblocks, z.npartitions, z.nbytes) == ((30, 10), 2, (5, 3), 15, 30 * 10 * 8)
    assert z.chunks == ((7, 7, 7, 7, 2), (4, 4, 2))


def test_persisted_input_is_planned_where_it_is(client):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 64))
    x = dt.from_array(a, chunks=16).persist()
    wait(x)
    held = {k: w for k, w in x.sources[next(iter(x.sources))].placement(client).items()}
    z = x @ x
    p, where = z.planned()
    placed = [n for n in p.root.walk() if type(n).__name__ == "Placed"][0]
    assert {k: tuple(sorted(where.workers[s] for s, _ in cs)) for k, cs in placed.copies.items()} == held
    with dt.diagnostics.measure() as m:
        np.testing.assert_allclose(z.compute(), a @ a)
    assert abs(m.bytes_moved - m.predicted_bytes) <= 0.1 * max(m.predicted_bytes, 1)


def test_a_slice_of_a_persisted_input_is_planned_where_its_blocks_are(client):
    """The rewrite reads a sliced input as its kept blocks alone: the plan places those blocks
    where they are held (none of the others), and moves exactly what it predicts."""
    a = np.random.default_rng(7).standard_normal((400, 40))
    x = dt.from_array(a, chunks=20).persist()
    wait(x)
    held = x.sources[next(iter(x.sources))].placement(client)
    for y, want in ((x[250:255] + x[:5], a[250:255] + a[:5]), (x[100:300].sum(0), a[100:300].sum(0))):
        p, where = y.planned()
        placed = [n for n in p.root.walk() if type(n).__name__ == "Placed" and n.input.whole is not None]
        assert placed
        for n in placed:
            assert {k: tuple(sorted(where.workers[s] for s, _ in cs)) for k, cs in n.copies.items()} == {
                k: held[k] for k in n.type.iter_keys()
            }
        with dt.diagnostics.measure() as m:
            np.testing.assert_allclose(y.compute(), want)
        assert m.bytes_moved == m.predicted_bytes


def _held_until(event_name):
    def block(b):
        from distributed import Event
        Event(event_name).wait(timeout=60)  # a bound, should the test fail before setting it
        return b
    return block


def _restrictions(keys, dask_scheduler=None):
    """{key: the worker its task is pinned to} for those of ``keys`` the scheduler has."""
    tasks = dask_scheduler.tasks
    return {k: sorted(tasks[k].worker_restrictions)[0] for k in keys if k in tasks}


def test_an_input_still_being_persisted_is_planned_where_it_is_pinned_with_no_wait(client, monkeypatch):
    """A persist still running (a loop's next step planned while the last computes): its
    blocks are planned on the workers their tasks are pinned to, without waiting for them."""
    from distributed import Event

    from dask_tra.runtime import sources
    monkeypatch.setattr(sources, "RECOMPUTE_WAIT_S", 2)  # a wait would time out: the test fails
    a = np.random.default_rng(8).standard_normal((64, 48))
    go = Event("planned-before-done")
    x = dt.from_array(a, chunks=(16, 24)).map_blocks(
        _held_until(go.name), dtype=a.dtype, meta=np.empty((0, 0), a.dtype)  # meta: never called here
    )
    x = x.persist()
    assert not any(f.done() for f in futures_of(x))
    keys = [f.key for f in futures_of(x)]
    pins: dict = {}
    while len(pins) < len(keys):  # the graph reaches the scheduler on its own stream
        pins = client.run_on_scheduler(_restrictions, keys=keys)
    z = x.T @ x
    p, where = z.planned()
    placed = [n for n in p.root.walk() if type(n).__name__ == "Placed"]
    assert placed and not any(f.done() for f in futures_of(x))
    want = {k[1:]: (w,) for k, w in pins.items()}
    for n in placed:
        assert {k: tuple(where.workers[s] for s, _ in cs) for k, cs in n.copies.items()} == want
    go.set()
    wait(x)
    assert {k[1:]: tuple(ws) for k, ws in client.who_has(x).items()} == want
    with dt.diagnostics.measure() as m:
        np.testing.assert_allclose(z.compute(), a.T @ a)
    assert m.bytes_moved == m.predicted_bytes


def test_a_held_result_computed_again_is_read_from_its_futures(client):
    """The first run leaves replicas of the inputs, so a new plan would differ, and the
    scheduler rejects other tasks under keys it holds ("different `run_spec`"): a result whose
    persisted copy is still held is read from it; once released, it is planned again."""
    from dask.core import flatten

    a = dt.random.uniform(-1, 1, (300, 225), chunks=(75, 45), seed=11)
    b = dt.random.uniform(-1, 1, (225, 270), chunks=(45, 90), seed=12)
    a, b = dask.persist(a, b)
    wait(futures_of(a) + futures_of(b))
    want = (a.compute() @ b.compute()).sum(axis=0)
    warned = sum("run_spec" in m for _, m in client.get_scheduler_logs())
    c = (a @ b).sum(axis=0)
    first = c.persist()
    wait(first)
    graph = dict(c.__dask_graph__())
    assert set(graph) == set(flatten(c.__dask_keys__()))
    assert all(isinstance(v, Future) for v in graph.values())
    n_out = len(graph)
    again = c.persist()
    np.testing.assert_allclose(again.compute(), want)
    np.testing.assert_allclose(c.compute(), want)
    assert sum("run_spec" in m for _, m in client.get_scheduler_logs()) == warned
    del first, again, graph
    gc.collect()  # a persisted RelArray may sit in a reference cycle
    assert len(c.__dask_graph__()) > n_out  # released: a plan's tasks again
    np.testing.assert_allclose(c.compute(), want)


def test_a_result_just_dropped_is_planned_again_not_read_from_its_futures(client):
    """A future's release waits its turn on the client's event loop: a result computed a moment
    ago and dropped is planned again (its bytes measured), not read from the futures on their
    way out."""
    a = dt.random.uniform(-1, 1, (300, 225), chunks=(75, 45), seed=13)
    b = dt.random.uniform(-1, 1, (225, 270), chunks=(45, 90), seed=14)
    c = a @ b
    first = c.persist()
    wait(first)
    held = futures_of(first)
    del first
    gc.collect()
    client.loop.add_callback(time.sleep, 0.3)  # the loop is busy: the releases below queue up
    for f in held:
        f.release()
    graph = dict(c.__dask_graph__())
    assert not any(isinstance(v, Future) for v in graph.values())
    with dt.diagnostics.measure() as m:
        c.compute()
    assert m.bytes_moved == m.predicted_bytes > 0


def test_plan_over_memory_limit_refused_before_running(client):
    big = dt.random.random((60_000, 60_000), chunks=15_000, seed=0)  # lazy: 28.8 GB
    token = big.name.split("-")[-1]
    with get_task_stream(client) as ts:
        with pytest.raises(MemoryLimitError, match=r"matmul.*no plan fits 3,221,225,472 bytes"):
            (big @ big).persist()  # compute() may first refuse the 28.8 GB result itself
    assert not [t for t in ts.data if token in str(t["key"])]  # nothing of it ran


def test_lazy_dask_array_inputs_are_made_where_the_plan_reads_them(client):
    import dask.array as da
    x = da.random.default_rng(4).standard_normal((600, 800), chunks=(150, 100))
    y = da.random.default_rng(5).standard_normal((800, 400), chunks=(100, 100))
    z = dt.from_dask(x) @ dt.from_dask(y)
    with dt.diagnostics.measure() as m:
        got = z.compute()
    np.testing.assert_allclose(got, x.compute() @ y.compute(), rtol=1e-9, atol=1e-9)
    assert abs(m.bytes_moved - m.predicted_bytes) <= 0.1 * m.predicted_bytes, (m.bytes_moved, m.predicted_bytes)


def test_measure_counts_the_result_gather_only_when_computing(client):
    x = dt.random.random((64, 64), chunks=16, seed=3)
    z = x @ x
    with dt.diagnostics.measure() as m:
        p = z.persist()
        wait(p)
    assert m.predicted_bytes == z.explain().predicted_bytes  # no gather: results stay on workers
    assert abs(m.bytes_moved - m.predicted_bytes) <= 0.1 * m.predicted_bytes
    with dt.diagnostics.measure() as m:
        z.compute()
    assert m.predicted_bytes == z.explain().predicted_bytes + z.explain().gather_bytes


def test_worker_lists_are_asked_of_the_scheduler_not_the_clients_cached_field(client, monkeypatch):
    """``Client.scheduler_info()`` returns a field that the client's periodic refresh (which asks
    for no workers) may overwrite between the query and the read. On a busy machine a
    ``measure()`` then knew no workers and counted 0 bytes moved, and planning saw one site.
    dask_tra asks the scheduler itself (``backends.cluster.workers_info``)."""
    from dask_tra.runtime.sites import current_sites
    update = client._update_scheduler_info

    async def raced(n_workers=0):
        await update(n_workers=n_workers)
        await update()  # the periodic refresh lands just after the query

    monkeypatch.setattr(client, "_update_scheduler_info", raced)
    assert client.scheduler_info(n_workers=-1)["workers"] == {}  # the race, made certain
    assert len(workers_info(client)) == 4
    assert current_sites().count == 4
    a = np.random.default_rng(5).standard_normal((120, 90))
    z = dt.from_array(a, chunks=30) @ dt.from_array(a.T, chunks=30)
    with dt.diagnostics.measure() as m:
        np.testing.assert_allclose(z.compute(), a @ a.T, rtol=1e-10, atol=1e-10)
    assert m.complete and m.predicted_bytes > 0
    assert abs(m.plan_bytes - m.predicted_bytes) <= 0.1 * m.predicted_bytes + 1024


def test_measure_reads_a_failed_worker_log_again_and_warns_when_it_cannot(client, monkeypatch):
    """A worker whose transfer log read fails (a busy comm) is asked again; one that fails every
    time leaves ``complete`` False, and a RuntimeWarning names it, rather than a silent undercount."""
    from dask_tra import diagnostics
    z = dt.random.random((64, 64), chunks=16, seed=3) @ dt.random.random((64, 64), chunks=16, seed=4)
    run = client.run
    for failures, tries in ((1, 2), (diagnostics.READ_TRIES, diagnostics.READ_TRIES)):
        asked, truth = [], {}

        def flaky(fn, *args, **kwargs):
            out = run(fn, *args, **kwargs)
            if fn is diagnostics._incoming_since:
                asked.append(sorted(out))
                if not truth:  # the first read: each worker's real count; the busiest one fails
                    truth.update((w, r[0]) for w, r in out.items())
                    truth["victim"] = max(out, key=lambda w: out[w][0])
                if truth["victim"] in out and len(asked) <= failures:
                    out[truth["victim"]] = OSError("comm closed")
            return out

        monkeypatch.setattr(client, "run", flaky)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with dt.diagnostics.measure() as m:
                z.persist().compute()
        monkeypatch.setattr(client, "run", run)
        victim = truth.pop("victim")
        assert truth[victim] > 0
        said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(asked) == tries and all(a == [victim] for a in asked[1:])  # only the failed worker again
        if failures < tries:
            assert m.complete and not said
            assert m.bytes_moved == sum(truth.values())
        else:
            assert not m.complete
            assert len(said) == 1 and f"worker {victim} could not be read (OSError: comm closed)" in said[0]
            assert m.bytes_moved == sum(truth.values()) - truth[victim]


def test_the_overhead_probe_runs_tasks_shaped_like_a_plans(client):
    """Each probe task computes, and half of them read a block made on another worker, as most
    of a plan's tasks do: the reads are transfers between workers. Every key has the one
    dashboard prefix ``dask_tra-calibrate``."""
    from dask.utils import key_split

    from dask_tra.runtime import rates
    workers = sorted(workers_info(client))
    with dt.diagnostics.measure() as m, get_task_stream(client) as ts:
        rates._pinned_graph_seconds(client, workers, 40)
    probe = [t for t in ts.data if key_split(t["key"]) == rates.PREFIX]
    assert len(probe) == len(ts.data) == 41
    computes = [s for t in probe for s in t["startstops"] if s["action"] == "compute"]
    assert sum(s["stop"] - s["start"] >= rates.TASK_CPU_S for s in computes) >= 40
    readers = [t for t in probe if t["key"][1] != "all" and not str(t["key"][1]).startswith("made")]
    assert len(readers) == 20
    assert m.bytes_moved >= 20 * 8000  # each reader fetched its 1000-float block from elsewhere
    assert m.other_bytes == m.bytes_moved  # the probe's keys are no plan's


def test_rates_are_measured_when_asked_and_planned_with(client):
    from dask_tra.runtime import rates
    measured = rates.measure(client, sorted(workers_info(client)))
    assert set(measured) == {"bandwidth", "task_overhead", "flop_rate"}
    assert all(np.isfinite(v) and v > 0 for v in measured.values())
    # every worker of this LocalCluster is on this host: each thread's share of its cores
    threads = sum(w["nthreads"] for w in workers_info(client).values())
    assert rates.core_share(client) == pytest.approx(min(1.0, len(os.sched_getaffinity(0)) / threads))
    r = dt.calibrate(client)
    assert set(r) == {"bandwidth", "task_overhead", "flop_rate"}
    x = dt.random.random((400, 400), chunks=100, seed=4)
    e = (x @ x).explain()
    b = e.breakdown
    # sites receive in parallel: the transfer time is the busiest receiver's bytes over one link
    assert b["transfer_s"] == pytest.approx(b["busiest_site_bytes"] / r["bandwidth"])
    assert e.predicted_bytes / 4 <= b["busiest_site_bytes"] <= e.predicted_bytes
    assert b["compute_s"] == pytest.approx(b["busiest_site_flops"] / r["flop_rate"])
    with dt.config.set(bandwidth=1e3, task_overhead=1e-3, flop_rate=1e9):  # config wins
        b = (x @ x).explain().breakdown
        assert b["transfer_s"] == pytest.approx(b["busiest_site_bytes"] / 1e3)


def test_is_future_is_a_type_check(client):
    from dask_tra.runtime.sources import is_future

    class Future:  # a class of the same name, with a key, is not a distributed.Future
        key = "x"

    fut = client.submit(int, 1)
    assert is_future(fut) and not is_future(Future()) and not is_future(fut.key)
    assert fut.result() == 1


def test_one_placement_query_per_compute(client, monkeypatch):
    """dask asks a collection for its graph 3-4 times in one compute; the scheduler is asked
    where the inputs are once. A plan asked for outside a compute asks anew (workers may have
    come or gone)."""
    from dask_tra.runtime import collection
    x = dt.random.random((200, 40), chunks=50, seed=1).persist()
    wait(x)
    asked = []
    real = collection.snapshot
    monkeypatch.setattr(collection, "snapshot", lambda c, keys, **kw: asked.append(len(keys)) or real(c, keys, **kw))
    a = x.compute()
    asked.clear()
    np.testing.assert_allclose((x.T @ x).compute(), a.T @ a, rtol=1e-10)
    assert asked == [4]  # x's 4 blocks, once
    y = x + 1
    y.planned()
    y.planned()
    assert asked == [4, 4, 4]


def test_a_reduction_streams_under_a_memory_limit_below_its_input(client):
    """The workers' thread counts reach the planner: a mean over 32 MB of blocks plans and runs
    under an 8 MB per-worker limit (its blocks stream), where counting every block a worker
    makes would refuse it."""
    x = dt.random.uniform(0, 1, (2000, 2000), chunks=250, seed=3)  # 64 blocks of 0.5 MB
    with dt.config.set(memory_limit=8_000_000):
        y = x.mean(axis=0)
        got = y.compute()
        peak = max(y.explain().predicted_peak_memory.values())
        with pytest.raises(dt.optimizer.MemoryLimitError), dt.config.set(threads=0):
            x.mean(axis=0).compute()  # unknown threads: all of a worker's blocks counted at once
    assert peak <= 8_000_000
    np.testing.assert_allclose(got, x.compute().mean(axis=0))

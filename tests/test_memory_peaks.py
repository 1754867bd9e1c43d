"""The worker plugin measuring managed-memory peaks and spilled bytes (``dask_tra/runtime/memory.py``).

Assertions are on bytes only: what the workers hold is known from the arrays' block sizes."""

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster, futures_of, wait

import dask_tra as dt
from dask_tra.backends.cluster import workers_info
from dask_tra.runtime import memory

MB = 10**6


# In-process workers see the test process's memory, which the whole suite grows past 400 MB:
# only managed memory may spill here, never the process-memory thresholds (or workers pause).
PROCESS_THRESHOLDS_OFF = {
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
}


@pytest.fixture(scope="module")
def client():
    with (
        dask.config.set(PROCESS_THRESHOLDS_OFF),
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0", memory_limit="400MB"
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def _installed(dask_worker):
    return memory.NAME in dask_worker.plugins


def _held_bytes(client, x) -> dict:
    """{worker: bytes of x's blocks it holds}, from the scheduler."""
    nbytes = client.nbytes(summary=False)
    out = {}
    for key, workers in client.who_has(futures_of(x)).items():
        for w in workers:
            out[w] = out.get(w, 0) + nbytes[key]
    return out


def test_not_installed_by_building_or_computing_a_graph():
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as c,
    ):
        x = dt.random.uniform(0, 1, (400, 400), chunks=200, seed=1)
        x.sum().compute()
        (da.ones((100, 100), chunks=50) + 1).sum().compute()
        assert not any(c.run(_installed).values())
        memory.reset(c)
        assert all(c.run(_installed).values())


def test_persisted_array_peak_at_least_its_bytes_per_worker(client):
    memory.reset(client)
    x = da.random.random((2000, 2000), chunks=500).persist()  # 32 MB in 16 blocks of 2 MB
    wait(x)
    held = _held_bytes(client, x)
    assert sum(held.values()) >= 32 * MB
    rows = memory.peaks(client)
    assert set(rows) == set(workers_info(client))
    for w, n in held.items():
        assert rows[w]["peak_bytes"] >= n
        assert rows[w]["peak_managed_bytes"] >= n
        assert rows[w]["spilled_bytes"] == 0
        assert rows[w]["transitions"] > 0
    assert memory.busiest(rows)["peak_bytes"] >= max(held.values())
    del x


def test_reset_forgets_earlier_peaks(client):
    x = da.random.random((2000, 2000), chunks=500).persist()
    wait(x)
    memory.reset(client)
    assert sum(r["peak_bytes"] for r in memory.peaks(client).values()) >= 32 * MB  # still held
    del x
    _wait_empty(client)
    memory.reset(client)
    rows = memory.peaks(client)
    assert all(r["peak_bytes"] < 2 * MB for r in rows.values())
    assert all(r["transitions"] == 0 for r in rows.values())


def test_short_peak_inside_one_compute_is_seen(client):
    """A 16 MB task result made and released within one compute (only its sum is kept): the
    peak is seen though the worker holds nothing afterwards."""
    _wait_empty(client)
    memory.reset(client)
    total = client.get({"block": (np.ones, (2000, 1000)), "total": (np.sum, "block")}, "total")
    assert total == 2e6
    rows = memory.peaks(client)
    assert max(r["peak_bytes"] for r in rows.values()) >= 16 * MB
    assert all(r["peak_bytes"] < 40 * MB for r in rows.values())


def test_dask_tra_tasks_are_measured(client):
    _wait_empty(client)
    memory.reset(client)
    x = dt.random.uniform(-1, 1, (2000, 1000), chunks=500, seed=3).persist()  # 16 MB
    wait(x)
    held = _held_bytes(client, x)
    rows = memory.peaks(client)
    assert sum(held.values()) >= 16 * MB
    for w, n in held.items():
        assert rows[w]["peak_bytes"] >= n
    del x


def test_registering_again_keeps_the_window(client):
    """Idempotent: a second registration (this client or another) does not replace the
    plugin, so the peaks already seen stay."""
    _wait_empty(client)
    memory.reset(client)
    client.get({"block-2": (np.ones, (2000, 1000)), "total-2": (np.sum, "block-2")}, "total-2")
    before = memory.peaks(client)
    client.register_plugin(memory.MemoryPeaks(), name=memory.NAME)
    with Client(client.scheduler.address) as other:
        after = memory.peaks(other)
    assert {w: r["peak_bytes"] for w, r in after.items()} == {w: r["peak_bytes"] for w, r in before.items()}
    assert max(r["peak_bytes"] for r in after.values()) >= 16 * MB


def test_spilled_bytes_counted(tmp_path):
    """Managed memory over the spill target goes to disk: the window counts the bytes written,
    and the fast part's peak stays near the target while all of it is managed."""
    with (
        dask.config.set(
            {
                "distributed.worker.memory.target": 0.05,
                "distributed.worker.memory.spill": False,
                "distributed.worker.memory.pause": False,
                "distributed.worker.memory.terminate": False,
            }
        ),
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            dashboard_address=":0",
            memory_limit="200MB",
            local_directory=str(tmp_path),
        ) as cluster,
        Client(cluster) as c,
    ):
        memory.reset(c)
        x = da.random.random((4000, 1000), chunks=(500, 1000)).persist()  # 32 MB, target 10 MB
        wait(x)
        [row] = memory.peaks(c).values()
        assert row["peak_managed_bytes"] >= 32 * MB
        assert row["spilled_bytes"] >= 16 * MB  # pickled size: about what sizeof says for float64
        assert row["peak_spilled_bytes"] >= 16 * MB
        assert row["peak_bytes"] <= 10 * MB + 4 * MB  # the target plus one block
        np.testing.assert_equal(x.sum().compute() > 0, True)
        memory.reset(c)
        [row] = memory.peaks(c).values()
        assert row["spilled_bytes"] == 0


def _wait_empty(client, timeout=10):
    import time

    deadline = time.time() + timeout
    while sum(client.run(lambda dask_worker: dask_worker.state.nbytes).values()) > 1 * MB:
        assert time.time() < deadline
        time.sleep(0.05)


def test_benchmark_checks_and_section(tmp_path):
    """``python -m benchmarks memory``'s result checks (exact for ones, statistical for random
    inputs) and its Markdown section writer."""
    from benchmarks import memory as bench

    dims = dict(n=1000, c=100, big=400)
    assert bench.compare("ones-sum", dims, {"dask.array": 1e6, "dask_tra": 1e6}) == "equal"
    assert bench.compare("ones-sum", dims, {"dask.array": 1e6, "dask_tra": 1e6 + 1}).startswith("WRONG")
    rng = np.random.default_rng(0)
    means = {lib: rng.uniform(size=(1000, 1000)).mean(axis=0) for lib in bench.LIBRARIES}
    assert bench.compare("uniform-mean0", dims, means).startswith("≈")
    assert bench.compare("uniform-mean0", dims, {"dask_tra": means["dask_tra"] + 0.1}).startswith("WRONG")
    x = rng.uniform(size=(1000, 1000))
    z = ((x - x.mean(0)) / x.std(0)).sum(1)
    assert bench.compare("standardise", dims, {"dask.array": z}) == "as expected (one library)"
    assert bench.compare("standardise", dims, {"dask.array": z + 1}).startswith("WRONG")
    doc = tmp_path / "doc.md"
    doc.write_text(f"before\n{bench.MARK_START}\nold\n{bench.MARK_END}\nafter\n")
    bench.write_section(str(doc), "| new |")
    assert doc.read_text() == f"before\n{bench.MARK_START}\n| new |\n{bench.MARK_END}\nafter\n"


def test_a_dead_workers_peaks_are_kept():
    """A worker process that dies (as the nanny ends one over its memory limit) leaves the
    numbers it last sent to the scheduler: ``peaks`` reports them, marked lost."""
    import os
    import time

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", memory_limit="400MB"
        ) as cluster,
        Client(cluster) as c,
    ):
        memory.reset(c)
        x = c.persist(da.random.random((2000, 1000), chunks=(500, 1000)))  # 16 MB in 4 blocks
        wait(x)
        held = _held_bytes(c, x)
        victim = max(held, key=held.get)
        time.sleep(memory.PUBLISH_S + 2 * memory.SAMPLE_S)
        c.run(os._exit, 1, workers=[victim], on_error="ignore")
        deadline = time.time() + 30
        while victim in workers_info(c):
            assert time.time() < deadline
            time.sleep(0.05)
        rows = memory.peaks(c)
        assert rows[victim]["lost"] is True
        assert rows[victim]["peak_bytes"] >= held[victim]
        assert all("lost" not in r for w, r in rows.items() if w != victim)

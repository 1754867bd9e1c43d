"""Spilling keeps pace with dask_tra's tasks (``runtime/spill.py``).

A persist larger than the worker's memory, on a worker process with a memory limit, with
distributed's memory monitor slowed to one tick an hour: its spilling by process memory (and
the nanny's restart) never acts, so what keeps the process near the spill threshold is
dask_tra's own spilling at the end of each task. Without it the worker keeps results up to its
spill buffer's managed target (60% of the limit) on top of the ~190 MiB the process holds
besides them. The bound checked is the kernel's peak resident memory of the worker process
(``memory.peaks``), not a time.
"""

from __future__ import annotations

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster, wait

import dask_tra.array as da
from dask_tra.runtime import compat, memory, spill

LIMIT = 500 * 10**6  # bytes, per worker
BLOCK = 1000 * 1000 * 8  # one float64 block
THREADS = 2


@pytest.fixture(scope="module")
def client():
    with dask.config.set({"distributed.worker.memory.monitor-interval": "1h"}):
        with (
            LocalCluster(
                n_workers=1,
                threads_per_worker=THREADS,
                processes=True,
                memory_limit=LIMIT,
                dashboard_address=":0",
            ) as cluster,
            Client(cluster) as c,
        ):
            yield c


def test_persist_larger_than_memory_spills_as_it_goes(client):
    x = da.random.uniform(size=(6000, 6000), chunks=1000, seed=3)  # 288 MB, 36 blocks
    memory.reset(client)
    y = x.persist()
    wait(y)
    (row,) = memory.peaks(client).values()
    thresholds = client.run(lambda dask_worker: dask_worker.memory_manager.memory_spill_fraction)
    (spill_fraction,) = thresholds.values()
    bound = LIMIT * spill_fraction + THREADS * BLOCK + 32 * 2**20
    assert row["peak_process_bytes"] <= bound, (row["peak_process_bytes"] / 2**20, bound / 2**20)
    assert row["spilled_bytes"] > 0
    evicted = client.run(lambda dask_worker: dask_worker.plugins[spill.NAME].evicted)
    assert sum(evicted.values()) > 0
    np.testing.assert_allclose(float(y[:1000, :1000].sum().compute()), float(x[:1000, :1000].sum().compute()))


def test_other_tasks_and_unlimited_workers_are_left_alone(client):
    def ends_of_foreign_tasks(dask_worker):
        plugin = dask_worker.plugins[spill.NAME]
        before = plugin.evicted
        plugin.transition("not-a-key", "executing", "memory")  # unknown task: not dask_tra's
        return plugin.evicted - before

    assert set(client.run(ends_of_foreign_tasks).values()) == {0}


def _task_ends_at(client, headroom: float):
    """200 task ends with the worker's spill threshold set ``headroom`` times its process memory
    (the limit restored afterwards, so an earlier test's leftover memory cannot decide it):
    (process memory reads, seconds taken, results evicted)."""

    def ends(dask_worker):
        import time as t

        manager, plugin = dask_worker.memory_manager, dask_worker.plugins[spill.NAME]
        limit = manager.memory_limit
        process = compat.worker_process_memory(dask_worker)
        manager.memory_limit = int(headroom * process / manager.memory_spill_fraction)
        try:
            plugin._read = None
            before, start = plugin.reads, t.monotonic()
            evicted = [plugin.spill() for _ in range(200)]
            return plugin.reads - before, t.monotonic() - start, sum(evicted)
        finally:
            manager.memory_limit = limit

    (result,) = client.run(ends).values()
    return result


def test_task_ends_well_under_the_threshold_read_the_process_memory_rarely(client):
    """Reading the process memory (``psutil``) is done on the worker's event loop: below the
    threshold, task ends within ``REREAD_S`` of the last read estimate it from the results'
    managed bytes instead of reading it again."""
    reads, elapsed, evicted = _task_ends_at(client, headroom=4.0)
    assert evicted == 0  # nothing is held: the process is under the threshold
    assert 1 <= reads <= 2 + int(elapsed / spill.REREAD_S)


def test_task_ends_near_the_threshold_read_the_process_memory_every_time(client):
    """Within ``MARGIN`` of the spill threshold the estimate is not trusted: every task end reads
    the process memory (and, still under the threshold, evicts nothing)."""
    reads, _, evicted = _task_ends_at(client, headroom=1.05)
    assert evicted == 0
    assert reads == 200

"""A worker dies in the middle of a matmul: the result is still right, within a bounded time."""
import os
import time

import numpy as np
import pytest
from distributed import Client, LocalCluster

import dask_tra as dt
from dask_tra.backends.cluster import workers_info


@pytest.fixture(scope="module")
def cluster_client():
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        yield cluster, client
        assert not [m for _, m in client.get_scheduler_logs(n=100_000) if "Detected different `run_spec`" in m]


def test_worker_killed_mid_matmul(cluster_client):
    cluster, client = cluster_client
    a = dt.random.uniform(-1, 1, (1600, 1600), chunks=200, seed=3)
    b = dt.random.uniform(-1, 1, (1600, 1600), chunks=200, seed=4)
    want = a.compute() @ b.compute()
    z = a @ b
    victim = z.planned()[1].workers[1]
    future = client.compute(z)
    deadline = time.time() + 30
    while not any(t.get("worker") == victim for t in client.get_task_stream(start=time.time() - 60)):
        assert time.time() < deadline and not future.done()
        time.sleep(0.05)
    assert not future.done()  # the computation is under way
    client.run(os._exit, 1, workers=[victim], on_error="ignore")  # dies without cleanup
    got = future.result(timeout=120)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    assert victim not in workers_info(client)

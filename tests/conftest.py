import pytest


@pytest.fixture(scope="module")
def client():
    """One LocalCluster per test module: 4 single-thread worker processes."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=4, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit="3GiB") as cluster, Client(cluster) as c:
        yield c

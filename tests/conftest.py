import pytest

# Tests that inspect the computed object with NumPy's own API (``.compute().dtype == np.float32``,
# ``result.min(0)``): under --chunk-backend they keep NumPy chunks (the values are checked for
# every backend elsewhere, e.g. tests/test_backends_torch.py).
NUMPY_RESULT_TESTS = {
    "test_array_creation.py::test_random_is_seeded_lazy_and_well_distributed",
    "test_dropin.py::test_dask_array_script_runs_unchanged[dask_tra.array-random_stats]",
}
# The modules --chunk-backend applies to: those comparing RelArrays built from NumPy data with
# NumPy. The others keep NumPy chunks: they test the algebra, rules and optimizer over NumPy
# dicts, or choose their chunk library themselves (test_autodiff_torch.py runs every case of
# test_autodiff.py on torch chunks; test_backends_*.py).
CHUNK_BACKEND_MODULES = ("test_array_", "test_dropin", "test_collection", "test_distributed", "test_faults",
                         "test_eindecomp")


def pytest_addoption(parser):
    parser.addoption(
        "--chunk-backend", default="numpy", choices=("numpy", "torch", "cupy"),
        help="run the NumPy-comparison tests with chunks of this library: NumPy arrays given to "
             "from_array become its arrays, and creation/random functions make its chunks "
             "(dask_tra.config backend). Results are still compared with NumPy.")


def pytest_report_header(config):
    return f"dask_tra chunk backend: {config.getoption('--chunk-backend')}"


@pytest.fixture(scope="session")
def chunk_backend(request):
    """The chunk library the suite runs with (``--chunk-backend``, default "numpy")."""
    return request.config.getoption("--chunk-backend")


@pytest.fixture(autouse=True)
def _with_chunk_backend(request, chunk_backend):
    """Under ``--chunk-backend=torch`` (or cupy): from_array converts NumPy inputs, and creation
    and random functions make chunks of that library, for every test not marked numpy_chunks
    (those skip when the library, or for CuPy a GPU, is missing)."""
    if chunk_backend == "numpy" or request.node.get_closest_marker("numpy_chunks"):
        yield
        return
    from dask_tra import backends
    pytest.importorskip(chunk_backend)
    if not backends.available(chunk_backend):
        pytest.skip(f"{chunk_backend} chunks need a device this machine lacks")
    import numpy as np

    import dask_tra
    from dask_tra.runtime import sources

    original = sources.ArraySource.__init__
    lib = backends.get(chunk_backend)

    def converting(self, x, chunks, name=None):
        if isinstance(x, (np.ndarray, np.generic)):
            x = lib.from_numpy(np.asarray(x))
        original(self, x, chunks, name)
    mp = pytest.MonkeyPatch()
    mp.setattr(sources.ArraySource, "__init__", converting)
    with dask_tra.config.set(backend=chunk_backend):
        yield
    mp.undo()


def pytest_configure(config):
    config.addinivalue_line("markers", "numpy_chunks: runs with NumPy chunks whatever --chunk-backend says")


def pytest_collection_modifyitems(config, items):
    for item in items:
        test = item.nodeid.split("/")[-1]
        if test in NUMPY_RESULT_TESTS or not test.startswith(CHUNK_BACKEND_MODULES):
            item.add_marker(pytest.mark.numpy_chunks)


@pytest.fixture(scope="module")
def client():
    """One LocalCluster per test module: 4 single-thread worker processes."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=4, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="3GiB") as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def small_client():
    """One small LocalCluster per test module: 2 single-thread worker processes."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="2GiB") as cluster, Client(cluster) as c:
        yield c

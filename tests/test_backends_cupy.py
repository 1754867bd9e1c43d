"""CuPy chunks on a GPU: skipped cleanly where CuPy is missing or sees no device.

What the torch tests check on the CPU (tests/test_backends_torch.py), checked again with
device arrays: chunks stay CuPy arrays (a silent copy to host would fail: CuPy refuses implicit
conversion to NumPy), results are CuPy arrays, random values equal NumPy's, a dask.array with
CuPy meta stays on the GPU, and GPU workers' memory is the plan's per-site limit.
"""
import numpy as np
import pytest

cupy = pytest.importorskip("cupy")

from dask_tra import backends  # noqa: E402

if not backends.available("cupy"):
    pytest.skip("CuPy is installed but sees no GPU", allow_module_level=True)

import dask_tra as dt  # noqa: E402
import dask_tra.array as da  # noqa: E402
from dask_tra.array.testing import assert_eq  # noqa: E402

pytestmark = pytest.mark.numpy_chunks

RNG = np.random.default_rng(0)
A = RNG.standard_normal((9, 7))
B = RNG.standard_normal((7, 5))


def test_backend_interface_on_the_gpu():
    b = backends.get("cupy")
    c = cupy.ones((2, 3), dtype=cupy.float32)
    assert backends.backend_of(c, np.ones(3), 1.0) is b and b.sizeof(c) == 24
    assert b.numpy_dtype(c.dtype) == np.float32 and b.device_memory() > 0
    r = b.random("standard_normal", (1, 2), (3, 4), np.float64)
    assert isinstance(r, cupy.ndarray)
    np.testing.assert_array_equal(b.to_numpy(r), backends.NUMPY.random("standard_normal", (1, 2), (3, 4),
                                                                       np.float64))


def test_cupy_chunks_stay_on_the_gpu():
    x = dt.from_array(cupy.asarray(A), chunks=(4, 3))
    y = dt.from_array(cupy.asarray(B), chunks=(3, 2))
    assert x.expr.type.backend == "cupy" and x.dtype == np.float64
    for z, want in [(x @ y, A @ B), (np.exp(x).sum(axis=0), np.exp(A).sum(0)), (x.T[::-1], A.T[::-1]),
                    (da.concatenate([x, x[:2]]), np.concatenate([A, A[:2]])), (x.argmax(axis=1), A.argmax(1)),
                    (x.rechunk((2, 7)).var(axis=0), A.var(0)), (da.where(x > 0, x, 0), np.where(A > 0, A, 0))]:
        got = z.compute()
        assert isinstance(got, cupy.ndarray)
        assert_eq(z, want, rtol=1e-9, atol=1e-9)


def test_to_backend_and_config_backend():
    x = dt.from_array(A, chunks=4).to_backend("cupy")
    assert isinstance(x.compute(), cupy.ndarray)
    assert isinstance(x.to_backend("numpy").compute(), np.ndarray)
    with dt.config.set(backend="cupy"):
        r = dt.random.random((8, 8), chunks=4, seed=2)
    assert r.expr.type.backend == "cupy" and isinstance(r.compute(), cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(r.compute()), dt.random.random((8, 8), chunks=4, seed=2).compute())
    if backends.available("torch"):
        t = x.to_backend("torch", device="cuda")
        assert t.compute().is_cuda  # DLPack: no copy through host


def test_dask_array_with_cupy_meta_stays_on_the_gpu():
    import dask.array as dda
    d = dda.from_array(cupy.asarray(A), chunks=(4, 3), asarray=False)
    x = dt.from_dask(d)
    assert x.expr.type.backend == "cupy"
    assert isinstance((x @ x.T).compute(), cupy.ndarray)


def test_gpu_cluster_memory_limit():
    dask_cuda = pytest.importorskip("dask_cuda")
    from distributed import Client
    from dask_tra.backends import cluster
    with dask_cuda.LocalCUDACluster(n_workers=1) as lc, Client(lc) as client:
        gpus = cluster.gpu_workers(client)
        assert gpus
        mem = cluster.device_memory(client)
        limit = cluster.site_memory_limit(10**15, {"cupy"}, client)
        assert limit == int(min(m for m in mem.values() if m) * 0.8)
        x = dt.from_array(cupy.asarray(A), chunks=(4, 3))
        assert isinstance((x @ x.T).compute(), cupy.ndarray)

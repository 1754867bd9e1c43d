"""The chunk-backend interface without optional libraries: the registry, the NumPy backend,
choosing backends from chunks, the GPU memory-limit rules, and that dask_tra imports and
computes when torch and CuPy cannot be imported."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dask_tra as dt
import dask_tra.array as da
from dask_tra import backends
from dask_tra.backends import cluster


def test_registry_and_numpy_backend():
    assert backends.names() == ("numpy", "cupy", "scipy.sparse", "sparse", "torch")
    b = backends.get("numpy")
    assert backends.get(b) is b and backends.backend_of(np.ones(3), 2.0, None) is b
    assert backends.backend_of() is b and backends.backend_of_type([1, 2]) == "numpy"
    assert b.available() and b.xp.__name__ == "array_api_compat.numpy"
    assert b.np().sum is np.sum and b.np().astype(np.arange(3), np.float32).dtype == np.float32
    assert b.numpy_dtype(np.dtype("int16")) == np.int16 and b.dtype("f4") == np.float32
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(b.concat([a, a], axis=1), np.concatenate([a, a], axis=1))
    np.testing.assert_array_equal(b.einsum("ij,kj->ik", a, a), a @ a.T)
    np.testing.assert_array_equal(b.reduce("nansum", a, axis=(0,), keepdims=True, dtype=np.int64),
                                  np.nansum(a, axis=0, keepdims=True, dtype=np.int64))
    assert b.sizeof(a) == 96 and backends.sizeof(a[:, :2]) == 48
    assert b.to_numpy(a) is a and backends.to_numpy(a) is a
    np.testing.assert_array_equal(b.full((2,), 7, np.int8), [7, 7])
    r1 = b.random("uniform", (1, 0, 2), (3, 2), np.float64, (("high", 2.0), ("low", 1.0)))
    r2 = np.random.default_rng([1, 0, 2]).uniform(size=(3, 2), low=1.0, high=2.0)
    np.testing.assert_array_equal(r1, r2)
    same, chunks = backends.align(a, 1.0)
    assert same is b and chunks[0] is a
    nested = [[a[:2, :2], a[:2, 2:]], [a[2:, :2], a[2:, 2:]]]
    np.testing.assert_array_equal(backends.block(nested), a)
    with pytest.raises(ValueError, match="unknown chunk backend 'jax'"):
        backends.get("jax")


def test_a_chunk_is_recognised_by_its_type_without_importing_its_library():
    class FakeTensor:
        dtype = "float32"
    FakeTensor.__module__ = "torch"
    assert backends.backend_of_type(FakeTensor()) == "torch"
    assert backends.backend_of(np.ones(2), FakeTensor()) is backends.get("torch")

    class Sub(np.ndarray):
        pass
    Sub.__module__ = "mypackage"
    assert backends.backend_of_type(np.ones(2).view(Sub)) == "numpy"


def test_config_backend_is_validated_and_defaults_to_numpy():
    assert dt.config.get("backend") == "numpy" and dt.config.get("device") is None
    with pytest.raises(ValueError, match="unknown chunk backend"):
        dt.config.set(backend="jax")
    x = dt.random.random((4, 4), chunks=2, seed=0)
    assert x.expr.type.backend == "numpy" and isinstance(x.compute(), np.ndarray)
    y = dt.from_array(np.ones((4, 4)), chunks=2).to_backend("numpy")
    assert y.expr.type.backend == "numpy"


def test_to_backend_is_a_transform_with_a_conversion_kernel():
    from dask_tra.array.kernels import ToBackend
    from dask_tra.tra import Transform
    x = dt.from_array(np.ones((4, 4)), chunks=2)
    y = da.to_backend(x, "torch")
    assert isinstance(y.expr, Transform) and y.expr.kernel == ToBackend("torch")
    assert y.expr.type.backend == "torch" and y.dtype == x.dtype and y.chunks == x.chunks
    assert ToBackend("torch").out_backend("numpy") == "torch"
    assert "to_torch" in repr(y.expr)


def test_gpu_memory_limit_rules():
    assert not cluster.uses_device_memory({"numpy", "torch"})
    assert cluster.uses_device_memory({"numpy", "cupy"})
    assert cluster.uses_device_memory({"torch"}, device="cuda:1")
    assert cluster.site_memory_limit(10**9, {"numpy"}, None, setting=10**6) == 10**9
    assert cluster.site_memory_limit(10**9, {"cupy"}, None, setting=10**6) == 10**6
    assert cluster.site_memory_limit(None, {"cupy"}, None, setting=10**6) == 10**6
    assert cluster.site_memory_limit(10**5, {"cupy"}, None, setting=10**6) == 10**5
    assert cluster.site_memory_limit(10**9, {"cupy"}, None, setting=0.8) == 10**9  # no GPU known

    class FakeClient:  # four workers: two with GPU=1 resources (16 GB and 24 GB GPUs)
        asynchronous = False

        class scheduler:
            @staticmethod
            def identity(n_workers=0):
                return {"workers": {
                    "tcp://a:1": {"resources": {"GPU": 1}, "gpu": {"memory-total": 16 * 2**30}},
                    "tcp://b:1": {"resources": {"GPU": 1}, "gpu": {"memory-total": 24 * 2**30}},
                    "tcp://c:1": {"resources": {}}, "tcp://d:1": {}} if n_workers == -1 else {}}

        def sync(self, fn, **kwargs):
            return fn(**kwargs)

        def run(self, fn, workers=()):
            return {w: None for w in workers}
    c = FakeClient()
    assert cluster.gpu_workers(c) == ("tcp://a:1", "tcp://b:1")
    assert cluster.gpu_memory_limit(c, 0.5) == 8 * 2**30
    assert cluster.site_memory_limit(64 * 2**30, {"cupy"}, c) == int(16 * 2**30 * 0.8)
    assert cluster.site_memory_limit(64 * 2**30, {"numpy"}, c) == 64 * 2**30


def test_dask_tra_works_without_torch_and_cupy():
    """torch and CuPy are optional: with both unimportable, dask_tra imports, computes with NumPy
    chunks, reports them unavailable, and names the missing library when asked for one."""
    script = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # import torch -> ImportError
        sys.modules["cupy"] = None
        import numpy as np
        import dask_tra as dt
        from dask_tra import backends
        x = dt.random.random((6, 4), chunks=3, seed=1)
        a = x.compute()
        np.testing.assert_allclose((x @ x.T).compute(), a @ a.T)
        np.testing.assert_allclose(dt.exp(dt.from_array(a, chunks=2)).sum(axis=0).compute(), np.exp(a).sum(0))
        assert not backends.available("torch") and not backends.available("cupy")
        try:
            dt.from_array(a, chunks=2).to_backend("torch").compute()
        except ImportError as e:
            assert "pip install torch" in str(e), e
        else:
            raise AssertionError("expected ImportError")
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_concatenating_transposed_blocks_writes_c_order():
    """np.concatenate keeps its inputs' memory layout; the NumPy backend writes C order, as
    dask's concatenate3 does, so the reader of a transposed concatenation gets contiguous rows."""
    from dask_tra.tra.kernels import concat_chunks
    a = np.random.default_rng(2).standard_normal((6, 4, 5))
    parts = [a[:2].transpose(1, 2, 0), a[2:].astype(np.float32).transpose(1, 2, 0)]
    got = concat_chunks(parts, 2)
    assert got.flags.c_contiguous and got.dtype == np.float64
    np.testing.assert_array_equal(got, np.concatenate(parts, axis=2))
    plain = [np.ascontiguousarray(p) for p in parts]
    np.testing.assert_array_equal(concat_chunks(plain, -1), np.concatenate(plain, axis=-1))

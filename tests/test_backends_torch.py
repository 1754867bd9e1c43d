"""torch chunks, compared with NumPy: a cross-section of the frontend (elementwise, reductions,
contractions, structure, joining, rechunking, random and constant creation), conversions
(``to_backend``, ``from_array(tensor)``, ``compute()`` returning tensors), kernels that never
go through NumPy, and a LocalCluster run whose measured bytes count tensors' real size.

The whole NumPy-comparison suite also runs with torch chunks: ``pytest --chunk-backend=torch``
(see tests/conftest.py)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dask_tra as dt  # noqa: E402
import dask_tra.array as da  # noqa: E402
from dask_tra import backends  # noqa: E402
from dask_tra.array.testing import assert_eq, reference  # noqa: E402

pytestmark = pytest.mark.numpy_chunks  # the conversions here are explicit

RNG = np.random.default_rng(42)
A = RNG.standard_normal((9, 7))
B = RNG.standard_normal((7, 5))
I32 = RNG.integers(-5, 9, (9, 7)).astype(np.int32)


def tx(a, chunks):
    """A RelArray of torch chunks over NumPy array ``a``."""
    x = dt.from_array(torch.from_numpy(np.ascontiguousarray(a)), chunks=chunks)
    assert x.expr.type.backend == "torch"
    return x


def chunk_types(x):
    """The library of every chunk the reference executor computes for ``x``."""
    from dask_tra.tra import evaluate
    inputs = {n: {k: s.chunk(k) for k in s.type.iter_keys()} for n, s in x.sources.items()}
    return {backends.backend_of_type(c) for c in evaluate(x.expr, inputs).values()}


def check(x, expected, **kw):
    """Same values and dtype as NumPy; the result (and every chunk) is torch."""
    got = x.compute()
    assert isinstance(got, torch.Tensor), type(got)
    assert backends.numpy_dtype(got.dtype) == x.dtype
    assert chunk_types(x) == {"torch"}
    assert_eq(x, expected, **kw)


# ---------------------------------------------------------------- the backend interface

def test_backend_interface():
    t = torch.ones(2, 3, dtype=torch.float32)
    b = backends.backend_of(t)
    assert b is backends.get("torch") and b.name == "torch" and backends.available("torch")
    assert backends.backend_of(np.ones(2), t, 3.0) is b  # NumPy operands and scalars defer
    assert backends.backend_of(np.ones(2), 1) is backends.get("numpy")
    assert b.dtype(np.float32) is torch.float32 and b.numpy_dtype(torch.int64) == np.int64
    assert backends.numpy_dtype(torch.complex128) == np.complex128
    for name in ("bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64", "complex64"):
        assert b.numpy_dtype(b.dtype(name)) == np.dtype(name)
    assert b.sizeof(t) == 24 and backends.sizeof(t[:, :2]) == 16
    from dask.sizeof import sizeof
    assert sizeof(torch.ones(100, 10, dtype=torch.float64)) == 8000  # registered with Dask
    assert isinstance(b.xp.sum(t), torch.Tensor)
    np.testing.assert_array_equal(b.to_numpy(b.full((2, 2), 3, np.int16)), np.full((2, 2), 3, np.int16))
    r = b.random("standard_normal", (7, 0, 1), (3, 4), np.float32)
    assert isinstance(r, torch.Tensor) and r.dtype == torch.float32
    np.testing.assert_array_equal(b.to_numpy(r), backends.NUMPY.random("standard_normal", (7, 0, 1), (3, 4),
                                                                       np.float32))
    c = b.concat([t, 2 * t], axis=0)
    assert c.shape == (4, 3) and b.einsum("ij,kj->ik", c, t).shape == (4, 2)
    assert b.reduce("nanmax", torch.tensor([[1.0, float("nan")], [float("nan"), float("nan")]]), axis=1
                    ).isnan().tolist() == [False, True]
    with pytest.raises(TypeError, match="two libraries"):
        backends.backend_of(t, _FakeCupy())
    with pytest.raises(ValueError, match="unknown chunk backend"):
        backends.get("jax")


class _FakeCupy:
    pass


_FakeCupy.__module__ = "cupy._core.core"


def test_numpy_ufuncs_keep_numpy_dtypes_and_values():
    ns = backends.get("torch").np()
    a = np.array([-2.5, 0.0, 1.5, np.nan])
    i = np.array([-3, 0, 4, 7], dtype=np.int32)
    t, ti = torch.from_numpy(a), torch.from_numpy(i)
    for name, args, targs in [("add", (i, 1.5), (ti, 1.5)), ("true_divide", (i, i), (ti, ti)),
                              ("floor_divide", (i, 0), (ti, 0)), ("sign", (a,), (t,)),
                              ("maximum", (a, 0), (t, 0)), ("fmax", (a, 0), (t, 0)), ("cbrt", (a,), (t,)),
                              ("less", (a + 1j, a), (t + 1j, t)), ("exp", (i,), (ti,))]:
        with np.errstate(all="ignore"):
            want = getattr(np, name)(*args)
        got = getattr(ns, name)(*targs)
        assert backends.numpy_dtype(got.dtype) == want.dtype, name
        np.testing.assert_allclose(got.numpy(), want, equal_nan=True, err_msg=name)


# ---------------------------------------------------------------- the frontend on torch chunks

def test_elementwise_and_ufuncs():
    x, i = tx(A, (4, 3)), tx(I32, (4, 3))
    check(np.exp(x) * 2 - x / 3, np.exp(A) * 2 - A / 3)
    check(i // 3 + 1.5, I32 // 3 + 1.5)  # int32 // int -> int32, + float -> float64 (NumPy's rules)
    check(da.where(x > 0, x, i), np.where(A > 0, A, I32))
    check(da.clip(x, -0.5, 0.5).astype(np.float32), np.clip(A, -0.5, 0.5).astype(np.float32))
    check(da.isclose(x, x + 1e-9), np.isclose(A, A + 1e-9))
    check(x + np.arange(7.0), A + np.arange(7.0))  # a NumPy operand joins the torch chunks
    check(np.arange(7.0) - x, np.arange(7.0) - A)


def test_reductions():
    x, i = tx(A, (4, 3)), tx(I32, (4, 3))
    check(x.sum(axis=0), A.sum(0))
    check(i.sum(), I32.sum())
    check(x.mean(axis=1, keepdims=True), A.mean(1, keepdims=True))
    check(x.std(axis=0), A.std(0), rtol=1e-6)
    check(x.max(axis=1), A.max(1))
    check(x.argmin(axis=0), A.argmin(0))
    check(x.argmax(), A.argmax())
    check(x.cumsum(axis=0), A.cumsum(0))
    check(da.nanmax(x, axis=1), np.nanmax(A, 1))
    an = np.where(A > 0.5, np.nan, A)
    check(da.nanmean(tx(an, (4, 3)), axis=0), np.nanmean(an, 0), rtol=1e-6)
    check((x > 0).any(axis=0), (A > 0).any(0))


def test_matmul_and_einsum():
    x, y = tx(A, (4, 3)), tx(B, (3, 2))
    check(x @ y, A @ B, rtol=1e-9)
    check(da.einsum("ij,ik->jk", x, x), np.einsum("ij,ik->jk", A, A), rtol=1e-9)
    check(da.einsum("ij,kj->ik", x, x, combine="sqdiff", aggregate="add"),
          ((A[:, None] - A[None]) ** 2).sum(-1), rtol=1e-9)
    check(tx(I32, 4) @ y.astype(np.float32)[:7], (I32 @ B.astype(np.float32)), rtol=1e-5)


def test_structure_slicing_joining_rechunking():
    x = tx(A, (4, 3))
    check(x.T, A.T)
    check(x.reshape(7, 9), A.reshape(7, 9))
    check(x[1:8:2, ::-2], A[1:8:2, ::-2])
    check(x[[0, 5, 5, 2]], A[[0, 5, 5, 2]])
    check(x[A[:, 0] > 0], A[A[:, 0] > 0])
    check(da.concatenate([x, x[:2]], axis=0), np.concatenate([A, A[:2]]))
    check(da.stack([x, x + 1]), np.stack([A, A + 1]))
    check(x.rechunk((2, 7)), A)
    check(da.broadcast_to(x[0], (3, 7)), np.broadcast_to(A[0], (3, 7)))
    check(da.tril(x, 1), np.tril(A, 1))
    check(da.flip(x, 1), np.flip(A, 1))


def test_random_and_creation_follow_the_backend_setting():
    with dt.config.set(backend="torch"):
        r = dt.random.standard_normal((10, 6), chunks=(4, 3), seed=3, dtype=np.float32)
        z, e = da.zeros((5, 4), chunks=2, dtype=np.int32), da.eye(5, chunks=2)
        ar, ls = da.arange(0, 10, 3, chunks=2), da.linspace(0, 1, 7, chunks=3)
    for v in (r, z, e, ar, ls):
        assert v.expr.type.backend == "torch" and isinstance(v.compute(), torch.Tensor)
    same = dt.random.standard_normal((10, 6), chunks=(4, 3), seed=3, dtype=np.float32)
    check(r, same.compute())  # same seed, same chunking: the same values as NumPy chunks
    check(z, np.zeros((5, 4), np.int32))
    check(e, np.eye(5))
    check(ar * 1.5 + ls[:4], np.arange(0, 10, 3) * 1.5 + np.linspace(0, 1, 7)[:4])
    with pytest.raises(ValueError, match="unknown chunk backend"):
        dt.config.set(backend="jax")


def test_to_backend_round_trips_and_mixing():
    x = dt.from_array(A, chunks=(4, 3))
    t = x.to_backend("torch")
    assert t.expr.type.backend == "torch" and t.dtype == x.dtype
    check(t * 2, A * 2)
    back = t.to_backend("numpy")
    assert back.expr.type.backend == "numpy"
    got = back.compute()
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, A)
    assert x.to_backend("numpy") is x
    check(x + t, A + A)  # a NumPy-chunked operand joins the torch one
    assert (x + t).expr.type.backend == "torch"
    f32 = tx(A.astype(np.float32), 4)
    assert np.asarray(f32).dtype == np.float32  # __array__: the explicit copy to host


def test_from_array_keeps_torch_chunks_and_compute_returns_a_tensor():
    t = torch.arange(24, dtype=torch.int64).reshape(4, 6)
    x = dt.from_array(t, chunks=(2, 4))
    assert x.dtype == np.int64 and x.expr.type.backend == "torch"
    assert {type(x.sources[n].chunk(k)) for n in x.sources for k in x.sources[n].type.iter_keys()} == {torch.Tensor}
    got = x.compute()
    assert isinstance(got, torch.Tensor) and torch.equal(got, t)
    assert isinstance((x * 2).sum().compute(), torch.Tensor)
    np.testing.assert_array_equal(reference(x), t.numpy())


def test_kernels_never_convert_tensors_through_numpy(monkeypatch):
    """No silent round trip: with Tensor.__array__/.numpy refused, a plan of every operator family
    computes, on the synchronous scheduler, and returns a tensor."""
    x, y = tx(A, (4, 3)), tx(B, (3, 2))
    z = (da.concatenate([np.exp(x[::-1]) @ y, x[:3, :5].T.reshape(5, 3) @ y[:3]], axis=0).var(axis=0)
         + da.where(x > 0, x, 0).argmax(axis=0)[:5].astype(np.float64) + x.cumsum(axis=1)[0, :5]
         + da.einsum("ij,ij->j", x, x)[:5])
    want = (np.concatenate([np.exp(A[::-1]) @ B, A[:3, :5].T.reshape(5, 3) @ B[:3]]).var(0)
            + np.where(A > 0, A, 0).argmax(0)[:5] + A.cumsum(1)[0, :5] + np.einsum("ij,ij->j", A, A)[:5])

    def refuse(*a, **k):
        raise AssertionError("a torch chunk went through NumPy")
    monkeypatch.setattr(torch.Tensor, "__array__", refuse)
    monkeypatch.setattr(torch.Tensor, "numpy", refuse)
    got = z.compute(scheduler="sync")
    monkeypatch.undo()
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-9)


# ---------------------------------------------------------------- on a cluster

def test_distributed_torch_chunks_measured_bytes(small_client):
    """Scattered torch blocks and worker-made random torch chunks: tensors all the way, and the
    bytes moved between workers (which Dask measures with ``sizeof``) match the plan's
    prediction, made from the metadata's dtype."""
    x = tx(RNG.standard_normal((400, 300)), (100, 150))
    with dt.config.set(backend="torch"):
        y = dt.random.uniform(-1, 1, (300, 200), chunks=(150, 100), seed=7)
    assert y.expr.type.backend == "torch"
    z = x @ y
    with dt.diagnostics.measure() as m:
        got = z.compute()
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), x.compute().numpy() @ y.compute().numpy(), rtol=1e-9)
    assert m.predicted_bytes > 0
    assert abs(m.bytes_moved - m.predicted_bytes) <= 0.1 * m.predicted_bytes, (m.bytes_moved, m.predicted_bytes)
    sizes = small_client.run(lambda: __import__("dask.sizeof").sizeof.sizeof(__import__("torch").ones(1000)))
    assert set(sizes.values()) == {4000}  # workers measure tensors by their bytes


def test_gpu_memory_limit_helpers(small_client):
    from dask_tra.backends import cluster
    assert cluster.gpu_workers(small_client) == ()  # CPU workers: no GPU, none reported
    assert set(cluster.device_memory(small_client).values()) == {None}
    assert cluster.site_memory_limit(2**31, {"numpy", "torch"}, small_client) == 2**31
    assert cluster.site_memory_limit(2**31, {"cupy"}, small_client) == 2**31  # unknown GPU: host limit
    assert cluster.site_memory_limit(2**31, {"cupy"}, small_client, setting=2**20) == 2**20
    assert cluster.site_memory_limit(None, {"torch"}, None, setting=2**20, device="cuda") == 2**20


def test_gpu_workers_example_falls_back_to_torch_on_cpu(capsys):
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "gpu_workers.py"
    spec = importlib.util.spec_from_file_location("gpu_workers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--no-cluster", "--size", "200"])
    printed = capsys.readouterr().out
    if not backends.available("cupy"):
        assert "note: no GPU" in printed and isinstance(out, torch.Tensor)
    assert "result:" in printed and "dask_tra plan on" in printed

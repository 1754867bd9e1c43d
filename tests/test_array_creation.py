"""dask_tra.array creation against NumPy: from_array/asarray/from_dask, constants, ranges, eye,
*_like, seeded random arrays."""
import dask
import dask.array
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dask_tra
import dask_tra.array as da
from dask_tra.array.testing import assert_eq, strategies

shapes, chunking, arrays = strategies()
SETTINGS = settings(max_examples=50, deadline=None)


@SETTINGS
@given(arrays(max_dims=4, max_side=5))
def test_from_array_round_trip_keeps_ragged_chunks(ax):
    a, x = ax
    assert x.shape == a.shape and x.dtype == a.dtype and x.ndim == a.ndim and x.size == a.size
    assert tuple(map(sum, x.chunks)) == a.shape
    assert_eq(x, a)
    assert_eq(da.asarray(a), a)


@SETTINGS
@given(shapes(max_dims=3, max_side=5), st.sampled_from(["float64", "int32", "bool", "complex64"]),
       st.sampled_from([0, 1, 2.5, -3, True]), st.data())
def test_constants_and_likes(shape, dtype, value, data):
    chunks = data.draw(chunking(shape))
    assert_eq(da.zeros(shape, dtype=dtype, chunks=chunks), np.zeros(shape, dtype))
    assert_eq(da.ones(shape, dtype=dtype, chunks=chunks), np.ones(shape, dtype))
    assert da.empty(shape, dtype=dtype, chunks=chunks).shape == shape
    assert_eq(da.full(shape, value, chunks=chunks), np.full(shape, value))
    x = da.full(shape, value, dtype=dtype, chunks=chunks)
    assert_eq(x, np.full(shape, value, dtype=dtype))
    for f in ("zeros_like", "ones_like", "empty_like"):
        y = getattr(da, f)(x)
        assert y.shape == shape and y.dtype == x.dtype and y.chunks == x.chunks
    assert_eq(da.full_like(x, 7, dtype="int64"), np.full(shape, 7, dtype="int64"))


@SETTINGS
@given(st.integers(-10, 10), st.integers(-10, 30), st.sampled_from([1, 2, 3, -1, -2, 0.5]), st.integers(1, 6))
def test_arange(start, stop, step, chunk):
    want = np.arange(start, stop, step)
    assert_eq(da.arange(start, stop, step, chunks=chunk), want)
    if stop >= 0:
        assert_eq(da.arange(stop, chunks=chunk), np.arange(stop))


@SETTINGS
@given(st.floats(-5, 5), st.floats(-5, 5), st.integers(0, 12), st.booleans(), st.integers(1, 5))
def test_linspace(start, stop, num, endpoint, chunk):
    assert_eq(da.linspace(start, stop, num, endpoint=endpoint, chunks=chunk),
              np.linspace(start, stop, num, endpoint=endpoint), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(st.integers(0, 7), st.one_of(st.none(), st.integers(0, 7)), st.integers(-8, 8), st.integers(1, 4))
def test_eye(n, m, k, chunk):
    assert_eq(da.eye(n, chunks=chunk, M=m, k=k), np.eye(n, m, k=k))
    assert_eq(da.eye(n, chunks=chunk, M=m, k=k, dtype=int), np.eye(n, m, k=k, dtype=int))


def test_random_is_seeded_lazy_and_well_distributed():
    r = da.random
    a = r.random((40, 30), chunks=(7, 11), seed=3)
    assert isinstance(a, dask_tra.RelArray) and a.chunks[0] == (7,) * 5 + (5,)
    np.testing.assert_array_equal(a.compute(), r.random((40, 30), chunks=(7, 11), seed=3).compute())
    assert not np.array_equal(a.compute(), r.random((40, 30), chunks=(7, 11), seed=4).compute())
    v = a.compute()
    assert 0 <= v.min() and v.max() < 1 and abs(v.mean() - 0.5) < 0.05
    u = r.uniform(-2, 3, size=(50, 20), chunks=10, seed=1).compute()
    assert u.min() >= -2 and u.max() < 3 and u.std() > 1
    n = r.normal(5, 2, size=(60, 50), chunks=20, seed=2).compute()
    assert abs(n.mean() - 5) < 0.2 and abs(n.std() - 2) < 0.2
    s = r.standard_normal((30, 30), chunks=9, seed=5, dtype=np.float32)
    assert s.dtype == np.float32 and s.compute().dtype == np.float32
    i = r.randint(3, 9, size=(40,), chunks=7, seed=6).compute()
    assert i.min() >= 3 and i.max() < 9 and len(set(i.tolist())) > 3 and i.dtype == np.int64
    g = r.default_rng(42)
    g1, g2 = g.random((5, 5), chunks=2), g.random((5, 5), chunks=2)
    assert not np.array_equal(g1.compute(), g2.compute())
    np.testing.assert_array_equal(r.default_rng(42).random((5, 5), chunks=2).compute(), g1.compute())
    assert r.RandomState(1).randint(0, 4, size=10, chunks=3).compute().max() < 4


def test_from_dask_is_lazy_and_asarray_accepts_many_inputs():
    calls = []

    def make():
        calls.append(1)
        return np.arange(12.0).reshape(3, 4)
    x = dask.array.from_delayed(dask.delayed(make)(), shape=(3, 4), dtype=float)
    y = da.from_dask(x) * 2 + 1
    assert calls == []
    assert_eq(y, np.arange(12.0).reshape(3, 4) * 2 + 1)
    assert_eq(da.asarray([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]))
    assert_eq(da.asarray(3.5), np.asarray(3.5))
    assert_eq(da.asarray(dask.array.ones((2, 3), chunks=2)), np.ones((2, 3)))
    assert_eq(da.asarray(np.arange(4), dtype=np.float32), np.arange(4, dtype=np.float32))
    assert da.asarray(y) is y
    assert da.from_array(np.ones((6, 4)), chunks={0: 4, 1: -1}).chunks == ((4, 2), (4,))


def test_creation_inputs_are_single_inputs():
    for x in (da.zeros((4, 4), chunks=2), da.arange(10, chunks=3), da.eye(5, chunks=2),
              da.random.random((3, 3), seed=0), da.linspace(0, 1, 7, chunks=3)):
        assert [type(n).__name__ for n in x.expr.walk()] == ["Input"]


def test_bad_creation_arguments_fail_at_call_time():
    with pytest.raises(TypeError, match="does not support dtype"):
        da.from_array(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="does not support dtype"):
        da.zeros((3,), dtype=object)
    with pytest.raises(ValueError, match="Chunks do not add up"):
        da.from_array(np.ones((5, 3)), chunks=((2, 2), (3,)))
    with pytest.raises(ValueError):
        da.ones((4, 4), chunks=((2, 2),))
    with pytest.raises(ValueError):
        da.full((2, 2), [1, 2])


def test_one_asarray():
    """One implementation: the namespace's and the Array API's ``asarray`` are creation's (the
    Array API one only adds ``copy=``/``device=``; ``array`` only ``ndmin``); the plumbing
    module has none."""
    from dask_tra.array import creation, namespace, relations

    assert da.asarray is creation.asarray and da.array is creation.array
    assert not hasattr(relations, "asarray")
    x = np.arange(4.0)
    y = namespace.asarray(x, copy=True)
    x[0] = 7.0
    assert_eq(y, np.arange(4.0))
    with pytest.raises(ValueError, match="unsupported device"):
        namespace.asarray(x, device="cuda")


def test_asarray_of_dask_collections():
    """Dask collections are told apart by ``dask.base.is_dask_collection``: a dask.array is
    wrapped lazily; any other Dask collection is refused (only dask.arrays are arrays)."""
    from dask_tra.array.relations import is_dask

    d = dask.array.arange(6, chunks=4)
    assert is_dask(d) and is_dask(dask.delayed(1)) and not is_dask(np.ones(2))
    assert not is_dask(da.ones(3))  # a RelArray is a Dask collection too, but not a foreign one
    x = da.asarray(d)
    assert [type(n).__name__ for n in x.expr.walk()] == ["Input"] and x.chunks == ((4, 2),)
    assert da.from_array(d, chunks=3).chunks == ((3, 3),)
    for f in (da.asarray, da.from_array):
        with pytest.raises(TypeError, match="from_dask expects a dask.array.Array, got Delayed"):
            f(dask.delayed(np.ones)(3))

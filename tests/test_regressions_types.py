"""dask.array's return types and metadata, which code written for dask.array relies on."""
import numpy as np
import pytest

import dask.array as dask_da
import dask_tra.array as da


@pytest.mark.parametrize("dtype", ["f4", "i8", "c16", "?"])
@pytest.mark.parametrize("shape", [(), (5,), (7, 3), (2, 3, 4)])
def test_meta_is_an_empty_chunk_of_the_arrays_dtype_and_dimension(shape, dtype):
    x = da.from_array(np.zeros(shape, dtype), chunks=2)
    assert type(x._meta) is np.ndarray
    assert x._meta.shape == (0,) * len(shape) and x._meta.dtype == np.dtype(dtype)
    assert (x @ x.T if x.ndim == 2 else x + 1)._meta.dtype == (x @ x.T if x.ndim == 2 else x + 1).dtype


@pytest.mark.parametrize("name", ["sin", "add", "isnan", "modf", "maximum"])
def test_a_ufunc_of_numpy_inputs_returns_numpy_as_dask_does(name):
    a, b = np.random.default_rng(0).random(5), 0.5
    args = (a, b) if getattr(np, name).nin == 2 else (a,)
    got, want = getattr(da, name)(*args), getattr(dask_da, name)(*args)
    assert type(got) is type(want)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_a_ufunc_with_a_lazy_operand_stays_lazy():
    x = da.from_array(np.arange(7.0), chunks=3)
    y = da.add(np.ones(7), x)
    assert isinstance(y, da.Array)
    np.testing.assert_array_equal(y.compute(), np.ones(7) + np.arange(7.0))


@pytest.mark.parametrize("fn", ["atleast_1d", "atleast_2d", "atleast_3d", "meshgrid", "broadcast_arrays"])
def test_functions_of_several_arrays_return_tuples(fn):
    a, b = da.from_array(np.arange(3.0), chunks=2), da.from_array(np.arange(4.0), chunks=3)
    args = (a, b) if fn != "broadcast_arrays" else (a, da.ones((2, 3), chunks=1))
    got = getattr(da, fn)(*args)
    assert type(got) is tuple and type(getattr(dask_da, fn)(*(dask_da.asarray(np.asarray(v)) for v in args))) is tuple
    want = getattr(np, fn)(*(np.asarray(v) for v in args))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.compute(), w)


def test_sparse_meshgrid_returns_a_tuple():
    got = da.meshgrid(np.arange(3), np.arange(2), sparse=True)
    assert type(got) is tuple
    for g, w in zip(got, np.meshgrid(np.arange(3), np.arange(2), sparse=True), strict=True):
        np.testing.assert_array_equal(g.compute(), w)


def test_array_constructor_from_a_dask_task_graph():
    graph = {("x", 0, i): np.full((2, 3), i, float) for i in range(2)}
    a = da.Array(graph, "x", chunks=((2,), (3, 3)), dtype=float)
    assert isinstance(a, da.Array) and a.chunks == ((2,), (3, 3)) and a.dtype == np.float64
    want = np.concatenate([np.full((2, 3), 0.0), np.full((2, 3), 1.0)], axis=1)
    np.testing.assert_array_equal((a + da.Array(graph, "x", ((2,), (3, 3)), dtype="f8")).compute(), 2 * want)
    with pytest.raises(ValueError, match="meta or dtype"):
        da.Array(graph, "x", chunks=((2,), (3, 3)))


def test_assert_eq_check_shape_false_allows_a_block_function_that_breaks_its_declared_shape():
    from dask_tra.array.utils import assert_eq

    x = da.from_array(np.arange(12).reshape(3, 4), chunks=2)
    y = x.map_blocks(lambda b: b, chunks=((1, 1), (2, 2)))  # declares (2, 4), computes (3, 4)
    with pytest.raises(AssertionError, match="declared shape"):
        assert_eq(y, np.arange(12).reshape(3, 4))
    assert assert_eq(y, np.arange(12).reshape(3, 4), check_shape=False, check_chunks=False)

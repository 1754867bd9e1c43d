"""``out=`` and ``where=`` as dask.array has them: ``out`` (a lazy array) is rebound to the result."""
import numpy as np
import pytest

import dask_tra.array as da


def test_ufunc_out_rebinds_the_array():
    x = da.arange(10, chunks=(4,))
    assert np.sin(x, out=x) is x
    np.add(x, 10, out=(x,))
    assert x.dtype == np.float64
    np.testing.assert_allclose(x.compute(), np.sin(np.arange(10)) + 10)


@pytest.mark.parametrize("kind", ["numpy", "lazy", True, False])
def test_ufunc_where_keeps_out_where_false(kind):
    left, right = np.arange(12).reshape(3, 4), np.arange(4)
    cond = np.array([False, True, True, False]) if kind in ("numpy", "lazy") else kind
    d_cond = da.from_array(cond, chunks=3) if kind == "lazy" else cond
    out_np = np.random.default_rng(0).random((3, 4)).astype("f4")
    d_out, before = da.from_array(out_np, chunks=2), out_np.copy()
    expected = np.add(left, right, where=cond, out=out_np.copy(), dtype="f4")
    got = da.add(da.from_array(left, chunks=(2, 3)), right, where=d_cond, out=d_out, dtype="f4")
    assert got is d_out and got.dtype == np.float32
    np.testing.assert_array_equal(got.compute(), expected)
    np.testing.assert_array_equal(out_np, before)  # the NumPy array behind out is not written


def test_where_without_out_fills_zeros_where_false():
    got = da.add(da.arange(5, chunks=2), 1, where=np.array([True, False, True, False, True])).compute()
    np.testing.assert_array_equal(got, [1, 0, 3, 0, 5])


def test_out_errors():
    x = da.arange(10, chunks=5)
    with pytest.raises(NotImplementedError, match="Received type ndarray, expected a dask_tra Array"):
        np.add(x, 1, out=np.empty(10))
    with pytest.raises(ValueError, match="Mismatched shapes"):
        np.log(x, out=da.arange(15, chunks=5))
    with pytest.raises(NotImplementedError, match="only one output"):
        da.add(x, 1, out=(x, x))
    np.testing.assert_array_equal(x.compute(), np.arange(10))  # untouched by the failed calls


@pytest.mark.parametrize(
    "func", [np.sum, np.prod, np.max, np.min, np.mean, np.var, np.std, np.argmax, np.nansum, np.nanmean,
             np.nanvar, np.nanargmin, da.sum, da.mean]
)
def test_reduction_out_rebinds_the_array(func):
    x, y = da.arange(10, chunks=(5,)), da.from_array(np.random.default_rng(0).random((10, 10)), chunks=(4, 3))
    assert func(y, axis=0, out=x) is x
    want = getattr(np, func.__name__)(y.compute(), axis=0)
    assert x.dtype == want.dtype
    np.testing.assert_allclose(x.compute(), want)


@pytest.mark.parametrize("func", [np.cumsum, np.cumprod, da.nancumsum])
def test_scan_out_rebinds_the_array(func):
    a = np.random.default_rng(1).random((10, 10))
    x = da.from_array(a, chunks=(4, 4))
    func(x, axis=0, out=x)
    np.testing.assert_allclose(x.compute(), getattr(np, func.__name__)(a, axis=0))


def test_reduction_out_of_another_shape_raises_and_leaves_it():
    x = da.arange(7, chunks=3)
    with pytest.raises(ValueError, match="Mismatched shapes"):
        da.ones((10, 10), chunks=4).sum(axis=0, out=x)
    np.testing.assert_array_equal(x.compute(), np.arange(7))


@pytest.mark.parametrize("func", [np.median, np.nanmedian, da.median])
def test_order_statistic_out_rebinds_the_array(func):
    a = np.random.default_rng(2).random((6, 5))
    x = da.zeros(5, chunks=2)
    assert func(da.from_array(a, chunks=3), axis=0, out=x) is x
    np.testing.assert_allclose(x.compute(), np.median(a, axis=0))


def test_quantile_out_rebinds_the_array():
    a = np.random.default_rng(3).random((6, 5))
    x = da.zeros(5, chunks=2)
    da.nanquantile(da.from_array(a, chunks=3), 0.3, axis=0, out=x)
    np.testing.assert_allclose(x.compute(), np.nanquantile(a, 0.3, axis=0))

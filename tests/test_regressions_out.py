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

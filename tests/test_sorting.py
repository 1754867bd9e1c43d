"""Sorting and searching against NumPy on ragged chunks: sort, argsort, topk, argtopk,
searchsorted, isin, take, take_along_axis."""
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.testing import assert_eq

RNG = np.random.default_rng(23)
A = RNG.standard_normal((7, 11))
I = RNG.integers(0, 4, (7, 11))
CH = ((3, 4), (4, 2, 5))


@pytest.mark.parametrize("axis", [0, 1, -1, None])
@pytest.mark.parametrize("a", [A, I, A.astype(np.float32)])
def test_sort_argsort(a, axis):
    x = da.from_array(a, chunks=CH)
    assert_eq(da.sort(x, axis=axis), np.sort(a, axis=axis))
    assert_eq(da.argsort(x, axis=axis), np.argsort(a, axis=axis, kind="stable").astype(np.int64))
    ax = -1 if axis is None else axis
    flat = a.ravel() if axis is None else a
    desc = da.argsort(x, axis=axis, descending=True).compute()
    np.testing.assert_array_equal(np.take_along_axis(flat, desc, ax), -np.sort(-flat, axis=ax))
    # descending and stable: equal values keep their order
    ties = np.take_along_axis(flat, desc, ax)
    same = np.diff(ties, axis=ax) == 0
    assert (np.diff(desc, axis=ax)[same] > 0).all()
    assert_eq(da.sort(x, axis=axis, descending=True), -np.sort(-flat, axis=ax))


def test_sort_nan_last():
    a = A.copy()
    a[1, 3] = a[4, 0] = np.nan
    assert_eq(da.sort(da.from_array(a, chunks=CH), axis=0), np.sort(a, axis=0))


@pytest.mark.parametrize("k, axis", [(3, 1), (-2, 0), (11, 1), (1, 0), (-5, -1)])
def test_topk_argtopk(k, axis):
    x = da.from_array(A, chunks=CH)
    order = np.argsort(-A if k > 0 else A, axis=axis, kind="stable")
    best = np.take(order, np.arange(abs(k)), axis=axis)
    assert_eq(da.topk(x, k, axis=axis), np.take_along_axis(A, best, axis))
    assert_eq(da.argtopk(x, k, axis=axis), best.astype(np.int64))
    with pytest.raises(ValueError, match="larger than axis"):
        da.topk(x, 20, axis=axis)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    s = np.sort(RNG.integers(0, 20, 30))
    v = RNG.integers(-2, 22, (4, 5))
    got = da.searchsorted(da.from_array(s, chunks=(7, 9, 14)), da.from_array(v, chunks=(3, 2)), side=side)
    assert_eq(got, np.searchsorted(s, v, side).astype(np.int64))
    perm = RNG.permutation(30)
    assert_eq(da.searchsorted(da.from_array(s[perm], chunks=8), v, side=side, sorter=np.argsort(s[perm])),
              np.searchsorted(s[perm], v, side, sorter=np.argsort(s[perm])).astype(np.int64))


def test_isin():
    x = da.from_array(I, chunks=CH)
    assert_eq(da.isin(x, [1, 5]), np.isin(I, [1, 5]))
    test = da.from_array(np.array([[0], [2], [9]]), chunks=2)
    assert_eq(da.isin(x, test, invert=True), np.isin(I, [0, 2, 9], invert=True))


def test_take_and_take_along_axis():
    x = da.from_array(A, chunks=CH)
    idx = RNG.integers(-11, 11, (2, 3))
    assert_eq(da.take(x, da.from_array(idx, chunks=(1, 2)), axis=1), np.take(A, idx, axis=1))
    assert_eq(da.take(x, idx), np.take(A, idx))
    assert_eq(da.take(x, da.from_array(np.array([5, 0, 76]), chunks=2)), np.take(A, [5, 0, 76]))
    rows = RNG.integers(0, 7, (4, 11))
    assert_eq(da.take_along_axis(x, da.from_array(rows, chunks=3), 0), np.take_along_axis(A, rows, 0))
    cols = RNG.integers(-11, 11, (7, 1))
    assert_eq(da.take_along_axis(x, da.from_array(cols, chunks=3), 1), np.take_along_axis(A, cols, 1))
    assert_eq(da.take_along_axis(x, da.argsort(x, axis=1), 1), np.sort(A, axis=1))
    with pytest.raises(ValueError, match="same number of dimensions"):
        da.take_along_axis(x, da.from_array(rows[0], chunks=3), 0)

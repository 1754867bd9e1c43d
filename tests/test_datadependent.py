"""Data-dependent shapes against NumPy: nonzero, flatnonzero, argwhere, compress, extract,
unique, union1d, bincount, histogram (sizes found eagerly, the rest lazy)."""
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.testing import assert_eq

RNG = np.random.default_rng(41)
A = RNG.standard_normal((7, 10))
A[A < 0.3] = 0
X = da.from_array(A, chunks=((3, 4), (4, 1, 5)))


def test_positions():
    for got, want in zip(da.nonzero(X), np.nonzero(A)):
        assert_eq(got, want)
    assert_eq(da.flatnonzero(X), np.flatnonzero(A))
    assert_eq(da.argwhere(X), np.argwhere(A))


def test_compress_extract_keep_data_lazy():
    cond = A[0] > 0
    got = da.compress(cond, X, axis=1)
    assert got.shape == np.compress(cond, A, axis=1).shape and not got.expr.type.keys  # lazy, known chunks
    assert_eq(got, np.compress(cond, A, axis=1))
    assert_eq(da.compress([True, False, True], X), np.compress([True, False, True], A))
    assert_eq(da.extract(X > 1, X), np.extract(A > 1, A))
    with pytest.raises(IndexError, match="longer"):
        da.compress(np.ones(11, bool), X, axis=1)


def test_unique_union1d():
    i = RNG.integers(0, 6, 30)
    xi = da.from_array(i, chunks=7)
    for got, want in zip(da.unique(xi, return_index=True, return_inverse=True, return_counts=True),
                         np.unique(i, return_index=True, return_inverse=True, return_counts=True)):
        assert_eq(got, want)
    assert_eq(da.unique(X), np.unique(A))
    assert_eq(da.union1d(xi, [9, 10]), np.union1d(i, [9, 10]))


def test_bincount():
    i = RNG.integers(0, 6, 30)
    xi = da.from_array(i, chunks=(7, 7, 16))
    assert_eq(da.bincount(xi), np.bincount(i))
    w = RNG.random(30)
    assert_eq(da.bincount(xi, weights=da.from_array(w, chunks=5), minlength=9), np.bincount(i, w, 9), rtol=1e-12)
    with pytest.raises(ValueError, match="negative"):
        da.bincount(da.from_array(i - 3, chunks=7))


@pytest.mark.parametrize("bins, range_", [(5, (-1, 2)), (4, None), ([0, 0.5, 1, 3], None)])
def test_histogram(bins, range_):
    h, e = da.histogram(X, bins=bins, range=range_)
    H, E = np.histogram(A, bins, range_)
    assert_eq(h, H)
    np.testing.assert_allclose(e, E)
    h, _ = da.histogram(X, bins=bins, range=range_, weights=X * 2, density=True)
    assert_eq(h, np.histogram(A, bins, range_, weights=A * 2, density=True)[0], rtol=1e-12)
    assert "Transform(histogram)" in [n.describe() for n in da.histogram(X, bins, range_)[0].expr.walk()]


def test_histogramdd_histogram2d():
    s = RNG.standard_normal((50, 3))
    x = da.from_array(s, chunks=(13, 2))
    h, edges = da.histogramdd(x, bins=(3, 4, 2), range=[(-2, 2)] * 3)
    H, E = np.histogramdd(s, (3, 4, 2), range=[(-2, 2)] * 3)
    assert_eq(h, H)
    for e, f in zip(edges, E):
        np.testing.assert_allclose(e, f)
    w = RNG.random(50)
    h, _, _ = da.histogram2d(x[:, 0], x[:, 1], bins=5, range=[(-3, 3), (-3, 3)], weights=da.from_array(w, chunks=7),
                               density=True)
    assert_eq(h, np.histogram2d(s[:, 0], s[:, 1], 5, [(-3, 3), (-3, 3)], weights=w, density=True)[0], rtol=1e-12)
    h, _, _ = da.histogram2d(x[:, 0], x[:, 2], bins=[3, 4])
    assert_eq(h, np.histogram2d(s[:, 0], s[:, 2], [3, 4])[0])


def test_lazy_index_and_mask_are_computed_first():
    assert_eq(X[X > 0.5], A[A > 0.5])
    assert_eq(X[:, X[0] > 0], A[:, A[0] > 0])
    idx = da.from_array(np.array([3, 0, 6]), chunks=2)
    assert_eq(X[idx], A[[3, 0, 6]])

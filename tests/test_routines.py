"""The remaining dask.array routines against NumPy on ragged chunks and odd shapes."""
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.testing import assert_eq

RNG = np.random.default_rng(31)
A = RNG.standard_normal((7, 10))
X = da.from_array(A, chunks=((3, 4), (4, 1, 5)))


def test_select_choose_piecewise():
    conds = [A < -0.5, A > 0.5]
    choices = [A * 2, A - 1]
    assert_eq(da.select([X < -0.5, X > 0.5], [X * 2, X - 1], default=7.0), np.select(conds, choices, 7.0))
    idx = RNG.integers(0, 3, (7, 10))
    ch = [A, A * 10, -A]
    assert_eq(da.choose(da.from_array(idx, chunks=3), [X, X * 10, -X]), np.choose(idx, ch))
    assert_eq(da.piecewise(X, [X < 0, X > 1], [np.abs, 5.0, np.square]),
              np.piecewise(A, [A < 0, A > 1], [np.abs, 5.0, np.square]))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_ediff1d(edge_order):
    assert_eq(da.gradient(X, edge_order=edge_order)[0], np.gradient(A, edge_order=edge_order)[0], rtol=1e-12)
    assert_eq(da.gradient(X, 0.5, axis=1, edge_order=edge_order), np.gradient(A, 0.5, axis=1,
                                                                            edge_order=edge_order), rtol=1e-12)
    i = RNG.integers(0, 9, 13)
    assert_eq(da.gradient(da.from_array(i, chunks=4), 2.0), np.gradient(i, 2.0))
    assert_eq(da.ediff1d(X, to_begin=[1, 2], to_end=9), np.ediff1d(A, to_begin=[1, 2], to_end=9))


@pytest.mark.parametrize("k", [-2, 0, 3])
def test_matrix_helpers(k):
    v = RNG.standard_normal(6)
    assert_eq(da.diag(da.from_array(v, chunks=4), k), np.diag(v, k))
    assert_eq(da.diag(X, k), np.diag(A, k))
    assert_eq(da.tri(5, 7, k, chunks=3), np.tri(5, 7, k))
    assert_eq(da.rot90(X, k), np.rot90(A, k))
    assert_eq(da.rot90(da.ones((2, 3, 4), chunks=2) * np.arange(4), k, axes=(2, 0)),
              np.rot90(np.ones((2, 3, 4)) * np.arange(4), k, axes=(2, 0)))
    assert_eq(da.fliplr(X), np.fliplr(A))
    assert_eq(da.flipud(X), np.flipud(A))
    b = RNG.standard_normal((3, 4, 5))
    assert_eq(da.rollaxis(da.from_array(b, chunks=2), 2, k % 3), np.rollaxis(b, 2, k % 3))
    assert_eq(da.vdot(X, X * 2), np.vdot(A, A * 2), rtol=1e-12)


def test_statistics():
    w = RNG.random(10)
    assert_eq(da.average(X, axis=1, weights=w), np.average(A, axis=1, weights=w), rtol=1e-12)
    avg, scl = da.average(X, returned=True)
    np.testing.assert_allclose(avg.compute(), np.average(A))
    assert float(scl.compute()) == A.size
    assert_eq(da.cov(X), np.cov(A), rtol=1e-12)
    assert_eq(da.cov(X, rowvar=False, bias=True), np.cov(A, rowvar=False, bias=True), rtol=1e-12)
    assert_eq(da.cov(X[0], X[1]), np.cov(A[0], A[1]), rtol=1e-12)
    assert_eq(da.corrcoef(X), np.corrcoef(A), rtol=1e-12)
    assert_eq(da.ptp(X, axis=0), np.ptp(A, axis=0))
    n = A.shape[1]
    assert_eq(da.moment(X, 3, axis=1), ((A - A.mean(1, keepdims=True)) ** 3).sum(1) / n, rtol=1e-10)


def test_elementwise_helpers():
    bins = np.array([-1.0, 0.0, 0.5, 2.0])
    assert_eq(da.digitize(X, bins), np.digitize(A, bins))
    assert_eq(da.digitize(X, bins, right=True), np.digitize(A, bins, right=True))
    assert_eq(da.i0(X), np.i0(A), rtol=1e-12)
    assert_eq(da.sinc(X), np.sinc(A), rtol=1e-12)
    assert_eq(da.fix(X * 3), np.fix(A * 3))
    z = A + 1j * (A > 0)
    Z = da.from_array(z, chunks=3)
    assert_eq(da.iscomplex(Z), np.iscomplex(z))
    assert_eq(da.isreal(Z), np.isreal(z))
    w = A.copy()
    w[0, :3] = [np.inf, -np.inf, np.nan]
    W = da.from_array(w, chunks=3)
    assert_eq(da.isneginf(W), np.isneginf(w))
    assert_eq(da.isposinf(W), np.isposinf(w))
    assert_eq(da.isnull(W), np.isnan(w))
    assert_eq(da.notnull(W), ~np.isnan(w))
    assert bool(da.allclose(X, A + 1e-12).compute()) and not bool(da.allclose(X, A + 1).compute())


@pytest.mark.parametrize("indexing, sparse", [("xy", False), ("ij", False), ("xy", True)])
def test_meshgrid(indexing, sparse):
    u, v, w = np.arange(3.0), RNG.standard_normal(4), np.arange(2)
    got = da.meshgrid(da.from_array(u, chunks=2), v, w, indexing=indexing, sparse=sparse)
    for g, want in zip(got, np.meshgrid(u, v, w, indexing=indexing, sparse=sparse)):
        assert_eq(g, want)


def test_indices():
    assert_eq(da.indices((3, 5), chunks=2), np.indices((3, 5)))
    assert_eq(da.fromfunction(np.add, (4, 3), dtype=int, chunks=2), np.fromfunction(np.add, (4, 3), dtype=int))
    for got, want in zip(da.tril_indices(4, -1, 6), np.tril_indices(4, -1, 6)):
        assert_eq(got, want)
    for got, want in zip(da.triu_indices_from(X, 2), np.triu_indices_from(A, 2)):
        assert_eq(got, want)
    for got, want in zip(da.tril_indices_from(X), np.tril_indices_from(A)):
        assert_eq(got, want)
    rows, cols = RNG.integers(0, 7, 9), RNG.integers(0, 10, 9)
    flat = da.ravel_multi_index((da.from_array(rows, chunks=4), da.from_array(cols, chunks=4)), (7, 10))
    assert_eq(flat, np.ravel_multi_index((rows, cols), (7, 10)))
    for got, want in zip(da.unravel_index(flat, (7, 10)), (rows, cols)):
        assert_eq(got, want.astype(np.intp))


def test_append_delete_insert_block():
    assert_eq(da.append(X, X[:2], axis=0), np.append(A, A[:2], axis=0))
    assert_eq(da.append(X, [1, 2]), np.append(A, [1, 2]))
    assert_eq(da.delete(X, [0, 3, 9], axis=1), np.delete(A, [0, 3, 9], axis=1))
    assert_eq(da.delete(X, slice(1, 5), axis=0), np.delete(A, slice(1, 5), axis=0))
    assert_eq(da.insert(X, 2, 5.0, axis=1), np.insert(A, 2, 5.0, axis=1))
    assert_eq(da.insert(X, [1, 1, 10], -1.0, axis=1), np.insert(A, [1, 1, 10], -1.0, axis=1))
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 2))
    c = RNG.standard_normal((1, 5))
    assert_eq(da.block([[da.from_array(a, chunks=1), b], [c]]), np.block([[a, b], [c]]))
    assert_eq(da.coarsen(np.sum, da.from_array(A[:6], chunks=3), {0: 3, 1: 2}),
              A[:6].reshape(2, 3, 5, 2).sum(axis=(1, 3)), rtol=1e-12)
    assert_eq(da.coarsen(np.max, X, {1: 3}, trim_excess=True), A[:, :9].reshape(7, 3, 3).max(axis=2))


def _second_and_sum(v):
    return np.array([v[1], v.sum()])


def test_apply_along_and_over_axes():
    assert_eq(da.apply_along_axis(_second_and_sum, 1, X), np.apply_along_axis(_second_and_sum, 1, A), rtol=1e-12)
    assert_eq(da.apply_along_axis(np.sum, 0, X), np.apply_along_axis(np.sum, 0, A), rtol=1e-12)
    assert_eq(da.apply_over_axes(np.sum, X, [0, 1]), np.apply_over_axes(np.sum, A, [0, 1]), rtol=1e-12)
    assert da.shape(X) == A.shape and da.ndim(X) == 2 and da.result_type(X, np.float32) == np.float64

"""dask_tra.array.linalg against NumPy and by the defining identities (Q orthonormal, QR = A,
L L^H = A, U S V^H = A, A x = b), on ragged chunks and odd shapes."""
import pickle

import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array import linalg as la
from dask_tra.array.testing import assert_eq

RNG = np.random.default_rng(17)


def _rand(shape, dtype=np.float64):
    a = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dtype)


def _spd(n, dtype=np.float64):
    m = _rand((n, n), dtype)
    return (m @ m.conj().T + n * np.eye(n)).astype(dtype)


def _orthonormal(q, tol):
    np.testing.assert_allclose(q.conj().T @ q, np.eye(q.shape[1]), atol=tol)


TALL = [((23, 5), ((7, 6, 10), (3, 2))), ((40, 3), ((3, 17, 20), 3)), ((9, 9), ((4, 5), (9,))),
        ((6, 4), ((6,), (4,))), ((31, 7), ((2, 9, 20), (7,)))]


@pytest.mark.parametrize("shape, chunks", TALL)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_qr_tall_identities(shape, chunks, dtype):
    a = _rand(shape, dtype)
    q, r = la.qr(da.from_array(a, chunks=chunks))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    Q, R = q.compute(), r.compute()
    assert q.dtype == dtype and Q.dtype == dtype and Q.shape == (shape[0], shape[1]) and R.shape == (shape[1],) * 2
    _orthonormal(Q, tol)
    np.testing.assert_allclose(Q @ R, a, atol=tol * 10)
    np.testing.assert_allclose(np.tril(R, -1), 0, atol=tol)
    np.testing.assert_allclose(np.abs(np.diag(R)), np.abs(np.diag(np.linalg.qr(a)[1])), rtol=tol * 10)
    rows, (m, n) = da.from_array(a, chunks=chunks).chunks[0], shape
    if min(rows) >= n:  # row blocks at least as long as the matrix is wide are kept
        assert q.chunks[0] == rows
    else:  # else the rows are cut evenly into min(blocks, m // n) blocks
        k = min(len(rows), m // n)
        assert q.chunks[0] == tuple(m // k + (i < m % k) for i in range(k))


def test_qr_wide_is_sfqr():
    a = _rand((5, 12))
    q, r = la.qr(da.from_array(a, chunks=(2, 5)))
    Q, R = q.compute(), r.compute()
    _orthonormal(Q, 1e-10)
    np.testing.assert_allclose(Q @ R, a, atol=1e-10)
    np.testing.assert_allclose(np.tril(R, -1), 0, atol=1e-12)


def test_tsqr_svd_and_svd():
    a = _rand((37, 6))
    x = da.from_array(a, chunks=((10, 10, 17), (4, 2)))
    u, s, v = la.tsqr(x, compute_svd=True)
    np.testing.assert_allclose(s.compute(), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    for args in ((x,), (x.T,)):
        u, s, v = la.svd(*args)
        ref = np.asarray(args[0])
        U, S, V = u.compute(), s.compute(), v.compute()
        _orthonormal(U, 1e-10)
        _orthonormal(V.T, 1e-10)
        np.testing.assert_allclose((U * S) @ V, ref, atol=1e-10)
        np.testing.assert_allclose(S, np.linalg.svd(ref, compute_uv=False), rtol=1e-10)
        assert (V.sum(axis=1) >= 0).all()  # dask's sign convention (svd_flip)


def test_svd_compressed_recovers_low_rank():
    a = _rand((60, 4)) @ _rand((4, 30))
    x = da.from_array(a, chunks=(13, 11))
    u, s, v = la.svd_compressed(x, 4, n_power_iter=2, seed=3)
    assert u.shape == (60, 4) and s.shape == (4,) and v.shape == (4, 30)
    np.testing.assert_allclose(s.compute(), np.linalg.svd(a, compute_uv=False)[:4], rtol=1e-8)
    np.testing.assert_allclose((u.compute() * s.compute()) @ v.compute(), a, atol=1e-8)
    _, s2, _ = la.svd_compressed(x, 2, iterator="QR", n_power_iter=1, seed=3)
    np.testing.assert_allclose(s2.compute(), np.linalg.svd(a, compute_uv=False)[:2], rtol=1e-6)
    assert la.compression_level(100, 4) == 20 and la.compression_level(10, 4) == 10


@pytest.mark.parametrize("chunks, dtype", [(((4, 5, 4), (6, 7)), np.float64), (((1, 12), (13,)), np.complex128),
                                           (13, np.float64), (((5, 8), (5, 8)), np.complex128)])
def test_cholesky(chunks, dtype):
    a = _spd(13, dtype)
    x = da.from_array(a, chunks=chunks)
    L = la.cholesky(x, lower=True)
    U = la.cholesky(x)
    assert_eq(L, np.linalg.cholesky(a), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(L.compute() @ L.compute().conj().T, a, atol=1e-10)
    np.testing.assert_allclose(U.compute().conj().T @ U.compute(), a, atol=1e-10)
    np.testing.assert_array_equal(np.triu(L.compute(), 1), 0)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("bshape, bchunks", [((13,), 5), ((13, 3), (6, 2)), ((13, 1), 13)])
def test_solve_triangular(lower, bshape, bchunks):
    t = (np.tril if lower else np.triu)(_rand((13, 13))) + 5 * np.eye(13)
    b = _rand(bshape)
    x = la.solve_triangular(da.from_array(t, chunks=((3, 10), (5, 8))), da.from_array(b, chunks=bchunks),
                            lower=lower)
    assert x.shape == bshape
    np.testing.assert_allclose(t @ x.compute(), b, atol=1e-10)
    assert_eq(x, np.linalg.solve(t, b), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("chunks", [((6, 7), (4, 9)), 13])
def test_lu_solve_inv(chunks):
    a = _rand((13, 13))
    x = da.from_array(a, chunks=chunks)
    p, l, u = la.lu(x)
    P, L, U = p.compute(), l.compute(), u.compute()
    np.testing.assert_allclose(P @ L @ U, a, atol=1e-10)
    np.testing.assert_array_equal(np.triu(L, 1), 0)
    np.testing.assert_allclose(np.diag(L), 1)
    np.testing.assert_array_equal(np.tril(U, -1), 0)
    np.testing.assert_array_equal(np.sort(P, axis=0)[-1], 1)  # a permutation matrix
    b = _rand((13, 2))
    np.testing.assert_allclose(a @ la.solve(x, b).compute(), b, atol=1e-9)
    np.testing.assert_allclose(a @ la.solve(x, b[:, 0]).compute(), b[:, 0], atol=1e-9)
    spd = _spd(13)
    np.testing.assert_allclose(spd @ la.solve(da.from_array(spd, chunks=chunks), b, assume_a="pos").compute(), b,
                               atol=1e-9)
    assert_eq(la.inv(x), np.linalg.inv(a), rtol=1e-8, atol=1e-9)


def test_lstsq():
    a, b = _rand((29, 5)), _rand(29)
    x, res, rank, s = la.lstsq(da.from_array(a, chunks=((9, 10, 10), 5)), da.from_array(b, chunks=7))
    ref = np.linalg.lstsq(a, b)
    assert_eq(x, ref[0], rtol=1e-9)
    assert_eq(res, ref[1], rtol=1e-9)
    assert int(rank.compute()) == ref[2]
    assert_eq(s, ref[3], rtol=1e-9)


MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
VECTOR_ORDS = [None, 0, 1, 2, 3, -1, 0.5, np.inf, -np.inf]


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norms(ord):
    a = _rand((13, 7))
    x = da.from_array(a, chunks=((4, 5, 4), (3, 4)))
    assert_eq(la.norm(x, ord), np.linalg.norm(a, ord), rtol=1e-10)
    assert_eq(la.norm(x, ord, axis=(1, 0), keepdims=True), np.linalg.norm(a, ord, axis=(1, 0), keepdims=True),
              rtol=1e-10)
    s = _rand((3, 5, 4))
    xs = da.from_array(s, chunks=(2, 3, 3))
    if ord is not None:
        assert_eq(la.matrix_norm(xs, ord=ord), np.linalg.matrix_norm(s, ord=ord), rtol=1e-10)
    assert_eq(la.norm(xs, ord, axis=(0, 2)), np.linalg.norm(s, ord, axis=(0, 2)), rtol=1e-10)


@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norms(ord):
    a = _rand((4, 6, 5), np.complex128)
    x = da.from_array(a, chunks=(3, 4, 2))
    assert_eq(la.norm(x, ord, axis=1), np.linalg.norm(a, ord, axis=1), rtol=1e-10)
    if ord is not None:
        assert_eq(la.vector_norm(x, ord=ord, axis=(0, 2), keepdims=True),
                  np.linalg.vector_norm(a, ord=ord, axis=(0, 2), keepdims=True), rtol=1e-10)
    assert_eq(la.norm(x), np.linalg.norm(a), rtol=1e-10)


def test_small_dense_functions():
    s = _rand((5, 4, 4))
    xs = da.from_array(s, chunks=(2, 3, 2))
    assert_eq(la.det(xs), np.linalg.det(s), rtol=1e-10)
    sign, logdet = la.slogdet(xs)
    assert_eq(sign, np.linalg.slogdet(s)[0])
    assert_eq(logdet, np.linalg.slogdet(s)[1], rtol=1e-10)
    h = s + s.transpose(0, 2, 1)
    w, v = la.eigh(da.from_array(h, chunks=(3, 4, 1)))
    assert_eq(w, np.linalg.eigvalsh(h), rtol=1e-10)
    W, V = w.compute(), v.compute()
    np.testing.assert_allclose(h @ V, V * W[:, None, :], atol=1e-10)
    assert_eq(la.eigvalsh(da.from_array(h, chunks=2)), np.linalg.eigvalsh(h), rtol=1e-10)
    a = _rand((9, 6))
    x = da.from_array(a, chunks=(4, 5))
    assert_eq(la.pinv(x), np.linalg.pinv(a), rtol=1e-9, atol=1e-12)
    low = _rand((9, 3)) @ _rand((3, 6))
    assert int(la.matrix_rank(da.from_array(low, chunks=4)).compute()) == 3
    assert_eq(la.matrix_power(xs, 3), np.linalg.matrix_power(s, 3), rtol=1e-10)
    assert_eq(la.matrix_power(xs, 0), np.linalg.matrix_power(s, 0))
    assert_eq(la.matrix_power(da.from_array(s, chunks=(2, 3, 1)), 0), np.linalg.matrix_power(s, 0))
    assert_eq(la.matrix_power(da.from_array(s[0], chunks=3), -2), np.linalg.matrix_power(s[0], -2), rtol=1e-8)
    assert_eq(la.svdvals(xs), np.linalg.svdvals(s), rtol=1e-10)


@pytest.mark.parametrize("offset", [-3, -1, 0, 2, 5, 9])
def test_diagonal_trace(offset):
    a = _rand((7, 6, 5))
    x = da.from_array(a, chunks=(3, 4, 2))
    assert_eq(da.diagonal(x, offset), np.diagonal(a, offset))
    assert_eq(da.diagonal(x, offset, 2, 0), np.diagonal(a, offset, 2, 0))
    assert_eq(da.trace(x, offset, 1, 2), np.trace(a, offset, 1, 2), rtol=1e-12)
    i = RNG.integers(-5, 5, (6, 6)).astype(np.int32)
    assert_eq(da.trace(da.from_array(i, chunks=4), offset), np.trace(i, offset))


def test_cross_outer():
    a, b = _rand((4, 3)), _rand((2, 1, 3))
    assert_eq(la.cross(da.from_array(a, chunks=2), da.from_array(b, chunks=1)), np.cross(a, b), rtol=1e-12)
    c, d = _rand((3, 5)), _rand((3, 5))
    assert_eq(la.cross(da.from_array(c, chunks=2), d, axis=0), np.cross(c, d, axis=0), rtol=1e-12)
    assert_eq(la.outer(da.from_array(a[:, 0], chunks=3), b.ravel()), np.outer(a[:, 0], b.ravel()))


def test_single_block_steps_show_in_explain():
    x = da.from_array(_rand((40, 4)), chunks=(10, 4))
    q = la.qr(x)[0]
    steps = [n.describe() for n in q.expr.walk()]
    assert steps.count("Transform(qr)") == 2 and "Concat(0,0)" in steps and "Tile(0,4)" in steps
    text = str(q.explain().view(detail="algebra"))
    assert "Transform(qr)" in text and "Concat(0,0)" in text
    assert "Transform(cholesky)" in str(la.cholesky(da.from_array(_spd(8), chunks=4)).explain().view(detail="algebra"))
    assert "Transform(lu)" in str(la.lu(da.from_array(_rand((8, 8)), chunks=4))[2].explain().view(detail="algebra"))


def test_larger_block_grids():
    """Four blocks per side: every step of the left-looking loops (k < j updates) runs."""
    a, spd, b = _rand((14, 14)), _spd(14), _rand((14, 2))
    chunks = ((3, 4, 4, 3), (5, 4, 5))
    L = la.cholesky(da.from_array(spd, chunks=chunks), lower=True).compute()
    np.testing.assert_allclose(L @ L.T, spd, atol=1e-10)
    np.testing.assert_allclose(a @ la.solve(da.from_array(a, chunks=chunks), b).compute(), b, atol=1e-9)


def test_kernels_pickle():
    """Every linalg kernel is a module-level class: it pickles and compares equal after."""
    x = da.from_array(_rand((20, 4)), chunks=(7, 4))
    seen = set()
    for arr in (la.qr(x)[0], la.svd(x)[1], la.cholesky(da.from_array(_spd(8), chunks=3)),
                la.lu(da.from_array(_rand((8, 8)), chunks=3))[1], la.det(da.from_array(_rand((2, 3, 3)), chunks=2)),
                la.solve(da.from_array(_rand((8, 8)), chunks=3), _rand(8))):
        for node in arr.expr.walk():
            kernel = getattr(node, "kernel", None)
            if type(kernel).__module__.startswith("dask_tra.array.linalg"):
                again = pickle.loads(pickle.dumps(kernel))
                assert again == kernel and again.name == kernel.name
                seen.add(type(kernel).__name__)
    assert {"QRPack", "SVDPack", "Rows", "Cholesky", "TrsmRight", "LUPack", "LUApply", "Place", "PermuteRows",
            "Batched", "TrsmLeft", "RowAsVector"} <= seen


def test_errors():
    with pytest.raises(ValueError, match="square"):
        la.cholesky(da.ones((4, 3), chunks=2))
    with pytest.raises(ValueError, match="2-d"):
        la.qr(da.ones((4, 3, 2), chunks=2))
    with pytest.raises(ValueError, match="tall"):
        la.tsqr(da.ones((3, 4), chunks=2))
    with pytest.raises(ValueError, match="does not match"):
        la.solve_triangular(da.eye(4, chunks=2), da.ones(5, chunks=2))
    with pytest.raises(ValueError, match="k must be"):
        la.svd_compressed(da.ones((6, 4), chunks=2), 5)
    with pytest.raises(ValueError, match="Invalid norm order"):
        la.norm(da.ones((3, 3), chunks=2), "bad")
    with pytest.raises(ValueError, match="matrices"):
        la.det(da.ones(3, chunks=2))


def test_array_api_linalg_namespace():
    xp = da.ones(1).__array_namespace__()
    s = _rand((3, 4, 4))
    xs = da.from_array(s, chunks=(2, 3, 3))
    spd = s @ s.transpose(0, 2, 1) + 4 * np.eye(4)
    assert_eq(xp.linalg.cholesky(da.from_array(spd, chunks=2), upper=True),
              np.linalg.cholesky(spd).transpose(0, 2, 1), rtol=1e-10)
    assert_eq(xp.linalg.inv(xs), np.linalg.inv(s), rtol=1e-8)
    q, r = xp.linalg.qr(xs)
    np.testing.assert_allclose(q.compute() @ r.compute(), s, atol=1e-10)
    u, sv, vh = xp.linalg.svd(xs)
    np.testing.assert_allclose((u.compute() * sv.compute()[:, None]) @ vh.compute(), s, atol=1e-10)
    b = _rand((3, 4, 2))
    assert_eq(xp.linalg.solve(xs, da.from_array(b, chunks=2)), np.linalg.solve(s, b), rtol=1e-8)
    assert_eq(xp.linalg.solve(xs, b[0, :, 0]), np.linalg.solve(s, b[0, :, 0]), rtol=1e-8)
    assert_eq(xp.linalg.trace(xs, offset=1), np.trace(s, 1, -2, -1), rtol=1e-12)
    assert_eq(xp.linalg.diagonal(xs, offset=-1), np.diagonal(s, -1, -2, -1))
    assert_eq(xp.linalg.matrix_norm(xs, ord="nuc"), np.linalg.matrix_norm(s, ord="nuc"), rtol=1e-10)
    assert_eq(xp.linalg.vector_norm(xs, axis=1, ord=3), np.linalg.vector_norm(s, axis=1, ord=3), rtol=1e-10)
    a = _rand((7, 4))
    q, r = xp.linalg.qr(da.from_array(a, chunks=(3, 2)), mode="complete")
    assert q.shape == (7, 7) and r.shape == (7, 4)
    np.testing.assert_allclose(q.compute() @ r.compute(), a, atol=1e-10)

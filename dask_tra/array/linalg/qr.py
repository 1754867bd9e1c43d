"""QR and SVD by TSQR, and the randomized ``svd_compressed``, as TRA expressions.

TSQR of a tall matrix A (row blocks A_i, one column block of width k, every A_i with at
least k rows):

    Transform(qr)                      [Q_i; R_i] per row block, on the block's site
    Transform(R) -> Concat(0, 0)       the stacked R factors, p k x k: one block
    Transform(qr)                      [Q2; R] of the stack: the one single-block step
    Transform(Q) -> Tile(0, k) -> ReKey   Q2 cut back into its p blocks of k rows
    Join([0,1],[0,1], matmul)          Q_i Q2_i, where Q_i is

The optimizer places every move: where the stack is gathered, where Q2's tiles go. ``svd``
factors the k x k R (``Transform(svd)``, one block) and multiplies Q by its U. A wide
matrix is factored through its conjugate transpose (svd) or its leading square block (qr,
as dask's ``sfqr``). Columns are rechunked into one block, and row blocks shorter than k
merged, before TSQR (dask raises instead).
"""

from __future__ import annotations

import dask.array
import dask.array.linalg
import numpy as np
from dask.utils import derived_from

from ...tra import Concat, Join, Tile, Transform
from ...tra import kernels as K
from ..creation import asarray
from ..rechunk import even_chunks, rechunk_axes
from ..relations import rekey, wrap
from .kernels import QRPack, RowAsVector, Rows, SVDPack, float_dtype


def _matrix(a, who):
    a = asarray(a)
    if a.ndim != 2:
        raise ValueError(f"{who}: expected a 2-d array, got {a.ndim} dimensions")
    dt = float_dtype(a.dtype)
    return a if a.dtype == dt else a.astype(dt)


def rechunked(a, chunks: dict):
    r = rechunk_axes(a, chunks)
    return wrap(r.expr, a, extra=r.sources)


def tall(a):
    """``a`` with one column block and every row block at least as long as it is wide."""
    m, k = a.shape
    rows = a.chunks[0]
    if any(c < k for c in rows):
        rows = even_chunks(m, max(1, min(len(rows), m // max(k, 1))))
    return rechunked(a, {0: rows, 1: (k,)})


def transform(a, kernel):
    return wrap(Transform(a.expr, kernel), a)


def _tsqr(a):
    """(Q, R) of a tall ``a`` already ``tall``: Q with a's row chunks, R one k x k block."""
    k = a.shape[1]
    packed = Transform(a.expr, QRPack(a.dtype))
    q_local = Transform(packed, Rows(0, -k, "Q"))
    if a.numblocks[0] == 1:
        return wrap(q_local, a), wrap(Transform(packed, Rows(-k, None, "R")), a)
    stacked = rekey(Concat(Transform(packed, Rows(-k, None, "R")), 0, 0), [None, 0])
    top = Transform(stacked, QRPack(a.dtype))
    r = Transform(top, Rows(-k, None, "R"))
    q2 = rekey(Tile(Transform(top, Rows(0, -k, "Q")), 0, k), [2, 1])
    return wrap(Join(q_local, q2, [0, 1], [0, 1], K.matmul), a), wrap(r, a)


def tsqr(data, compute_svd=False, _max_vchunk_size=None):
    """QR (or SVD) of a tall-and-skinny matrix by TSQR, as dask.array.linalg's ``tsqr``.

    Each row block is factored, the stacked R factors factored again, and Q assembled from
    both (the columns are rechunked to one block first).

    Parameters
    ----------
    data : array_like
        A 2-d array with at least as many rows as columns.
    compute_svd : bool, optional
        Return the SVD ``u, s, v`` instead of ``q, r``.
    _max_vchunk_size : int, optional
        Accepted for dask's signature.

    Returns
    -------
    q, r : RelArray
        ``data = q @ r``: ``q`` of ``data``'s shape with orthonormal columns, ``r`` square upper
        triangular.
    u, s, v : RelArray
        With ``compute_svd``: ``data = u @ diag(s) @ v``.

    Examples
    --------
    >>> m = da.random.random((20, 4), chunks=(5, 4), seed=0)
    >>> q, r = da.linalg.tsqr(m)
    >>> q.shape, r.shape
    ((20, 4), (4, 4))
    >>> bool(np.allclose((q @ r).compute(), m.compute()))
    True
    """
    a = _matrix(data, "tsqr")
    if a.shape[0] < a.shape[1]:
        raise ValueError(f"tsqr: needs a tall matrix (rows >= columns), got shape {a.shape}")
    a = tall(a)
    q, r = _tsqr(a)
    if not compute_svd:
        return q, r
    u, s, vh = _svd_square(r)
    return q @ u, s, vh


def _svd_square(r):
    """U, s, Vh of a single-block square matrix (one ``Transform(svd)``)."""
    k = r.shape[0]
    packed = transform(r, SVDPack(r.dtype))
    real = np.finfo(r.dtype).dtype
    s = wrap(rekey(Transform(packed.expr, RowAsVector(k, real)), [1]), packed)
    return transform(packed, Rows(0, k, "U")), s, transform(packed, Rows(k + 1, None, "Vh"))


def sfqr(data, name=None):
    """QR of a short-and-fat matrix, as dask.array.linalg's ``sfqr``.

    Q and R1 come from the QR of the leading square block (rechunked to one block), and
    ``R = [R1, Q^H A2]``.

    Parameters
    ----------
    data : array_like
        A 2-d array with at most as many rows as columns.
    name : str, optional
        Accepted for dask's signature.

    Returns
    -------
    q : RelArray
        Square, orthonormal.
    r : RelArray
        Of ``data``'s shape, upper triangular: ``data = q @ r``.

    Examples
    --------
    >>> m = da.random.random((4, 20), chunks=(4, 5), seed=0)
    >>> q, r = da.linalg.sfqr(m)
    >>> q.shape, r.shape
    ((4, 4), (4, 20))
    >>> bool(np.allclose((q @ r).compute(), m.compute()))
    True
    """
    from ..stacking import concatenate

    a = _matrix(data, "sfqr")
    m, n = a.shape
    if m > n:
        raise ValueError(f"sfqr: needs a short-and-fat matrix (rows <= columns), got shape {a.shape}")
    lead = rechunked(a[:, :m], {0: (m,), 1: (m,)})
    q, r1 = _tsqr(lead)
    if n == m:
        return q, r1
    return q, concatenate([r1, q.conj().T @ a[:, m:]], axis=1)


@derived_from(np.linalg)
def qr(a):
    """Reduced QR: TSQR for tall matrices, ``sfqr`` for wide ones."""
    a = _matrix(a, "qr")
    return tsqr(a) if a.shape[0] >= a.shape[1] else sfqr(a)


def svd_flip(u, v, u_based_decision=False):
    """Signs of singular vectors made deterministic (dask's convention).

    Columns of ``u`` and the matching rows of ``v`` are flipped together so that the sums of
    ``v``'s rows (of ``u``'s columns with ``u_based_decision``) are non-negative; ``u @ diag(s)
    @ v`` is unchanged.

    Parameters
    ----------
    u : RelArray
        Left singular vectors (columns).
    v : RelArray
        Right singular vectors (rows).
    u_based_decision : bool, optional
        Decide by ``u``'s columns instead of ``v``'s rows.

    Returns
    -------
    u, v : RelArray
        The flipped vectors.

    Examples
    --------
    >>> u = da.from_array(np.array([[-1.0, 0.0], [0.0, 1.0]]), chunks=1)
    >>> v = da.from_array(np.array([[-1.0, -2.0], [1.0, 1.0]]), chunks=1)
    >>> u2, v2 = da.linalg.svd_flip(u, v)
    >>> v2.compute()
    array([[1., 2.],
           [1., 1.]])
    """
    from ..reductions import sum as sum_

    signs = sum_(u, axis=0, keepdims=True) if u_based_decision else sum_(v, axis=1, keepdims=True).T
    signs = ((signs >= 0).astype(u.dtype) - 0.5) * 2
    return u * signs, v * signs.T


@derived_from(np.linalg)
def svd(a, coerce_signs=True):
    """Thin SVD ``u, s, v`` (v is V^H, as dask) through TSQR (of ``a``, or of a^H if wide)."""
    a = _matrix(a, "svd")
    if a.shape[0] >= a.shape[1]:
        u, s, v = tsqr(a, compute_svd=True)
    else:
        vt, s, ut = tsqr(a.conj().T, compute_svd=True)
        u, v = ut.conj().T, vt.conj().T
    if coerce_signs:
        u, v = svd_flip(u, v)
    return u, s, v


def compression_level(n, q, n_oversamples=10, min_subspace_size=20):
    """The width of the random subspace for a rank-``q`` approximation (dask's rule).

    Parameters
    ----------
    n : int
        The smaller dimension of the matrix (the width cannot exceed it).
    q : int
        The rank sought.
    n_oversamples : int, optional
        Extra dimensions beyond ``q`` (default 10).
    min_subspace_size : int, optional
        The narrowest subspace used (default 20).

    Returns
    -------
    int
        ``min(max(min_subspace_size, q + n_oversamples), n)``.

    Examples
    --------
    >>> da.linalg.compression_level(100, 5)
    20
    >>> da.linalg.compression_level(100, 30)
    40
    """
    return min(max(min_subspace_size, q + n_oversamples), n)


def compression_matrix(data, q, iterator="power", n_power_iter=0, n_oversamples=10, seed=None, compute=False):
    """The conjugate transpose of an orthonormal basis for the range of ``data``: a randomized
    range finder, as dask.array.linalg's ``compression_matrix``.

    ``data @ Omega`` for a Gaussian ``Omega`` of ``compression_level`` columns, then
    ``n_power_iter`` power (or QR) iterations, then TSQR.

    Parameters
    ----------
    data : array_like
        A 2-d array.
    q : int
        The rank sought.
    iterator : {"power", "QR"}, optional
        How the subspace iterations are stabilised.
    n_power_iter : int, optional
        The number of subspace iterations (default 0).
    n_oversamples : int, optional
        Extra dimensions beyond ``q`` (default 10).
    seed : int, optional
        Seeds ``Omega``.
    compute : bool, optional
        Accepted for dask's signature (the whole computation is planned at once).

    Returns
    -------
    RelArray
        ``Q^H``, of shape ``(compression_level(min(data.shape), q), data.shape[0])``.

    See Also
    --------
    svd_compressed

    Examples
    --------
    >>> m = da.random.random((20, 4), chunks=(5, 4), seed=0)
    >>> da.linalg.compression_matrix(m, 2, seed=0).shape
    (4, 20)
    """
    from .. import random

    if iterator not in ("power", "QR"):
        raise ValueError(f"iterator must be 'power' or 'QR', got {iterator!r}")
    a = _matrix(data, "compression_matrix")
    m, n = a.shape
    comp = compression_level(min(m, n), q, n_oversamples)
    seed = (
        seed
        if isinstance(seed, (int, np.integer)) or seed is None
        else int(np.random.default_rng(seed).integers(2**31))
    )
    omega = random.standard_normal((n, comp), chunks=(a.chunks[1], (comp,)), seed=seed)
    if a.dtype != omega.dtype:
        omega = omega.astype(a.dtype)
    y = a @ omega
    for _ in range(n_power_iter):
        if iterator == "QR":
            y = tsqr(y)[0]
            y = a @ tsqr(a.conj().T @ y)[0]
        else:
            y = a @ (a.conj().T @ y)
    return tsqr(y)[0].conj().T


@derived_from(dask.array.linalg)
def svd_compressed(
    a, k, iterator="power", n_power_iter=0, n_oversamples=10, seed=None, compute=False, coerce_signs=True
):
    """Rank-``k`` randomized SVD (Halko et al.): project on a random range, SVD the small
    projection by TSQR, map its left vectors back."""
    a = _matrix(a, "svd_compressed")
    if not 0 < k <= min(a.shape):
        raise ValueError(f"svd_compressed: k must be in [1, {min(a.shape)}], got {k}")
    comp = compression_matrix(a, k, iterator, n_power_iter, n_oversamples, seed)
    projected = comp @ a
    v, s, u = tsqr(projected.conj().T, compute_svd=True)
    u = comp.conj().T @ u.conj().T
    v = v.conj().T
    u, s, v = u[:, :k], s[:k], v[:k, :]
    if coerce_signs:
        u, v = svd_flip(u, v)
    return u, s, v


__all__ = [
    "compression_level",
    "compression_matrix",
    "qr",
    "sfqr",
    "svd",
    "svd_compressed",
    "svd_flip",
    "tsqr",
]

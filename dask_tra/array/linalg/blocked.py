"""Blocked factorizations and solves as sequences of TRA steps: cholesky, lu, solve_triangular.

A square matrix is cut into a p x p grid of blocks (its columns rechunked like its rows).
Each algorithm is *left-looking*: step j computes block column (or row) j from A and the
panels already made, with the contractions of the frontend (``Join`` + ``Aggregate``):

    S_j     = A[:, j] - sum_{k<j} L_k[rows >= j] @ L_k[j]^H          contractions
    L_jj    = Transform(cholesky)(S_j[j])                            one block: visible
    L[:, j] = Join(S_j, L_jj, trsm)                                  every row block, in place

Blocks above the diagonal never enter a step: a ``Join`` with a small parameter relation
(``Place``) empties them (extent 0), so the relation stays dense (Join and Concat need that)
while no flops are spent there. The factor is assembled at the end: the same ``Place`` join
zero-fills the emptied blocks, and the block columns are concatenated (``stacking``).

``lu`` follows dask's blocked LU: partial pivoting inside each diagonal block only
(``P A = L U`` with a block-diagonal P). ``solve_triangular`` is blocked forward (backward)
substitution, one block row at a time.
"""

from __future__ import annotations

import numpy as np
from dask.utils import derived_from

from ...tra import Filter, Join
from ...tra.keyfuncs import is_eq
from ..creation import asarray
from ..relations import offsets, param_relation, rekey, wrap
from .kernels import (
    Cholesky,
    LUApply,
    LUPack,
    PermuteRows,
    Place,
    Rows,
    TrsmLeft,
    TrsmRight,
    float_dtype,
)
from .qr import rechunked, transform


def square(a, who):
    """``a`` as a float square matrix with its columns chunked like its rows."""
    a = asarray(a)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{who}: expected a square 2-d matrix, got shape {a.shape}")
    dt = float_dtype(a.dtype)
    a = a if a.dtype == dt else a.astype(dt)
    return rechunked(a, {1: a.chunks[0]})


def place(x, axis, keep, extents):
    """``x`` with block i along ``axis`` kept where ``keep[i]``, else zeros of ``extents[i]``."""
    p = x.numblocks[axis]
    sizes = [c if k else e for c, k, e in zip(x.chunks[axis], keep, extents)]
    P = param_relation({(i,): [int(keep[i]), int(extents[i])] for i in range(p)}, (p,), what="place")
    expr = Join(x.expr, P.expr, [axis], [0], Place(axis, axis, sizes, x.dtype))
    return wrap(expr, x, extra=P.sources)


def from_block(x, axis, j, chunks):
    """The single block ``x`` placed at block ``j`` of a line of blocks ``chunks`` along
    ``axis`` (zeros elsewhere): a cross Join with a parameter relation, then a ReKey."""
    p = len(chunks)
    P = param_relation({(i,): [int(i == j), int(chunks[i])] for i in range(p)}, (p,), what="place")
    expr = Join(x.expr, P.expr, [], [], Place(axis, 2, chunks, x.dtype))
    return wrap(rekey(expr, [2, 1] if axis == 0 else [0, 2]), x, extra=P.sources)


def from_diagonal(x, j):
    """Blocks above block ``j`` (along rows) emptied."""
    return place(x, 0, [i >= j for i in range(x.numblocks[0])], [0] * x.numblocks[0])


def _assemble(columns, chunks, axis):
    """A matrix from block columns (``axis=1``) or block rows (``axis=0``) whose blocks before
    the diagonal are empty: zero-fill them, concatenate."""
    from ..stacking import concatenate

    full = []
    for j, c in enumerate(columns):
        keep = [i >= j for i in range(len(chunks))]
        full.append(place(c, 1 - axis, keep, chunks))
    return concatenate(full, axis=axis)


@derived_from(np.linalg)
def cholesky(a, lower=False):
    """Blocked Cholesky factor of a Hermitian positive-definite matrix (upper unless ``lower``)."""
    from ..manipulation import tril

    a = square(a, "cholesky")
    L = tril(_cholesky_lower(a))
    return L if lower else L.conj().T


def _cholesky_lower(a):
    return _assemble(_cholesky_panels(a), a.chunks[0], 1)


def _one_block(x):
    """``x`` (a diagonal block, maybe with empty blocks before it: a full slice keeps empty
    blocks, as dask's does) without its empty blocks: one block along each axis."""
    keep = tuple([i for i, c in enumerate(cs) if c] or [0] for cs in x.chunks)
    if all(len(k) == len(cs) for k, cs in zip(keep, x.chunks)):
        return x
    return x.blocks.outer(tuple(keep)) if x.ndim > 1 else x.blocks[keep[0]]


def _cholesky_panels(a):
    """Block columns of the lower factor, blocks above the diagonal empty (the diagonal
    block is L_jj up to rounding above its diagonal)."""
    o = offsets(a.chunks[0])
    panels = []
    for j in range(a.numblocks[0]):
        s = from_diagonal(a[:, o[j] : o[j + 1]], j)
        for k, pk in enumerate(panels):
            head = pk[o[j] - o[k] : o[j + 1] - o[k]]
            s = s - from_diagonal(pk, j) @ head.conj().T
        ljj = transform(_one_block(s[: o[j + 1] - o[j]]), Cholesky(a.dtype))
        panels.append(_join_single(s, ljj, 1, TrsmRight(s.dtype)))
    return panels


def _lu_panels(a):
    """Left-looking blocked LU of a ``square`` matrix: per step j the packed ``[P; L; U]`` of
    the diagonal block, the column panel of P L (blocks above j empty) and the row panel of
    U (blocks left of j empty)."""
    o, p = offsets(a.chunks[0]), a.numblocks[0]
    lcols, urows, packs = [], [], []
    for j in range(p):
        rows = slice(o[j], o[j + 1])
        right = [i >= j for i in range(p)]
        col = from_diagonal(a[:, rows], j)
        row = place(a[rows, :], 1, right, [0] * p)
        for k in range(j):
            lk, uk = lcols[k], urows[k]
            col = col - from_diagonal(lk, j) @ uk[:, o[j] - o[k] : o[j + 1] - o[k]]
            row = row - lk[o[j] - o[k] : o[j + 1] - o[k]] @ place(uk, 1, right, [0] * p)
        pack = transform(_one_block(col[: o[j + 1] - o[j]]), LUPack(a.dtype))
        packs.append(pack)
        lcols.append(_join_single(col, pack, 1, LUApply(a.dtype, "right")))
        urows.append(_join_single(row, pack, 0, LUApply(a.dtype, "left")))
    return packs, lcols, urows


def lu(a):
    """Blocked LU decomposition ``a = p @ l @ u``, as dask.array.linalg's ``lu``.

    Partial pivoting happens inside the diagonal blocks only (dask's scheme), so ``p`` is
    block-diagonal.

    Parameters
    ----------
    a : array_like
        A square matrix with square diagonal blocks.

    Returns
    -------
    p : RelArray
        The permutation matrix.
    l : RelArray
        Lower triangular, with unit diagonal.
    u : RelArray
        Upper triangular.

    Examples
    --------
    >>> a = da.from_array(np.array([[4.0, 3.0], [6.0, 3.0]]), chunks=1)
    >>> p, l, u = da.linalg.lu(a)
    >>> bool(np.allclose((p @ l @ u).compute(), a.compute()))
    True
    """
    from ..manipulation import tril, triu

    a = square(a, "lu")
    chunks = a.chunks[0]
    packs, lcols, urows = _lu_panels(a)
    perm = _assemble(
        [from_block(transform(pk, _part(0, chunks[j])), 0, j, chunks) for j, pk in enumerate(packs)], chunks, 1
    )
    lower = tril(_permute_rows(perm, _assemble(lcols, chunks, 1)))
    return perm, lower, triu(_assemble(urows, chunks, 0))


def _join_single(x, block, dim, kernel):
    """``Join(x, block)`` of every block of x with the single ``block``, on x's key dim ``dim``."""
    block = _one_block(block)
    expr = Join(x.expr, block.expr, [dim], [0], kernel)
    return wrap(rekey(expr, list(range(x.ndim))), x, block)


def _part(i, n):
    return Rows(i * n, (i + 1) * n, ("P", "L", "U")[i])


def _permute_rows(perm, x):
    """P^T X for a block-diagonal P: its diagonal blocks (Filter, ReKey) joined on row blocks."""
    diag = rekey(Filter(perm.expr, is_eq), [0])
    expr = Join(x.expr, diag, [0], [0], PermuteRows())
    return wrap(expr, x, perm)


def _rhs(b, a, who):
    """``b`` as a matrix of a's dtype family, rows chunked like a's, and whether it was a vector."""
    from ..structure import reshape

    b = asarray(b)
    if b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ValueError(f"{who}: b of shape {b.shape} does not match a of shape {a.shape}")
    vector = b.ndim == 1
    b = reshape(b, (b.shape[0], 1)) if vector else b
    dt = np.result_type(a.dtype, float_dtype(b.dtype))
    return rechunked(b.astype(dt), {0: a.chunks[0]}), vector, dt


def _substitute(b, chunks, order, block, diagonal):
    """Blocked substitution: x_i = diagonal(i, b_i - sum over earlier k of block(i, k) @ x_k),
    block rows taken in ``order``; the x_i concatenated back."""
    from ..stacking import concatenate

    o = offsets(chunks)
    xs = {}
    for i in order:
        rhs = b[o[i] : o[i + 1]]
        for k, xk in xs.items():
            rhs = rhs - block(i, k) @ xk
        xs[i] = diagonal(i, rhs)
    return concatenate([xs[i] for i in range(len(chunks))], axis=0)


def _vector(x, vector):
    return x.reshape(x.shape[0]) if vector else x


def solve_triangular(a, b, lower=False):
    """Solve ``a x = b`` for a triangular ``a``, by blocked forward or backward substitution.

    Parameters
    ----------
    a : array_like
        A square triangular matrix with square diagonal blocks.
    b : array_like
        The right-hand side: a vector or a matrix, its rows chunked like ``a``'s columns.
    lower : bool, optional
        ``a`` is lower triangular (forward substitution); default upper (backward).

    Returns
    -------
    RelArray
        ``x``, shaped like ``b``.

    Examples
    --------
    >>> a = da.from_array(np.array([[2.0, 0.0], [1.0, 1.0]]), chunks=1)
    >>> b = da.from_array(np.array([2.0, 3.0]), chunks=1)
    >>> da.linalg.solve_triangular(a, b, lower=True).compute()
    array([1., 2.])
    """
    a = square(a, "solve_triangular")
    b, vector, dt = _rhs(b, a, "solve_triangular")
    a = a.astype(dt)
    o, p = offsets(a.chunks[0]), a.numblocks[0]

    def block(i, k):
        return a[o[i] : o[i + 1], o[k] : o[k + 1]]

    def diagonal(i, rhs):
        return _join_single(rhs, block(i, i), 0, TrsmLeft(dt, lower))

    order = range(p) if lower else range(p - 1, -1, -1)
    return _vector(_substitute(b, a.chunks[0], order, block, diagonal), vector)


@derived_from(np.linalg)
def solve(a, b, sym_pos=None, assume_a="gen"):
    """``a x = b``: blocked LU (Cholesky for ``assume_a="pos"``), then forward and backward
    substitution on the factors' panels."""
    if sym_pos:
        assume_a = "pos"
    if assume_a not in ("gen", "pos"):
        raise ValueError(f"solve: assume_a must be 'gen' or 'pos', got {assume_a!r}")
    a = square(a, "solve")
    b, vector, dt = _rhs(b, a, "solve")
    a = a.astype(dt)
    chunks, p = a.chunks[0], a.numblocks[0]
    o = offsets(chunks)
    if assume_a == "pos":
        panels = _cholesky_panels(a)

        def lower(i, k):
            return panels[k][o[i] - o[k] : o[i + 1] - o[k]]

        def forward(i, rhs):
            return _join_single(rhs, lower(i, i), 0, TrsmLeft(dt, True))

        def backward(i, rhs):
            return _join_single(rhs, lower(i, i), 0, TrsmLeft(dt, True, trans=True))

        def upper(i, k):
            return lower(k, i).conj().T

        y = _substitute(b, chunks, range(p), lower, forward)
        return _vector(_substitute(y, chunks, range(p - 1, -1, -1), upper, backward), vector)
    packs, lcols, urows = _lu_panels(a)

    def pl(i, k):
        return lcols[k][o[i] - o[k] : o[i + 1] - o[k]]

    def upper(i, k):
        return urows[i][:, o[k] - o[i] : o[k + 1] - o[i]]

    def forward(i, rhs):
        return _join_single(rhs, packs[i], 0, LUApply(dt, "left"))

    def backward(i, rhs):
        return _join_single(rhs, upper(i, i), 0, TrsmLeft(dt, False))

    y = _substitute(b, chunks, range(p), pl, forward)
    return _vector(_substitute(y, chunks, range(p - 1, -1, -1), upper, backward), vector)


@derived_from(np.linalg)
def inv(a):
    """The inverse by ``solve(a, I)``."""
    from ..creation import eye

    a = square(a, "inv")
    return solve(a, eye(a.shape[0], chunks=a.chunks, dtype=a.dtype))


__all__ = ["cholesky", "inv", "lu", "solve", "solve_triangular"]

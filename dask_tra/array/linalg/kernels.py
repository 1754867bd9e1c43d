"""Chunk kernels of the blocked linear algebra: small dense factorizations and solves.

Every kernel is a module-level class with typed fields (it pickles, compares and shows in
``explain()`` by its name: ``Transform(qr)``, ``Join(trsm[lower])``). A factorization with
several outputs returns them *packed* in one chunk, stacked along axis 0 (``[Q; R]``), and
``Rows`` cuts a part back out: one factorization per block, however many outputs are used.

Kernels run NumPy (and SciPy's triangular solves when SciPy is there) on the host; chunks of
another library go to the host and come back in their library.
"""

from __future__ import annotations

import numpy as np

from ... import backends
from ...tra.kernels import Kernel
from ...tra.relation import ChunkAxis


def solve_tri(a, b, lower, trans=False):
    """``a x = b`` (``a^H x = b`` with ``trans``) for triangular ``a``."""
    try:
        from scipy.linalg import solve_triangular
    except ImportError:  # SciPy is optional: a general solve is exact too, only slower
        a = a.conj().T if trans else a
        return np.linalg.solve(a, b)
    return solve_triangular(a, b, lower=lower, trans="C" if trans else "N", check_finite=False)


def on_host(fn, *chunks):
    """``fn`` on NumPy copies of the chunks; the result back in the chunks' library."""
    b = backends.backend_of(*chunks)
    if b is backends.NUMPY:
        return fn(*chunks)
    device = next(b.device_of(c) for c in chunks if b.owns(c))
    out = fn(*(b.to_numpy(c) if b.owns(c) else np.asarray(c) for c in chunks))
    return b.from_numpy(np.ascontiguousarray(out), device)


def float_dtype(dtype) -> np.dtype:
    """The dtype NumPy's linalg computes in: floats and complex keep theirs, others float64."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return np.dtype(np.float32) if dtype == np.float16 else dtype
    return np.dtype(np.float64)


def _const(ax, what):
    n = ax.constant
    if n is None and ax.sizes.size:
        raise ValueError(f"{what}: needs a single block (a constant extent)")
    return n or 0


class FieldsKernel(Kernel):
    """A kernel equal to another when their fields are (a plain module-level class: it
    pickles); its output dtype is its ``dtype`` field."""

    def __eq__(self, other):
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def __hash__(self):
        return hash((type(self).__name__, self.name))

    def out_dtype(self, *dtypes):
        return self.dtype


class _Host(FieldsKernel):
    """A kernel computing on the host in ``dtype``; subclasses define ``compute``."""

    arity = 1

    def __call__(self, *chunks):
        return on_host(self._run, *chunks)

    def _run(self, *chunks):
        return np.asarray(self.compute(*(np.asarray(c, dtype=self.dtype) for c in chunks)), dtype=self.dtype)


class QRPack(_Host):
    """Reduced QR of a tall chunk (rows >= columns k): ``[Q; R]``, (rows + k) x k."""

    def __init__(self, dtype):
        self.dtype, self.name = float_dtype(dtype), "qr"

    def compute(self, a):
        q, r = np.linalg.qr(a)
        return np.concatenate([q, r], axis=0)

    def out_axes(self, frontier, axes):
        rows, cols = axes
        k = _const(cols, "qr")
        if (rows.sizes < k).any():
            raise ValueError(f"qr: a block has fewer rows than the {k} columns")
        return ChunkAxis(rows.key_dims, rows.sizes + k), cols

    def flops(self, shape):
        m, k = shape
        return 2 * m * k * k


class SVDPack(_Host):
    """SVD of a square chunk (k x k): ``[U; s; Vh]``, (2k + 1) x k."""

    def __init__(self, dtype):
        self.dtype, self.name = float_dtype(dtype), "svd"

    def compute(self, a):
        u, s, vh = np.linalg.svd(a)
        return np.concatenate([u, s[None].astype(self.dtype), vh], axis=0)

    def out_axes(self, frontier, axes):
        k = _const(axes[1], "svd")
        return ChunkAxis.const(2 * k + 1), axes[1]

    def flops(self, shape):
        return 22 * shape[0] ** 3


class Rows(FieldsKernel):
    """Rows ``[start, stop)`` of a chunk; negative bounds count from its end (None: the end)."""

    arity = 1

    def __init__(self, start, stop, part=""):
        self.start, self.stop, self.part = start, stop, part
        self.name = part or f"rows[{start}:{'' if stop is None else stop}]"

    def __call__(self, chunk):
        return chunk[self.start : self.stop]

    def out_axes(self, frontier, axes):
        sizes = axes[0].sizes
        lo = self.start + sizes if self.start < 0 else np.minimum(self.start, sizes)
        hi = sizes if self.stop is None else (self.stop + sizes if self.stop < 0 else np.minimum(self.stop, sizes))
        return (ChunkAxis(axes[0].key_dims, np.maximum(hi - lo, 0)).simplified(),) + tuple(axes[1:])

    def out_dtype(self, dtype):
        return np.dtype(dtype)


class RowAsVector(FieldsKernel):
    """Row ``i`` of a (single-block) chunk as a 1-D chunk, real part (singular values)."""

    arity = 1

    def __init__(self, row, dtype):
        self.row, self.dtype, self.name = row, np.dtype(dtype), "singularValues"

    def __call__(self, chunk):
        return backends.numpy_like(chunk).real(chunk[self.row]).astype(self.dtype)

    def out_axes(self, frontier, axes):
        return (axes[1],)

    def out_dtype(self, dtype):
        return self.dtype


class Cholesky(_Host):
    """Lower Cholesky factor of a Hermitian positive-definite chunk."""

    def __init__(self, dtype):
        self.dtype, self.name = float_dtype(dtype), "cholesky"

    def compute(self, a):
        return np.linalg.cholesky(a)

    def out_axes(self, frontier, axes):
        return tuple(axes)

    def flops(self, shape):
        return shape[0] ** 3 // 3


class TrsmRight(_Host):
    """``S L^-H`` for a block row ``S`` and a lower-triangular ``L`` (the panel of Cholesky)."""

    arity = 2

    def __init__(self, dtype):
        self.dtype, self.name = float_dtype(dtype), "trsm[right,lower^H]"

    def compute(self, s, lower):
        return solve_tri(lower, s.conj().T, lower=True).conj().T

    def out_axes(self, frontier, s, lower):
        return tuple(s)

    def flops(self, s, lower):
        return s[0] * s[1] * s[1]


class TrsmLeft(_Host):
    """``T^-1 B`` (``T^-H B`` with ``trans``) for a triangular ``T`` (Join order: B, T)."""

    arity = 2

    def __init__(self, dtype, lower, trans=False, unit=False):
        self.dtype, self.lower, self.trans, self.unit = float_dtype(dtype), bool(lower), bool(trans), bool(unit)
        self.name = f"trsm[{'lower' if lower else 'upper'}{'^H' if trans else ''}{',unit' if unit else ''}]"

    def compute(self, b, t):
        if self.unit:
            t = t.copy()
            np.fill_diagonal(t, 1)
        return solve_tri(t, b, lower=self.lower, trans=self.trans)

    def out_axes(self, frontier, b, t):
        return tuple(b)

    def flops(self, b, t):
        return b[0] * b[0] * (b[1] if len(b) > 1 else 1)


class LUPack(_Host):
    """LU with partial pivoting of a square chunk, ``A = P L U``: ``[P; L; U]``, 3n x n
    (``P`` as a permutation matrix, ``L`` unit lower; SciPy's ``lu`` convention)."""

    def __init__(self, dtype):
        self.dtype, self.name = float_dtype(dtype), "lu"

    def compute(self, a):
        n = a.shape[0]
        lu, perm = _lu_factor(a)
        p = np.eye(n, dtype=self.dtype)[perm].T
        return np.concatenate([p, np.tril(lu, -1) + np.eye(n, dtype=self.dtype), np.triu(lu)], axis=0)

    def out_axes(self, frontier, axes):
        n = _const(axes[0], "lu")
        return ChunkAxis.const(3 * n), axes[1]

    def flops(self, shape):
        return 2 * shape[0] ** 3 // 3


def _lu_factor(a):
    """Packed LU factors and the row order ``perm`` with ``a[perm] = L U``."""
    try:
        from scipy.linalg import lu_factor
    except ImportError:
        return _lu_numpy(a)
    lu, piv = lu_factor(a, check_finite=False)
    perm = np.arange(a.shape[0])
    for i, p in enumerate(piv):
        perm[[i, p]] = perm[[p, i]]
    return lu, perm


def _lu_numpy(a):
    a = a.copy()
    n = a.shape[0]
    perm = np.arange(n)
    for i in range(n):
        p = i + int(np.argmax(np.abs(a[i:, i])))
        if p != i:
            a[[i, p]] = a[[p, i]]
            perm[[i, p]] = perm[[p, i]]
        if a[i, i] != 0:
            a[i + 1 :, i] /= a[i, i]
            a[i + 1 :, i + 1 :] -= np.outer(a[i + 1 :, i], a[i, i + 1 :])
    return a, perm


class PermuteRows(_Host):
    """``P^T X`` for a permutation block ``P`` (Join order: X, P)."""

    arity = 2

    def __init__(self):
        self.name = "permuteRows"

    def __call__(self, x, p):
        return on_host(_permute, x, p)

    def out_axes(self, frontier, x, p):
        return tuple(x)

    def out_dtype(self, x, p):
        return np.dtype(x)


def _permute(x, p):
    return p.T.astype(x.dtype) @ x


class Place(FieldsKernel):
    """Keep a chunk or replace it with zeros of another extent along ``axis``, as its parameter
    chunk ``[keep, extent]`` says: with extent 0 this empties blocks (a panel's blocks above
    the diagonal), with the block's own extent it zero-fills them (assembling a factor).
    ``sizes`` are the output extents along ``axis``, indexed by output key dim ``key_dim``."""

    arity = 2

    def __init__(self, axis, key_dim, sizes, dtype):
        self.axis, self.key_dim = int(axis), int(key_dim)
        self.sizes, self.dtype = tuple(int(s) for s in sizes), np.dtype(dtype)
        self.name = "place"

    def __call__(self, chunk, param):
        keep, extent = (int(v) for v in np.asarray(param).reshape(-1)[:2])
        if keep:
            return chunk
        shape = list(chunk.shape)
        shape[self.axis] = extent
        return backends.numpy_like(chunk).zeros(tuple(shape), dtype=self.dtype)

    def out_axes(self, frontier, axes, param):
        out = list(axes)
        out[self.axis] = ChunkAxis.along(self.key_dim, self.sizes)
        return tuple(out)

    def out_dtype(self, dtype, param):
        return self.dtype


class LUApply(_Host):
    """With a packed ``[P; L; U]`` (``LUPack``): ``L^-1 P^T B`` (``side="left"``, the row
    panel of U) or ``B U^-1`` (``side="right"``, the column panel of P L). Join order: B, pack."""

    arity = 2

    def __init__(self, dtype, side):
        self.dtype, self.side = float_dtype(dtype), side
        self.name = "trsm[unit lower,P]" if side == "left" else "trsm[right,upper]"

    def compute(self, b, pack):
        n = pack.shape[1]
        p, lower, upper = pack[:n], pack[n : 2 * n], pack[2 * n :]
        if self.side == "left":
            return solve_tri(lower, p.T @ b, lower=True)
        return solve_tri(upper.T, b.T, lower=True).T

    def out_axes(self, frontier, b, pack):
        return tuple(b)


__all__ = [
    "Cholesky",
    "FieldsKernel",
    "LUApply",
    "LUPack",
    "PermuteRows",
    "Place",
    "QRPack",
    "RowAsVector",
    "Rows",
    "SVDPack",
    "TrsmLeft",
    "TrsmRight",
    "float_dtype",
    "on_host",
    "solve_tri",
]

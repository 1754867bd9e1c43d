"""The Array API ``linalg`` extension (``xp.linalg``) over RelArrays.

A 2-d matrix goes through the blocked algorithms of ``dask_tra.array.linalg`` (TSQR,
blocked Cholesky and LU); a stack of matrices through NumPy's batched linalg per chunk.
"""

from collections import namedtuple as _namedtuple

from . import linalg as _la
from .contractions import matmul, vecdot  # noqa: F401
from .contractions import tensordot as _tensordot
from .creation import asarray as _asarray
from .linalg.batched import batched as _batched
from .linalg.batched import batched_solve as _batched_solve
from .namespace_array import kept as _kept
from .structure import matrix_transpose  # noqa: F401

QRResult = _namedtuple("QRResult", ["Q", "R"])
SVDResult = _namedtuple("SVDResult", ["U", "S", "Vh"])
EighResult, SlogdetResult = _la.norms.EighResult, _la.norms.SlogdetResult


def cholesky(x, /, *, upper=False):
    x = _asarray(x)
    if x.ndim == 2:
        return _la.cholesky(x, lower=not upper)
    lower = _batched("cholesky", x)
    return lower.mT.conj() if upper else lower


def cross(x1, x2, /, *, axis=-1):
    x1, x2 = _asarray(x1), _asarray(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross: both arrays need size 3 along axis {axis}")
    return _la.cross(x1, x2, axis=axis)


def det(x, /):
    return _la.det(x)


def diagonal(x, /, *, offset=0):
    return _la.diagonal(x, offset, -2, -1)


def eigh(x, /):
    return _la.eigh(x)


def eigvalsh(x, /):
    return _la.eigvalsh(x)


def inv(x, /):
    x = _asarray(x)
    return _kept((x,), _la.inv(x) if x.ndim == 2 else _batched("inv", x))  # solve(x, eye): x's kind


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return _la.matrix_norm(x, keepdims=keepdims, ord=ord)


def matrix_power(x, n, /):
    return _la.matrix_power(x, n)


def matrix_rank(x, /, *, rtol=None):
    return _la.matrix_rank(x, rtol=rtol)


def outer(x1, x2, /):
    x1, x2 = _asarray(x1), _asarray(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("outer: both arrays must be 1-d")
    return _la.outer(x1, x2)


def pinv(x, /, *, rtol=None):
    return _la.pinv(x, rtol=rtol)


def qr(x, /, *, mode="reduced"):
    x = _asarray(x)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    if mode == "reduced" and x.ndim == 2 and min(x.shape):
        return QRResult(*_la.qr(x))
    op = "qr" if mode == "reduced" else "qr_complete"
    return QRResult(_batched(op, x, 0), _batched(op, x, 1))


def slogdet(x, /):
    return _la.slogdet(x)


def solve(x1, x2, /):
    x1, x2 = _asarray(x1), _asarray(x2)
    if x1.ndim == 2 and x2.ndim <= 2 and x1.shape[0] and x1.shape[0] == x2.shape[0]:
        return _la.solve(x1, x2)
    return _batched_solve(x1, x2)


def svd(x, /, *, full_matrices=True):
    x = _asarray(x)
    if not full_matrices and x.ndim == 2 and min(x.shape):
        return SVDResult(*_la.svd(x, coerce_signs=False))
    op = "svd" if full_matrices else "svd_reduced"
    return SVDResult(*(_batched(op, x, i) for i in range(3)))


def svdvals(x, /):
    return _la.svdvals(x)


def tensordot(x1, x2, /, *, axes=2):
    return _tensordot(x1, x2, axes)


def trace(x, /, *, offset=0, dtype=None):
    return _la.trace(x, offset, -2, -1, dtype=dtype)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    return _la.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)

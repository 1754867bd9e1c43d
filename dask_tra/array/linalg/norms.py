"""Norms, determinants, traces, diagonals and the rest of NumPy's ``linalg`` over RelArrays.

Vector and entrywise matrix norms are reductions (``Transform`` + ``Aggregate``); the
spectral and nuclear norms need singular values: TSQR's for a 2-d matrix, NumPy's batched
``svd`` per chunk for stacks. ``det``/``slogdet``/``eigh``/``pinv``/``matrix_rank`` work on
matrices whole in one chunk (``batched``); ``lstsq`` is dask's: TSQR, then a triangular
solve, with the rank and singular values of R.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from dask.utils import derived_from

from ..creation import asarray
from ..relations import axes_of, axis_of
from .batched import batched
from .kernels import float_dtype


def _real_float(x):
    x = asarray(x)
    dt = float_dtype(x.dtype)
    return x if x.dtype == dt else x.astype(dt)


def _abs(x):
    from ..elementwise import absolute

    return absolute(x)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The Array API's vector norm, over ``axis``.

    Parameters
    ----------
    x : array_like
        A floating (or complex) array.
    axis : int or tuple of int, optional
        The axes the norm is taken over; None: all elements.
    keepdims : bool, optional
        Keep the reduced axes with length one.
    ord : int, float, inf or -inf, optional
        The norm's order (default 2): ``sum(abs(x)**ord)**(1/ord)``; 0 counts nonzeros,
        ``inf``/``-inf`` are the largest/smallest absolute value.

    Returns
    -------
    RelArray
        The norm, with a real floating dtype.

    See Also
    --------
    matrix_norm, norm

    Examples
    --------
    >>> x = da.from_array(np.array([3.0, 4.0]), chunks=1)
    >>> da.linalg.vector_norm(x).compute()
    np.float64(5.0)
    >>> da.linalg.vector_norm(x, ord=np.inf).compute()
    np.float64(4.0)
    """
    from ..reductions import count_nonzero
    from ..reductions import max as max_
    from ..reductions import min as min_
    from ..reductions import sum as sum_

    x = _real_float(x)
    axes = axes_of(axis, x.ndim)
    a = _abs(x)
    if ord == np.inf:
        out = max_(a, axis=axes, keepdims=keepdims)
    elif ord == -np.inf:
        out = min_(a, axis=axes, keepdims=keepdims)
    elif ord == 0:
        out = count_nonzero(a, axis=axes, keepdims=keepdims).astype(a.dtype)
    elif ord == 1:
        out = sum_(a, axis=axes, keepdims=keepdims)
    elif ord == 2:
        out = sum_(a * a, axis=axes, keepdims=keepdims) ** 0.5
    else:
        out = sum_(a**ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)
    return out.astype(a.dtype) if out.dtype != a.dtype else out


@derived_from(np.linalg)
def svdvals(x, /):
    """Singular values, descending: TSQR for a 2-d matrix, batched SVD for stacks."""
    x = _real_float(x)
    if x.ndim == 2 and min(x.shape):
        from .qr import svd

        return svd(x, coerce_signs=False)[1]
    return batched("svdvals", x)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The Array API's matrix norm, over the last two axes.

    Parameters
    ----------
    x : array_like
        A floating (or complex) array of at least two dimensions (a stack of matrices).
    keepdims : bool, optional
        Keep the two reduced axes with length one.
    ord : {"fro", "nuc", 1, -1, 2, -2, inf, -inf}, optional
        The norm (default Frobenius), as ``numpy.linalg.matrix_norm``.

    Returns
    -------
    RelArray
        One norm per matrix, with a real floating dtype.

    See Also
    --------
    vector_norm, norm

    Examples
    --------
    >>> x = da.from_array(np.array([[3.0, 4.0], [0.0, 0.0]]), chunks=1)
    >>> da.linalg.matrix_norm(x).compute()
    np.float64(5.0)
    """
    return _matrix_norm(_real_float(x), ord, (x.ndim - 2, x.ndim - 1), keepdims)


def _matrix_norm(x, ord, axes, keepdims):
    from ..reductions import max as max_
    from ..reductions import min as min_
    from ..reductions import sum as sum_
    from ..structure import expand_dims, moveaxis

    r, c = axes
    if ord in ("fro", None):
        return vector_norm(x, axis=axes, keepdims=keepdims)
    if ord in (1, -1, np.inf, -np.inf):
        summed = sum_(_abs(x), axis=r if ord in (1, -1) else c, keepdims=True)
        pick = max_ if ord in (1, np.inf) else min_
        return pick(summed, axis=axes, keepdims=keepdims)
    if ord in (2, -2, "nuc"):
        s = svdvals(moveaxis(x, (r, c), (-2, -1)))
        out = sum_(s, axis=-1) if ord == "nuc" else (max_ if ord == 2 else min_)(s, axis=-1)
        return expand_dims(out, axes) if keepdims else out
    raise ValueError(f"Invalid norm order {ord!r} for matrices")


@derived_from(np.linalg)
def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm (dask.array.linalg.norm)."""
    x = _real_float(x)
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        axis = tuple(range(x.ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = tuple(axis_of(a, x.ndim) for a in axes)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order {ord!r} for vectors")
        return vector_norm(x, axis=axes, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError("Duplicate axes given.")
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


@derived_from(np.linalg)
def det(a):
    return batched("det", a)


SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


@derived_from(np.linalg)
def slogdet(a):
    return SlogdetResult(batched("slogdet", a, 0), batched("slogdet", a, 1))


@derived_from(np.linalg)
def eigh(a, UPLO="L"):
    return EighResult(batched("eigh", a, 0, UPLO=UPLO), batched("eigh", a, 1, UPLO=UPLO))


@derived_from(np.linalg)
def eigvalsh(a, UPLO="L"):
    return batched("eigvalsh", a, UPLO=UPLO)


@derived_from(np.linalg)
def pinv(a, rtol=None):
    return batched("pinv", a, rtol=rtol)


@derived_from(np.linalg)
def matrix_rank(a, rtol=None):
    a = asarray(a)
    if a.ndim < 2:
        from ..elementwise import not_equal
        from ..reductions import any as any_

        return any_(not_equal(a, 0)).astype(np.int64)
    return batched("matrix_rank", a, rtol=rtol)


@derived_from(np.linalg)
def matrix_power(a, n):
    """``a`` to the integer power ``n`` by repeated squaring (negative: of the inverse)."""
    from ..creation import eye
    from ..manipulation import broadcast_to
    from .blocked import inv

    a = asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"matrix_power: expected a stack of square matrices, got shape {a.shape}")
    if int(n) != n:
        raise TypeError("exponent must be an integer")
    n = int(n)
    if n < 0:
        a, n = (inv(a) if a.ndim == 2 else batched("inv", a)), -n
    if n == 0:
        return broadcast_to(eye(a.shape[-1], chunks=(a.chunks[-1], a.chunks[-1]), dtype=a.dtype), a.shape)
    out, sq = None, a
    while n:
        if n & 1:
            out = sq if out is None else out @ sq
        n >>= 1
        if n:
            sq = sq @ sq
    return out


@derived_from(np)
def diagonal(a, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: the diagonal as a gather of the two axes merged into one."""
    from ..structure import moveaxis, reshape

    a = asarray(a)
    i, j = axis_of(axis1, a.ndim), axis_of(axis2, a.ndim)
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    a = moveaxis(a, (i, j), (-2, -1))
    m, n = a.shape[-2:]
    rows = np.arange(max(0, -offset), min(m, n - offset)) if -m < offset < n else np.arange(0)
    flat = reshape(a, a.shape[:-2] + (m * n,))
    return flat[..., rows * n + rows + offset]


@derived_from(np)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    from ..reductions import sum as sum_

    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


@derived_from(np.linalg)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """numpy.cross of 3-element vectors (broadcasting the other axes)."""
    from ..stacking import stack
    from ..structure import moveaxis

    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(asarray(a), axisa, -1), moveaxis(asarray(b), axisb, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ValueError("incompatible dimensions for cross product (dimension must be 3)")
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)


@derived_from(np.linalg)
def lstsq(a, b):
    """dask's lstsq: ``x, residuals, rank, s`` through TSQR and a triangular solve."""
    from ..reductions import sum as sum_
    from .blocked import solve_triangular
    from .qr import qr

    a, b = asarray(a), asarray(b)
    q, r = qr(a)
    x = solve_triangular(r, q.conj().T @ b, lower=False)
    res = b - a @ x
    residuals = sum_(_abs(res * res.conj()), axis=0, keepdims=b.ndim == 1)
    return x, residuals, batched("matrix_rank", r), svdvals(r)


__all__ = [
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "lstsq",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "norm",
    "pinv",
    "slogdet",
    "svdvals",
    "trace",
    "vector_norm",
]

"""The rest of dask.array's routines, each composed from the TRA-lowered operations of the
other families (elementwise Joins, reductions, gathers, concatenation): select, piecewise,
choose, gradient, ediff1d, diag, tri, rot90, average, cov, corrcoef, digitize, ...

User functions (piecewise, fromfunction) run inside chunk kernels and so
must pickle like any graph content (module-level functions).
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from dask.utils import derived_from

from . import reductions, stacking
from .creation import arange, asarray, eye, from_array, full_like, ones, ones_like, zeros, zeros_like
from .elementwise import (
    astype,
    ceil,
    clip,
    conj,
    floor,
    imag,
    isclose,
    isinf,
    isnan,
    logical_and,
    logical_not,
    logical_or,
    real,
    signbit,
    sqrt,
    where,
)
from .linalg.norms import diagonal
from .manipulation import broadcast_arrays, broadcast_to, flip, tril
from .rechunk import rechunk
from .reductions import mean
from .relations import axes_of, axis_of, is_array
from .stacking import concatenate
from .structure import atleast_2d, expand_dims, moveaxis, ravel, reshape, squeeze, transpose

# ---------------------------------------------------------------- choosing elements


@derived_from(np)
def select(condlist, choicelist, default=0):
    """numpy.select: the first true condition picks its choice, else ``default``."""
    # a RelArray as the list: its slices along the first axis, as NumPy iterates an array
    condlist = [condlist[i] for i in range(len(condlist))] if is_array(condlist) else condlist
    choicelist = [choicelist[i] for i in range(len(choicelist))] if is_array(choicelist) else choicelist
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    conds = [asarray(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    dtype = np.result_type(*[getattr(c, "dtype", np.asarray(c).dtype) for c in choicelist], np.asarray(default))
    out = astype(
        broadcast_to(
            asarray(np.asarray(default, dtype)),
            np.broadcast_shapes(*[c.shape for c in conds], *[np.shape(c) for c in choicelist]),
        ),
        dtype,
    )
    for c, v in reversed(list(zip(conds, choicelist))):
        out = where(c, v, out).astype(dtype)
    return out


def _choose(index, *choices):
    return np.choose(index, choices)


@derived_from(np)
def choose(a, choices):
    """numpy.choose (mode "raise": an index out of range fails when computed, as in dask)."""
    from .elementwise import elementwise

    return elementwise("choose", _choose, a, *choices)


def _apply_piece(func, args, kw, x):
    if not callable(func):
        return np.full_like(x, func)
    return np.array(np.broadcast_to(np.asarray(func(x, *args, **kw), dtype=x.dtype), x.shape))  # a scalar too


@derived_from(np)
def piecewise(x, condlist, funclist, *args, **kw):
    """numpy.piecewise with elementwise pieces: ``funclist[i]`` (a callable, applied to the whole
    chunk, or a scalar) where ``condlist[i]`` holds; one extra function is the otherwise case."""
    from .elementwise import elementwise

    x = asarray(x)
    if is_scalar_bool(condlist) or (
        isinstance(condlist, (list, tuple)) and condlist and np.ndim(condlist[0]) == 0 and x.ndim
    ):
        condlist = [condlist]
    conds = [broadcast_to(asarray(c), x.shape) for c in condlist]
    if len(funclist) not in (len(conds), len(conds) + 1):
        raise ValueError(
            f"with {len(conds)} condition(s), either {len(conds)} or {len(conds) + 1} functions are expected"
        )
    if len(funclist) == len(conds) + 1:
        rest = logical_not(functools.reduce(logical_or, conds)) if conds else ones(x.shape, bool)
        conds, funclist = conds + [rest], list(funclist)
    out = zeros_like(x)
    for c, f in zip(conds, funclist):
        piece = elementwise("piece", functools.partial(_apply_piece, f, args, kw), x, dtype=x.dtype)
        out = where(c, piece, out)
    return out


def is_scalar_bool(v):
    return isinstance(v, (bool, np.bool_))


# ---------------------------------------------------------------- differences, gradients


@derived_from(np)
def ediff1d(ary, to_end=None, to_begin=None):
    a = ravel(asarray(ary))
    out = a[1:] - a[:-1]
    parts = [ravel(asarray(np.asarray(v, out.dtype))) for v in (to_begin,) if v is not None]
    parts += [out] + [ravel(asarray(np.asarray(v, out.dtype))) for v in (to_end,) if v is not None]
    return concatenate(parts) if len(parts) > 1 else out


@derived_from(np)
def gradient(f, *varargs, axis=None, edge_order=1, **kwargs):
    """numpy.gradient with scalar spacings: central differences inside, one-sided at the edges."""
    f = asarray(f)
    axes = axes_of(axis, f.ndim) if axis is None or np.ndim(axis) else (axis_of(axis, f.ndim),)
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    spacing = list(varargs) or [1.0]
    if len(spacing) == 1:
        spacing = spacing * len(axes)
    if len(spacing) != len(axes):
        raise TypeError("invalid number of arguments")
    if any(np.ndim(h) != 0 for h in spacing):
        raise NotImplementedError("gradient: coordinate arrays as spacing are not supported (scalars only)")
    if f.dtype.kind in "biu":
        f = f.astype(np.float64)
    out = []
    for ax, h in zip(axes, spacing):
        n = f.shape[ax]
        if n < edge_order + 1:
            raise ValueError(
                "Shape of array too small to calculate a numerical gradient, at least (edge_order "
                "+ 1) elements are required."
            )

        def s(lo, hi, ax=ax):
            return f[(slice(None),) * ax + (slice(lo, hi),)]

        inner = (s(2, None) - s(None, -2)) / (2.0 * h)
        if edge_order == 1:
            first, last = (s(1, 2) - s(0, 1)) / h, (s(-1, None) - s(-2, -1)) / h
        else:
            first = (-1.5 * s(0, 1) + 2.0 * s(1, 2) - 0.5 * s(2, 3)) / h
            last = (0.5 * s(-3, -2) - 2.0 * s(-2, -1) + 1.5 * s(-1, None)) / h
        g = concatenate([first, inner, last], axis=ax)
        out.append(rechunk(g, f.chunks) if g.shape == f.shape else g)
    return out[0] if len(out) == 1 else out


# ---------------------------------------------------------------- matrices


@derived_from(np)
def diag(v, k=0):
    """numpy.diag: the k-th diagonal of a 2-d array, or a 2-d array with ``v`` on it."""
    v = asarray(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + abs(k)
    line = concatenate([v, zeros(abs(k), dtype=v.dtype)]) if k else v  # entry (i, j) is line[min(i, j)]
    return where(
        eye(n, k=k, dtype=bool, chunks=line.chunks * 2),
        line[:, None] if k >= 0 else line[None, :],
        np.zeros((), v.dtype),
    )


@derived_from(np)
def tri(N, M=None, k=0, dtype=float, chunks="auto", **kwargs):
    M = N if M is None else M
    return tril(ones((N, M), dtype=dtype, chunks=chunks), k)


@derived_from(np)
def fliplr(m):
    return flip(m, 1)


@derived_from(np)
def flipud(m):
    return flip(m, 0)


@derived_from(np)
def rot90(m, k=1, axes=(0, 1)):
    m = asarray(m)
    a0, a1 = (axis_of(a, m.ndim) for a in axes)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


@derived_from(np)
def rollaxis(a, axis, start=0):
    a = asarray(a)
    axis = axis_of(axis, a.ndim)
    start = start + a.ndim if start < 0 else start
    if not 0 <= start <= a.ndim:
        raise np.exceptions.AxisError(f"start={start} out of range")
    return moveaxis(a, axis, start - 1 if axis < start else start)


@derived_from(np)
def vdot(a, b):
    a, b = ravel(asarray(a)), ravel(asarray(b))
    return reductions.sum(conj(a) * b)


# ---------------------------------------------------------------- statistics


@derived_from(np)
def average(a, axis=None, weights=None, returned=False, keepdims=False):
    a = asarray(a)
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        scl = full_like(avg, a.size / max(avg.size, 1) if a.size else 0, dtype=avg.dtype)
    else:
        w = asarray(weights)
        if w.shape != a.shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if w.ndim != 1 or w.shape[0] != a.shape[axis]:
                raise ValueError("Length of weights not compatible with specified axis.")
            w = reshape(w, tuple(w.shape[0] if d == axis_of(axis, a.ndim) else 1 for d in range(a.ndim)))
        dt = np.result_type(a.dtype, w.dtype, np.float64 if a.dtype.kind in "biu" else a.dtype)
        scl = reductions.sum(broadcast_to(w, a.shape).astype(dt), axis=axis, keepdims=keepdims)
        avg = reductions.sum((a * w).astype(dt), axis=axis, keepdims=keepdims) / scl
    return (avg, scl) if returned else avg


def _sample_weights(w, name, n):
    w = asarray(w).astype(np.float64)
    if w.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if w.shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    return w


@derived_from(np)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """numpy.cov (dask's signature). As dask, the weights are not checked for being
    non-negative (nor fweights for being integers): that would compute them."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = asarray(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = asarray(y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64) if y is None else np.result_type(m.dtype, y.dtype, np.float64)
    x = atleast_2d(m).astype(dtype)
    if not rowvar and m.ndim != 1:
        x = x.T
    if x.shape[0] == 0:
        return zeros((0, 0), dtype=dtype)
    if y is not None:
        y = atleast_2d(y).astype(dtype)
        if not rowvar and y.shape[0] != 1:
            y = y.T
        x = concatenate([x, y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    ddof = int(ddof)
    n = x.shape[1]
    w = None if fweights is None else _sample_weights(fweights, "fweights", n)
    aw = None if aweights is None else _sample_weights(aweights, "aweights", n)
    if aw is not None:
        w = aw if w is None else w * aw
    if w is None:
        avg = mean(x, axis=1, keepdims=True)
        fact = n - ddof
        if fact <= 0:  # NumPy: a warning, then 1 / 0.0 (inf, or NaN where the sum is 0)
            warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        scale = 1.0 / fact if fact > 0 else math.inf
    else:
        w_sum = reductions.sum(w)
        avg = reductions.sum(x * w, axis=1, keepdims=True) / w_sum
        if ddof == 0:
            fact = w_sum
        elif aw is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * reductions.sum(w * aw) / w_sum
        # NumPy's fact <= 0 -> 0 (an infinite scale), lazily; NumPy also warns, which would
        # need the weights computed
        scale = where(fact > 0, 1 / where(fact > 0, fact, 1.0), np.inf)
    xc = x - avg
    xt = conj(xc if w is None else xc * w).T
    c = (xc @ xt) * scale
    if c.dtype != x.dtype:
        c = c.astype(x.dtype)
    return squeeze(c) if c.shape == (1, 1) else c


@derived_from(np)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """numpy.corrcoef: cov scaled by the standard deviations, real and imaginary parts
    clipped to [-1, 1]; a single variable gives ``c / c`` (1, or NaN for a zero, infinite or
    NaN variance), as NumPy."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = diagonal(c)
    sd = sqrt(real(d))
    out = c / sd[:, None] / sd[None, :]
    if out.dtype.kind != "c":
        return clip(out, -1, 1)
    from .elementwise import elementwise

    return elementwise("clipParts", _clip_parts, out, dtype=out.dtype)


def _clip_parts(c):
    """Real and imaginary parts clipped to [-1, 1] (NumPy's corrcoef of complex data)."""
    c = c.copy()
    np.clip(c.real, -1, 1, out=c.real)
    np.clip(c.imag, -1, 1, out=c.imag)
    return c


@derived_from(np)
def ptp(a, axis=None, keepdims=False):
    return reductions.max(a, axis=axis, keepdims=keepdims) - reductions.min(a, axis=axis, keepdims=keepdims)


def moment(a, order, axis=None, dtype=None, keepdims=False, ddof=0, split_every=None, out=None):
    """The ``order``-th central moment, as dask.array's ``moment``: ``sum((a - mean)**order) / (n - ddof)``.

    Parameters
    ----------
    a : array_like
        The array.
    order : int
        The moment's order (non-negative).
    axis : int or tuple of int, optional
        The axes reduced over; None: all.
    dtype : dtype, optional
        The result's dtype.
    keepdims : bool, optional
        Keep the reduced axes with length one.
    ddof : int, optional
        Delta degrees of freedom: the divisor is ``n - ddof``.
    split_every : int, optional
        Accepted for dask's signature.
    out : RelArray, optional
        A RelArray rebound to the result.

    Returns
    -------
    RelArray
        The moment.

    Examples
    --------
    >>> x = da.from_array(np.array([1.0, 2.0, 3.0, 4.0]), chunks=2)
    >>> da.moment(x, 2).compute()
    np.float64(1.25)
    """
    a = asarray(a)
    if not isinstance(order, (int, np.integer)) or order < 0:
        raise ValueError("Order must be an integer >= 0")
    if order < 2:
        val = (
            ones_like(mean(a, axis=axis, keepdims=keepdims))
            if order == 0
            else zeros_like(mean(a, axis=axis, keepdims=keepdims))
        )
        return val if dtype is None else val.astype(dtype)
    n = math.prod(a.shape[d] for d in axes_of(axis, a.ndim))
    centered = a - mean(a, axis=axis, keepdims=True, dtype=dtype)
    return reductions.sum(centered**order, axis=axis, keepdims=keepdims, dtype=dtype) / (n - ddof)


# ---------------------------------------------------------------- elementwise helpers


def _digitize(x, bins, right):
    return np.digitize(x, bins, right=right)


@derived_from(np)
def digitize(a, bins, right=False):
    from .elementwise import elementwise

    bins = np.asarray(bins)
    if bins.ndim != 1:
        raise ValueError("bins must be a 1-d NumPy array")
    return elementwise("digitize", functools.partial(_digitize, bins=bins, right=right), a, dtype=np.intp)


def _i0(x):
    return np.i0(x)


@derived_from(np)
def i0(x):
    from .elementwise import elementwise

    return elementwise("i0", _i0, x)


@derived_from(np)
def sinc(x):
    from .elementwise import elementwise

    return elementwise("sinc", np.sinc, x)


@derived_from(np)
def fix(x):
    return where(asarray(x) >= 0, floor(x), ceil(x))


@derived_from(np)
def iscomplex(x):
    from .elementwise import _lazy

    if not _lazy((x,), {}):
        return np.iscomplex(x)  # NumPy's result on NumPy input, as dask's
    x = asarray(x)
    return imag(x) != 0 if x.dtype.kind == "c" else zeros(x.shape, bool, chunks=x.chunks)


@derived_from(np)
def isreal(x):
    from .elementwise import _lazy

    return logical_not(iscomplex(x)) if _lazy((x,), {}) else np.isreal(x)


@derived_from(np)
def isneginf(x):
    return logical_and(isinf(x), signbit(x))


@derived_from(np)
def isposinf(x):
    return logical_and(isinf(x), logical_not(signbit(x)))


def isnull(values):
    """Where ``values`` is missing (NaN), as dask.array's ``isnull`` (pandas' name).

    Parameters
    ----------
    values : array_like
        The array (a non-floating one has no missing values).

    Returns
    -------
    RelArray
        A boolean array, True at NaNs.

    See Also
    --------
    notnull, isnan

    Examples
    --------
    >>> da.isnull(da.from_array(np.array([1.0, np.nan]), chunks=1)).compute()
    array([False,  True])
    """
    values = asarray(values)
    return isnan(values) if values.dtype.kind in "fc" else zeros(values.shape, bool, chunks=values.chunks)


def notnull(values):
    """Where ``values`` is not missing (not NaN), as dask.array's ``notnull`` (pandas' name).

    Parameters
    ----------
    values : array_like
        The array.

    Returns
    -------
    RelArray
        A boolean array, False at NaNs.

    See Also
    --------
    isnull

    Examples
    --------
    >>> da.notnull(da.from_array(np.array([1.0, np.nan]), chunks=1)).compute()
    array([ True, False])
    """
    return logical_not(isnull(values))


@derived_from(np)
def allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    """A 0-d boolean RelArray (as dask's), not a Python bool."""
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


# ---------------------------------------------------------------- indices


@derived_from(np)
def indices(dimensions, dtype=int, chunks="auto"):
    """numpy.indices: a grid of indices, one leading entry per dimension."""
    dimensions = tuple(int(d) for d in dimensions)
    grids = []
    for i, n in enumerate(dimensions):
        shape = tuple(n if j == i else 1 for j in range(len(dimensions)))
        grids.append(broadcast_to(reshape(arange(n, dtype=dtype, chunks=chunks), shape), dimensions))
    return stacking.stack(grids) if grids else zeros((0,), dtype=dtype)


@derived_from(np)
def fromfunction(function, shape, *, dtype=float, chunks="auto", **kwargs):
    """numpy.fromfunction: ``function`` called once on the index grids (RelArrays)."""
    grids = indices(shape, dtype=dtype, chunks=chunks)
    return function(*[grids[i] for i in range(len(shape))], **kwargs)


@derived_from(np)
def meshgrid(*xi, sparse=False, indexing="xy"):
    """numpy.meshgrid of 1-d arrays (reshapes, then broadcasts unless ``sparse``)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    arrays = [ravel(asarray(a)) for a in xi]
    shapes = [[1] * len(arrays) for _ in arrays]
    for i, a in enumerate(arrays):
        shapes[i][i] = a.shape[0]
    if indexing == "xy" and len(arrays) > 1:
        for s in shapes:
            s[0], s[1] = s[1], s[0]
    grids = [reshape(a, tuple(s)) for a, s in zip(arrays, shapes)]
    return tuple(grids) if sparse else broadcast_arrays(*grids)


def _from_numpy(values, chunks="auto"):
    return from_array(np.asarray(values), chunks=chunks)


@derived_from(np)
def tril_indices(n, k=0, m=None, chunks="auto"):
    return tuple(_from_numpy(v, chunks) for v in np.tril_indices(n, k, m))


@derived_from(np)
def triu_indices(n, k=0, m=None, chunks="auto"):
    return tuple(_from_numpy(v, chunks) for v in np.triu_indices(n, k, m))


def tril_indices_from(arr, k=0):
    """The indices of the lower triangle of a 2-d array (``numpy.tril_indices_from``).

    Parameters
    ----------
    arr : array_like
        A 2-d array (only its shape is used).
    k : int, optional
        The diagonal above which to stop: 0 the main one, positive above it, negative below.

    Returns
    -------
    tuple of RelArray
        The row and the column indices.

    See Also
    --------
    tril_indices, triu_indices_from

    Examples
    --------
    >>> rows, cols = da.tril_indices_from(da.ones((3, 3), chunks=2))
    >>> rows.compute(), cols.compute()
    (array([0, 1, 1, 2, 2, 2]), array([0, 0, 1, 0, 1, 2]))
    """
    arr = asarray(arr)
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(arr.shape[-2], k, arr.shape[-1])


@derived_from(np)
def triu_indices_from(arr, k=0):
    arr = asarray(arr)
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(arr.shape[-2], k, arr.shape[-1])


def _ravel_multi(dims, mode, order, *index):
    return np.ravel_multi_index(index, dims, mode=mode, order=order)


@derived_from(np)
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    from .elementwise import elementwise

    dims = tuple(int(d) for d in dims)
    return elementwise(
        "ravel_multi_index", functools.partial(_ravel_multi, dims, mode, order), *multi_index, dtype=np.intp
    )


def _unravel(shape, order, i, index):
    return np.unravel_index(index, shape, order=order)[i]


@derived_from(np)
def unravel_index(indices, shape, order="C"):
    from .elementwise import elementwise

    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    return tuple(
        elementwise(f"unravel_index[{i}]", functools.partial(_unravel, shape, order, i), indices, dtype=np.intp)
        for i in range(len(shape))
    )


# ---------------------------------------------------------------- joining and cutting


@derived_from(np)
def append(arr, values, axis=None):
    arr, values = asarray(arr), asarray(values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)])
    return concatenate([arr, values], axis=axis)


@derived_from(np)
def delete(arr, obj, axis):
    arr = asarray(arr)
    axis = axis_of(axis, arr.ndim)
    keep = np.delete(np.arange(arr.shape[axis]), obj)
    return arr[(slice(None),) * axis + (keep,)]


@derived_from(np)
def insert(arr, obj, values, axis):
    """numpy.insert along ``axis`` (scalar or 1-d NumPy positions; values broadcast)."""
    arr = asarray(arr)
    axis = axis_of(axis, arr.ndim)
    n = arr.shape[axis]
    pos = np.arange(n + 1)[obj] if isinstance(obj, slice) else np.asarray(obj)
    scalar = pos.ndim == 0
    pos = np.where(np.atleast_1d(pos) < 0, np.atleast_1d(pos) + n, np.atleast_1d(pos))
    values = asarray(values)
    if scalar and values.ndim == arr.ndim:
        values = moveaxis(values, 0, axis)  # numpy inserts a block of rows at a scalar position
        count = values.shape[axis]
    else:
        count = len(pos) if not scalar else 1
    shape = list(arr.shape)
    shape[axis] = count
    if scalar and values.ndim < arr.ndim:
        values = expand_dims(values, axis) if values.ndim == arr.ndim - 1 else values
    values = broadcast_to(values, tuple(shape)).astype(arr.dtype)
    joined = concatenate([arr, values], axis=axis)
    new = np.repeat(pos, count) if scalar else pos  # inserted before the element now at that position
    order = np.argsort(np.concatenate([2 * np.arange(n) + 1, 2 * new]), kind="stable")
    return joined[(slice(None),) * axis + (order,)]


@derived_from(np)
def block(arrays):
    """numpy.block: nested lists concatenated, innermost along the last axis."""
    levels = _block_depth(arrays)
    if levels == 0:
        return asarray(arrays)
    ndim = max(levels, max(asarray(a).ndim for a in _leaves(arrays)))

    def build(x, level):
        if not isinstance(x, list):
            a = asarray(x)
            return reshape(a, (1,) * (ndim - a.ndim) + a.shape) if a.ndim < ndim else a
        return concatenate([build(v, level + 1) for v in x], axis=ndim - levels + level)

    return build(arrays, 0)


def _block_depth(arrays) -> int:
    """The nesting depth of ``block``'s lists, checked as NumPy and dask.array check it: no
    tuples, every leaf at one depth, no empty list."""
    found, empty = None, False

    def walk(x, index):
        nonlocal found, empty
        where = "arrays" + "".join(f"[{i}]" for i in index)
        if type(x) is tuple:
            raise TypeError(
                f"{where} is a tuple. Only lists can be used to arrange blocks, and np.block does "
                "not allow implicit conversion from tuple to ndarray."
            )
        if type(x) is list and x:
            for i, v in enumerate(x):
                walk(v, index + (i,))
            return
        depth = len(index) + (type(x) is list)
        empty = empty or type(x) is list
        if found is not None and found != depth:
            raise ValueError(
                f"List depths are mismatched. First element was at depth {found}, "
                f"but there is an element at depth {depth} ({where})"
            )
        found = depth

    walk(arrays, ())
    if empty:
        raise ValueError("Lists cannot be empty")
    return found


def _leaves(x):
    stack, out = [x], []
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        else:
            out.append(v)
    return out


def coarsen(reduction, x, axes, trim_excess=False, **kwargs):
    """``reduction`` over non-overlapping windows, as dask.array's ``coarsen``.

    Parameters
    ----------
    reduction : callable
        A NumPy reduction taking ``axis=`` (``np.sum``, ``np.mean``, ...), applied to each
        window.
    x : array_like
        The array.
    axes : dict
        ``{axis: window size}``; each size must divide the axis's length.
    trim_excess : bool, optional
        Drop the elements past the last whole window instead of raising.
    **kwargs
        Passed to ``reduction``.

    Returns
    -------
    RelArray
        ``x`` with each axis in ``axes`` shortened by its window size.

    Examples
    --------
    >>> x = da.from_array(np.arange(8.0).reshape(2, 4), chunks=2)
    >>> da.coarsen(np.sum, x, {1: 2}).compute()
    array([[ 1.,  5.],
           [ 9., 13.]])
    """
    x = asarray(x)
    if trim_excess:
        x = x[tuple(slice(0, x.shape[d] - x.shape[d] % axes.get(d, 1)) for d in range(x.ndim))]
    for d, f in axes.items():
        if x.shape[d] % f:
            raise ValueError(
                f"Coarsening factor does not align with block dimensions: axis {d} of length "
                f"{x.shape[d]} is not a multiple of {f}"
            )
    shape, red = [], []
    for d, n in enumerate(x.shape):
        f = axes.get(d, 1)
        shape += [n // f, f]
        red.append(2 * d + 1)
    return reduction(reshape(x, tuple(shape)), axis=tuple(red), **kwargs)


# ---------------------------------------------------------------- per-chunk user functions


@derived_from(np)
def apply_over_axes(func, a, axes):
    a = asarray(a)
    for ax in (axes,) if np.ndim(axes) == 0 else axes:
        ax = axis_of(ax, a.ndim)
        res = func(a, ax)
        a = res if res.ndim == a.ndim else expand_dims(res, ax)
    return a


# ---------------------------------------------------------------- metadata


@derived_from(np)
def shape(a):
    return asarray(a).shape


@derived_from(np)
def ndim(a):
    return asarray(a).ndim


@derived_from(np)
def result_type(*arrays_and_dtypes):
    return np.result_type(*[v.dtype if is_array(v) else v for v in arrays_and_dtypes])


@derived_from(np)
def asanyarray(a, dtype=None, chunks="auto", *, like=None, **kwargs):
    return asarray(a, dtype=dtype, chunks=chunks, like=like)


__all__ = [
    "allclose",
    "append",
    "apply_over_axes",
    "asanyarray",
    "average",
    "block",
    "choose",
    "coarsen",
    "corrcoef",
    "cov",
    "delete",
    "diag",
    "digitize",
    "ediff1d",
    "fix",
    "fliplr",
    "flipud",
    "fromfunction",
    "gradient",
    "i0",
    "indices",
    "insert",
    "iscomplex",
    "isneginf",
    "isnull",
    "isposinf",
    "isreal",
    "meshgrid",
    "moment",
    "ndim",
    "notnull",
    "piecewise",
    "ptp",
    "ravel_multi_index",
    "result_type",
    "rollaxis",
    "rot90",
    "select",
    "shape",
    "sinc",
    "tri",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
    "unravel_index",
    "vdot",
]

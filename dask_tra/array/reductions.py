"""Reductions: ``Transform`` (reduce each chunk, keeping the reduced axes with extent 1)
then ``Aggregate`` over the other key dims with an associative, commutative kernel, then
(maybe) a final ``Transform``; ``keepdims`` ReKeys the reduced key dims back in (extent 1),
otherwise a Transform squeezes the reduced chunk axes.

- sum/prod/min/max/any/all: chunk reduction, Aggregate with add/multiply/maximum/minimum.
- mean: sum (in float), then divide by the element count.
- nanmean: a stacked (NaN-skipping sum, count of non-NaN elements) per block, added, then
  divided: one aggregation, as dask's ``mean_chunk``/``mean_agg``.
- var/std: a stacked chunk (count, mean, M2) per block, merged with Chan et al.'s parallel
  update (associative, commutative), finished as M2 / (count - ddof).
- argmin/argmax: a stacked chunk (value, global index). The chunk's global offsets reach the
  kernel through a Join with an offsets relation; the merge keeps the better pair (NumPy's
  first-occurrence and NaN rules).
- cumsum/cumprod along an axis: dask's block prefix. Per-chunk scans; the last slab of each
  (the block total; the identity for an empty block) is gathered into one block along the
  axis, where NumPy's own scan of [identity, totals[:-1]] gives every block's carry (a
  sequential left-to-right fold, as dask's chain: no 0 * inf or 0 * NaN); the carries are
  split back one per block and Joined onto the scans. axis=None flattens into as many
  blocks as the array has.
"""

from __future__ import annotations

import builtins
import functools
import math

import numpy as np
from dask.utils import derived_from

from ..backends import masked
from ..tra import Aggregate, Join, Transform
from ..tra import kernels as K
from ..tra.kernels import Bound, GradKernel, cast, first_axes, xp_of
from ..tra.relation import ChunkAxis
from ..tra.vjp import register_partials, register_vjp
from .creation import asarray
from .elementwise import astype, not_equal
from .kernels import ARRAY, DIVIDE_PARTIALS, ElementwiseOp, Fn, Op, Reshape, along, dtype_of, npx
from .methods import handle_out
from .rechunk import even_chunks, rechunk_axes
from .relations import axes_of, axis_of, check_dtype, grid, offsets, param_relation, rekey, wrap

fmax, fmin = K.fmax, K.fmin


def reduction(x, axis, keepdims, init, merge, final=None, start=None, extra=None):
    """Transform(init) [or the given ``start`` expression], Aggregate(kept dims, merge),
    Transform(final); then keepdims/squeeze. ``init`` maps the reduced axes to a kernel."""
    axes = axes_of(axis, x.ndim)
    kept = [d for d in range(x.ndim) if d not in axes]
    if start is None:
        kernel = init(axes)  # a sum skips missing blocks; other reductions see their zeros
        skip = kernel.annihilates and merge.zero_identity and final is None
        start = Transform(x.sparse_expr if skip else x.expr, kernel)
    expr = Aggregate(start, kept, merge)
    if final is not None:
        expr = Transform(expr, final)
    if keepdims:
        expr = rekey(expr, [kept.index(d) if d in kept else None for d in range(x.ndim)])
    elif axes:
        expr = Transform(expr, Reshape([(d, 1, 1) for d in kept]))
    return wrap(expr, x, extra=extra)


def with_out(reduce):
    """``reduce`` taking dask.array's ``out=``: a RelArray of the result's shape, rebound to it."""

    @functools.wraps(reduce)
    def reducing(*args, out=None, **kwargs):
        return handle_out(out, reduce(*args, **kwargs))

    return reducing


def _no_out(out, kw=None):
    if out is not None:  # given by position: out= (with_out) is the supported form
        raise TypeError("out= must be passed by keyword")
    if kw:
        raise TypeError(f"unsupported arguments {sorted(kw)} (where=, initial= are not supported)")


def _simple(op, merge, dtype_of):
    def reduce(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kw):
        _no_out(out, kw)
        a = asarray(a)
        dt = check_dtype(dtype_of(a.dtype, dtype))
        if op in ("max", "min"):
            _nonempty(a, axis, "maximum" if op == "max" else "minimum")
        return reduction(a, axis, keepdims, lambda axes: K.Reduce(op, axes, keepdims=True, dtype=dt), merge)

    reduce.__name__ = op
    reduce.__doc__ = f"{op} over ``axis`` (None: all), like numpy.{op}."
    return with_out(reduce)


def _sum_dtype(dt, dtype):
    return np.sum(np.zeros(1, dt), dtype=dtype).dtype


sum = derived_from(np)(_simple("sum", K.add, _sum_dtype))  # noqa: A001
prod = derived_from(np)(_simple("prod", K.mul, _sum_dtype))
max = derived_from(np)(_simple("max", K.maximum, lambda dt, dtype: dt))  # noqa: A001
min = derived_from(np)(_simple("min", K.minimum, lambda dt, dtype: dt))  # noqa: A001
any = derived_from(np)(_simple("any", K.maximum, lambda dt, dtype: np.bool_))  # noqa: A001
all = derived_from(np)(_simple("all", K.minimum, lambda dt, dtype: np.bool_))  # noqa: A001
nansum = derived_from(np)(_simple("nansum", K.add, _sum_dtype))
nanprod = derived_from(np)(_simple("nanprod", K.mul, _sum_dtype))
nanmax = derived_from(np)(_simple("nanmax", fmax, lambda dt, dtype: dt))
nanmin = derived_from(np)(_simple("nanmin", fmin, lambda dt, dtype: dt))
amax, amin = max, min


def _nonempty(a, axis, what):
    if a.size == 0 and math.prod(a.shape[d] for d in axes_of(axis, a.ndim)) == 0:
        raise ValueError(f"zero-size array to reduction operation {what} which has no identity")


def _count(a, axis):
    return math.prod(a.shape[d] for d in axes_of(axis, a.ndim))


def _acc_dtype(dt):
    """Accumulation dtype of NumPy's mean/var: float64 for integers, float32 for float16."""
    dt = np.dtype(dt)
    return np.dtype(np.float64) if dt.kind in "biu" else (np.dtype(np.float32) if dt == np.float16 else dt)


@derived_from(np)
@with_out
def mean(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kw):
    _no_out(out, kw)
    a = asarray(a)
    acc = check_dtype(dtype) if dtype is not None else _acc_dtype(a.dtype)
    res = acc if dtype is not None or a.dtype.kind in "biu" else a.dtype
    n = _count(a, axis)
    final = ElementwiseOp(f"mean[{n}]", Op(quiet_divide), (ARRAY, n), res)  # named so: plans and task names say mean
    return reduction(a, axis, keepdims, lambda axes: K.Reduce("sum", axes, keepdims=True, dtype=acc), K.add, final)


def quiet_divide(s, n):
    """``s / n``; an empty reduction (n = 0) gives NaN without a warning."""
    masked.refuse(s, "mean")
    with np.errstate(invalid="ignore", divide="ignore"):
        return s / n


register_partials(quiet_divide, DIVIDE_PARTIALS)


@derived_from(np)
@with_out
def nanmean(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kw):
    """numpy.nanmean: the sum of the non-NaN elements (accumulated as ``mean`` does) over their
    count, in NumPy's result dtype (the input's for inexact inputs, float64 for integers)."""
    _no_out(out, kw)
    a = asarray(a)
    if a.dtype.kind not in "fc":
        return mean(a, axis, dtype, keepdims)
    res = np.nanmean(np.ones(2, a.dtype), dtype=dtype).dtype
    acc = check_dtype(dtype) if dtype is not None else _acc_dtype(a.dtype)
    pair = np.result_type(acc, np.float64)  # the partial sums and counts, added exactly
    init = lambda axes: NanSumCount(axes, acc, pair)  # noqa: E731
    return reduction(a, axis, keepdims, init, K.add, NanMeanOf(res))


class NanSumCount(Fn):
    """A block's NaN-skipping sum along ``axes`` (in ``acc``, as NumPy accumulates) and its count
    of non-NaN elements, stacked in ``pair`` (partials added by an Aggregate, exactly)."""

    def __init__(self, axes, acc, pair):
        nansum = K.Reduce("nansum", axes, keepdims=True, dtype=acc)
        fn, stacked = Bound(_nan_sum_count, nansum, axes, pair), Bound(_stacked_axes, 2, axes)
        super().__init__(f"nanSumCount{list(axes)}", fn, 1, stacked, pair)
        self.axes = tuple(axes)

    def parts_merge(self, axis):
        return K.add if axis in self.axes else None  # sums and counts add up


def _nan_sum_count(nansum, axes, pair, c):
    xp = npx(c)
    s = nansum(c)
    n = xp.sum(xp.logical_not(xp.isnan(c)), axis=axes, keepdims=True)
    return xp.stack([xp.astype(s, pair), xp.astype(n, pair)])


class NanMeanOf(Fn):
    """``sum / count`` of a stacked (sum, count) in ``res``; an all-NaN slice (count 0) gives NaN
    without a warning, as dask's."""

    def __init__(self, res):
        super().__init__("nanmean", Bound(_sum_over_count, res), 1, _without_first_axis, res)


def _sum_over_count(res, s):
    xp = npx(s)
    return xp.astype(quiet_divide(s[0], xp.real(s[1])), res)


def _chunkwise_vjp(name, grad):
    """The VJP rule of a per-chunk kernel whose input's cotangent is ``grad(dtype, x, g)``."""

    def rule(node, g, x, y):
        dtype = node.child.type.dtype
        return x.zip(g, GradKernel(name, Bound(grad, dtype), 2, axes=first_axes, dtype=dtype))

    return rule


def _dnan_sum(dtype, xc, gc):
    """The sum's gradient reaches every non-NaN element; the count's is zero."""
    xp = xp_of(xc, gc)
    spread = xp.broadcast_to(gc[0], tuple(xc.shape))
    return cast(xp, xp.where(xp.isnan(xc), 0, spread), dtype)


def _dsum_over_count(dtype, sc, gc):
    """d(s/n)/ds = 1/n; the count is a constant (its cotangent zero)."""
    xp = xp_of(sc, gc)
    with np.errstate(invalid="ignore", divide="ignore"):
        ds = cast(xp, gc, dtype) / xp.real(sc[1])
    return xp.stack([ds, xp.zeros_like(ds)])


register_vjp(NanSumCount, _chunkwise_vjp("dnanSumCount", _dnan_sum))
register_vjp(NanMeanOf, _chunkwise_vjp("dnanMeanOf", _dsum_over_count))


@derived_from(np)
def count_nonzero(a, axis=None, keepdims=False):
    return sum(not_equal(a, 0), axis, dtype=np.intp, keepdims=keepdims)


# ---------------------------------------------------------------- var / std: (count, mean, M2)


def _moments_init(axes, dt):
    return Fn(f"moments{list(axes)}", Bound(_moments, axes, dt), axes=Bound(_stacked_axes, 3, axes), dtype=dt)


def _moments(axes, dt, c):
    masked.refuse(c, "var/std")
    xp = npx(c)
    n = math.prod(c.shape[a] for a in axes)
    m = xp.sum(c, axis=axes, keepdims=True, dtype=dt) / (n or 1)
    d = c - m
    m2 = xp.sum(xp.real(d * xp.conj(d)) if dt.kind == "c" else d * d, axis=axes, keepdims=True, dtype=dt)
    return xp.stack([xp.full_like(m, n), m, m2])


def _stacked_axes(k, axes, frontier, ax):
    """A block's ``k`` stacked partials, each reduced along ``axes`` (kept, extent 1)."""
    return (ChunkAxis.const(k),) + tuple(ChunkAxis.const(1) if i in axes else a for i, a in enumerate(ax))


def _moments_merge(a, b):
    xp = npx(a, b)
    na, nb = xp.real(a[0]), xp.real(b[0])
    n = na + nb
    safe = xp.where(n == 0, 1, n)
    delta = b[1] - a[1]
    m = a[1] + delta * (nb / safe)
    m2 = a[2] + b[2] + xp.real(delta * xp.conj(delta)) * (na * nb / safe)
    dt = dtype_of(a)
    return xp.stack([xp.astype(n, dt), m, xp.astype(m2, dt)])


def _without_first_axis(frontier, ax):
    return tuple(ax[1:])


moments_merge = Fn("mergeMoments", _moments_merge, 2, associative=True, commutative=True)


@derived_from(np)
@with_out
def var(
    a, axis=None, dtype=None, keepdims=False, ddof=0, split_every=None, out=None, *, correction=None, _root=False, **kw
):
    _no_out(out, kw)
    a = asarray(a)
    ddof = correction if correction is not None else ddof
    if dtype is not None and (np.dtype(dtype).kind in "biu" or (a.dtype.kind == "c" and np.dtype(dtype).kind != "c")):
        return _variance_in(a, axis, np.dtype(dtype), keepdims, ddof, _root)
    acc = check_dtype(dtype) if dtype is not None else _acc_dtype(a.dtype)
    res = np.var(np.ones(2, a.dtype), dtype=dtype).dtype
    final = Fn("std" if _root else "var", Bound(_variance, ddof, _root, res), axes=_without_first_axis, dtype=res)
    return reduction(a, axis, keepdims, lambda axes: _moments_init(axes, acc), moments_merge, final)


def _variance_in(a, axis, dtype, keepdims, ddof, root):
    """NumPy's own two-pass variance for a ``dtype`` that is integer, or real for complex data:
    the mean and the sum of squares are accumulated in ``dtype`` and each quotient is cast to it
    (``var(arange(5), dtype="i8")`` is 2; complex data summed as real keeps only real parts)."""
    from .elementwise import conj, real, sqrt, subtract, true_divide

    n = _count(a, axis)
    mean = astype(true_divide(sum(a, axis, dtype=dtype, keepdims=True), n), dtype)
    d = subtract(a, mean)
    sq = real(d * conj(d)) if d.dtype.kind == "c" else d * d
    v = astype(true_divide(sum(sq, axis, dtype=dtype, keepdims=keepdims), builtins.max(n - ddof, 0)), dtype)
    if root and dtype.kind in "biu" and v.ndim:  # NumPy's sqrt into an integer array
        raise TypeError(
            f"Cannot cast ufunc 'sqrt' output from dtype('float64') to dtype('{dtype}') with casting rule 'same_kind'"
        )
    return astype(sqrt(v), dtype) if root else v


def _variance(ddof, root, res, s):
    xp = npx(s)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = xp.real(s[2]) / xp.maximum(xp.real(s[0]) - ddof, 0)
    return xp.astype(xp.sqrt(v) if root else v, res)


@derived_from(np)
def std(a, axis=None, dtype=None, keepdims=False, ddof=0, split_every=None, out=None, *, correction=None, **kw):
    return var(a, axis, dtype, keepdims, ddof, out=out, correction=correction, _root=True, **kw)


# ---------------------------------------------------------------- argmin / argmax: (value, index)


def _arg_init(op, axis, shape, dt):
    return Fn(
        f"{op}Init", Bound(_arg_start, op, axis, shape, dt), 2, axes=Bound(_arg_axes, axis), dtype=dt, host_args=(1,)
    )


def _arg_start(op, axis, shape, dt, c, off):
    masked.refuse(c, op)
    xp = npx(c)
    red = tuple(range(c.ndim)) if axis is None else (axis,)
    kshape = tuple(1 if i in red else s for i, s in enumerate(c.shape))
    if math.prod(c.shape[i] for i in red) == 0:
        return xp.stack([xp.zeros(kshape, dt), xp.full(kshape, -1, dt)])
    if axis is None:  # the winner's position: a few integers, read on the host
        local = np.unravel_index(int(getattr(xp, op)(c)), tuple(c.shape))
        val = c[tuple(int(i) for i in local)]
        idx = np.ravel_multi_index(tuple(int(i) + int(o) for i, o in zip(local, off)), shape)
        return xp.stack([xp.full(kshape, val, dt), xp.full(kshape, int(idx), dt)])
    local = getattr(xp, op)(c, axis=axis, keepdims=True)
    val = xp.take_along_axis(c, local, axis)
    return xp.stack([xp.astype(val, dt), xp.astype(local + int(off[0]), dt)])


def _arg_axes(axis, frontier, ax, _):
    red = range(len(ax)) if axis is None else (axis,)
    return (ChunkAxis.const(2),) + tuple(ChunkAxis.const(1) if i in red else a for i, a in enumerate(ax))


def _arg_merge(op):
    return Fn(f"{op}Merge", Bound(_arg_better, op), 2, associative=True, commutative=True)


def _arg_better(op, a, b):
    xp = npx(a, b)
    va, ia, vb, ib = a[0], xp.real(a[1]), b[0], xp.real(b[1])
    cmp = xp.less(va, vb) if op == "argmin" else xp.greater(va, vb)
    better = cmp | ((va == vb) & (ia < ib))
    if dtype_of(a).kind in "fc":
        na, nb = xp.isnan(va), xp.isnan(vb)
        better = xp.where(na | nb, na & (~nb | (ia < ib)), better)
    better = xp.where(ib < 0, True, xp.where(ia < 0, False, better))
    return xp.where(better[None], a, b)


def _index_of(s):
    return npx(s).astype(npx(s).real(s[1]), np.intp)


def _arg(op):
    def reduce(a, axis=None, keepdims=False, split_every=None, out=None, **kw):
        _no_out(out, kw)
        a = asarray(a)
        if (a.size == 0) if axis is None else a.shape[axis_of(axis, a.ndim)] == 0:
            raise ValueError(f"attempt to get {op} of an empty sequence")
        ax = None if axis is None else axis_of(axis, a.ndim)
        dt = np.result_type(a.dtype, np.int64)
        dims = tuple(range(a.ndim)) if ax is None else (ax,)
        offs = [offsets(a.chunks[d]) for d in dims]
        P = param_relation(
            {k: [o[i] for o, i in zip(offs, k)] for k in grid(a.numblocks if ax is None else (a.numblocks[ax],))},
            tuple(a.numblocks[d] for d in dims),
            what="offsets",
        )
        start = Join(a.expr, P.expr, dims, tuple(range(len(dims))), _arg_init(op, ax, a.shape, dt))
        final = Fn("index", _index_of, axes=_without_first_axis, dtype=np.intp)
        return reduction(a, axis, keepdims, None, _arg_merge(op), final, start=start, extra=P.sources)

    reduce.__name__ = op
    return with_out(reduce)


argmin = derived_from(np)(_arg("argmin"))
argmax = derived_from(np)(_arg("argmax"))


# ---------------------------------------------------------------- cumulative sums and products


def _scan(op):
    agg = K.add if op == "cumsum" else K.mul

    def scan(x, axis=None, dtype=None, out=None, method="sequential", **kw):
        from .structure import reshape

        _no_out(out, kw)
        if method not in ("sequential", "blelloch"):
            raise ValueError(f'Invalid method for cumreduction.  Expected "sequential" or "blelloch".  Got: {method!r}')
        x = asarray(x)
        if axis is None:  # flattened into as many blocks as x has (dask: blocks of npartitions elements)
            blocks = even_chunks(x.size, x.npartitions) if x.ndim > 1 and x.size else None
            x, axis = reshape(x, (-1,)), 0
            x = x.rechunk((blocks,)) if blocks else x
        axis = axis_of(axis, x.ndim)
        dt = check_dtype(getattr(np, op)(np.zeros(1, x.dtype), dtype=dtype).dtype)
        local = Transform(x.expr, Fn(f"{op}[{axis}]", Bound(_scan_chunk, op, axis, dt), dtype=dt))
        p = x.numblocks[axis]
        if p == 1:
            return wrap(local, x)
        last = Transform(local, Fn(f"lastOf{op}[{axis}]", Bound(_last_slab, op, axis), axes=Bound(_slab_axes, axis)))
        gathered = rechunk_axes(wrap(last, x), {axis: (p,)})
        carry = Transform(gathered.expr, Fn(f"exclusive{op}[{axis}]", Bound(_exclusive_scan, op, axis, dt), dtype=dt))
        carries = rechunk_axes(wrap(carry, gathered), {axis: (1,) * p})
        return wrap(Join(local, carries.expr, range(x.ndim), range(x.ndim), agg), carries)

    scan.__name__ = op
    scan.__doc__ = f"numpy.{op} along ``axis`` (None: of the flattened array)."
    return with_out(scan)


def _scan_chunk(op, axis, dt, c):
    return getattr(npx(c), op)(c, axis=axis, dtype=dt)


def _identity(op, dt):
    """The scan's identity: -0.0 for a float sum (-0.0 + x is x, signed zeros included)."""
    if op == "cumprod":
        return 1
    return complex(-0.0, -0.0) if dt.kind == "c" else (-0.0 if dt.kind == "f" else 0)


def _last_slab(op, axis, c):
    """The last slab of a block's local scan along ``axis`` (its total); the identity if empty.
    A masked scan's data is the running total at masked places too (numpy.ma scans a masked
    element as the identity), so the carry is that data, unmasked: a masked last element must
    not mask the blocks after it."""
    c = np.ma.getdata(c) if masked.is_masked(c) else c
    n = c.shape[axis]
    if n == 0:
        shape = tuple(1 if d == axis else s for d, s in enumerate(c.shape))
        return npx(c).full(shape, _identity(op, dtype_of(c)), dtype=dtype_of(c))
    return c[tuple(slice(n - 1, n) if d == axis else slice(None) for d in range(c.ndim))]


def _slab_axes(axis, frontier, ax):
    return along(ax, axis, ChunkAxis.const(1))


def _exclusive_scan(op, axis, dt, t):
    """Block k's carry from the block totals ``t`` along ``axis``: the identity for block 0, then
    a left-to-right fold of the totals before it (NumPy's own scan, sequential as dask's carry)."""
    xp, n = npx(t), t.shape[axis]
    head = tuple(slice(0, 1) if d == axis else slice(None) for d in range(t.ndim))
    before = tuple(slice(0, n - 1) if d == axis else slice(None) for d in range(t.ndim))
    ident = xp.full(t[head].shape, _identity(op, dt), dtype=dt)
    return getattr(xp, op)(xp.concatenate([ident, t[before]], axis=axis), axis=axis, dtype=dt)


cumsum = derived_from(np)(_scan("cumsum"))
cumprod = derived_from(np)(_scan("cumprod"))


# ---------------------------------------------------------------- dask's chunk counts


def numel(x, axis=None, keepdims=False, dtype=np.float64):
    """How many elements of chunk ``x`` each result element reduces over ``axis``.

    dask's chunk function, for reductions written with ``reduction``: it runs on NumPy chunks,
    not on RelArrays. A masked chunk counts its unmasked elements.

    Parameters
    ----------
    x : numpy.ndarray
        One chunk (a ``numpy.ma.MaskedArray`` counts only its unmasked elements).
    axis : int or tuple of ints, optional
        The axes reduced over; None: all.
    keepdims : bool, optional
        Keep the reduced axes with length one.
    dtype : dtype, optional
        The count's dtype (float64 by default, as dask's).

    Returns
    -------
    numpy.ndarray or scalar
        The count, shaped as a reduction of ``x`` over ``axis``.

    Examples
    --------
    >>> da.numel(np.ones((2, 3)), axis=1)
    array([3., 3.])
    >>> da.numel(np.ones((2, 3)))
    np.float64(6.0)
    """
    if masked.is_masked(x):
        return np.sum(np.ones_like(x), axis=axis, keepdims=keepdims, dtype=dtype)
    if axis is None:
        n = np.prod(x.shape, dtype=dtype)
        return np.full((1,) * len(x.shape), n, dtype=dtype) if keepdims else n
    axes = axes_of(axis, len(x.shape))
    shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape) if keepdims or d not in axes)
    return np.broadcast_to(np.array(math.prod(x.shape[d] for d in axes), dtype=dtype), shape)


def nannumel(x, axis=None, keepdims=False, dtype=None):
    """The count of non-NaN elements of chunk ``x`` over ``axis``.

    dask's chunk function, for reductions written with ``reduction``: it runs on chunks, not on
    RelArrays. The count is dense (a sparse count has an unpredictable fill value, dask#7169).

    Parameters
    ----------
    x : array
        One chunk.
    axis : int or tuple of ints, optional
        The axes reduced over; None: all.
    keepdims : bool, optional
        Keep the reduced axes with length one.
    dtype : dtype, optional
        The count's dtype (NumPy's sum of booleans by default).

    Returns
    -------
    array or scalar
        The number of non-NaN elements, shaped as a reduction of ``x`` over ``axis``.

    Examples
    --------
    >>> da.nannumel(np.array([1.0, np.nan, 2.0]))
    np.int64(2)
    """
    xp = npx(x)
    n = xp.sum(~xp.isnan(x), axis=axis, keepdims=keepdims, dtype=dtype)
    return n.todense() if hasattr(n, "todense") else n


__all__ = [
    "sum",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "any",
    "all",
    "mean",
    "var",
    "std",
    "argmin",
    "argmax",
    "cumsum",
    "cumprod",
    "nansum",
    "nanprod",
    "nanmax",
    "nanmin",
    "nanmean",
    "count_nonzero",
    "numel",
    "nannumel",
]

"""Sorting and searching: sort, argsort, topk, argtopk, searchsorted, isin, take, take_along_axis.

- sort/argsort: the axis is rechunked to one block, then ``Transform(sort[axis])`` per chunk
  (dask.array has no sort; the other axes keep their blocks).
- topk/argtopk (dask's): ``Transform(topk)`` keeps each block's best |k| (a partition),
  ``Concat`` gathers the candidates of a line of blocks, a last ``Transform`` sorts them.
  argtopk first joins each block with its global offset (a parameter relation) and carries
  (value, index) pairs stacked on a leading axis.
- searchsorted of a sorted 1-d ``a``: the insertion point is the count of a's elements below
  v, summed over a's blocks: a cross ``Join`` of a's blocks with v's (``searchsorted``
  kernel) and an ``Aggregate`` (add) over a's block dim.
- isin: a cross ``Join`` of the elements with the test values' blocks, ``Aggregate`` (or).
- take/take_along_axis with lazy (RelArray) indices: the source axis in one block, joined
  with the index blocks; NumPy indices use the gather of ``x[index]``.
"""

from __future__ import annotations

import dask.array
import numpy as np
from dask.utils import derived_from

from ..tra import Aggregate, Concat, Join, Transform
from ..tra import kernels as K
from ..tra.relation import ChunkAxis
from .creation import asarray
from .linalg.kernels import FieldsKernel
from .relations import axis_of, is_array, offsets, param_relation, rekey, wrap


def _xp(*chunks):
    from .kernels import npx

    return npx(*chunks)


class Sort(FieldsKernel):
    """Sort (``arg``: argsort) a chunk along ``axis`` (the whole axis is in the chunk)."""

    arity = 1

    def __init__(self, axis, descending, stable, arg, dtype):
        self.axis, self.descending, self.stable, self.arg = int(axis), bool(descending), bool(stable), bool(arg)
        self.dtype = np.dtype(np.int64) if arg else np.dtype(dtype)
        self.name = f"{'argsort' if arg else 'sort'}[{axis}{',desc' if descending else ''}]"

    def __call__(self, chunk):
        xp, kind = _xp(chunk), "stable" if self.stable else None
        if not self.arg:
            out = xp.sort(chunk, axis=self.axis, kind=kind)
            return xp.flip(out, axis=self.axis) if self.descending else out
        if not self.descending:
            return xp.astype(xp.argsort(chunk, axis=self.axis, kind=kind), np.int64)
        n = chunk.shape[self.axis]
        rev = xp.flip(xp.argsort(xp.flip(chunk, axis=self.axis), axis=self.axis, kind=kind), axis=self.axis)
        return xp.astype(n - 1 - rev, np.int64)

    def out_axes(self, frontier, axes):
        return tuple(axes)


def _sorted(a, axis, descending, stable, arg):
    from .rechunk import rechunk_axes

    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("sort: needs an array of at least one dimension")
    axis = axis_of(axis, a.ndim)
    r = rechunk_axes(a, {axis: (a.shape[axis],)})
    return wrap(Transform(r.expr, Sort(axis, descending, stable, arg, a.dtype)), a, extra=r.sources)


@derived_from(np)
def sort(a, axis=-1, kind=None, order=None, *, descending=False, stable=True):
    """numpy.sort along ``axis`` (None: of the flattened array); ``descending`` as the Array API."""
    from .structure import ravel

    if order is not None:
        raise NotImplementedError("sort: order= (structured arrays) is not supported")
    if axis is None:
        a, axis = ravel(asarray(a)), 0
    return _sorted(a, axis, descending, stable, False)


@derived_from(np)
def argsort(a, axis=-1, kind=None, order=None, *, descending=False, stable=True):
    """numpy.argsort along ``axis`` (stable; ``descending`` keeps ties in order, as the Array API)."""
    from .structure import ravel

    if order is not None:
        raise NotImplementedError("argsort: order= (structured arrays) is not supported")
    if axis is None:
        a, axis = ravel(asarray(a)), 0
    return _sorted(a, axis, descending, stable, True)


# ---------------------------------------------------------------- topk / argtopk


class TopK(FieldsKernel):
    """The |k| largest (k > 0) or smallest (k < 0) along ``axis``: unordered per block
    (``final=False``), sorted best first at the end. ``packed``: chunks are stacked (value,
    index) pairs on a leading axis and the output is the indices (``final``)."""

    arity = 1

    def __init__(self, k, axis, final, packed, dtype):
        self.k, self.axis, self.final, self.packed = int(k), int(axis), bool(final), bool(packed)
        self.dtype = np.dtype(np.int64) if packed and final else np.dtype(dtype)
        self.name = f"{'argtopk' if packed else 'topk'}{'' if final else 'Block'}[{k}]"

    def __call__(self, chunk):
        xp = _xp(chunk)
        ax = self.axis + self.packed
        values = chunk[0] if self.packed else chunk
        n, m = values.shape[self.axis], abs(self.k)
        key = -values if self.k > 0 else values
        if self.final:
            order = xp.argsort(key, axis=self.axis, kind="stable")
            order = xp.take(order, xp.arange(min(m, n)), axis=self.axis)
        elif n > m:
            order = xp.argpartition(key, m - 1, axis=self.axis)
            order = xp.take(order, xp.arange(m), axis=self.axis)
        else:
            return chunk
        if self.packed:
            picked = xp.take_along_axis(chunk, order[None].repeat(2, axis=0), axis=ax)
            return picked[1].astype(np.int64) if self.final else picked
        return xp.take_along_axis(chunk, order, axis=self.axis)

    def out_axes(self, frontier, axes):
        ax = self.axis + self.packed
        out = list(axes)
        sizes = np.minimum(axes[ax].sizes, abs(self.k))
        out[ax] = ChunkAxis(axes[ax].key_dims, sizes).simplified()
        return tuple(out[1:]) if self.packed and self.final else tuple(out)


class PackIndex(FieldsKernel):
    """(value, global index along ``axis``) stacked on a leading axis; the block's offset is
    the parameter chunk (Join order: chunk, offset)."""

    arity = 2

    def __init__(self, axis, dtype):
        self.axis, self.dtype, self.name = int(axis), np.dtype(dtype), f"withIndex[{axis}]"

    def __call__(self, chunk, offset):
        xp = _xp(chunk)
        shape = [1] * chunk.ndim
        shape[self.axis] = chunk.shape[self.axis]
        index = (xp.arange(chunk.shape[self.axis]) + int(np.asarray(offset).reshape(-1)[0])).reshape(shape)
        return xp.stack([chunk.astype(self.dtype), xp.broadcast_to(index, chunk.shape).astype(self.dtype)])

    def out_axes(self, frontier, axes, offset):
        return (ChunkAxis.const(2),) + tuple(axes)


def _topk(a, k, axis, arg):
    a = asarray(a)
    if int(k) != k or k == 0:
        raise ValueError(f"topk: k must be a non-zero integer, got {k}")
    axis = axis_of(axis, a.ndim)
    if abs(k) > a.shape[axis]:
        raise ValueError(f"topk: |k| = {abs(k)} is larger than axis {axis} of length {a.shape[axis]}")
    extra = None
    expr = a.expr
    dtype = a.dtype
    if arg:
        dtype = np.result_type(a.dtype, np.int64)
        offs = offsets(a.chunks[axis])
        P = param_relation({(i,): [offs[i]] for i in range(a.numblocks[axis])}, (a.numblocks[axis],), what="offsets")
        expr, extra = Join(expr, P.expr, [axis], [0], PackIndex(axis, dtype)), P.sources
    expr = Transform(expr, TopK(k, axis, False, arg, dtype))
    if a.numblocks[axis] > 1:
        expr = Concat(expr, axis, axis + arg)
        expr = rekey(expr, [d if d < axis else (None if d == axis else d - 1) for d in range(a.ndim)])
    return wrap(Transform(expr, TopK(k, axis, True, arg, dtype)), a, extra=extra)


@derived_from(dask.array)
def topk(a, k, axis=-1, split_every=None):
    """The k largest elements along ``axis`` (k < 0: the |k| smallest), best first (dask's topk)."""
    return _topk(a, k, axis, False)


@derived_from(dask.array)
def argtopk(a, k, axis=-1, split_every=None):
    """Indices of ``topk``'s elements along ``axis``."""
    return _topk(a, k, axis, True)


# ---------------------------------------------------------------- searchsorted, isin


class SearchSorted(FieldsKernel):
    """Insertion points of the right chunk's values into the left (sorted) chunk."""

    arity = 2

    def __init__(self, side):
        self.side, self.dtype, self.name = side, np.dtype(np.int64), f"searchsorted[{side}]"

    def __call__(self, a, v):
        return _xp(a, v).searchsorted(a, v, side=self.side).astype(np.int64)

    def out_axes(self, frontier, a, v):
        return tuple(v)


@derived_from(np)
def searchsorted(a, v, side="left", sorter=None):
    """Indices where ``v`` would be inserted into the sorted 1-d ``a`` to keep it sorted."""
    from .rechunk import take

    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    a, v = asarray(a), asarray(v)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-d, got {a.ndim} dimensions")
    if sorter is not None:
        a = take(a, 0, np.asarray(sorter), a.chunks[0])
    expr = Join(a.expr, v.expr, [], [], SearchSorted(side))
    return wrap(Aggregate(expr, list(range(1, v.ndim + 1)), K.add), a, v)


class IsIn(FieldsKernel):
    """Which elements of the left chunk are among the right chunk's values."""

    arity = 2

    def __init__(self):
        self.dtype, self.name = np.dtype(np.bool_), "isin"

    def __call__(self, element, test):
        return _xp(element, test).isin(element, test)

    def out_axes(self, frontier, element, test):
        return tuple(element)


@derived_from(np)
def isin(element, test_elements, assume_unique=False, invert=False):
    """numpy.isin: whether each element is in ``test_elements``."""
    from .elementwise import logical_not
    from .structure import ravel

    element, test = asarray(element), ravel(asarray(test_elements))
    expr = Join(element.expr, test.expr, [], [], IsIn())
    out = wrap(Aggregate(expr, list(range(element.ndim)), K.maximum), element, test)
    return logical_not(out) if invert else out


# ---------------------------------------------------------------- take with lazy indices


class TakeIndices(FieldsKernel):
    """``take`` (``along=False``) or ``take_along_axis`` of a chunk holding the whole ``axis``,
    with an index chunk (Join order: data, indices)."""

    arity = 2

    def __init__(self, axis, along, dtype):
        self.axis, self.along, self.dtype = int(axis), bool(along), np.dtype(dtype)
        self.name = f"{'take_along_axis' if along else 'take'}[{axis}]"

    def __call__(self, x, idx):
        xp = _xp(x)
        idx = np.asarray(idx)
        if self.along:
            return xp.take_along_axis(x, idx, axis=self.axis)
        return xp.take(x, idx, axis=self.axis)

    def out_axes(self, frontier, x, idx):
        if self.along:
            return tuple(x[: self.axis]) + (idx[self.axis],) + tuple(x[self.axis + 1 :])
        return tuple(x[: self.axis]) + tuple(idx) + tuple(x[self.axis + 1 :])


def _whole_axis(a, axis):
    from .rechunk import rechunk_axes

    r = rechunk_axes(a, {axis: (a.shape[axis],)})
    return wrap(r.expr, a, extra=r.sources)


@derived_from(np)
def take(a, indices, axis=None):
    """numpy.take: elements of ``a`` (flattened when ``axis`` is None) at ``indices``."""
    from .structure import ravel

    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = axis_of(axis, a.ndim)
    if not is_array(indices):
        return a[(slice(None),) * axis + (np.asarray(indices),)]
    idx = indices if indices.dtype.kind in "iu" else indices.astype(np.int64)
    a = _whole_axis(a, axis)
    expr = Join(a.expr, idx.expr, [], [], TakeIndices(axis, False, a.dtype))
    keys = list(range(axis)) + [a.ndim + j for j in range(idx.ndim)] + list(range(axis + 1, a.ndim))
    return wrap(rekey(expr, keys), a, idx)


@derived_from(np)
def take_along_axis(arr, indices, axis):
    """numpy.take_along_axis (indices broadcast against ``arr`` off ``axis``)."""
    from .manipulation import broadcast_to
    from .rechunk import rechunk_axes

    arr, idx = asarray(arr), asarray(indices)
    if axis is None:
        from .structure import ravel

        arr, idx, axis = ravel(arr), ravel(idx), 0
    if arr.ndim != idx.ndim:
        raise ValueError(
            f"take_along_axis: indices ({idx.ndim}-d) and arr ({arr.ndim}-d) must have the same number of dimensions"
        )
    if idx.dtype.kind not in "iu":
        raise IndexError("take_along_axis: indices must be integers")
    axis = axis_of(axis, arr.ndim)
    shape = np.broadcast_shapes(
        tuple(1 if d == axis else n for d, n in enumerate(arr.shape)),
        tuple(1 if d == axis else n for d, n in enumerate(idx.shape)),
    )
    arr = broadcast_to(arr, tuple(arr.shape[axis] if d == axis else n for d, n in enumerate(shape)))
    idx = broadcast_to(idx, tuple(idx.shape[axis] if d == axis else n for d, n in enumerate(shape)))
    arr = _whole_axis(arr, axis)
    r = rechunk_axes(idx, {d: arr.chunks[d] for d in range(arr.ndim) if d != axis})
    others = [d for d in range(arr.ndim) if d != axis]
    expr = Join(arr.expr, r.expr, others, others, TakeIndices(axis, True, arr.dtype))
    keys = [arr.ndim if d == axis else d for d in range(arr.ndim)]
    return wrap(rekey(expr, keys), arr, idx, extra=r.sources)


__all__ = ["argsort", "argtopk", "isin", "searchsorted", "sort", "take", "take_along_axis", "topk"]

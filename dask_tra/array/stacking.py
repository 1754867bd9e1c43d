"""Joining arrays: concatenate, stack, hstack, vstack, dstack (and unstack).

The TRA has no union, so the inputs are brought to one block count along the axis
(rechunk), joined block by block with a concatenating kernel (``Join`` on every key dim),
and the interleaved result gathered back into input order, keeping the inputs' own block
boundaries (``rechunk.gather``).
"""

from __future__ import annotations

import numpy as np
from dask.utils import derived_from

from ..tra import Join
from .creation import asarray
from .kernels import Concatenate
from .rechunk import even_chunks, gather, rechunk_axes, unified_chunks
from .relations import axis_of, offsets, wrap
from .structure import atleast_1d, atleast_2d, atleast_3d, expand_dims, ravel


@derived_from(np)
def concatenate(seq, axis=0, allow_unknown_chunksizes=False):
    from .elementwise import astype

    arrays = [asarray(a) for a in seq]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    nd = arrays[0].ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for i, a in enumerate(arrays):
        if a.ndim != nd:
            raise ValueError(
                f"all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {nd} dimension(s) and the array at index {i} has {a.ndim} dimension(s)"
            )
    axis = axis_of(axis, nd)
    for i, a in enumerate(arrays):
        for d in range(nd):
            if d != axis and a.shape[d] != arrays[0].shape[d]:
                raise ValueError(
                    f"Shapes do not align: {[b.shape for b in arrays]}: all the input array dimensions except "
                    f"for the concatenation axis must match exactly, but along dimension {d}, the array at "
                    f"index 0 has size {arrays[0].shape[d]} and the array at index {i} has size {a.shape[d]}"
                )
    dtype = np.result_type(*[a.dtype for a in arrays])
    arrays = [a if a.dtype == dtype else astype(a, dtype) for a in arrays]
    arrays = [a for a in arrays if a.size] or arrays  # as dask: empty inputs add nothing
    if len(arrays) == 1:  # dask.array returns the one (non-empty) input itself
        return arrays[0]
    ordered = sorted(arrays, key=lambda a: a.nbytes, reverse=True)
    common = {d: unified_chunks([a.chunks[d] for a in ordered]) for d in range(nd) if d != axis}  # as dask
    n = max(a.numblocks[axis] for a in arrays)
    parts, extra = [], {}
    for a in arrays:
        want = dict(common)
        want[axis] = a.chunks[axis] if a.numblocks[axis] == n else even_chunks(a.shape[axis], n)
        r = rechunk_axes(a, want)
        parts.append((r.expr, want[axis]))
        extra.update(r.sources)
    sizes = np.zeros(n, dtype=np.int64)
    src_of = []
    for _, c in parts:  # where each input element lands in the joined blocks, block-local
        src_of.append([sizes[k] + np.arange(c[k]) for k in range(n)])
        sizes = sizes + np.asarray(c)
    expr = _joined([(e, np.asarray(c, dtype=np.int64)) for e, c in parts], axis, nd)
    starts = offsets(sizes)
    src = np.concatenate([starts[k] + loc for locs in src_of for k, loc in enumerate(locs)])
    out_chunks = tuple(c for a in arrays for c in a.chunks[axis] if c) or (0,)
    g = gather(wrap(expr, *arrays, extra=extra), axis, src, out_chunks)
    return wrap(g.expr, *arrays, extra={**extra, **g.sources})


def _joined(parts, axis, nd):
    """The parts' blocks concatenated in order, block row by block row: a balanced tree of
    concatenating joins (each element is copied log2(len(parts)) times, not up to len(parts)
    times as along a chain: xarray stacks a resample's 24 monthly means)."""
    while len(parts) > 1:
        paired = []
        for i in range(0, len(parts) - 1, 2):
            (left, ls), (right, rs) = parts[i], parts[i + 1]
            paired.append((Join(left, right, range(nd), range(nd), Concatenate(axis, ls + rs)), ls + rs))
        if len(parts) % 2:
            paired.append(parts[-1])
        parts = paired
    return parts[0][0]


@derived_from(np)
def concat(arrays, /, *, axis=0):
    return concatenate(arrays, axis=axis)


@derived_from(np)
def stack(seq, axis=0, allow_unknown_chunksizes=False):
    arrays = [asarray(a) for a in seq]
    if not arrays:
        raise ValueError("need at least one array to stack")
    for i, a in enumerate(arrays):
        if a.shape != arrays[0].shape:
            raise ValueError(
                f"Stacked arrays must have the same shape. The first array had shape {arrays[0].shape}, "
                f"while array {i + 1} has shape {a.shape}."
            )
    axis = axis_of(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


@derived_from(np)
def unstack(x, /, *, axis=0):
    axis = axis_of(axis, x.ndim)
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


@derived_from(np)
def vstack(tup):
    return concatenate([atleast_2d(a) for a in tup], axis=0)


@derived_from(np)
def hstack(tup):
    arrays = [atleast_1d(a) for a in tup]
    return concatenate(arrays, axis=0 if arrays and arrays[0].ndim == 1 else 1)


@derived_from(np)
def dstack(tup):
    return concatenate([atleast_3d(a) for a in tup], axis=2)


__all__ = ["concatenate", "concat", "stack", "unstack", "vstack", "hstack", "dstack"]

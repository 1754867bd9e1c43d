"""Structure: transpose (swapaxes, moveaxis) and reshape (squeeze, expand_dims, ravel, atleast_*d).

- transpose: ``Transform(transpose chunk)`` then ``ReKey`` selecting the permuted key dims.
- reshape: dims are grouped so each group of input dims maps to a group of output dims of
  equal size; in a group, the input dims after the first long one are rechunked to one
  block and the first long one to multiples that the output dims divide. Then every
  chunk reshapes on its own: ``Transform(reshape)``, and a ``ReKey`` moves the block
  number to the group's first long output dim (the others get key 0). squeeze and
  expand_dims are reshapes that need no rechunk.
"""

from __future__ import annotations

import math

import numpy as np
from dask.utils import derived_from

from ..tra import ReKey, Transform
from ..tra.kernels import Bound
from ..tra.keyfuncs import KeyMap
from .creation import asarray
from .kernels import Permute, Reshape
from .rechunk import rechunk_axes
from .relations import axes_of, axis_of, offsets, rekey, wrap


@derived_from(np)
def transpose(a, axes=None):
    a = asarray(a)
    if axes is None:
        perm = tuple(reversed(range(a.ndim)))
    else:
        perm = tuple(axis_of(p, a.ndim) for p in axes)
        if sorted(perm) != list(range(a.ndim)):
            raise ValueError("axes don't match array")
    if perm == tuple(range(a.ndim)):
        return a
    return wrap(rekey(Transform(a.sparse_expr, Permute(perm)), perm), a)  # missing blocks stay missing


@derived_from(np)
def permute_dims(x, axes):
    return transpose(x, axes)


@derived_from(np)
def swapaxes(a, axis1, axis2):
    perm = list(range(a.ndim))
    i, j = axis_of(axis1, a.ndim), axis_of(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


@derived_from(np)
def moveaxis(a, source, destination):
    from numpy.lib.array_utils import normalize_axis_tuple

    a = asarray(a)
    src = normalize_axis_tuple(source, a.ndim, "source")
    dst = normalize_axis_tuple(destination, a.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


@derived_from(np)
def matrix_transpose(x):
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got {x.ndim}")
    return swapaxes(x, -1, -2)


# ---------------------------------------------------------------- reshape


def _new_shape(size, shape):
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if any(s < 0 for s in shape) or math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


def _groups(I, O):
    """Pairs (input dims, output dims) of equal size, in order (no zero extents)."""
    groups, i, j = [], 0, 0
    while i < len(I) and j < len(O):
        gi, gj, pi, pj = [i], [j], I[i], O[j]
        i, j = i + 1, j + 1
        while pi != pj:
            if pi < pj:
                gi.append(i)
                pi, i = pi * I[i], i + 1
            else:
                gj.append(j)
                pj, j = pj * O[j], j + 1
        groups.append((gi, gj))
    if groups:
        groups[-1] = (groups[-1][0] + list(range(i, len(I))), groups[-1][1] + list(range(j, len(O))))
    return groups


def _multiples(chunks, u, total):
    """Block boundaries rounded to multiples of ``u``."""
    cuts = sorted({int(round(b / u)) * u for b in offsets(chunks)[1:-1]} - {0, total})
    return tuple(np.diff([0] + cuts + [total]).tolist())


@derived_from(np)
def reshape(x, shape, *args, order="C", merge_chunks=True, limit=None, copy=None):
    x = asarray(x)
    if args:
        shape = (shape,) + args
    if order != "C":
        raise NotImplementedError("reshape supports order='C' only")
    shape = _new_shape(x.size, shape)
    if shape == x.shape:
        return x
    I, O = x.shape, shape
    if x.size and I and O and x.npartitions > 1:
        y = _reshape_as_dask(x, O, merge_chunks)
        if y is not None:
            return y
    if x.size == 0 or not I or not O or x.npartitions == 1:  # one block: every dim whole
        r = rechunk_axes(x, {d: (n,) for d, n in enumerate(I)})
        expr = rekey(Transform(r.expr, Reshape(O)), [None] * len(O))
        return wrap(expr, x, extra=r.sources)
    chunks, spec, keys = {}, [None] * len(O), [None] * len(O)
    for gi, gj in _groups(I, O):
        long_in = [d for d in gi if I[d] > 1]
        long_out = [d for d in gj if O[d] > 1]
        for d in gj:
            spec[d] = O[d]
        if not long_in:
            continue
        ci, co = long_in[0], long_out[0]
        R = math.prod(I[d] for d in gi if d > ci)
        S = math.prod(O[d] for d in gj if d > co)
        for d in gi:
            if d > ci:
                chunks[d] = (I[d],)
        u = S // math.gcd(S, R)
        chunks[ci] = x.chunks[ci] if u == 1 else _multiples(x.chunks[ci], u, I[ci])
        spec[co], keys[co] = (ci, R, S), ci
    r = rechunk_axes(x, chunks)
    return wrap(rekey(Transform(r.expr, Reshape(spec)), keys), x, extra=r.sources)


def _reshape_as_dask(x, O, merge_chunks):
    """dask.array's reshape: ``x`` rechunked to dask's ``reshape_rechunk`` input chunks, whose
    blocks map one to one, in C order of the block grids, onto the output blocks; each block is
    contiguous in C order within its group of merged (split) dims, so it reshapes on its own:
    ``Transform(reshape)`` + ``ReKey`` (the C-order rank of the input block, unravelled over the
    output grid). None when dask's rule does not apply (dims that do not merge or split)."""
    from dask.array.reshape import reshape_rechunk

    x0 = x
    if not merge_chunks and x.ndim > len(O):
        x = x.rechunk({d: 1 for d in range(x.ndim - len(O))})
    try:
        inchunks, outchunks, _, _ = reshape_rechunk(x.shape, O, x.chunks)
    except NotImplementedError:
        return None
    I = x.shape
    spec = [None] * len(O)
    for gi, gj in _groups(I, O):
        long_in = [d for d in gi if len(inchunks[d]) > 1 or I[d] > 1]
        long_out = [d for d in gj if len(outchunks[d]) > 1 or O[d] > 1]
        # the block shape inside the group: extent 1 before one dim p, anything at p, whole after
        p = next((d for d in gi if any(c != 1 for c in inchunks[d])), gi[-1])
        q = next((d for d in gj if any(c != 1 for c in outchunks[d])), gj[-1])
        if any(len(inchunks[d]) != 1 for d in gi if d > p) or any(len(outchunks[d]) != 1 for d in gj if d > q):
            return None
        if len(long_in) > 1 and len(long_out) > 1:
            return None
        R = math.prod(I[d] for d in gi if d > p)
        S = math.prod(O[d] for d in gj if d > q)
        for d in gj:
            spec[d] = 1 if d < q else (O[d] if d > q else (p, R, S))
    r = rechunk_axes(x, dict(enumerate(inchunks)))
    nin, nout = tuple(len(c) for c in inchunks), tuple(len(c) for c in outchunks)
    expr = ReKey(
        Transform(r.expr, Reshape(spec)), KeyMap(Bound(_regrid, nin, nout), f"regrid{list(nin)}->{list(nout)}")
    )
    y = wrap(expr, x0, extra=r.sources)
    return y if y.chunks == tuple(outchunks) else None


def _regrid(nin, nout, key):
    """A block's key in the output grid: its C-order rank in the input grid, unravelled."""
    rank = int(np.ravel_multi_index(tuple(key), nin)) if nin else 0
    return tuple(int(k) for k in np.unravel_index(rank, nout)) if nout else ()


@derived_from(np)
def ravel(a):
    return reshape(a, (-1,))


@derived_from(np)
def squeeze(a, axis=None):
    a = asarray(a)
    axes = tuple(d for d in range(a.ndim) if a.shape[d] == 1) if axis is None else axes_of(axis, a.ndim)
    if any(a.shape[d] != 1 for d in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return reshape(a, tuple(n for d, n in enumerate(a.shape) if d not in axes))


@derived_from(np)
def expand_dims(a, axis):
    a = asarray(a)
    axis = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    new = axes_of(axis, a.ndim + len(axis))
    if len(set(new)) != len(axis):
        raise ValueError("repeated axis")
    it = iter(a.shape)
    return reshape(a, tuple(1 if d in new else next(it) for d in range(a.ndim + len(axis))))


@derived_from(np)
def atleast_1d(*arys):
    out = [reshape(a, (1,)) if asarray(a).ndim == 0 else asarray(a) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


@derived_from(np)
def atleast_2d(*arys):
    out = []
    for a in map(asarray, arys):
        out.append(a if a.ndim >= 2 else reshape(a, (1,) * (2 - a.ndim) + a.shape))
    return out[0] if len(out) == 1 else tuple(out)


@derived_from(np)
def atleast_3d(*arys):
    out = []
    for a in map(asarray, arys):
        shape = {0: (1, 1, 1), 1: (1, a.size, 1), 2: a.shape + (1,)}.get(a.ndim, a.shape)
        out.append(reshape(a, shape))
    return out[0] if len(out) == 1 else tuple(out)


__all__ = [
    "transpose",
    "permute_dims",
    "swapaxes",
    "moveaxis",
    "matrix_transpose",
    "reshape",
    "ravel",
    "squeeze",
    "expand_dims",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
]

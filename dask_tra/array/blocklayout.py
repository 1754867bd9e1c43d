"""Operations defined by the block layout (dask.array's names): ``unify_chunks``,
``shuffle``, ``reshape_blockwise``.

All three are gathers (``rechunk.gather``: Filter, ReKey, a Join with a small piece relation,
Concat) whose positions come from the chunks alone, never from the data:

- unify_chunks: each (array, index) pair rechunked to the common refinement of the chunks
  every array has along that index (what ``blockwise`` does to its operands).
- shuffle: a ``take`` of the concatenated groups along the axis, with dask's output chunks
  (groups packed into blocks of about the mean block size).
- reshape_blockwise: dask reshapes every block on its own, so the result is NumPy's reshape
  with the elements of each merged (split) group of axes permuted. Here that is the C-order
  ``reshape`` then a ``take`` of the block-by-block order along each merged axis (before it,
  along each split axis), the permutation computed from the chunks of the group's axes.
"""

from __future__ import annotations

import itertools
import math
from numbers import Integral

import dask.array
import numpy as np
from dask.utils import derived_from

from .creation import asarray
from .relations import axis_of, offsets

# ---------------------------------------------------------------- unify_chunks


@derived_from(dask.array)
def unify_chunks(*args, **kwargs):
    """dask.array.unify_chunks(x, 'ij', y, 'jk', ...): ``({index: chunks}, [arrays rechunked])``.
    A dim of extent 1 broadcasts (keeps its chunk); a value whose index is None is passed as is."""
    from .blockwise import _common_chunks

    if not args:
        return {}, []
    if len(args) % 2:
        raise ValueError("unify_chunks: arguments must alternate arrays and their indices")
    pairs = [
        (asarray(a) if ind is not None else a, None if ind is None else tuple(ind))
        for a, ind in zip(args[::2], args[1::2])
    ]
    by_index, sizes = {}, {}
    for a, ind in pairs:
        if ind is None:
            continue
        if len(ind) != a.ndim:
            raise ValueError(f"unify_chunks: index {ind!r} has {len(ind)} entries for an array of {a.ndim} dimensions")
        for l, n, c in zip(ind, a.shape, a.chunks):
            if n == 1 and len(c) == 1:
                by_index.setdefault(l, [])
                continue
            if sizes.setdefault(l, n) != n:
                raise ValueError(f"Chunks do not add up to same value: index {l!r} has sizes {sizes[l]} and {n}")
            by_index.setdefault(l, []).append(c)
    unified = {l: _common_chunks(cs) if cs else (1,) for l, cs in by_index.items()}
    arrays = []
    for a, ind in pairs:
        if ind is None:
            arrays.append(a)
            continue
        chunks = tuple(unified[l] if n > 1 else (n,) for l, n in zip(ind, a.shape))
        arrays.append(a.rechunk(chunks) if chunks != a.chunks else a)
    return unified, arrays


# ---------------------------------------------------------------- shuffle


def _tolerance():
    from dask import config

    return float(config.get("array.chunk-size-tolerance", 1.25))


def _shuffle_chunks(axis_chunks, indexer):
    """dask's packing of the groups into output blocks along the axis."""
    tol = _tolerance()
    limit = int(sum(axis_chunks) / len(axis_chunks) * tol)
    blocks, current = [], []
    for idx in indexer:
        if len(current) + len(idx) > limit and current:
            blocks.append(current)
            current = list(idx)
        else:
            current.extend(idx)
            if len(current) > limit / tol:
                blocks.append(current)
                current = []
    if current:
        blocks.append(current)
    return tuple(len(b) for b in blocks)


def _other_chunks(x, longest, axis):
    """dask's split of the other axes when one group is much longer than a block."""
    tol = _tolerance()
    if longest <= max(x.chunks[axis]) * tol:
        return x.chunks
    changeable = set(range(x.ndim)) - {axis}
    new = list(x.chunks)
    new[axis] = (longest,)
    biggest = max(math.prod(max(c) for c in x.chunks), 1)
    while changeable:
        factor = math.prod(max(c) for c in new) / biggest
        if factor <= 1:
            break
        n = len(changeable)
        for i in sorted(changeable):
            limit = max(new[i]) / factor ** (1 / n)
            sizes = []
            for c in x.chunks[i]:
                if c > tol * limit:
                    parts = min(math.ceil(c / limit), c)
                    base, extra = divmod(c, parts)
                    sizes += [base + (j < extra) for j in range(parts)]
                else:
                    sizes.append(c)
            if tuple(sizes) == new[i] or max(sizes) == 1:
                changeable.discard(i)
            new[i] = tuple(sizes)
    new[axis] = x.chunks[axis]
    return tuple(new)


def shuffle(x, indexer, axis, chunks="auto"):
    """``x`` reordered along ``axis`` so that each group of ``indexer`` is contiguous, as
    dask.array's ``shuffle``.

    A group is never split between two blocks.

    Parameters
    ----------
    x : RelArray
        The array.
    indexer : list of lists of int
        Groups of positions along ``axis``.
    axis : int
        The axis reordered.
    chunks : "auto" or int, optional
        The output's block sizes along ``axis`` (groups kept whole).

    Returns
    -------
    RelArray
        ``x`` with its positions along ``axis`` in the order of ``indexer``'s groups.

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.shuffle(x, [[0, 3], [1, 4], [2, 5]], axis=0).compute()
    array([0, 3, 1, 4, 2, 5])
    """
    from .rechunk import take

    x = asarray(x)
    if not isinstance(axis, Integral) or isinstance(axis, bool):
        raise TypeError(f"shuffle: axis must be an integer, got {axis!r}")
    axis = axis_of(axis, x.ndim)
    if chunks != "auto":
        raise NotImplementedError("shuffle: only chunks='auto' is supported (as in dask)")
    if not isinstance(indexer, list) or not indexer or not all(isinstance(i, list) for i in indexer):
        raise ValueError("indexer must be a list of lists of positional indices")
    flat = np.asarray([int(v) for g in indexer for v in g], dtype=np.int64)
    n = x.shape[axis]
    if flat.size and (flat.max() >= n or flat.min() < -n):
        raise IndexError(f"Indexer contains out of bounds index. Dimension only has {n} elements.")
    flat = np.where(flat < 0, flat + n, flat)
    starts = offsets(x.chunks[axis])
    if len(indexer) == len(x.chunks[axis]) and all(
        list(g) == list(range(int(s), int(s) + c)) for g, s, c in zip(indexer, starts, x.chunks[axis])
    ):
        return x
    groups = [g for g in indexer if g]
    x = x.rechunk(_other_chunks(x, max(len(g) for g in groups), axis))
    return take(x, axis, flat, _shuffle_chunks(x.chunks[axis], groups))


# ---------------------------------------------------------------- reshape_blockwise


def _groups(short, long):
    """Consecutive dims of ``long`` whose sizes multiply to each dim of ``short``:
    ``[(short dim or None, [long dims])]``; size-1 dims of ``long`` join a neighbour's group,
    a size-1 dim of ``short`` with no partner is ``(dim, [])``. None when no such grouping."""
    out, j = [], 0
    for i, s in enumerate(short):
        dims, p = [], 1
        if s == 1 and (j >= len(long) or long[j] != 1):
            out.append((i, []))
            continue
        while j < len(long) and (p < s or (p == s and not dims)):
            dims.append(j)
            p *= long[j]
            j += 1
        if p != s:
            return None
        while j < len(long) and long[j] == 1 and (i + 1 >= len(short) or short[i + 1] != 1):
            dims.append(j)
            j += 1
        out.append((i, dims))
    if j != len(long):
        return None
    return out


def block_order(chunks):
    """Position in NumPy's C order (over the dims' whole extents) of each element of the group,
    listed block by block (blocks in C order, each block's elements in C order)."""
    sizes = [sum(c) for c in chunks]
    pieces = []
    for blk in itertools.product(*(range(len(c)) for c in chunks)):
        ranges = [np.arange(offsets(c)[b], offsets(c)[b] + c[b]) for c, b in zip(chunks, blk)]
        grid = np.meshgrid(*ranges, indexing="ij")
        pieces.append(np.ravel_multi_index(tuple(g.ravel() for g in grid), sizes) if grid else np.zeros(1, int))
    return np.concatenate(pieces).astype(np.int64) if pieces else np.zeros(0, np.int64)


def _block_products(chunks):
    return tuple(math.prod(t) for t in itertools.product(*chunks))


def reshape_blockwise(x, shape, chunks=None):
    """Every block reshaped on its own, as dask.array's ``reshape_blockwise``.

    Merging consecutive axes; ``chunks`` is required when the number of dimensions grows. The
    element order differs from NumPy's reshape exactly as dask's does (each block's elements
    stay in that block).

    Parameters
    ----------
    x : RelArray
        The array.
    shape : tuple of int
        The new shape.
    chunks : tuple of tuples, optional
        The new chunks, required when ``len(shape) > x.ndim``.

    Returns
    -------
    RelArray
        ``x`` reshaped block by block.

    Examples
    --------
    >>> x = da.from_array(np.arange(12).reshape(4, 3), chunks=(2, 3))
    >>> y = da.reshape_blockwise(x, (12,))
    >>> y.chunks
    ((6, 6),)
    """
    from .rechunk import take
    from .structure import reshape

    x = asarray(x)
    if isinstance(shape, Integral):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if shape == (-1,):
        shape = (x.size,)
    if math.prod(shape) != x.size or any(s < 0 for s in shape):
        raise ValueError("total size of new array must be unchanged")
    if shape == x.shape:
        return x
    if len(shape) > x.ndim:
        if chunks is None:
            raise TypeError("Need to specify chunks if expanding dimensions.")
        chunks = tuple(tuple(int(v) for v in ((c,) if isinstance(c, Integral) else c)) for c in chunks)
        if len(chunks) != len(shape) or any(sum(c) != s for c, s in zip(chunks, shape)):
            raise ValueError(
                f"Chunk sizes do not match for the following chunks: reshape_blockwise chunks {chunks} "
                f"do not fit the shape {shape}"
            )
        groups = _groups(x.shape, shape)
        if groups is None:
            raise NotImplementedError(f"reshape_blockwise: {x.shape} -> {shape} does not split consecutive dimensions")
        for d, dims in groups:
            if dims and _block_products([chunks[v] for v in dims]) != x.chunks[d]:
                raise ValueError(
                    f"Chunk sizes do not match: dimension {d} has blocks {x.chunks[d]}, the "
                    f"blocks of dimensions {dims} hold {_block_products([chunks[v] for v in dims])}"
                )
        for d, dims in groups:
            order = block_order([chunks[v] for v in dims]) if len(dims) > 1 else None
            if order is not None and (order != np.arange(order.size)).any():
                x = take(x, d, np.argsort(order), x.chunks[d])
        return reshape(x, shape).rechunk(chunks)
    if chunks is not None:
        raise ValueError("Setting chunks is not allowed when reducing the number of dimensions.")
    groups = _groups(shape, x.shape)
    if groups is None:
        raise NotImplementedError(
            "reshape_blockwise not implemented for expanding dimensions without passing chunk hints "
            f"({x.shape} -> {shape} does not only merge consecutive dimensions)"
        )
    out_chunks = tuple(_block_products([x.chunks[d] for d in dims]) if dims else (1,) for _, dims in groups)
    y = reshape(x, shape)
    for v, dims in groups:
        order = block_order([x.chunks[d] for d in dims]) if len(dims) > 1 else None
        if order is not None and (order != np.arange(order.size)).any():
            y = take(y, v, order, out_chunks[v])
    return y.rechunk(out_chunks)


__all__ = ["reshape_blockwise", "shuffle", "unify_chunks"]

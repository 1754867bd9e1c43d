"""``x[index]``: basic slicing, integer and boolean indexing where the result shape is known.

Every axis an index touches is a gather (``rechunk.gather``: Filter the blocks used,
Join with a piece relation, ReKey to renumber, Concat): a slice keeps the blocks it
crosses, an integer keeps one element (then the axis is squeezed), an integer array picks
its positions (then the axis is reshaped to the index's shape), a boolean array picks its
true positions (a k-d mask first merges its k axes with a reshape). ``None`` adds axes.
Several array indices (integers among them) are broadcast together as NumPy's advanced
indexing, by ``x.vindex``. A lazy (RelArray) index or mask is computed first (the result's
shape depends on it; see "Data-dependent shapes" in docs/api.md).
"""

from __future__ import annotations

import math

import numpy as np

from ..runtime.sources import ConstantSource, RandomSource, Source, content_name
from ..tra import Input, RelationType
from ..tra.expr import keep_blocks
from .lazy import narrow
from .rechunk import take
from .relations import BlockSource, is_array, offsets, wrap, wrap_source

INVALID = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)


def _entries(x, index):
    """The index as a list of (kind, value, axes consumed)."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for v in index:
        if is_array(v):  # a lazy index: computed first (the output shape depends on it)
            v = np.asarray(v)
        if v is None:
            out.append(("new", None, 0))
        elif v is Ellipsis:
            out.append(("ellipsis", None, 0))
        elif isinstance(v, slice):
            for part in (v.start, v.stop, v.step):
                if part is not None and not hasattr(part, "__index__"):  # dask.array's IndexError
                    raise IndexError(f"slice {v}: slice indices must be integers or None, got {part!r}")
            out.append(("slice", v, 1))
        elif isinstance(v, (bool, np.bool_)):  # NumPy's 0-d mask: a new axis of length 1 or 0
            out.append(("mask", np.asarray(v), 0))
        elif isinstance(v, (int, np.integer)):
            out.append(("int", int(v), 1))
        else:
            arr = np.asarray(v)
            if arr.dtype == np.bool_:
                out.append(("mask", arr, arr.ndim))
            elif arr.dtype.kind in "iu" or (arr.size == 0 and arr.dtype.kind == "f"):
                out.append(("array", arr.astype(np.int64), 1))
            else:
                raise IndexError(INVALID)
    used = sum(e[2] for e in out)
    if used > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {used} were indexed")
    if sum(e[0] == "ellipsis" for e in out) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    fill = [("slice", slice(None), 1)] * (x.ndim - used)
    at = next((i for i, e in enumerate(out) if e[0] == "ellipsis"), len(out))
    return [e for e in out[:at] + fill + out[at + 1 :] if e[0] != "ellipsis"]


def getitem(x, index):
    from .structure import expand_dims, moveaxis, reshape

    entries = _entries(x, index)
    split = _split_advanced(index)
    if len(entries) == x.ndim and all(
        k == "slice" and v.indices(n) == (0, n, 1) for (k, v, _), n in zip(entries, x.shape)
    ):
        return x  # x[:], x[...], x[0:len(x)]: x itself (dask)
    x, entries = narrow(x, entries)  # a lazily read input reads only the blocks the index touches
    x, entries = _narrow_generated(x, entries)  # a generated input makes only those blocks
    x, entries = _narrow_derived(x, entries)  # a computed array keeps only those blocks
    arrays = [e for e in entries if e[0] in ("array", "mask")]
    if len(arrays) > 1 or (arrays and split and any(e[0] == "new" for e in entries)):
        return _several_arrays(x, entries, split)
    starts, axis = [], 0
    for _kind, _v, k in entries:
        starts.append(axis)
        axis += k
    for (kind, v, k), ax in reversed(list(zip(entries, starts))):  # right to left: axes stay put
        if kind == "new" or (kind == "slice" and v == slice(None)):
            continue
        if kind == "mask":
            _check_mask(v, x.shape, ax)
            if k != 1:  # the k axes merged (k = 0: a new axis of length 1)
                x = reshape(x, x.shape[:ax] + (math.prod(x.shape[ax : ax + k]),) + x.shape[ax + k :])
            src = np.flatnonzero(v)
            x = take(x, ax, src, take_chunks(x.chunks[ax], src))
            continue
        n = x.shape[ax]
        if kind == "slice":
            x = take(x, ax, np.arange(*v.indices(n)))
            continue
        idx = np.asarray(v)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = idx.min() if idx.min() < -n else idx.max()
            raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
        src = np.where(idx < 0, idx + n, idx).ravel()
        x = take(x, ax, src, take_chunks(x.chunks[ax], src) if kind == "array" and idx.ndim == 1 else None)
        if kind == "int" or idx.ndim != 1:
            x = reshape(x, x.shape[:ax] + idx.shape + x.shape[ax + 1 :])
    pos, adv, new_axes = 0, None, []
    for kind, v, _k in entries:  # output positions: of the array index's dims, of new axes
        if kind == "new":
            new_axes.append(pos + len(new_axes))
        elif kind in ("array", "mask"):
            adv, pos = pos, pos + (v.ndim if kind == "array" else 1)
        elif kind == "slice":
            pos += 1
    if arrays and split and adv:
        nd = arrays[0][1].ndim if arrays[0][0] == "array" else 1
        x = moveaxis(x, list(range(adv, adv + nd)), list(range(nd)))
    return expand_dims(x, new_axes) if new_axes else x


def _several_arrays(x, entries, split):
    """NumPy's advanced indexing with several array indices: the integer arrays, each k-d mask
    as its k arrays of true positions (``nonzero``; a 0-d one as ``[0]`` or ``[]`` on a new
    axis), and the integers (0-d arrays) are broadcast
    together and select points, as ``x.vindex`` does, after the slices are applied; the
    broadcast dims then go where NumPy puts them: in place of the advanced indices when these
    are adjacent (integers count as advanced; see ``_split_advanced``), else first. ``None``
    adds its axes in place (also for one array index that is not adjacent to an integer)."""
    from .blockwise import VIndex
    from .structure import expand_dims, transpose

    if any(kind == "mask" and k == 0 for kind, v, k in entries):  # 0-d: [0] or [] on a new axis
        fixed, new_at, ax = [], [], 0
        for kind, v, k in entries:
            if kind == "mask" and k == 0:
                new_at.append(ax)
                kind, v, k = "array", np.zeros(int(bool(v)), np.int64), 1
            fixed.append((kind, v, k))
            ax += k
        x, entries = expand_dims(x, tuple(new_at)), fixed
    adjacent, placed = not split, False
    basic, points, layout, n_rest, n_new, ax = [], [], [], 0, 0, 0
    for kind, v, _k in entries:
        if kind == "new":
            layout.append(("new", n_new))
            n_new += 1
            continue
        if kind == "slice":
            basic.append(v)
            points.append(slice(None))
            layout.append(("rest", n_rest))
            n_rest += 1
            ax += 1
            continue
        if kind == "mask":
            _check_mask(v, x.shape, ax)
            parts = list(np.nonzero(v))
        else:
            parts = [np.asarray(v, dtype=np.int64)]
        basic += [slice(None)] * len(parts)
        points += parts
        ax += len(parts)
        if adjacent and not placed:
            layout.append(("points", None))
            placed = True
    if not adjacent:
        layout.insert(0, ("points", None))
    if any(b != slice(None) for b in basic):
        x = getitem(x, tuple(basic))
    y = VIndex(x)[tuple(points)]
    n_points = y.ndim - n_rest
    if n_new:
        y = expand_dims(y, tuple(range(y.ndim, y.ndim + n_new)))
    perm = []
    for what, j in layout:
        if what == "points":
            perm += range(n_points)
        else:
            perm.append(n_points + j if what == "rest" else n_points + n_rest + j)
    return y if perm == list(range(y.ndim)) else transpose(y, perm)


def _check_mask(mask, shape, ax):
    """NumPy's IndexError for a mask whose dims do not match ``shape``'s from axis ``ax`` on (a
    mask dim of size 0 matches any size: it selects nothing, as in NumPy)."""
    for d, m in enumerate(mask.shape):
        if m not in (shape[ax + d], 0):
            raise IndexError(
                f"boolean index did not match indexed array along axis {ax + d}; size of axis is "
                f"{shape[ax + d]} but size of corresponding boolean axis is {m}"
            )


def take_chunks(chunks, src):
    """dask's output chunks for ``x[src]`` along an axis chunked ``chunks`` (``dask.array.slicing.take``):
    the positions cut into groups of the mean block size, packed as ``shuffle`` packs groups."""
    from .blocklayout import _shuffle_chunks

    n = int(sum(chunks))
    if len(src) == 0:
        return (0,)
    if len(src) == n and src[0] == 0 and (np.diff(src) == 1).all():
        return tuple(chunks)
    mean = max(int(n / len(chunks)), 1)
    return _shuffle_chunks(chunks, [src[i : i + mean] for i in range(0, len(src), mean)])


class BlocksOf(Source):
    """The blocks ``blocks[a]`` (block numbers along each axis a) of a generated source
    (``arange``, ``linspace``, ``eye``, constants, random draws): block ``key`` is the inner
    source's block at the mapped key, made by the same task, so no other block is ever made."""

    def __init__(self, inner, blocks):
        self.inner, self.blocks = inner, tuple(tuple(int(b) for b in bl) for bl in blocks)
        self.graph = inner.graph
        t = inner.type
        chunks = tuple(tuple(c[b] for b in bl) for c, bl in zip(t.array_chunks(), self.blocks))
        self.input = Input(
            content_name("blocks-of", inner.input.name, self.blocks),
            RelationType.from_chunks(chunks, t.dtype, t.backend),
            home=_home(self.blocks, t.frontier),
        )

    def _key(self, key):
        return tuple(bl[k] for bl, k in zip(self.blocks, key))

    def task(self, key):
        return self.inner.task(self._key(key))

    def chunk(self, key):
        return self.inner.chunk(self._key(key))


def _home(blocks, frontier) -> tuple[int, int] | None:
    """(where the first of ``blocks`` is among the source's blocks, row-major; how many there
    are): its work is planned to start on the site the source's own layout gives that block
    (``Grid.home``), so the months of a resample spread over the workers as their blocks do.
    None for the source's first block (no turn)."""
    if not all(blocks):
        return None
    at = int(np.ravel_multi_index(tuple(bl[0] for bl in blocks), tuple(frontier)))
    return (at, math.prod(frontier)) if at else None


def _narrow_generated(x, entries):
    """When ``x`` is a generated input (``BlockSource``, ``ConstantSource``, ``RandomSource``):
    the input restricted to the blocks ``entries`` touch (``_touched``), and the entries
    renumbered to it; otherwise ``x, entries``. So ``arange(10**12)[[5, 10**11]]`` plans, and
    makes, two blocks."""
    if x.expr.children:
        return x, entries
    src = x.sources.get(x.expr.name)
    if not isinstance(src, (BlockSource, ConstantSource, RandomSource, BlocksOf)):
        return x, entries
    blocks, shifted = _touched(x, entries)
    if all(len(b) == len(c) for b, c in zip(blocks, x.chunks)):
        return x, entries
    if isinstance(src, BlocksOf):  # narrowing a narrowed input: blocks of the original
        blocks = [np.asarray(outer)[list(b)] for outer, b in zip(src.blocks, blocks)]
        src = src.inner
    return wrap_source(BlocksOf(src, blocks)), shifted


def _narrow_derived(x, entries):
    """When ``x`` is computed: ``x`` with only the blocks ``entries`` touch along each axis
    (``tra.expr.keep_blocks``, one axis after the other, below every gather), and the entries
    renumbered to it. The rewrite pass moves each axis' cut toward the inputs, so a corner of
    ``x + x.T`` computes the blocks of the corner."""
    if not x.expr.children:
        return x, entries
    blocks, shifted = _touched(x, entries)
    expr = x.expr
    for axis, (b, c) in enumerate(zip(blocks, x.chunks)):
        if len(b) < len(c):
            expr = keep_blocks(expr, axis, b)
    return (x, entries) if expr is x.expr else (wrap(expr, x), shifted)


def _touched(x, entries):
    """(the blocks ``entries`` touch along each axis, the entries renumbered to those blocks):
    the range a slice crosses, the blocks holding an integer's, an integer array's or a 1-d
    mask's positions; every block where a k-d mask or an out-of-range index reads (its error is
    raised later)."""
    blocks, shifted, axis = [], [], 0
    for kind, v, k in entries:
        if k == 0:
            shifted.append((kind, v, k))
            continue
        if k > 1:  # a k-d mask: its axes keep every block
            blocks += [range(len(x.chunks[axis + d])) for d in range(k)]
            shifted.append((kind, v, k))
            axis += k
            continue
        n, chunks = x.shape[axis], x.chunks[axis]
        cuts = offsets(chunks)
        if kind == "slice":
            pos = np.arange(*v.indices(n))
        elif kind == "mask":
            pos = np.flatnonzero(v) if v.shape == (n,) else np.zeros(0, np.int64)
        else:
            pos = np.asarray(v, dtype=np.int64).ravel()
            pos = pos if not pos.size or (pos.min() >= -n and pos.max() < n) else np.zeros(0, np.int64)
            pos = np.where(pos < 0, pos + n, pos)
        if not pos.size:  # nothing selected or an error to raise: every block kept
            blocks.append(range(len(chunks)))
            shifted.append((kind, v, k))
            axis += 1
            continue
        owner = np.searchsorted(cuts, pos, side="right") - 1
        if kind == "slice":  # the blocks the slice crosses
            lo, hi = int(owner.min()), int(owner.max())
            used = np.arange(lo, hi + 1)
            start, stop, step = v.indices(n)
            stop -= int(cuts[lo])
            v = slice(start - int(cuts[lo]), None if stop < 0 else stop, step)
        else:
            used = np.unique(owner)
            new_cuts = offsets([chunks[b] for b in used])
            rank = np.searchsorted(used, owner)
            moved = new_cuts[rank] + pos - cuts[owner]
            if kind == "mask":
                v = np.zeros(int(new_cuts[-1]), np.bool_)
                v[moved] = True
            elif kind == "int":
                v = int(moved[0])
            else:
                v = moved.reshape(np.shape(v))
        blocks.append(used)
        shifted.append((kind, v, k))
        axis += 1
    return blocks, shifted


def _split_advanced(index):
    """NumPy moves advanced-index dims first when the advanced indices (with integers) are not
    next to each other in the index as written: a slice, ``None`` or ``...`` (even one that
    stands for no axis) between two of them splits them."""
    index = index if isinstance(index, tuple) else (index,)
    pos = [i for i, v in enumerate(index) if v is not None and v is not Ellipsis and not isinstance(v, slice)]
    return bool(pos) and pos[-1] - pos[0] + 1 != len(pos)


__all__ = ["getitem"]

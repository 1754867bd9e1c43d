"""Gather along one axis: rechunk, slicing, integer and boolean indexing, flip, roll, repeat.

``gather(x, axis, src, out_chunks)`` makes the array whose position t along ``axis`` is
position ``src[t]`` of ``x``, chunked ``out_chunks``. Kernels never see keys, so what each
block contributes is data: a *piece relation* P, keyed (old block, piece number), whose
chunks list a piece's positions inside its old block. The lowering:

    Filter(old blocks used) -> ReKey(renumber)          only when some blocks are unused
    Join([axis],[0], take)(X, P)                        cut every old block into its pieces
    Filter(spare empty pieces)                          only when there are spares
    ReKey((old, piece) -> (new block, position))        place the pieces
    Concat(position, axis)                              only when a new block has >1 piece

Three shortcuts need no piece relation: new blocks made of whole old blocks (slices on block
boundaries, merging rechunks: Filter, ReKey, Concat), old blocks cut into equal tiles
(splitting rechunks: Tile, ReKey), and each new block one piece of its own old block at the
same positions in each (a slice inside one block: Filter, ReKey, Transform(cut)).

Every old block gets the same number of pieces (padding with empty ones) and every new
block the same number of positions (filling with the empty ones), so every relation on the
way is dense: Join and Concat need that.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from ..tra import Concat, Filter, Join, ReKey, Tile, Transform
from ..tra.expr import keep_blocks
from ..tra.kernels import Bound
from ..tra.keyfuncs import KeyMap, KeyPred, dims_in
from .kernels import Cut, Take
from .relations import Rel, grid, offsets, param_relation, rel_of


def common_chunks(all_chunks) -> tuple:
    """The common refinement of several chunkings of one axis (dask's ``common_blockdim`` where
    several have more than one block): every block boundary of any of them."""
    cuts = sorted(set().union(*(set(np.cumsum((0,) + tuple(c)).tolist()) for c in all_chunks)))
    return tuple(int(b - a) for a, b in zip(cuts, cuts[1:])) or (0,)


def unified_chunks(all_chunks) -> tuple:
    """dask.array's ``common_blockdim``: the chunks operands chunked ``all_chunks`` along one
    axis are brought to (the first if every one is a single block, the one chunking of several
    blocks if only one is, else their common refinement: blocks are split, never merged)."""
    several = list(dict.fromkeys(tuple(c) for c in all_chunks if len(c) > 1))
    if not several:
        return tuple(all_chunks[0])
    return several[0] if len(several) == 1 else common_chunks(several)


def warn_more_blocks(in_blocks, out_blocks) -> None:
    """dask.array's ``unify_chunks`` warning: aligning operands multiplies the number of blocks
    (``out_blocks``) by 10 or more over the operand with the most (``in_blocks``)."""
    if out_blocks and in_blocks and out_blocks >= in_blocks * 10:
        import warnings

        from dask.array.core import PerformanceWarning

        warnings.warn(
            f"Increasing number of chunks by factor of {int(out_blocks / in_blocks)}", PerformanceWarning, stacklevel=4
        )


def _block_of(bounds, positions):
    """Index of the (non-empty) block holding each position."""
    return np.searchsorted(bounds, positions, side="right") - 1


def _encode(local):
    """A piece's positions: ``[start, step, length, -1]`` for a progression, else the list."""
    local = np.asarray(local, dtype=np.int64)
    if len(local) == 1:
        return np.array([local[0], 1, 1, -1])
    if len(local) > 1:
        steps = np.diff(local)
        if (steps == steps[0]).all() and steps[0] != 0:
            return np.array([local[0], steps[0], len(local), -1])
    return local


def gather(x, axis: int, src, out_chunks) -> Rel:
    """Position t of the result along ``axis`` is position ``src[t]`` of ``x`` (see module doc)."""
    t = x.expr.type
    in_chunks = t.array_chunks()[axis]
    src = np.asarray(src, dtype=np.int64)
    out_chunks = tuple(int(c) for c in out_chunks)
    if out_chunks == in_chunks and np.array_equal(src, np.arange(sum(in_chunks))):
        return Rel(x.expr, x.sources)
    old = _block_of(offsets(in_chunks), src)
    local = src - offsets(in_chunks)[old]
    new = _block_of(offsets(out_chunks), np.arange(len(src)))
    pieces = []  # (old block, new block, local positions), in output order
    cuts = np.flatnonzero((np.diff(old) != 0) | (np.diff(new) != 0)) + 1
    for run in np.split(np.arange(len(src)), cuts) if len(src) else []:
        pieces.append((int(old[run[0]]), int(new[run[0]]), local[run]))
    covered = {j for _, j, _ in pieces}
    first = pieces[0][0] if pieces else 0
    pieces += [(first, j, local[:0]) for j in range(len(out_chunks)) if j not in covered]
    fast = (
        _whole_blocks(x, axis, pieces, in_chunks)
        or _tiles(x, axis, pieces, in_chunks)
        or _cut_each(x, axis, pieces, in_chunks)
    )
    if fast is not None:
        return Rel(fast, x.sources)
    used = sorted({i for i, _, _ in pieces})
    expr, n = x.expr, t.key_arity
    if len(used) < len(in_chunks):  # drop unused blocks, renumber the rest
        expr = keep_blocks(expr, axis, used)
    by_old = {i: [] for i in range(len(used))}
    by_new = {j: [] for j in range(len(out_chunks))}
    for i, j, loc in pieces:
        ci = used.index(i)
        by_new[j].append((ci, len(by_old[ci])))
        by_old[ci].append(loc)
    p, m = len(used), len(out_chunks)
    r = max(len(v) for v in by_new.values())
    q = max(max(len(v) for v in by_old.values()), math.ceil(m * r / p))
    chunks, sizes = {}, np.zeros((p, q), dtype=np.int64)
    for ci, k in grid((p, q)):
        loc = by_old[ci][k] if k < len(by_old[ci]) else local[:0]
        chunks[(ci, k)], sizes[ci, k] = _encode(loc), len(loc)
    P = param_relation(chunks, (p, q), what="pieces")
    expr = Join(expr, P.expr, (axis,), (0,), Take(axis, sizes, n, t.dtype))
    place = {}  # (old, piece) -> (new block, position)
    for j, members in by_new.items():
        for w, ik in enumerate(members):
            place[ik] = (j, w)
    spare = iter(ik for ik in grid((p, q)) if ik not in place)
    for j, members in by_new.items():
        for w in range(len(members), r):
            place[next(spare)] = (j, w)
    if len(place) < p * q:
        expr = Filter(expr, KeyPred(Bound(dims_in, (axis, n), frozenset(place)), "placedPieces", frozenset({axis, n})))
    expr = ReKey(
        expr,
        KeyMap(
            Bound(_place_piece, axis, n, r > 1, place),
            f"placePieces[{axis}]",
            copies=_all_but(axis, n) + ((None,) if r > 1 else ()),
        ),
    )
    if r > 1:
        expr = Concat(expr, n, axis)
    return Rel(expr, rel_of(x, P))


def _whole(loc, size):
    return len(loc) == size and (size == 0 or (loc[0] == 0 and (np.diff(loc) == 1).all()))


def _whole_blocks(x, axis, pieces, in_chunks):
    """Each new block is the same number of whole old blocks, each used once:
    Filter(blocks used) -> ReKey(old -> (new, position)) -> Concat(position) if several."""
    olds = [i for i, _, _ in pieces]
    counts = np.bincount([j for _, j, _ in pieces])
    if (
        len(set(olds)) < len(olds)
        or not all(_whole(loc, in_chunks[i]) for i, _, loc in pieces)
        or (counts != counts[0]).any()
    ):
        return None
    place, seen = {}, {}
    for i, j, _ in pieces:
        place[i] = (j, seen.get(j, 0))
        seen[j] = seen.get(j, 0) + 1
    r = int(counts[0])
    expr = _placed_blocks(x, axis, place, r > 1, in_chunks)
    return Concat(expr, x.expr.type.key_arity, axis) if r > 1 else expr


def _cut_each(x, axis, pieces, in_chunks):
    """Each new block is one piece of its own old block, at the same positions in each (a slice
    inside one block, ``x[::2]`` of even blocks): Filter(blocks used) -> ReKey(old -> new) ->
    Transform(cut)."""
    olds, news = [i for i, _, _ in pieces], [j for _, j, _ in pieces]
    if len(set(olds)) < len(olds) or len(set(news)) < len(news) or not len(pieces[0][2]):
        return None
    encoded = [_encode(loc) for _, _, loc in pieces]
    if any(not np.array_equal(e, encoded[0]) for e in encoded[1:]):
        return None
    expr = _placed_blocks(x, axis, {i: (j, 0) for i, j, _ in pieces}, False, in_chunks)
    return Transform(expr, Cut(axis, encoded[0], x.expr.type.dtype))


def _placed_blocks(x, axis, place, numbered, in_chunks):
    """The old blocks in ``place`` (old -> (new block, position)) renumbered to their new
    blocks: Filter(blocks used) if some are not, then ReKey (none when every block kept keeps
    its number)."""
    expr, n = x.expr, x.expr.type.key_arity
    if len(place) < len(in_chunks):
        expr = Filter(expr, KeyPred.blocks_in(axis, frozenset(place), f"inBlocks{sorted(place)}"))
    if not numbered and all(new == (old, 0) for old, new in place.items()):
        return expr
    return ReKey(
        expr,
        KeyMap(
            Bound(_place_block, axis, numbered, place),
            f"placeBlocks[{axis}]",
            copies=_all_but(axis, n) + ((None,) if numbered else ()),
        ),
    )


def _tiles(x, axis, pieces, in_chunks):
    """Each old block cut in order into tiles of one size (a shorter block into fewer: 730 days
    in 92-day blocks, cut into days), one tile per new block: Tile(axis, size) -> Filter(the
    tiles that hold something, when a block has fewer) -> ReKey((old, tile) -> new)."""
    by_old = {}
    for i, j, loc in pieces:
        by_old.setdefault(i, []).append((j, loc))
    size = max(len(loc) for _, _, loc in pieces)
    if size == 0 or len(by_old) < len(in_chunks) or np.bincount([j for _, j, _ in pieces]).max() > 1:
        return None
    for i, c in enumerate(in_chunks):
        if (
            len(by_old[i]) != -(-c // size)
            or not _whole(np.concatenate([loc for _, loc in by_old[i]]), c)
            or any(len(loc) != min(size, c - k * size) for k, (_, loc) in enumerate(by_old[i]))
        ):
            return None
    new = {(i, k): j for i, ps in by_old.items() for k, (j, _) in enumerate(ps)}
    n = x.expr.type.key_arity
    expr = Tile(x.expr, axis, size)
    if len(new) < len(in_chunks) * expr.type.frontier[n]:  # a shorter block's last tiles are empty
        expr = Filter(expr, KeyPred(Bound(dims_in, (axis, n), frozenset(new)), "fullTiles", frozenset({axis, n})))
    return ReKey(
        expr,
        KeyMap(Bound(_place_tile, axis, n, new), f"placeTiles[{axis}]", copies=_all_but(axis, n)),
    )


def _all_but(axis, n):
    """A key map's ``copies``: output dims below ``n`` are the input's, except ``axis``."""
    return tuple(None if d == axis else d for d in range(n))


def _place_piece(axis, n, numbered, place, k):
    """(old block, piece) -> (new block, position in it, if new blocks have several pieces)."""
    j, w = place[(k[axis], k[n])]
    return k[:axis] + (j,) + k[axis + 1 : n] + ((w,) if numbered else ())


def _place_block(axis, numbered, place, k):
    """old block -> (new block, position in it, if new blocks have several old ones)."""
    j, w = place[k[axis]]
    return k[:axis] + (j,) + k[axis + 1 :] + ((w,) if numbered else ())


def _place_tile(axis, n, new, k):
    """(old block, tile) -> new block."""
    return k[:axis] + (new[(k[axis], k[n])],) + k[axis + 1 : n]


def rechunk_axes(x, chunks: dict) -> Rel:
    """``x`` with axis a chunked ``chunks[a]`` (a gather per axis that changes)."""
    r = Rel(x.expr, x.sources)
    for axis, c in sorted(chunks.items()):
        cur = r.expr.type.array_chunks()[axis]
        c = tuple(int(v) for v in c)
        if c != cur:
            r = gather(r, axis, np.arange(sum(cur)), c)
    return r


def rechunk(x, chunks="auto", threshold=None, block_size_limit=None, balance=False, method=None):
    """``x`` with new chunks, as dask.array's ``rechunk``.

    A gather per axis whose chunks change; the plan places the moves (nothing is concatenated
    on one worker).

    Parameters
    ----------
    x : RelArray
        The array.
    chunks : int, tuple, dict or "auto", optional
        The new chunks, given as dask takes them: one size for every axis, a size per axis,
        explicit block sizes per axis, ``{axis: size}`` (other axes kept), ``-1`` for a whole
        axis, ``None`` to keep an axis, ``"auto"`` for blocks near ``array.chunk-size``.
    threshold : int, optional
        Accepted for dask's signature.
    block_size_limit : int, optional
        The most bytes per block ``"auto"`` aims for.
    balance : bool, optional
        As dask's: block sizes along each axis evened out, leftover small blocks dropped
        (``rechunk(len(x) // n, balance=True)`` gives ``n`` blocks); a warning where no even
        split has as many blocks.
    method : str, optional
        Accepted for dask's signature (the gather is dask_tra's one method).

    Returns
    -------
    RelArray
        ``x`` itself if the chunks are unchanged, else the rechunked array.

    Raises
    ------
    ValueError
        A chunk size below -1, or a tuple with too few entries.

    Examples
    --------
    >>> x = da.ones((4, 4), chunks=2)
    >>> x.rechunk((4, 1)).chunks
    ((4,), (1, 1, 1, 1))
    >>> da.rechunk(x, {0: -1}).chunks
    ((4,), (2, 2))
    """
    from dask.array.core import normalize_chunks

    from .relations import axis_of, wrap

    if isinstance(chunks, dict):
        chunks = {axis_of(a, x.ndim): c for a, c in chunks.items()}
        chunks = tuple(chunks.get(i, x.chunks[i]) for i in range(x.ndim))
    if isinstance(chunks, (tuple, list)):
        if len(chunks) > x.ndim:
            chunks = tuple(chunks)[: x.ndim]  # dask zips the entries with the axes: extra ones are ignored
        if len(chunks) != x.ndim:
            raise ValueError(f"chunks {chunks!r} have {len(chunks)} entries for a {x.ndim}-d array")
        chunks = tuple(x.chunks[i] if c is None else c for i, c in enumerate(chunks))
    bad = [c for c in (chunks if isinstance(chunks, tuple) else (chunks,)) if isinstance(c, Integral) and c < -1]
    if bad:
        raise ValueError(f"rechunk: a chunk size must be positive, -1 (the whole axis) or None; got {bad[0]}")
    new = normalize_chunks(chunks, x.shape, limit=block_size_limit, dtype=x.dtype, previous_chunks=x.chunks)
    if balance:
        from dask.array.rechunk import _balance_chunksizes

        new = tuple(_balance_chunksizes(c) if len(c) and sum(c) else c for c in new)
    if new == x.chunks:
        return x
    r = rechunk_axes(x, dict(enumerate(new)))
    return wrap(r.expr, x, extra=r.sources)


def take(x, axis, src, out_chunks=None):
    """The RelArray gathering positions ``src`` of ``x`` along ``axis`` (chunks: ``run_chunks``)."""
    from .relations import wrap

    g = gather(x, axis, src, out_chunks or run_chunks(src, x.chunks[axis]))
    return wrap(g.expr, x, extra=g.sources)


def even_chunks(length: int, n: int) -> tuple:
    """``length`` cut into ``n`` blocks as evenly as possible."""
    base, extra = divmod(length, n)
    return tuple(base + (i < extra) for i in range(n))


def run_chunks(src, in_chunks, target=None) -> tuple:
    """Output chunks for a gather: one block per run of positions from one old block when
    ``src`` is monotonic (slices, masks), else blocks of the largest input block."""
    if len(src) == 0:
        return (0,)
    steps = np.diff(src)
    if target is None and ((steps >= 0).all() or (steps <= 0).all()):
        old = _block_of(offsets(in_chunks), src)
        cuts = np.flatnonzero(np.diff(old) != 0) + 1
        return tuple(int(len(r)) for r in np.split(old, cuts))
    size = target or max(max(in_chunks), 1)
    return tuple(min(size, len(src) - s) for s in range(0, len(src), size))


__all__ = ["rechunk"]

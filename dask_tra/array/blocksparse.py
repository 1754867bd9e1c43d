"""Block-sparse RelArrays: only some blocks are held, a missing block is all zeros.

The key set is metadata (the relation type's ``keys``), known without touching data. Chunks
are dense (NumPy, or the configured backend for ``block_sparse_random``). See ``zerofill`` for
how operations treat missing blocks, and ``docs/api.md`` for what skips them.
"""

from __future__ import annotations

import numpy as np

from ..runtime.sources import RandomSource, fresh_name
from ..tra import RelationType
from .creation import _shape
from .relations import auto_chunks, check_dtype, offsets, wrap_source
from .zerofill import BlocksSource, SparseSource


def from_blocks(blocks: dict, shape, chunks, dtype=None, name=None):
    """A block-sparse array from ``{block index: array}``; blocks not given are zeros.

    Parameters
    ----------
    blocks : dict
        ``{block index tuple: array}``, each array of its block's shape (NumPy, CuPy or torch).
    shape : tuple of int
        The array's shape.
    chunks : int or tuple
        The block sizes (as ``from_array``).
    dtype : dtype, optional
        The dtype; default: the blocks' common dtype.
    name : str, optional
        The array's name.

    Returns
    -------
    RelArray
        A block-sparse array holding the blocks given.

    Examples
    --------
    >>> x = da.from_blocks({(0, 0): np.ones((2, 2))}, shape=(4, 4), chunks=2)
    >>> x.nnzblocks
    1
    >>> x.compute()
    array([[1., 1., 0., 0.],
           [1., 1., 0., 0.],
           [0., 0., 0., 0.],
           [0., 0., 0., 0.]])
    """
    shape = _shape(shape)
    given = {tuple(int(i) for i in k): np.asarray(b) for k, b in blocks.items()}
    if dtype is None:
        dtype = np.result_type(*given.values()) if given else np.float64
    dtype = check_dtype(dtype)
    chunks = auto_chunks(chunks, shape, dtype)
    t = RelationType.from_chunks(chunks, dtype)
    for k, b in given.items():
        if len(k) != len(shape) or any(not 0 <= i < f for i, f in zip(k, t.frontier)):
            raise IndexError(f"from_blocks: block index {k} outside the block grid {t.frontier}")
        if b.shape != t.chunk_shape(k):
            raise ValueError(f"from_blocks: block {k} has shape {b.shape}, the chunks say {t.chunk_shape(k)}")
    data = {k: np.ascontiguousarray(b, dtype=dtype) for k, b in given.items()}
    return wrap_source(BlocksSource(data, t.with_(keys=frozenset(data)), name or fresh_name("from-blocks")))


def from_sparse(m, chunks="auto", name=None):
    """A block-sparse array from a SciPy sparse matrix/array or a pydata ``sparse`` array.

    A block is held if and only if it has a nonzero, as a dense chunk.

    Parameters
    ----------
    m : scipy.sparse matrix or array, or sparse.SparseArray
        The data.
    chunks : int, tuple or "auto", optional
        The block sizes (as ``from_array``).
    name : str, optional
        The array's name.

    Returns
    -------
    RelArray
        A block-sparse array with ``m``'s values.

    Examples
    --------
    >>> import scipy.sparse
    >>> x = da.from_sparse(scipy.sparse.eye(4, format="csr"), chunks=2)
    >>> x.nnzblocks
    2
    >>> x.sum().compute()
    np.float64(4.0)
    """
    if hasattr(m, "tocoo"):
        m = m.tocoo()
    if not all(hasattr(m, a) for a in ("coords", "data", "shape", "dtype")):
        raise TypeError(f"from_sparse expects a scipy.sparse or pydata sparse array, got {type(m).__name__}")
    shape, dtype = tuple(int(s) for s in m.shape), check_dtype(m.dtype)
    chunks = auto_chunks(chunks, shape, dtype)
    coords = np.asarray(m.coords, dtype=np.int64).reshape(len(shape), -1)
    values = np.asarray(m.data)
    nz = values != 0
    coords, values = coords[:, nz], values[nz]
    starts = [offsets(c) for c in chunks]
    block = np.stack([np.searchsorted(s, c, side="right") - 1 for s, c in zip(starts, coords)])
    blocks = {}
    for k in sorted({tuple(int(i) for i in col) for col in block.T}):
        blocks[k] = np.zeros(tuple(c[i] for c, i in zip(chunks, k)), dtype)
    for j, k in enumerate(map(tuple, block.T.tolist())):
        local = tuple(int(c) - int(s[i]) for c, s, i in zip(coords[:, j], starts, k))
        blocks[k][local] += values[j]
    blocks = {k: b for k, b in blocks.items() if b.any()}  # duplicates summing to zero
    return from_blocks(blocks, shape, chunks, dtype, name)


PATTERNS = ("random", "banded", "power-law")
POWER_LAW_EXPONENT = 1.0  # Zipf: the row of rank r (1 = busiest) gets a share ∝ r ** -1


def block_sparse_random(shape, chunks="auto", density=0.1, seed=None, dtype=np.float64, pattern="random"):
    """A block-sparse array of uniform [0, 1) values in a ``density`` fraction of its blocks.

    Which blocks are held is drawn from ``seed``; each block's values from ``(seed, *key)``, as
    ``random.random``. Blocks not held are zeros, skipped by the plan where an operation allows
    (a product with a zero block, a sum). Everything is deterministic given ``seed``.

    ``pattern`` says which blocks are held:

    - ``"random"`` (default): each block independently with probability ``density``.
    - ``"banded"`` (2-D): the ``round(density * nblocks)`` blocks nearest the block diagonal
      (the line from the grid's top-left to its bottom-right corner), so the band's width is
      what reaches ``density``; ties at the band's edge are broken at random from ``seed``.
    - ``"power-law"`` (2-D): row ``i`` of the block grid holds ``d_i`` blocks, the degrees
      following a Zipf law (the row of rank ``r`` gets a share ∝ ``1 / r``; ranks are a random
      permutation of the rows), scaled so they sum to ``round(density * nblocks)`` and capped
      at the number of block columns (the excess going to the other rows); the columns of
      each row are drawn uniformly at random without replacement.

    Parameters
    ----------
    shape : tuple of int
        The array's shape.
    chunks : int, tuple or "auto", optional
        The block sizes (as ``from_array``).
    density : float, optional
        The fraction of blocks held (default 0.1).
    seed : int, optional
        Seeds both the choice of blocks and their values.
    dtype : dtype, optional
        A floating dtype (default float64).
    pattern : {"random", "banded", "power-law"}, optional
        Which blocks are held (above).

    Returns
    -------
    RelArray
        A block-sparse array (``nnzblocks`` of its ``numblocks`` held).

    See Also
    --------
    from_blocks, from_sparse

    Examples
    --------
    >>> x = da.block_sparse_random((4, 4), chunks=2, density=0.5, seed=0, pattern="banded")
    >>> x.numblocks, x.nnzblocks
    ((2, 2), 2)
    >>> x.compute().shape
    (4, 4)
    """
    shape = _shape(shape)
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(map(repr, PATTERNS))}, got {pattern!r}")
    try:
        ok = 0 <= float(density) <= 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"density must be a number in [0, 1], got {density!r}")
    if seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    dtype = check_dtype(dtype)
    src = RandomSource("random", shape, auto_chunks(chunks, shape, dtype), seed, dtype)
    grid = src.type.frontier
    if pattern != "random" and len(grid) != 2:
        raise ValueError(f"pattern {pattern!r} needs a 2-D array, got shape {shape}")
    rng = np.random.default_rng(seed)
    if pattern == "random":
        held = rng.random(grid) < density
    elif pattern == "banded":
        held = _banded(grid, density, rng)
    else:
        held = _power_law(grid, density, rng)
    keys = [tuple(int(i) for i in k) for k in np.argwhere(held)]
    return wrap_source(SparseSource(src, keys, fresh_name("block-sparse-random")))


def _target(grid, density) -> int:
    return int(round(float(density) * int(np.prod(grid))))


def _banded(grid, density, rng) -> np.ndarray:
    """The ``round(density * nblocks)`` blocks nearest the block diagonal (ties: at random)."""
    nr, nc = grid
    held = np.zeros(grid, dtype=bool)
    i, j = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
    centre = (i + 0.5) * nc / max(nr, 1) - 0.5  # the diagonal's column at row i's middle
    dist = np.abs(j - centre).ravel()
    order = np.lexsort((rng.random(dist.size), np.round(dist, 9)))
    held.ravel()[order[: _target(grid, density)]] = True
    return held


def band_halfwidth(grid, keys) -> float:
    """The largest distance (in blocks) of a held block from the block diagonal, as ``"banded"``
    measures it."""
    nr, nc = grid
    return max((abs(j - ((i + 0.5) * nc / max(nr, 1) - 0.5)) for i, j in keys), default=0.0)


def power_law_degrees(nrows, ncols, total, rng) -> np.ndarray:
    """Row degrees summing to ``total`` (≤ ``nrows * ncols``), Zipf-distributed over a random
    ranking of the rows, each capped at ``ncols``."""
    rank = np.empty(nrows, dtype=np.int64)
    rank[rng.permutation(nrows)] = np.arange(1, nrows + 1)
    weight = rank.astype(np.float64) ** -POWER_LAW_EXPONENT
    deg = np.zeros(nrows, dtype=np.int64)
    free = np.ones(nrows, dtype=bool)
    left = total
    while left > 0 and free.any():  # water-fill: rows at the cap hand their excess on
        share = left * weight * free / weight[free].sum()
        add = np.minimum(np.floor(share).astype(np.int64), ncols - deg)
        rem = np.where(free & (deg + add < ncols), share - add, -1.0)
        extra = left - int(add.sum())
        for r in np.lexsort((rank, -rem))[: max(extra, 0)]:  # largest remainders, then rank
            if rem[r] >= 0:
                add[r] += 1
        deg += add
        left = total - int(deg.sum())
        free = deg < ncols
    return deg


def _power_law(grid, density, rng) -> np.ndarray:
    nr, nc = grid
    held = np.zeros(grid, dtype=bool)
    deg = power_law_degrees(nr, nc, _target(grid, density), rng)
    for r in range(nr):
        held[r, rng.choice(nc, int(deg[r]), replace=False)] = True
    return held


__all__ = ["from_blocks", "from_sparse", "block_sparse_random"]

"""Block-sparse RelArrays: only some blocks are held, a missing block is all zeros.

The key set is metadata (the relation type's ``keys``), known without touching data. Chunks
are dense (NumPy, or the configured backend for ``block_sparse_random``). See ``zerofill`` for
how operations treat missing blocks, and ``docs/api.md`` for what skips them.
"""

from __future__ import annotations

import numpy as np

from ..dask.sources import RandomSource, fresh_name
from ..tra import RelationType
from .creation import _shape
from .relations import auto_chunks, check_dtype, offsets, wrap_source
from .zerofill import BlocksSource, SparseSource


def from_blocks(blocks: dict, shape, chunks, dtype=None, name=None):
    """A block-sparse array from ``{block index tuple: array}`` (each of its block's shape);
    blocks not given are zeros."""
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
    """A block-sparse array from a SciPy sparse matrix/array or a pydata ``sparse`` array: a
    block is held iff it has a nonzero, as a dense chunk."""
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


def block_sparse_random(shape, chunks="auto", density=0.1, seed=None, dtype=np.float64):
    """Uniform [0, 1) values in a random ``density`` fraction of the blocks (which ones: drawn
    from ``seed``; each block's values: from ``(seed, *key)``, as ``random.random``)."""
    shape = _shape(shape)
    if not 0 <= density <= 1:
        raise ValueError(f"density must be in [0, 1], got {density}")
    if seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    dtype = check_dtype(dtype)
    src = RandomSource("random", shape, auto_chunks(chunks, shape, dtype), seed, dtype)
    held = np.random.default_rng(seed).random(src.type.frontier) < density
    keys = [tuple(int(i) for i in k) for k in np.argwhere(held)]
    return wrap_source(SparseSource(src, keys, fresh_name("block-sparse-random")))


__all__ = ["from_blocks", "from_sparse", "block_sparse_random"]

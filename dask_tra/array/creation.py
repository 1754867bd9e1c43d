"""Creating RelArrays: from in-memory arrays, from dask.arrays (lazily), constants."""
from __future__ import annotations

import numpy as np

from ..dask.sources import ArraySource, ConstantSource, DaskSource


def _wrap(source):
    from ..core import RelArray
    return RelArray(source.input, {source.input.name: source})


def from_array(x, chunks="auto"):
    """Wrap an in-memory array (NumPy, CuPy or torch), cut into dask-style ``chunks``."""
    if not hasattr(x, "shape"):
        x = np.asarray(x)
    return _wrap(ArraySource(x, _auto(chunks, x.shape, x.dtype)))


def from_dask(x):
    """Wrap a dask.array without computing it; its graph becomes part of the plan's graph."""
    import dask.array as da
    if not isinstance(x, da.Array):
        raise TypeError(f"from_dask expects a dask.array.Array, got {type(x).__name__}")
    if any(np.isnan(c) for cs in x.chunks for c in cs):
        raise ValueError("from_dask needs known chunk sizes; call x.compute_chunk_sizes() first")
    return _wrap(DaskSource(x))


def full(shape, fill_value, chunks="auto", dtype=None):
    shape = tuple(int(s) for s in np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),)
    dtype = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    return _wrap(ConstantSource(fill_value, shape, _auto(chunks, shape, dtype), dtype))


def _auto(chunks, shape, dtype):
    """dask's chunk normalisation, 'auto' included."""
    from dask.array.core import normalize_chunks
    return normalize_chunks(chunks, shape, dtype=np.dtype(dtype))

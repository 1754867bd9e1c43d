"""Creating RelArrays. Every creation is one TRA ``Input`` bound to a source: an in-memory
array, a dask.array (lazily), constants, or blocks made on their site (arange, linspace, eye)."""

from __future__ import annotations

import math

import numpy as np

from .. import backends, config
from ..dask.sources import ArraySource, ConstantSource, DaskSource
from .lazy import from_lazy, is_lazy
from .rechunk import rechunk
from .relations import BlockSource, auto_chunks, check_dtype, is_array, is_dask, wrap_source


def _shape(shape) -> tuple:
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)


def from_array(x, chunks="auto", name=None, **kwargs):
    """Wrap an array cut into dask-style ``chunks``: an in-memory one (NumPy, CuPy or torch), or
    one read block by block where and when the plan needs it (h5py, zarr, netCDF4, memmap, any
    sliceable array-like; ``lock=`` serialises its reads)."""
    if is_array(x):
        return x if chunks == "auto" else rechunk(x, chunks)
    if is_dask(x):
        return from_dask(x) if chunks == "auto" else from_dask(x).rechunk(chunks)
    if is_lazy(x):  # h5py, zarr, netCDF4, memmap: read block by block where needed
        return from_lazy(x, chunks, name=name, lock=kwargs.get("lock", False))
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        x = np.asarray(x)
    dtype = check_dtype(backends.numpy_dtype(x.dtype))  # torch.float32 -> float32
    return wrap_source(ArraySource(x, auto_chunks(chunks, tuple(x.shape), dtype)))


def from_dask(x):
    """Wrap a dask.array without computing it; its graph becomes part of the plan's graph."""
    import dask.array as da

    if not isinstance(x, da.Array):
        raise TypeError(f"from_dask expects a dask.array.Array, got {type(x).__name__}")
    if any(np.isnan(c) for cs in x.chunks for c in cs):
        raise ValueError("from_dask needs known chunk sizes; call x.compute_chunk_sizes() first")
    check_dtype(x.dtype)
    return wrap_source(DaskSource(x))


def asarray(a, dtype=None, chunks="auto", **kwargs):
    """A RelArray for ``a`` (RelArray, dask.array, NumPy array, list or scalar), optionally cast."""
    if is_array(a):
        out = a
    elif is_dask(a):
        out = from_dask(a)
    else:
        out = from_array(np.asarray(a, dtype=dtype), chunks=chunks)
    return out if dtype is None or out.dtype == np.dtype(dtype) else out.astype(dtype)


array = asarray


def full(shape, fill_value, dtype=None, chunks="auto", **kwargs):
    shape = _shape(shape)
    if np.ndim(fill_value) != 0:
        raise ValueError(f"fill_value must be a scalar, got shape {np.shape(fill_value)}")
    dtype = check_dtype(dtype if dtype is not None else np.asarray(fill_value).dtype)
    return wrap_source(ConstantSource(fill_value, shape, auto_chunks(chunks, shape, dtype), dtype))


def zeros(shape, dtype=float, chunks="auto", **kwargs):
    return full(shape, 0, dtype=dtype, chunks=chunks)


def ones(shape, dtype=float, chunks="auto", **kwargs):
    return full(shape, 1, dtype=dtype, chunks=chunks)


def empty(shape, dtype=float, chunks="auto", **kwargs):
    """Like zeros (chunks are made filled)."""
    return full(shape, 0, dtype=dtype, chunks=chunks)


def _like(maker, a, dtype, chunks, shape, *args):
    a = a if hasattr(a, "shape") else np.asarray(a)
    shape = a.shape if shape is None else _shape(shape)
    if chunks is None:
        chunks = a.chunks if is_array(a) and shape == a.shape else "auto"
    return maker(shape, *args, dtype=dtype if dtype is not None else a.dtype, chunks=chunks)


def zeros_like(a, dtype=None, chunks=None, shape=None, **kwargs):
    return _like(lambda s, dtype, chunks: zeros(s, dtype, chunks), a, dtype, chunks, shape)


def ones_like(a, dtype=None, chunks=None, shape=None, **kwargs):
    return _like(lambda s, dtype, chunks: ones(s, dtype, chunks), a, dtype, chunks, shape)


def empty_like(a, dtype=None, chunks=None, shape=None, **kwargs):
    return _like(lambda s, dtype, chunks: empty(s, dtype, chunks), a, dtype, chunks, shape)


def full_like(a, fill_value, dtype=None, chunks=None, shape=None, **kwargs):
    return _like(lambda s, dtype, chunks: full(s, fill_value, dtype, chunks), a, dtype, chunks, shape)


def _blocks(kind, shape, chunks, dtype, params):
    dtype = check_dtype(dtype)
    backend = backends.get(config.get("backend")).name
    return wrap_source(
        BlockSource(kind, shape, auto_chunks(chunks, shape, dtype), dtype, params, backend, config.get("device"))
    )


def arange(start=0, stop=None, step=1, *, chunks="auto", dtype=None, **kwargs):
    """``arange(stop)`` or ``arange(start, stop, step)``; blocks are made on their site."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    n = max(0, math.ceil((stop - start) / step))
    dtype = np.result_type(start, stop, step) if dtype is None else np.dtype(dtype)
    return _blocks("arange", (n,), chunks, dtype, (start, step))


def linspace(start, stop, num=50, endpoint=True, retstep=False, chunks="auto", dtype=None, **kwargs):
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else np.nan
    dtype = np.result_type(start, stop, float) if dtype is None else dtype
    out = _blocks("linspace", (num,), chunks, dtype, (start, stop, 0 if div <= 0 else step, num, endpoint))
    return (out, step) if retstep else out


def eye(N, chunks="auto", M=None, k=0, dtype=float):
    M = N if M is None else M
    return _blocks("eye", (int(N), int(M)), chunks, dtype, (int(k),))


__all__ = [
    "from_array",
    "from_dask",
    "asarray",
    "array",
    "full",
    "zeros",
    "ones",
    "empty",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "arange",
    "linspace",
    "eye",
]

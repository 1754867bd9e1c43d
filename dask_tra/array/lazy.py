"""Lazy reads: an array-like that is not in memory (h5py dataset, zarr array, netCDF4 variable,
``np.memmap``, xarray's lazy backend arrays) as one TRA ``Input`` bound to a
``LazyArraySource``, each block read by its own task where the plan puts it (``from_array``
calls ``from_lazy``); ``narrow`` lets slicing read only the blocks an index touches; ``Reopen``
handles travel to workers by file name and path. ``io.py`` has the user-facing readers and
the writers (it reuses ``Reopen``/``handle`` for writes)."""

from __future__ import annotations

import threading

import numpy as np

from .. import backends
from ..dask.sources import LazyArraySource
from .relations import auto_chunks, check_dtype, offsets, wrap_source

_LOCAL_LOCK = threading.Lock()  # netCDF4 (the HDF5 C library) is not thread-safe


# ---------------------------------------------------------------- picklable handles on files


class Reopen:
    """A picklable handle on a dataset in a file (h5py dataset, netCDF4 variable, memmap): the
    live object in this process; after pickling, the file reopened read-only by name and path.
    ``mode`` ("r" or "r+") is how a worker reopens it."""

    def __init__(self, obj, mode="r"):
        self.obj, self.mode = obj, mode
        self.kind, self.file, self.path = _describe(obj)
        self.shape, self.dtype = tuple(obj.shape), np.dtype(obj.dtype)
        self.ndim = len(self.shape)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "obj"}

    def __setstate__(self, state):
        self.__dict__.update(state, obj=None)

    def _target(self):
        if self.obj is None:
            self.obj = _open(self.kind, self.file, self.path, self.shape, self.dtype, self.mode)
        return self.obj

    def __getitem__(self, box):
        with _LOCAL_LOCK if self.kind == "netcdf4" else _NoLock():
            return self._target()[box]

    def __setitem__(self, box, value):
        with _LOCAL_LOCK if self.kind == "netcdf4" else _NoLock():
            self._target()[box] = value
            if self.kind == "h5py":
                self._target().file.flush()

    def __repr__(self):
        return f"Reopen({self.kind}:{self.file}:{self.path})"


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _describe(obj):
    mod = type(obj).__module__.split(".")[0]
    if isinstance(obj, np.memmap):
        return (
            "memmap",
            obj.filename,
            (int(obj.offset), "F" if obj.flags.f_contiguous and obj.ndim > 1 and not obj.flags.c_contiguous else "C"),
        )
    if mod == "h5py":
        return "h5py", obj.file.filename, obj.name
    if mod == "netCDF4":
        group = obj.group()
        return "netcdf4", group.filepath(), (group.path, obj.name)
    raise TypeError(f"no reopenable handle for {type(obj).__name__}")


_OPEN: dict = {}  # (kind, file, mode) -> open file object, per process


def _open(kind, file, path, shape, dtype, mode):
    if kind == "memmap":
        offset, order = path
        return np.memmap(file, dtype=dtype, mode="r" if mode == "r" else "r+", offset=offset, shape=shape, order=order)
    handle = _OPEN.get((kind, file, mode))
    if handle is None:
        if kind == "h5py":
            import h5py

            handle = h5py.File(file, mode)
        else:
            import netCDF4

            handle = netCDF4.Dataset(file, "r" if mode == "r" else "a")
        _OPEN[(kind, file, mode)] = handle
    if kind == "h5py":
        return handle[path]
    group_path, name = path
    group = handle
    for part in [p for p in group_path.split("/") if p]:
        group = group.groups[part]
    return group.variables[name]


def handle(x, mode="r"):
    """``x`` as something that pickles by reference to its file where it needs to."""
    if isinstance(x, np.memmap) or type(x).__module__.split(".")[0] in ("h5py", "netCDF4"):
        return Reopen(x, mode)
    return x


def is_lazy(x) -> bool:
    """An array-like read on demand (not an in-memory NumPy, CuPy or torch array)."""
    if isinstance(x, np.memmap):
        return True
    if isinstance(x, (np.ndarray, np.generic)) or backends.backend_of_type(x) != "numpy":
        return False
    return hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__getitem__")


def from_lazy(x, chunks, name=None, lock=False):
    """A RelArray over the array-like ``x``, read block by block (see the module doc)."""
    dtype = check_dtype(x.dtype)
    shape = tuple(int(s) for s in x.shape)
    if chunks == "auto" and getattr(x, "chunks", None) is not None and _regular(x.chunks, shape):
        previous = tuple(int(c) for c in x.chunks)  # start from the stored chunking (h5py, zarr)
        chunks = auto_chunks("auto", shape, dtype, previous=previous)
    else:
        chunks = auto_chunks(chunks, shape, dtype)
    if lock is True:
        from dask.utils import SerializableLock

        lock = SerializableLock()
    return wrap_source(LazyArraySource(handle(x), chunks, name=name, lock=lock or None))


def _regular(chunks, shape):
    return (
        isinstance(chunks, tuple)
        and len(chunks) == len(shape)
        and all(isinstance(c, (int, np.integer)) for c in chunks)
    )


# ---------------------------------------------------------------- slicing prunes reads


def narrow(x, entries):
    """When ``x`` is a lazily read input: the input narrowed to the blocks that ``entries``
    (``indexing._entries``) touch, and the entries shifted to it. Otherwise ``x, entries``."""
    if x.expr.children:
        return x, entries
    src = x.sources.get(x.expr.name)
    if not isinstance(src, LazyArraySource):
        return x, entries
    region, chunks, shifted, axis = [], [], [], 0
    for kind, v, k in entries:
        if k == 0:
            shifted.append((kind, v, k))
            continue
        if kind == "mask" and k != 1:
            return x, entries
        n = x.shape[axis]
        pos = _positions(kind, v, n)
        if pos is None or not len(pos):
            return x, entries
        lo, hi = _block_bounds(x.chunks[axis], int(pos.min()), int(pos.max()))
        region.append((lo, hi))
        cuts = offsets(x.chunks[axis])
        chunks.append(tuple(int(c) for c in np.diff(cuts[(cuts >= lo) & (cuts <= hi)])))
        shifted.append((kind, _shift(kind, v, n, lo, hi), k))
        axis += 1
    if all(r == (0, s) for r, s in zip(region, x.shape)):
        return x, entries
    return wrap_source(src.narrowed(region, tuple(chunks))), shifted


def _positions(kind, v, n):
    if kind == "slice":
        return np.arange(*v.indices(n))
    if kind == "mask":
        return np.flatnonzero(v) if v.shape == (n,) else None
    idx = np.asarray(v).ravel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        return None  # getitem raises the IndexError
    return np.where(idx < 0, idx + n, idx)


def _block_bounds(chunks, first, last):
    cuts = offsets(chunks)
    i = int(np.searchsorted(cuts, first, side="right") - 1)
    j = int(np.searchsorted(cuts, last, side="right") - 1)
    return int(cuts[i]), int(cuts[j + 1])


def _shift(kind, v, n, lo, hi):
    if kind == "slice":
        start, stop, step = v.indices(n)
        stop = stop - lo
        return slice(start - lo, None if stop < 0 else stop, step)
    if kind == "mask":
        return v[lo:hi]
    idx = np.asarray(v)
    return np.where(idx < 0, idx + n, idx) - lo if kind == "array" else (v + n if v < 0 else v) - lo

"""Lazy reads: an array-like that is not in memory (h5py dataset, zarr array, netCDF4 variable,
``np.memmap``, xarray's lazy backend arrays) as one TRA ``Input`` bound to a
``LazyArraySource``, each block read by its own task where the plan puts it (``from_array``
calls ``from_lazy``); ``narrow`` lets slicing read only the blocks an index touches; ``Reopen``
handles travel to workers by file name and path. ``io.py`` has the user-facing readers and
the writers (it reuses ``Reopen``/``handle`` for writes)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.util
import os
import threading
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
from distributed import get_worker

from .. import backends
from ..runtime.sources import LazyArraySource
from .relations import auto_chunks, check_dtype, offsets, wrap_source

_LOCAL_LOCK = threading.RLock()  # netCDF4 (the HDF5 C library) is not thread-safe; re-entered to close


# ---------------------------------------------------------------- picklable handles on files


class Reopen:
    """A picklable handle on a dataset in a file (h5py dataset, netCDF4 variable, memmap): the
    live object in this process while its file is open; after pickling (or once the user closed
    the file), the file reopened by name and path through ``_HANDLES``, which checks the file's
    identity at every read, so a read never goes through a handle on a file since rewritten.
    ``mode`` ("r" or "r+") is how a worker reopens it. Memmap reads are copies (a view would
    change, or fault, when the file is rewritten)."""

    def __init__(self, obj, mode="r"):
        self.obj, self.mode = obj, mode
        self.kind, self.file, self.path = _describe(obj)
        self.shape, self.dtype = tuple(obj.shape), np.dtype(obj.dtype)
        self.ndim = len(self.shape)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "obj"}

    def __setstate__(self, state):
        self.__dict__.update(state, obj=None)

    @contextmanager
    def _target(self):
        """The dataset to read or write: the live object while its file is open, else the file
        opened by name (released, and closed unless it may stay open, on leaving)."""
        if self.obj is not None and _is_open(self.obj):
            yield self.obj
        elif self.kind == "memmap":
            offset, order = self.path
            mm = np.memmap(self.file, self.dtype, "r" if self.mode == "r" else "r+", offset, self.shape, order)
            try:
                yield mm
                if self.mode != "r":
                    mm.flush()
            finally:
                del mm
        else:
            lease = _HANDLES.acquire(self.kind, self.file, self.mode)
            try:
                yield self._dataset(lease.handle)
            finally:
                _HANDLES.release(lease)

    def _dataset(self, handle):
        if self.kind == "h5py":
            ds = handle[self.path]
        else:
            group_path, name = self.path
            ds = handle
            for part in [p for p in group_path.split("/") if p]:
                ds = ds.groups[part]
            ds = ds.variables[name]
        if tuple(ds.shape) != self.shape or np.dtype(ds.dtype) != self.dtype:
            raise ValueError(
                f"{self!r}: the file now holds a {np.dtype(ds.dtype)} array of shape {tuple(ds.shape)} there, not "
                f"the {self.dtype} array of shape {self.shape} this array was made from (the file was rewritten): "
                "make the array again from the new file"
            )
        return ds

    def __getitem__(self, box):
        with _LOCAL_LOCK if self.kind == "netcdf4" else _NoLock():
            with self._target() as target:
                return np.array(target[box]) if self.kind == "memmap" else target[box]

    def __setitem__(self, box, value):
        with _LOCAL_LOCK if self.kind == "netcdf4" else _NoLock():
            with self._target() as target:
                target[box] = value
                if self.kind == "h5py":
                    target.file.flush()

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


def _is_open(obj) -> bool:
    """Whether the user's object still reads its file (h5py and netCDF4 files can be closed)."""
    if isinstance(obj, np.memmap):
        return True
    if type(obj).__module__.split(".")[0] == "h5py":
        return bool(obj.id.valid)
    root = obj.group()
    while root.parent is not None:
        root = root.parent
    return bool(root.isopen())


# ---------------------------------------------------------------- files opened by name


def _identity(file):
    """What changes when the file at ``file`` is replaced or rewritten."""
    st = os.stat(file)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _may_keep_open(mode) -> bool:
    """Whether a file opened by name may stay open after its read, for the next: read-only, only
    where HDF5 takes no file lock (``HDF5_USE_FILE_LOCKING=FALSE``: a reader's shared lock makes
    a later ``h5py.File(path, "w")`` elsewhere truncate the file, then fail), and only on a
    worker in a process of its own (in the user's process, an open handle makes the user's
    ``h5py.File(path, "w")`` fail). Elsewhere each read opens the file and closes it, as the
    per-task handles of dask.array do."""
    if mode != "r" or os.environ.get("HDF5_USE_FILE_LOCKING", "").strip().upper() not in ("FALSE", "0"):
        return False
    if multiprocessing.parent_process() is None:
        return False
    try:
        get_worker()
    except ValueError:
        return False
    return True


def _open_file(kind, file, mode):
    if kind == "h5py":
        import h5py

        return h5py.File(file, mode)
    import netCDF4

    with _LOCAL_LOCK:
        return netCDF4.Dataset(file, "r" if mode == "r" else "a")


def _close_file(kind, handle):
    with _LOCAL_LOCK if kind == "netcdf4" else _NoLock():
        try:
            handle.close()
        except Exception:  # a file already closed, or gone
            pass


class _Lease:
    __slots__ = ("kind", "handle", "identity", "users", "dropped")

    def __init__(self, kind, handle, identity, keep):
        self.kind, self.handle, self.identity = kind, handle, identity
        self.users, self.dropped = 1, not keep


class _Handles:
    """The h5py and netCDF4 files this process opened by name. A handle is reused only while the
    file's identity (device, inode, size, mtime, ctime) is the one it was opened with, checked
    at every read; a stale one is dropped and closed once no read uses it. At most ``limit``
    stay open (least recently used closed first), only where ``_may_keep_open``; all are closed
    at exit."""

    def __init__(self, limit=8):
        self.limit = limit
        self.lock = threading.Lock()
        self.open: OrderedDict = OrderedDict()  # (kind, file, mode) -> _Lease

    def acquire(self, kind, file, mode) -> _Lease:
        key, keep, closing = (kind, file, mode), _may_keep_open(mode), []
        identity = _identity(file)
        with self.lock:
            lease = self.open.get(key)
            if lease is not None and lease.identity == identity:
                self.open.move_to_end(key)
                lease.users += 1
                return lease
            # a stale handle on this file, or (before a write) a read-only one HDF5 would refuse to reopen
            for k in [k for k in self.open if k[:2] == key[:2] and (k == key or mode != "r")]:
                closing.append(self._retire(self.open.pop(k)))
        self._close(closing)
        handle = _open_file(kind, file, mode)
        lease = _Lease(kind, handle, identity, keep and _identity(file) == identity)
        if not lease.dropped:
            closing = []
            with self.lock:
                if key in self.open:
                    closing.append(self._retire(self.open.pop(key)))
                self.open[key] = lease
                while len(self.open) > self.limit:
                    closing.append(self._retire(self.open.popitem(last=False)[1]))
            self._close(closing)
        return lease

    def release(self, lease):
        with self.lock:
            lease.users -= 1
            done = lease.dropped and lease.users == 0
        if done:
            _close_file(lease.kind, lease.handle)

    def close_all(self):
        with self.lock:
            closing = [self._retire(lease) for lease in self.open.values()]
            self.open.clear()
        self._close(closing)

    @staticmethod
    def _retire(lease):
        """Drop ``lease`` (under the lock): it, to close now, if no read uses it, else None."""
        lease.dropped = True
        return lease if lease.users == 0 else None

    @staticmethod
    def _close(leases):
        for lease in leases:
            if lease is not None:
                _close_file(lease.kind, lease.handle)


_HANDLES = _Handles()
multiprocessing.util.Finalize(None, _HANDLES.close_all, exitpriority=0)  # at exit, worker processes too


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
    # the user's name is the array's; the input keeps its own (two arrays given one name must
    # never share an input)
    return wrap_source(LazyArraySource(handle(x), chunks, lock=lock or None), name=user_name(name))


def _regular(chunks, shape):
    return (
        isinstance(chunks, tuple)
        and len(chunks) == len(shape)
        and all(isinstance(c, (int, np.integer)) for c in chunks)
    )


# ---------------------------------------------------------------- slicing prunes reads


def narrow(x, entries):
    """When ``x`` is a lazily read input: the input narrowed to the span each slice or integer
    reads (only those bytes are read, as dask's getitem on a lazily indexed array; blocks keep
    their old boundaries inside), and the entries shifted to it. Otherwise ``x, entries``.

    An index array or mask keeps its axis whole: the gather keeps only the blocks it touches,
    so only those are read, and reads of the same input by several indexings (xarray's groupby
    picks each month's days) are one read per block."""
    if x.expr.children:
        return x, entries
    src = x.sources.get(x.expr.name)
    if not isinstance(src, LazyArraySource):
        return x, entries
    region, chunks, shifted, axis = [], [], [], 0
    for kind, v, k in entries:
        if k == 0 or kind not in ("slice", "int"):
            region += [(0, n) for n in x.shape[axis : axis + k]]
            chunks += list(x.chunks[axis : axis + k])
            shifted.append((kind, v, k))
            axis += k
            continue
        n = x.shape[axis]
        pos = _positions(kind, v, n)
        if pos is None or not len(pos):
            return x, entries
        lo, hi = int(pos.min()), int(pos.max()) + 1
        region.append((lo, hi))
        cuts = offsets(x.chunks[axis])
        inner = cuts[(cuts > lo) & (cuts < hi)]
        chunks.append(tuple(int(c) for c in np.diff(np.concatenate([[lo], inner, [hi]]))))
        shifted.append((kind, _shift(kind, v, n, lo, hi), k))
        axis += 1
    if all(r == (0, s) for r, s in zip(region, x.shape)):
        return x, entries
    return wrap_source(src.narrowed(region, tuple(chunks))), shifted


def _positions(kind, v, n):
    if kind == "slice":
        return np.arange(*v.indices(n))
    idx = np.asarray(v).ravel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        return None  # getitem raises the IndexError
    return np.where(idx < 0, idx + n, idx)


def _shift(kind, v, n, lo, hi):
    if kind == "slice":
        start, stop, step = v.indices(n)
        stop = stop - lo
        return slice(start - lo, None if stop < 0 else stop, step)
    return (v + n if v < 0 else v) - lo  # an integer


def user_name(name):
    """dask's ``name=``: a string names the array, False a random name, None the token."""
    from ..runtime.sources import fresh_name

    return fresh_name("array") if name is False else (name or None)

"""Reading and writing arrays on disk: lazy reads, per-block writes.

Reads. ``from_array`` of an array-like that is not in memory (h5py dataset, zarr array,
netCDF4 variable, ``np.memmap``, xarray's lazy backend arrays) is one TRA ``Input`` bound to a
``LazyArraySource``: every block is read by its own task, pinned to the site the plan gives the
block, when the plan needs it. Slicing such an input (``x[:100, :100]``) narrows the source to
the blocks the index touches, so the others are never read. h5py datasets, netCDF4 variables
and memmaps travel to workers as ``Reopen`` handles (file name and path: the file is reopened
there), zarr arrays as themselves.

Writes. ``store(x, target)`` lowers to one ``Join`` of ``x`` with a small relation of block
offsets, whose kernel ``WriteBlock`` writes its block into ``target[region]`` and returns a
1-element marker (the number of elements written). The optimizer places each write where its
block is: the block is written by a task on the worker that computed it, and only the marker
travels. Each block is one ``target[region] = block`` call, made once; a failure in one write
leaves every block already written as it is. Atomicity is the target's: a zarr write whose
region covers whole zarr chunks replaces those chunk objects one by one (each atomically on a
local or object store); an HDF5 write is not atomic (a crash inside one write can leave that
region half written, never others).
"""

from __future__ import annotations

import os
import pickle
import threading

import numpy as np

from .. import backends
from ..dask.sources import LazyArraySource, Ref, Source, fresh_name
from ..tra import Input, Join, RelationType
from ..tra.kernels import Kernel
from ..tra.relation import ChunkAxis
from .relations import asarray, check_dtype, grid, offsets, param_relation, wrap

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
    from .creation import _auto, _wrap

    dtype = check_dtype(x.dtype)
    shape = tuple(int(s) for s in x.shape)
    if chunks == "auto" and getattr(x, "chunks", None) is not None and _regular(x.chunks, shape):
        previous = tuple(int(c) for c in x.chunks)  # start from the stored chunking (h5py, zarr)
        chunks = _auto("auto", shape, dtype, previous=previous)
    else:
        chunks = _auto(chunks, shape, dtype)
    if lock is True:
        from dask.utils import SerializableLock

        lock = SerializableLock()
    return _wrap(LazyArraySource(handle(x), chunks, name=name, lock=lock or None))


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
    from .creation import _wrap

    return _wrap(src.narrowed(region, tuple(chunks))), shifted


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


# ---------------------------------------------------------------- other sources


class DelayedSource(Source):
    """One block: the value of a ``dask.delayed`` object (its graph joins the plan's)."""

    def __init__(self, value, shape, dtype, name=None):
        self.value = value
        self.graph = dict(value.__dask_graph__())
        t = RelationType.from_chunks(tuple((int(s),) for s in shape), dtype)
        self.input = Input(name or fresh_name("from-delayed"), t)

    def task(self, key):
        return Ref(self.value.key)

    def chunk(self, key):
        return self.value.compute(scheduler="sync")

    def held_keys(self):
        return {self.value.key: (0,) * len(self.type.frontier)}


class NpyStackSource(Source):
    """The blocks of a ``to_npy_stack`` directory, each loaded from its own file by its task."""

    def __init__(self, dirname, chunks, dtype, axis, mmap_mode):
        self.dirname, self.axis, self.mmap_mode = dirname, axis, mmap_mode
        self.chunks = chunks
        self.input = Input(fresh_name("from-npy-stack"), RelationType.from_chunks(chunks, dtype))

    def task(self, key):
        return (load_npy, os.path.join(self.dirname, f"{key[self.axis]}.npy"), self.mmap_mode)


def load_npy(path, mmap_mode):
    return np.load(path, mmap_mode=mmap_mode)


def from_delayed(value, shape, dtype=None, meta=None, name=None):
    """A one-block RelArray whose block is the value of ``value`` (a ``dask.delayed``)."""
    from .creation import _wrap

    if not hasattr(value, "key") or not hasattr(value, "__dask_graph__"):
        raise TypeError(f"from_delayed expects a dask Delayed object, got {type(value).__name__}")
    dtype = meta.dtype if dtype is None and meta is not None else dtype
    if dtype is None:
        raise ValueError("from_delayed needs dtype= (or meta=): the block's dtype is not known before it runs")
    return _wrap(DelayedSource(value, tuple(shape), check_dtype(dtype), name))


def from_zarr(url, component=None, storage_options=None, chunks=None, name=None, inline_array=False, **kwargs):
    """A RelArray reading a zarr array lazily (chunked like the zarr array unless ``chunks``)."""
    import zarr

    if isinstance(url, zarr.Array):
        z = url
    else:
        opts = {"storage_options": storage_options} if storage_options else {}
        z = zarr.open_array(url, mode="r", path=component or "", **opts, **kwargs)
    return from_lazy(z, chunks if chunks is not None else tuple(z.chunks), name=name)


def from_npy_stack(dirname, mmap_mode="r"):
    """The array ``to_npy_stack`` (ours or dask's) wrote to ``dirname``."""
    from .creation import _wrap

    with open(os.path.join(dirname, "info"), "rb") as f:
        info = pickle.load(f)
    chunks = tuple(tuple(int(c) for c in cs) for cs in info["chunks"])
    return _wrap(NpyStackSource(dirname, chunks, check_dtype(info["dtype"]), int(info["axis"]), mmap_mode))


# ---------------------------------------------------------------- writes


class WriteBlock(Kernel):
    """Join kernel: (block, its offsets) -> write the block into ``target`` at ``origin`` +
    offsets; returns the block (``return_stored``) or a 1-element count of what was written."""

    arity = 2

    def __init__(self, target, origin, lock, return_stored, dtype):
        self.target, self.origin, self.lock = target, tuple(origin), lock
        self.return_stored, self.dtype = return_stored, np.dtype(dtype)
        self.name = "store"

    def __call__(self, block, starts):
        data = backends.to_numpy(block)
        box = tuple(slice(o + int(s), o + int(s) + n) for o, s, n in zip(self.origin, starts, data.shape))
        if self.lock:
            with self.lock:
                self.target[box] = data
        else:
            self.target[box] = data
        if self.return_stored:
            return block
        return np.full((1,) * data.ndim, data.size, dtype=np.int64)

    def out_axes(self, frontier, axes, _):
        return tuple(axes) if self.return_stored else tuple(ChunkAxis.const(1) for _ in axes)

    def out_dtype(self, *dtypes):
        return self.dtype if self.return_stored else np.dtype(np.int64)


def _region_origin(region, target_shape, shape):
    if region is None:
        if tuple(target_shape) != tuple(shape):
            raise ValueError(f"store: source shape {tuple(shape)} does not match target shape {tuple(target_shape)}")
        return (0,) * len(shape)
    region = region if isinstance(region, tuple) else (region,)
    origin = []
    for i, n in enumerate(target_shape):
        r = region[i] if i < len(region) else slice(None)
        start, stop, step = r.indices(n)
        if step != 1:
            raise ValueError(f"store: region {r} must have step 1")
        origin.append(start)
        if i < len(shape) and stop - start != shape[i]:
            raise ValueError(
                f"store: region {region} has shape along axis {i} of {stop - start}, the source {shape[i]}"
            )
    return tuple(origin)


def written(x, target, region=None, lock=None, return_stored=False):
    """The RelArray whose computation writes ``x`` into ``target`` block by block."""
    x = asarray(x)
    origin = _region_origin(region, getattr(target, "shape", x.shape), x.shape)
    starts = [offsets(c) for c in x.chunks]
    P = param_relation({k: [o[i] for o, i in zip(starts, k)] for k in grid(x.numblocks)}, x.numblocks, what="offsets")
    dims = tuple(range(x.ndim))
    kernel = WriteBlock(handle(target, "r+"), origin, lock, return_stored, x.dtype)
    return wrap(Join(x.expr, P.expr, dims, dims, kernel), x, extra=P.sources)


def store(sources, targets, lock=True, regions=None, compute=True, return_stored=False, **kwargs):
    """dask.array.store: write each source into its target (``target[region] = block``), block by
    block, where each block is computed. ``lock``: True (one lock per process), False, or a lock.
    ``compute=False`` returns a RelArray whose computation does the writes (it computes to the
    element counts written per block, flattened over all sources); ``return_stored=True``
    returns the stored arrays (persisted when computing)."""
    import dask

    single = not isinstance(sources, (list, tuple))
    sources = [sources] if single else list(sources)
    targets = [targets] if single and not isinstance(targets, (list, tuple)) else list(targets)
    if len(sources) != len(targets):
        raise ValueError(f"store: {len(sources)} sources but {len(targets)} targets")
    if (
        regions is None
        or isinstance(regions, (tuple, slice))
        and not (isinstance(regions, tuple) and regions and isinstance(regions[0], tuple))
    ):
        regions = [regions] * len(sources)
    if len(regions) != len(sources):
        raise ValueError(f"store: {len(regions)} regions for {len(sources)} sources")
    if lock is True:
        from dask.utils import SerializableLock

        lock = SerializableLock()
    if _single_writer(targets):
        if not compute or return_stored:
            raise NotImplementedError(
                "store into an HDF5/netCDF file with a distributed Client: HDF5 "
                "allows one writing process, so only compute=True is supported"
            )
        for s, t, r in zip(sources, targets, regions):
            _store_here(asarray(s), t, r, lock)
        return None
    outs = [written(s, t, r, lock or None, return_stored) for s, t, r in zip(sources, targets, regions)]
    if return_stored:
        if compute:
            outs = list(dask.persist(*outs, **kwargs))
        return outs[0] if single else tuple(outs)
    from .stacking import concatenate
    from .structure import ravel

    done = outs[0] if len(outs) == 1 else concatenate([ravel(o) for o in outs])
    if compute:
        done.compute(**kwargs)
        return None
    return done


def _single_writer(targets) -> bool:
    """HDF5 (h5py, netCDF4) targets while a distributed Client is active: HDF5 allows one
    writing process, the one holding the file open."""
    from ..dask.sites import active_client

    return active_client() is not None and any(
        isinstance(handle(t), Reopen) and handle(t).kind != "memmap" for t in targets
    )


def _store_here(x, target, region, lock):
    """Blocks computed on the cluster where the plan puts them, written in this process as
    they arrive."""
    from distributed import as_completed

    origin = _region_origin(region, target.shape, x.shape)
    y = x.persist()
    blocks = y.sources[y.expr.name].blocks
    starts = [offsets(c) for c in x.chunks]
    key_of = {f.key: k for k, f in blocks.items()}
    for fut in as_completed(list(blocks.values())):
        k, data = key_of[fut.key], backends.to_numpy(fut.result())
        box = tuple(slice(o + int(s[i]), o + int(s[i]) + n) for o, s, i, n in zip(origin, starts, k, data.shape))
        if lock:
            with lock:
                target[box] = data
        else:
            target[box] = data


def to_zarr(
    arr,
    url,
    component=None,
    storage_options=None,
    overwrite=False,
    region=None,
    compute=True,
    return_stored=False,
    zarr_format=None,
    **kwargs,
):
    """Write ``arr`` to a zarr array (created at ``url``/``component`` with the array's chunks,
    or an existing ``zarr.Array``). Blocks must be regular (all equal but the last), as for dask:
    each block then covers whole zarr chunks, and concurrent block writes never share one."""
    import zarr

    arr = asarray(arr)
    _check_regular(arr)
    if isinstance(url, zarr.Array):
        z = url
    else:
        opts = {"storage_options": storage_options} if storage_options else {}
        z = zarr.create_array(
            url,
            name=component,
            shape=arr.shape,
            dtype=arr.dtype,
            chunks=tuple(max(c[0], 1) for c in arr.chunks) if arr.ndim else (),
            overwrite=overwrite,
            zarr_format=zarr_format or 3,
            **opts,
            **kwargs,
        )
    return store(arr, z, lock=False, regions=region, compute=compute, return_stored=return_stored)


def _check_regular(arr):
    for c in arr.chunks:
        if len(c) > 1 and (len(set(c[:-1])) > 1 or c[-1] > c[0]):
            raise ValueError(
                f"Attempt to save array to zarr with irregular chunking {arr.chunks}, "
                f"please call arr.rechunk(...) first."
            )


def to_hdf5(filename, *args, chunks=True, **kwargs):
    """``to_hdf5(filename, "/x", x)`` or ``to_hdf5(filename, {"/x": x, "/y": y})``: write arrays
    into datasets of an HDF5 file. HDF5 allows one writing process: without a distributed Client
    the writes run in this process's threads; with one, blocks are computed on the workers and
    written here as they arrive."""
    import h5py

    data = args[0] if len(args) == 1 and isinstance(args[0], dict) else {args[0]: args[1]}
    data = {k: asarray(v) for k, v in data.items()}
    with h5py.File(filename, mode="a") as f:
        dsets = [
            f.require_dataset(
                dp,
                shape=x.shape,
                dtype=x.dtype,
                chunks=tuple(max(c[0], 1) for c in x.chunks) if chunks is True and x.ndim else None,
                **kwargs,
            )
            for dp, x in data.items()
        ]
        store(list(data.values()), dsets)


class NpyStack:
    """A write target: block ``i`` along ``axis`` goes to ``dirname/i.npy`` (dask's layout)."""

    def __init__(self, dirname, axis, chunks, shape):
        self.dirname, self.axis, self.shape = dirname, axis, tuple(shape)
        self.starts = tuple(int(s) for s in offsets(chunks)[:-1])

    def __setitem__(self, box, block):
        i = self.starts.index(box[self.axis].start)
        np.save(os.path.join(self.dirname, f"{i}.npy"), block)


def to_npy_stack(dirname, x, axis=0):
    """Write ``x`` as one ``.npy`` file per block along ``axis`` plus an ``info`` file (dask's format)."""
    from .relations import axis_of

    x = asarray(x)
    axis = axis_of(axis, x.ndim)
    chunks = tuple(c if i == axis else (sum(c),) for i, c in enumerate(x.chunks))
    x = x.rechunk(chunks)
    os.makedirs(dirname, exist_ok=True)
    with open(os.path.join(dirname, "info"), "wb") as f:
        pickle.dump({"chunks": chunks, "dtype": x.dtype, "axis": axis}, f)
    store(x, NpyStack(dirname, axis, chunks[axis], x.shape), lock=False)


def to_delayed(x, optimize_graph=True):
    """An object array (shape ``numblocks``) of ``dask.delayed`` values, one per block."""
    from dask.delayed import Delayed

    graph = x.__dask_graph__()
    keys = np.empty(x.numblocks, dtype=object)
    for k in grid(x.numblocks):
        keys[k] = Delayed((x.name,) + k, graph, layer=x.name)
    return keys


__all__ = [
    "from_delayed",
    "from_npy_stack",
    "from_zarr",
    "store",
    "to_delayed",
    "to_hdf5",
    "to_npy_stack",
    "to_zarr",
]

"""Reading and writing arrays on disk: lazy reads, per-block writes.

Reads. ``from_array`` of an array-like that is not in memory (h5py dataset, zarr array,
netCDF4 variable, ``np.memmap``, xarray's lazy backend arrays) is one TRA ``Input`` bound to a
``LazyArraySource``: every block is read by its own task, pinned to the site the plan gives the
block, when the plan needs it. Slicing such an input (``x[:100, :100]``) narrows the source to
the blocks the index touches, so the others are never read. h5py datasets, netCDF4 variables
and memmaps travel to workers as ``Reopen`` handles (file name and path: the file is reopened
there), zarr arrays as themselves. That machinery is ``lazy.py`` (below ``creation.py``,
whose ``from_array`` uses it); this module has the user-facing readers and the writers.

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

import dask.array
import numpy as np
from dask.delayed import delayed
from dask.utils import derived_from

from .. import backends
from ..runtime.sources import Source, fresh_name
from ..tra import Input, Join, RelationType
from ..tra.kernels import Kernel
from ..tra.relation import ChunkAxis
from .blockwise import DelayedSource, is_delayed
from .creation import asarray
from .lazy import Reopen, from_lazy, handle
from .relations import check_dtype, grid, is_array, offsets, param_relation, reject_masked, wrap, wrap_source

# ---------------------------------------------------------------- other sources


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
    """A one-block RelArray whose block is the value of a ``dask.delayed`` object.

    Parameters
    ----------
    value : dask.delayed.Delayed or distributed.Future
        What computes the block (a Future is wrapped in a Delayed, as dask does).
    shape : int or tuple of int
        The block's shape (known sizes).
    dtype : dtype, optional
        The block's dtype; required unless ``meta`` gives it.
    meta : array, optional
        An empty array of the block's type and dtype.
    name : str, optional
        The array's name.

    Returns
    -------
    RelArray
        A lazy array of one block.

    Raises
    ------
    TypeError
        ``value`` is not a Delayed (or Future).
    ValueError
        Neither ``dtype`` nor ``meta`` is given.
    NotImplementedError
        ``shape`` has an unknown size.

    Examples
    --------
    >>> import dask
    >>> x = da.from_delayed(dask.delayed(np.ones)(3), shape=(3,), dtype=float)
    >>> x.compute()
    array([1., 1., 1.])
    """
    if hasattr(value, "key") and not hasattr(value, "__dask_graph__"):
        value = delayed(value)
    if not hasattr(value, "key") or not hasattr(value, "__dask_graph__"):
        raise TypeError(f"from_delayed expects a dask Delayed object, got {type(value).__name__}")
    reject_masked(meta, what="from_delayed's meta")
    dtype = meta.dtype if dtype is None and meta is not None else dtype
    if dtype is None:
        raise ValueError("from_delayed needs dtype= (or meta=): the block's dtype is not known before it runs")
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    for n in shape:
        if hasattr(n, "__dask_graph__") or (isinstance(n, float) and np.isnan(n)):
            raise NotImplementedError(
                f"from_delayed: shape {shape} has an unknown size; dask_tra arrays need known sizes "
                "(compute the size first, or concatenate blocks of known shapes)"
            )
        if int(n) != n or n < 0:
            raise ValueError(f"from_delayed: shape {shape} must be non-negative integers")
    backend = backends.backend_of_type(meta) if hasattr(meta, "shape") else "numpy"  # meta's library
    return wrap_source(DelayedSource(value, tuple(int(n) for n in shape), check_dtype(dtype), name, backend))


def from_zarr(url, component=None, storage_options=None, chunks=None, name=None, inline_array=False, **kwargs):
    """A RelArray reading a zarr array lazily, block by block where the plan needs it.

    Parameters
    ----------
    url : str, path or zarr.Array
        Where the zarr array is (or the array itself).
    component : str, optional
        The array's path inside a zarr group.
    storage_options : dict, optional
        Options of the storage backend (fsspec).
    chunks : tuple, optional
        The RelArray's chunks; default: the zarr array's.
    name : str, optional
        The array's name.
    inline_array : bool, optional
        Accepted for dask's signature.
    **kwargs
        Passed to ``zarr.open_array``.

    Returns
    -------
    RelArray
        A lazy array over the zarr array.

    See Also
    --------
    to_zarr

    Examples
    --------
    >>> import os, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "x.zarr")
    >>> da.to_zarr(da.arange(6, chunks=3), path)
    >>> y = da.from_zarr(path)
    >>> y.chunks
    ((3, 3),)
    >>> y.compute()
    array([0, 1, 2, 3, 4, 5])
    >>> tmp.cleanup()
    """
    import zarr

    if isinstance(url, zarr.Array):
        z = url
    else:
        opts = {"storage_options": storage_options} if storage_options else {}
        z = zarr.open_array(url, mode="r", path=component or "", **opts, **kwargs)
    return from_lazy(z, chunks if chunks is not None else tuple(z.chunks), name=name)


def from_npy_stack(dirname, mmap_mode="r"):
    """The array ``to_npy_stack`` (dask_tra's or dask's) wrote to ``dirname``.

    Parameters
    ----------
    dirname : str or path
        The directory holding the ``.npy`` files and the ``info`` file.
    mmap_mode : str or None, optional
        ``numpy.load``'s memory-mapping mode for each file (default ``"r"``).

    Returns
    -------
    RelArray
        A lazy array, one block per file.

    See Also
    --------
    to_npy_stack

    Examples
    --------
    >>> import os, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "stack")
    >>> da.to_npy_stack(path, da.arange(6, chunks=3))
    >>> da.from_npy_stack(path).compute()
    array([0, 1, 2, 3, 4, 5])
    >>> tmp.cleanup()
    """
    with open(os.path.join(dirname, "info"), "rb") as f:
        info = pickle.load(f)
    chunks = tuple(tuple(int(c) for c in cs) for cs in info["chunks"])
    return wrap_source(NpyStackSource(dirname, chunks, check_dtype(info["dtype"]), int(info["axis"]), mmap_mode))


# ---------------------------------------------------------------- writes


class WriteBlock(Kernel):
    """Join kernel: (block, its offsets) -> write the block into ``target`` where ``placement``
    puts it (``_box``); returns the block (``return_stored``) or a 1-element count of what was
    written."""

    arity = 2

    def __init__(self, target, placement, lock, return_stored, dtype):
        self.target, self.placement, self.lock = target, tuple(placement), lock
        self.return_stored, self.dtype = return_stored, np.dtype(dtype)
        self.name = "store"

    def __call__(self, block, starts):
        data = backends.to_numpy(block)
        box = _box(self.placement, [int(s) for s in np.atleast_1d(starts)] if data.ndim else [], data.shape)
        _write(self.target, box, data, self.lock)
        if self.return_stored:
            return block
        return np.full((1,) * data.ndim, data.size, dtype=np.int64)

    def out_axes(self, frontier, axes, _):
        return tuple(axes) if self.return_stored else tuple(ChunkAxis.const(1) for _ in axes)

    def out_dtype(self, *dtypes):
        return self.dtype if self.return_stored else np.dtype(np.int64)

    def __dask_tokenize__(self):
        from dask.base import tokenize

        lock = tokenize(self.lock) if self.lock else None
        # an in-memory target by identity: writing changes its contents, not which target it is
        target = ("ndarray", id(self.target)) if isinstance(self.target, np.ndarray) else tokenize(self.target)
        return ("store", target, self.placement, lock, self.return_stored, self.dtype.str)


def _placement(region, target_shape, shape):
    """Where a source of ``shape`` goes in a target of ``target_shape`` (dask's ``region``: the
    source is written to ``target[region]``): per target axis, ``("at", i)`` for an integer (the
    axis is not one of the source's) or ``("pos", positions)`` (a ``range`` for a slice, a tuple
    for a list of integers), the positions of the source's next axis."""
    if region is None:
        if tuple(target_shape) != tuple(shape):
            raise ValueError(f"store: source shape {tuple(shape)} does not match target shape {tuple(target_shape)}")
        return tuple(("pos", range(int(n))) for n in target_shape)
    region = region if isinstance(region, tuple) else (region,)
    if len(region) > len(target_shape):
        raise IndexError(f"store: region {region} has more entries than the target has axes ({len(target_shape)})")
    out, lists = [], 0
    for i, n in enumerate(target_shape):
        r = region[i] if i < len(region) else slice(None)
        if isinstance(r, (int, np.integer)) and not isinstance(r, bool):
            if not -n <= r < n:
                raise IndexError(f"store: region index {r} is out of bounds for axis {i} of size {n}")
            out.append(("at", int(r) % n))
        elif isinstance(r, slice):
            out.append(("pos", range(*r.indices(int(n)))))
        elif isinstance(r, (list, np.ndarray)) and np.ndim(r) == 1 and np.asarray(r).dtype.kind in "iu":
            lists += 1
            pos = np.asarray(r, dtype=np.int64)
            if ((pos < -n) | (pos >= n)).any():
                raise IndexError(f"store: region {r} is out of bounds for axis {i} of size {n}")
            out.append(("pos", tuple(int(p) % n for p in pos)))
        else:
            raise NotImplementedError(
                f"store: region entry {r!r} is not supported (integers, slices and 1-d lists of integers are)"
            )
    if lists and (lists > 1 or any(kind == "at" for kind, _ in out)):
        raise NotImplementedError(
            f"store: region {region}: a list of integers with another list or an integer is not supported "
            "(NumPy would index them together, not each along its axis)"
        )
    extents = tuple(len(p) for kind, p in out if kind == "pos")
    if extents != tuple(shape):
        raise ValueError(f"store: region {region} selects a shape of {extents}, the source has shape {tuple(shape)}")
    return tuple(out)


def _box(placement, starts, sizes):
    """The target index of a block at ``starts`` of ``sizes`` (source axes) under ``placement``."""
    box, j = [], 0
    for kind, p in placement:
        if kind == "at":
            box.append(p)
            continue
        sel = p[starts[j] : starts[j] + sizes[j]]
        j += 1
        if isinstance(sel, range):
            box.append(slice(sel.start, sel.stop if sel.stop >= 0 else None, sel.step))
        else:
            box.append(list(sel))
    return tuple(box)


def written(x, target, region=None, lock=None, return_stored=False):
    """The RelArray whose computation writes ``x`` into ``target`` block by block."""
    x = asarray(x)
    if is_delayed(target):
        return _written_delayed(x, target, region, lock, return_stored)
    placement = _placement(region, getattr(target, "shape", x.shape), x.shape)
    starts = [offsets(c) for c in x.chunks]
    P = param_relation({k: [o[i] for o, i in zip(starts, k)] for k in grid(x.numblocks)}, x.numblocks, what="offsets")
    dims = tuple(range(x.ndim))
    kernel = WriteBlock(handle(target, "r+"), placement, lock, return_stored, x.dtype)
    return wrap(Join(x.expr, P.expr, dims, dims, kernel), x, extra=P.sources)


def _written_delayed(x, target, region, lock, return_stored):
    """A ``dask.delayed`` target, as dask: each block's write task takes the target's computed
    value (a map_blocks argument: the Delayed's key joins the graph). Its shape is not known
    before it runs, so a region must give its starts (non-negative)."""
    from .blockwise import map_blocks

    region = () if region is None else (region if isinstance(region, tuple) else (region,))
    origin = []
    for r in region:
        start = (r.start or 0) if isinstance(r, slice) else None
        if start is None or start < 0 or (isinstance(r, slice) and r.step not in (None, 1)):
            raise ValueError(
                f"store: into a Delayed target, a region must be slices of step 1 from starts >= 0, got {r}"
            )
        origin.append(int(start))
    origin = tuple(origin) + (0,) * (x.ndim - len(origin))
    chunks = None if return_stored else tuple((1,) * n for n in x.numblocks)
    dtype = x.dtype if return_stored else np.int64
    return map_blocks(_write_block, x, target, origin, lock, return_stored, chunks=chunks, dtype=dtype, token="store")


def _write(target, box, data, lock):
    """``target[box] = data`` under ``lock``: any object with acquire/release (dask.array's
    protocol; a lock need not be a context manager), released if the write fails."""
    if not lock:
        target[box] = data
        return
    lock.acquire()
    try:
        target[box] = data
    finally:
        lock.release()


def _write_block(block, target, origin, lock, return_stored, block_info=None):
    loc = block_info[0]["array-location"]
    data = backends.to_numpy(block)
    box = tuple(slice(o + a, o + b) for o, (a, b) in zip(origin, loc))
    _write(target, box, data, lock)
    return block if return_stored else np.full((1,) * data.ndim, data.size, dtype=np.int64)


@derived_from(dask.array)
def store(sources, targets, lock=True, regions=None, compute=True, return_stored=False, **kwargs):
    """dask.array.store: write each source into its target (``target[region] = block``), block by
    block, where each block is computed. ``lock``: True (one lock per process), False, or a lock.
    ``compute=False`` returns, per source (one array, or a tuple for several, as dask.array), a
    RelArray whose computation does the writes (it computes to the element counts written per
    block); ``return_stored=True`` returns the stored arrays (persisted when computing).
    ``regions``: one per source, or one for all: integers, slices (of any step) and a 1-d list of
    integers, as dask's ``target[region] = source``."""
    import dask

    single = not isinstance(sources, (list, tuple))
    sources = [sources] if single else list(sources)
    targets = [targets] if single and not isinstance(targets, (list, tuple)) else list(targets)
    if len(sources) != len(targets):
        raise ValueError(f"store: {len(sources)} sources but {len(targets)} targets")
    if any(not (is_array(s) or hasattr(s, "__dask_graph__")) for s in sources):
        raise ValueError("All sources must be dask array objects")  # dask's check and message
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
    if compute and return_stored:
        outs = list(dask.persist(*outs, **kwargs))
    elif compute:
        dask.compute(*outs, **kwargs)
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


def _single_writer(targets) -> bool:
    """HDF5 (h5py, netCDF4) targets while a distributed Client is active: HDF5 allows one
    writing process, the one holding the file open."""
    from ..runtime.sites import active_client

    return active_client() is not None and any(
        isinstance(handle(t), Reopen) and handle(t).kind != "memmap" for t in targets
    )


def _store_here(x, target, region, lock):
    """Blocks computed on the cluster where the plan puts them, written in this process as
    they arrive."""
    from distributed import as_completed

    placement = _placement(region, target.shape, x.shape)
    y = x.persist()
    blocks = y.sources[y.expr.name].blocks
    starts = [offsets(c) for c in x.chunks]
    key_of = {f.key: k for k, f in blocks.items()}
    for fut in as_completed(list(blocks.values())):
        k, data = key_of[fut.key], backends.to_numpy(fut.result())
        _write(target, _box(placement, [int(s[i]) for s, i in zip(starts, k)], data.shape), data, lock)


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
    complete_attr=None,
    **kwargs,
):
    """Write ``arr`` to a zarr array.

    The array is created at ``url``/``component`` with ``arr``'s chunks, or ``url`` is an
    existing ``zarr.Array``. Blocks must be regular (all equal but the last), as for dask: each
    block then covers whole zarr chunks, and concurrent block writes never share one.

    Parameters
    ----------
    arr : array_like
        What to write.
    url : str, path or zarr.Array
        Where to write.
    component : str, optional
        The array's path inside a zarr group.
    storage_options : dict, optional
        Options of the storage backend (fsspec).
    overwrite : bool, optional
        Replace an array already at ``url``.
    region : tuple of slices, optional
        Where in an existing array to write.
    compute : bool, optional
        Write now (default), or return what writes when computed.
    return_stored : bool, optional
        Return the stored array (``store``'s).
    zarr_format : {2, 3}, optional
        The zarr format of a new array (default 3).
    complete_attr : str, optional
        The name of a zarr attribute set to ``False`` before any block is written and to
        ``True`` once every block is (a write that failed part way leaves ``False``: its
        unwritten blocks read as fill values). Needs ``compute=True``; with ``compute=False``,
        set the attribute yourself after computing what this returns.
    **kwargs
        Passed to ``zarr.create_array``.

    Returns
    -------
    None, Delayed or RelArray
        ``store``'s result: None once written; with ``compute=False`` what writes when
        computed; with ``return_stored`` the stored array.

    Raises
    ------
    ValueError
        Irregular blocks, or ``complete_attr`` with ``compute=False``.

    See Also
    --------
    from_zarr, store

    Examples
    --------
    >>> import os, tempfile
    >>> import zarr
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "x.zarr")
    >>> da.to_zarr(da.ones((4, 4), chunks=2), path, complete_attr="complete")
    >>> z = zarr.open_array(path)
    >>> z.chunks, z.attrs["complete"]
    ((2, 2), True)
    >>> tmp.cleanup()
    """
    import zarr

    arr = asarray(arr)
    _check_regular(arr)
    if complete_attr is not None and not compute:
        raise ValueError(
            "to_zarr(complete_attr=...) marks the store complete after writing, so it needs "
            "compute=True; with compute=False, set z.attrs[name] = True after computing the result"
        )
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
    if complete_attr is None:
        return store(arr, z, lock=False, regions=region, compute=compute, return_stored=return_stored)
    z.attrs[complete_attr] = False
    out = store(arr, z, lock=False, regions=region, compute=compute, return_stored=return_stored)
    z.attrs[complete_attr] = True  # reached only once every block was written
    return out


def _check_regular(arr):
    for c in arr.chunks:
        if len(c) > 1 and (len(set(c[:-1])) > 1 or c[-1] > c[0]):
            raise ValueError(
                f"Attempt to save array to zarr with irregular chunking {arr.chunks}, "
                f"please call arr.rechunk(...) first."
            )


def to_hdf5(filename, *args, chunks=True, **kwargs):
    """Write arrays into datasets of an HDF5 file.

    ``to_hdf5(filename, "/x", x)`` or ``to_hdf5(filename, {"/x": x, "/y": y})``. HDF5 allows
    one writing process: without a distributed Client the writes run in this process's threads;
    with one, blocks are computed on the workers and written here as they arrive.

    Parameters
    ----------
    filename : str or path
        The HDF5 file (opened for appending).
    *args
        A dataset path and an array, or one dict ``{dataset path: array}``.
    chunks : bool or tuple, optional
        True (default): HDF5 chunks like the arrays' first blocks; a tuple: those HDF5 chunks;
        None: no HDF5 chunks (a contiguous dataset).
    **kwargs
        Passed to ``h5py``'s ``require_dataset`` (``compression=``, ...).

    Returns
    -------
    None

    Examples
    --------
    >>> import os, tempfile
    >>> import h5py
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "data.h5")
    >>> da.to_hdf5(path, "/x", da.arange(6, chunks=3))
    >>> with h5py.File(path) as f:
    ...     f["x"][:]
    array([0, 1, 2, 3, 4, 5])
    >>> tmp.cleanup()
    """
    import h5py

    data = args[0] if len(args) == 1 and isinstance(args[0], dict) else {args[0]: args[1]}
    data = {k: asarray(v) for k, v in data.items()}
    with h5py.File(filename, mode="a") as f:
        dsets = [
            f.require_dataset(
                dp,
                shape=x.shape,
                dtype=x.dtype,
                chunks=(tuple(max(c[0], 1) for c in x.chunks) if x.ndim else None) if chunks is True else chunks,
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
    """Write ``x`` as one ``.npy`` file per block along ``axis``, plus an ``info`` file (dask's format).

    Parameters
    ----------
    dirname : str or path
        The directory (created if missing).
    x : array_like
        What to write.
    axis : int, optional
        The axis along which blocks become files (the others are written whole).

    Returns
    -------
    None

    See Also
    --------
    from_npy_stack

    Examples
    --------
    >>> import os, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "stack")
    >>> da.to_npy_stack(path, da.arange(6, chunks=3))
    >>> sorted(os.listdir(path))
    ['0.npy', '1.npy', 'info']
    >>> tmp.cleanup()
    """
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
    """One ``dask.delayed`` value per block, in an object array shaped like the block grid.

    Parameters
    ----------
    x : RelArray
        The array.
    optimize_graph : bool, optional
        Accepted for dask's signature (the plan's graph is used as it is).

    Returns
    -------
    numpy.ndarray
        An object array of shape ``x.numblocks``; element ``k`` computes block ``k``.

    Examples
    --------
    >>> d = da.to_delayed(da.arange(6, chunks=3))
    >>> d.shape
    (2,)
    >>> d[1].compute()
    array([3, 4, 5])
    """
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

"""Where the chunks of a RelArray's inputs come from.

A source binds one TRA ``Input`` to data: a NumPy (or CuPy/torch) array in the client,
a seeded random generator (chunks made on whichever site the plan chooses), a
dask.array (its graph is merged in, nothing is computed), or persisted futures (already
placed on the cluster: planned where they are).

Chunks keep their library: ``from_array`` of a CuPy array or torch tensor cuts it into CuPy
or torch blocks, a dask.array whose meta is CuPy stays on the GPU, and random and constant
chunks are made in the library of ``dask_tra.config.get("backend")`` (read when the array is
created) on the worker that needs them. Random values are drawn from NumPy's generator
seeded by ``(seed, *key)`` then created in the chunk library, so every backend draws the
same values (see ``dask_tra.backends.Backend.random``).

Dask's dispatch for chunk libraries (``sizeof``, ``concatenate``, serialization) is in
``dispatch.py``; ``ArraySource.scattered`` installs it on the workers before scattering blocks.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import numpy as np
from distributed import Future

from .. import backends, config
from ..tra import Input, RelationType
from ..tra.blocks import normalize_chunks
from ..tra.tasks import Data
from .dispatch import register_worker_dispatch
from .session import query_snapshot, send_hold


def fresh_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def content_name(prefix: str, *contents) -> str:
    """A source's name from what its blocks are made of: equal contents, equal names (dask's
    ``tokenize``; what it cannot hash deterministically gets a random token, never a shared one)."""
    from dask.base import tokenize

    return f"{prefix}-{tokenize(*contents)}"


def _block_slices(chunks, key):
    out = []
    for c, i in zip(chunks, key):
        start = sum(c[:i])
        out.append(slice(start, start + c[i]))
    return tuple(out)


class Ref:
    """A reference to an existing dask key (a dask.array block, a persisted future)."""

    def __init__(self, key):
        self.key = key


class Source:
    """Binds ``input`` (a TRA Input) to data. ``task(key)`` is ``(fn, *args)`` computing a chunk,
    or a ``Ref`` to a dask key that holds it."""

    input: Input
    graph: dict = {}  # extra graph the tasks depend on (from_dask)
    device: Any  # where the chunks live, where known (read with ``getattr(src, "device", None)``)

    @property
    def type(self) -> RelationType:
        return self.input.type

    def task(self, key) -> Any:
        """``(fn, *args)`` computing the chunk at ``key``, or a ``Ref`` (each source defines it)."""
        raise NotImplementedError(f"{type(self).__name__}.task")

    def chunk(self, key):
        fn, *args = self.task(key)
        return fn(*args)

    def held_keys(self) -> dict | None:
        """{dask key: block key} when the blocks are (or are being made) on a cluster, else None."""
        return None

    def placement(self, client):
        """{key: (site-address, ...)} when the data already sits on the cluster, else None."""
        keys = self.held_keys()
        return None if keys is None else placements_of(client, {None: keys}).get(None)


class ArraySource(Source):
    """An in-memory array (NumPy, CuPy or torch) cut into dask-style chunks of its own library."""

    def __init__(self, x, chunks, name=None):
        self.array = x
        self.backend = backends.get(backends.backend_of_type(x))
        self.device = self.backend.device_of(x)
        self.chunks = normalize_chunks(chunks, tuple(x.shape))
        dtype = backends.numpy_dtype(getattr(x, "dtype", np.dtype(np.float64)))
        t = RelationType.from_chunks(self.chunks, dtype, self.backend.name)
        self.input = Input(name or content_name("array", x, self.chunks), t)

    def task(self, key):
        return Data(self.array[_block_slices(self.chunks, key)])

    def scattered(self, client, sites: dict, workers) -> PersistedSource:
        """The blocks sent straight to the workers the plan puts them on (not inside the graph).
        ``sites[key]`` is the set of sites that hold block ``key``: each gets a replica under
        one dask key. Each block is its own contiguous copy (a torch view would drag its whole
        base along)."""
        register_worker_dispatch(client, [self.backend.name])
        by_worker: dict = {}
        for key, held in sites.items():
            for site in held:
                by_worker.setdefault(workers[site], []).append(key)
        name = fresh_name("tra-scattered")
        # until the graph's pinned readers reach the scheduler, nothing else keeps the replicas:
        # the memory manager would drop all but one, and dask fetch them back
        send_hold(client, [(name,) + k for k, held in sites.items() if len(held) > 1])
        futures: dict = {}
        for worker, keys in by_worker.items():
            blocks = {(name,) + k: self.backend.block(self.array, _block_slices(self.chunks, k)) for k in keys}
            try:
                sent = client.scatter(blocks, workers=[worker], hash=False)
            except KeyError as e:  # the scheduler no longer knows the worker the plan chose
                if e.args and e.args[0] == worker:
                    raise SiteGone(f"worker {worker} left before the plan's inputs reached it") from e
                raise
            futures.update((k, sent[(name,) + k]) for k in keys)
        return PersistedSource(self.type, futures, name=self.input.name)


class LazyArraySource(Source):
    """A sliceable array-like on disk (h5py dataset, zarr array, netCDF4 variable, memmap), read
    block by block: chunk ``key`` is read by its own task, on the site the plan pins it to, and
    only when the plan reads it. ``region`` (one ``(start, stop)`` per axis of the stored array)
    is the part this source covers: slicing an input narrows it, so blocks outside are never read.
    """

    def __init__(self, x, chunks, name=None, lock=None, region=None):
        self.array = x
        self.lock = lock
        self.region = tuple(region) if region is not None else tuple((0, int(s)) for s in x.shape)
        shape = tuple(b - a for a, b in self.region)
        self.chunks = normalize_chunks(chunks, shape)
        dtype = np.dtype(getattr(x, "dtype", np.float64))
        t = RelationType.from_chunks(self.chunks, dtype)
        self.input = Input(name or fresh_name("from-array"), t, home=_region_home(self.region, x.shape))

    def task(self, key):
        box = tuple(slice(a + s.start, a + s.stop) for (a, _), s in zip(self.region, _block_slices(self.chunks, key)))
        return (read_block, self.array, box, self.lock)

    def narrowed(self, region, chunks) -> LazyArraySource:
        """The source of the sub-box ``region`` (relative to this one), chunked ``chunks``."""
        absolute = tuple((a + lo, a + hi) for (a, _), (lo, hi) in zip(self.region, region))
        return LazyArraySource(self.array, chunks, lock=self.lock, region=absolute)


def _region_home(region, shape) -> tuple[int, int] | None:
    """``tra.Input.home`` of a sub-box: where its first element is in the stored array
    (row-major, out of its size), so a slice's work starts on the site holding that part of the
    array. None for a box starting at the array's first element."""
    at, n = 0, 1
    for (lo, _), m in zip(region, shape):
        at, n = at * int(m) + lo, n * int(m)
    return (at, n) if at else None


def read_block(array, box, lock=None):
    """``array[box]`` as a NumPy array (netCDF4's masked arrays become plain ones, as in dask)."""
    if lock is None:
        return np.asarray(array[box])
    with lock:
        return np.asarray(array[box])


def _creation_backend(backend, device):
    """(backend name, device) for created chunks: the arguments, else ``config`` at creation."""
    name = backends.get(backend if backend is not None else config.get("backend")).name
    return name, device if device is not None else config.get("device")


class RandomSource(Source):
    """Seeded random chunks: chunk ``key`` is drawn from NumPy's generator seeded by (seed, *key),
    then made a chunk of the backend (``config`` "backend"/"device" when created)."""

    def __init__(
        self, method, shape, chunks, seed, dtype=np.float64, name=None, *, backend=None, device=None, **params
    ):
        self.method, self.params, self.seed = method, params, int(seed)
        self.chunks = normalize_chunks(chunks, shape)
        self.dtype = np.dtype(dtype)
        self.backend, self.device = _creation_backend(backend, device)
        self.input = Input(
            name
            or content_name(
                f"random-{method.replace('_', '-')}",
                method,
                self.seed,
                params,
                self.chunks,
                self.dtype,
                self.backend,
                self.device,
            ),
            RelationType.from_chunks(self.chunks, self.dtype, self.backend),
        )

    def task(self, key):
        shape = tuple(c[i] for c, i in zip(self.chunks, key))
        args = (
            random_chunk,
            self.method,
            (self.seed,) + tuple(key),
            shape,
            self.dtype.str,
            tuple(sorted(self.params.items())),
        )
        return args if self.backend == "numpy" else args + (self.backend, self.device)


def random_chunk(method, seed, shape, dtype, params, backend="numpy", device=None):
    return backends.get(backend).random(method, seed, shape, np.dtype(dtype), params, device)


class ConstantSource(Source):
    """Chunks filled with one value (zeros, ones, full, empty), made on their worker in the
    backend's library."""

    def __init__(self, value, shape, chunks, dtype, name=None, *, backend=None, device=None, prefix="full"):
        self.value, self.dtype = value, np.dtype(dtype)
        self.chunks = normalize_chunks(chunks, shape)
        self.backend, self.device = _creation_backend(backend, device)
        name = name or content_name(prefix, value, self.chunks, self.dtype, self.backend, self.device)
        numpy = self.backend == "numpy"  # a NumPy chunk is a read-only view of one value, as dask's
        self.input = Input(name, RelationType.from_chunks(self.chunks, self.dtype, self.backend), constant=numpy)

    def task(self, key):
        shape = tuple(c[i] for c, i in zip(self.chunks, key))
        if self.backend == "numpy":
            return (broadcast_full, shape, self.value, self.dtype)
        return (full_chunk, shape, self.value, self.dtype.str, self.backend, self.device)


def broadcast_full(shape, value, dtype):
    """A NumPy chunk of ``value``: a read-only view of one element, taking no memory (dask's
    ``ones``/``zeros``/``full`` chunks are made alike)."""
    return np.broadcast_to(np.full((), value, dtype), shape)


def full_chunk(shape, value, dtype, backend, device=None):
    return backends.get(backend).full(shape, value, np.dtype(dtype), device)


class DaskSource(Source):
    """A dask.array, wrapped lazily: chunk ``key`` is the dask key ``(x.name, *key)``."""

    def __init__(self, x):
        from dask.array.utils import meta_from_array

        self.array = x
        self.chunks = tuple(tuple(int(c) for c in cs) for cs in x.chunks)
        meta = meta_from_array(x._meta)
        t = RelationType.from_chunks(self.chunks, x.dtype, backends.backend_of_type(meta))
        self.input = Input(content_name("from-dask", x.name, self.chunks), t)
        self.graph = x.__dask_graph__()

    def task(self, key):
        return Ref((self.array.name,) + tuple(key))

    def chunk(self, key):
        return self.array.blocks[tuple(key)].compute(scheduler="sync")

    def held_keys(self):
        return {(self.array.name,) + k: k for k in itertools.product(*(range(len(c)) for c in self.chunks))}


class PersistedSource(Source):
    """Blocks already computed: futures on a cluster (``wait``/``progress`` see them), or
    in-memory chunks after persisting on a local scheduler.

    ``lineage`` is ``(expr, sources)``, what the blocks were computed from (``runtime/recovery.py``);
    its persisted sources are ``detached``: without futures, each with a lineage of its own, so a
    loop of persists makes a chain of lineages as long as the loop. Everything that walks the
    chain (recovery, pickling) does so iteratively."""

    def __init__(self, type_, blocks: dict, name=None, lineage=None):
        self.blocks = blocks  # key -> Future or chunk
        self.input = Input(name or fresh_name("persisted"), type_)
        self.graph = {b.key: b for b in blocks.values() if is_future(b)}
        self.lineage = lineage  # (expr, sources) the blocks were computed from (runtime/recovery.py)
        self.last_keys: dict = {}  # detached: {block key: dask key} its blocks had on the cluster

    def refresh(self, blocks: dict):
        """Hold ``blocks`` (the same data: the blocks kept, and those lost persisted again)."""
        self.blocks = blocks
        self.graph = {b.key: b for b in blocks.values() if is_future(b)}

    def detached(self) -> "PersistedSource":
        """This input without its blocks, for a lineage: holding the futures would keep the
        blocks on the cluster after the user let go of them. Their keys are kept: recovery
        reads the blocks from the cluster where someone else still holds them."""
        out = PersistedSource(self.type, {}, name=self.input.name, lineage=self.lineage)
        out.last_keys = {k: b.key for k, b in self.blocks.items() if is_future(b)} or self.last_keys
        return out

    def __reduce__(self):
        """Pickled as a flat table of the sources its lineage reaches (each once): a chain of
        thousands of lineages pickles without nesting one pickle call per link."""
        order: list[PersistedSource] = []
        index: dict[int, int] = {}
        stack = [self]
        while stack:
            src = stack.pop()
            if id(src) in index:
                continue
            index[id(src)] = len(order)
            order.append(src)
            if src.lineage is not None:
                stack.extend(s for s in src.lineage[1].values() if isinstance(s, PersistedSource))
        rows = []
        for src in order:
            state = {k: v for k, v in src.__dict__.items() if k != "lineage"}
            lin = src.lineage
            if lin is not None:
                lin = (
                    lin[0],
                    {n: _Link(index[id(s)]) if isinstance(s, PersistedSource) else s for n, s in lin[1].items()},
                )
            rows.append((type(src), state, lin))
        return _unflatten, (rows,)

    def task(self, key):
        b = self.blocks[tuple(key)]
        return Ref(b.key) if is_future(b) else Data(b)

    def chunk(self, key):
        b = self.blocks[tuple(key)]
        return b.result() if is_future(b) else b

    def held_keys(self):
        return {b.key: k for k, b in self.blocks.items()} if self.graph else None


class _Link:
    """A pickled lineage's reference to another row of the table (``PersistedSource.__reduce__``)."""

    def __init__(self, row: int):
        self.row = row


def _unflatten(rows) -> PersistedSource:
    """The sources of ``PersistedSource.__reduce__``'s table, linked again; the first one."""
    out = [cls.__new__(cls) for cls, _, _ in rows]
    for src, (_, state, lin) in zip(out, rows):
        src.__dict__.update(state)
        if lin is not None:
            lin = (lin[0], {n: out[s.row] if isinstance(s, _Link) else s for n, s in lin[1].items()})
        src.lineage = lin
    return out[0]


class SiteGone(Exception):
    """A worker a plan placed data on left before the data reached it (the caller re-plans)."""


def is_future(x) -> bool:
    """A ``distributed.Future``."""
    return isinstance(x, Future)


RECOMPUTE_WAIT_S = 300  # how long planning waits for persisted blocks Dask is recomputing


def placements_of(client, held: dict, found: tuple | None = None) -> dict:
    """{name: {block key: (worker, ...)}} for each ``held[name]`` ({dask key: block key}) whose
    every block is in memory on the cluster (one scheduler round trip for all of them, or
    ``found``: ``session.query_snapshot``'s answer already fetched; the replicas reported are held for
    the plan, see ``amm.py``). A block still being computed by a task of dask_tra's pinned to
    a live worker (a persist not yet finished) is planned there, with no wait; other blocks Dask
    is computing (recomputed after their worker died) are waited for, then planned where they
    land."""
    if client is None or not held:
        return {}
    from distributed import wait

    keys = [dk for keys in held.values() for dk in keys]
    who, bound, computing = found if found is not None else query_snapshot(client, keys)[1:]
    if computing:
        wait([Future(k, client) for k in computing], timeout=RECOMPUTE_WAIT_S)
        who, bound = query_snapshot(client, keys)[1:3]
    who = {**bound, **who}
    out = {}
    for name, keys in held.items():
        holders = {k: tuple(sorted(who.get(dk) or who.get(str(dk)) or ())) for dk, k in keys.items()}
        if all(holders.values()):
            out[name] = holders  # every replica: a move to a holder is free
    return out


def _backend_of(x) -> str:
    return backends.backend_of_type(x)

"""Where the chunks of a RelArray's inputs come from.

A source binds one TRA ``Input`` to data: a NumPy (or CuPy/torch) array in the client,
a seeded random generator (chunks made on whichever site the plan chooses), a
dask.array (its graph is merged in, nothing is computed), or persisted futures (already
placed on the cluster: planned where they are).
"""
from __future__ import annotations

import itertools
import uuid

import numpy as np

from ..tra import Input, RelationType
from ..tra.blocks import normalize_chunks


def fresh_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


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

    @property
    def type(self) -> RelationType:
        return self.input.type

    def chunk(self, key):
        fn, *args = self.task(key)
        return fn(*args)

    def placement(self, client):
        """{key: (site-address,)} when the data already sits on the cluster, else None."""
        return None


class ArraySource(Source):
    """An in-memory array cut into dask-style chunks."""

    def __init__(self, x, chunks, name=None):
        self.array = x
        self.chunks = normalize_chunks(chunks, x.shape)
        t = RelationType.from_chunks(self.chunks, np.dtype(getattr(x, "dtype", np.float64)), _backend_of(x))
        self.input = Input(name or fresh_name("from-array"), t)

    def task(self, key):
        return (_identity, self.array[_block_slices(self.chunks, key)])

    def scattered(self, client, sites: dict, workers) -> "PersistedSource":
        """The blocks sent straight to the workers the plan puts them on (not inside the graph)."""
        by_worker = {}
        for key, site in sites.items():
            by_worker.setdefault(workers[site], []).append(key)
        futures = {}
        for worker, keys in by_worker.items():
            blocks = [self.array[_block_slices(self.chunks, k)] for k in keys]
            futures.update(zip(keys, client.scatter(blocks, workers=[worker], hash=False)))
        return PersistedSource(self.type, futures, name=self.input.name)


class RandomSource(Source):
    """Seeded random chunks: chunk ``key`` is drawn from a generator seeded by (seed, *key)."""

    def __init__(self, method, shape, chunks, seed, dtype=np.float64, name=None, **params):
        self.method, self.params, self.seed = method, params, int(seed)
        self.chunks = normalize_chunks(chunks, shape)
        self.dtype = np.dtype(dtype)
        self.input = Input(name or fresh_name(f"random-{method.replace('_', '-')}"),
                           RelationType.from_chunks(self.chunks, self.dtype))

    def task(self, key):
        shape = tuple(c[i] for c, i in zip(self.chunks, key))
        return (random_chunk, self.method, (self.seed,) + tuple(key), shape, self.dtype.str,
                tuple(sorted(self.params.items())))


def random_chunk(method, seed, shape, dtype, params):
    rng = np.random.default_rng(list(seed))
    out = getattr(rng, method)(size=shape, **dict(params))
    return np.asarray(out).astype(dtype, copy=False)


class ConstantSource(Source):
    """Chunks filled with one value (zeros, ones, full, empty)."""

    def __init__(self, value, shape, chunks, dtype, name=None):
        self.value, self.dtype = value, np.dtype(dtype)
        self.chunks = normalize_chunks(chunks, shape)
        self.input = Input(name or fresh_name("full"), RelationType.from_chunks(self.chunks, self.dtype))

    def task(self, key):
        shape = tuple(c[i] for c, i in zip(self.chunks, key))
        return (np.full, shape, self.value, self.dtype)


class DaskSource(Source):
    """A dask.array, wrapped lazily: chunk ``key`` is the dask key ``(x.name, *key)``."""

    def __init__(self, x):
        from dask.array.utils import meta_from_array
        self.array = x
        self.chunks = tuple(tuple(int(c) for c in cs) for cs in x.chunks)
        meta = meta_from_array(x._meta)
        t = RelationType.from_chunks(self.chunks, x.dtype, _backend_of(meta))
        self.input = Input(fresh_name("from-dask"), t)
        self.graph = x.__dask_graph__()

    def task(self, key):
        return Ref((self.array.name,) + tuple(key))

    def chunk(self, key):
        return self.array.blocks[tuple(key)].compute(scheduler="sync")

    def placement(self, client):
        return _who_has(client, {(self.array.name,) + k: k for k in itertools.product(
            *(range(len(c)) for c in self.chunks))})


class PersistedSource(Source):
    """Blocks already computed: futures on a cluster (``wait``/``progress`` see them), or
    in-memory chunks after persisting on a local scheduler."""

    def __init__(self, type_, blocks: dict, name=None):
        self.blocks = blocks  # key -> Future or chunk
        self.input = Input(name or fresh_name("persisted"), type_)
        self.graph = {b.key: b for b in blocks.values() if is_future(b)}

    def task(self, key):
        b = self.blocks[tuple(key)]
        return Ref(b.key) if is_future(b) else (_identity, b)

    def chunk(self, key):
        b = self.blocks[tuple(key)]
        return b.result() if is_future(b) else b

    def placement(self, client):
        if not self.graph:
            return None
        return _who_has(client, {b.key: k for k, b in self.blocks.items()})


def is_future(x) -> bool:
    return type(x).__name__ == "Future" and hasattr(x, "key")


def _who_has(client, dask_keys: dict):
    """{block key: (worker,)} if every dask key is in memory on the cluster, else None."""
    if client is None:
        return None
    keys = list(dask_keys)
    who = client.sync(client.scheduler.who_has, keys=keys)
    out = {}
    for dk, k in dask_keys.items():
        holders = who.get(dk) or who.get(str(dk))
        if not holders:
            return None
        out[k] = tuple(sorted(holders))[:1]
    return out


def _identity(x):
    return x


def _backend_of(x) -> str:
    mod = type(x).__module__.split(".")[0]
    return {"cupy": "cupy", "torch": "torch"}.get(mod, "numpy")

"""The Dask collection protocol for RelArray: plan at graph time, emit, pin, finalize, persist."""
from __future__ import annotations

import numpy as np
from dask.base import DaskMethodsMixin
from dask.highlevelgraph import HighLevelGraph
from dask.threaded import get as threaded_get

from .. import config
from ..optimizer import plan as make_plan
from .emit import emit
from .sources import ArraySource, PersistedSource
from .faults import ensure_installed
from .sites import current_sites


class DaskCollection(DaskMethodsMixin):
    """Mixin: needs ``expr``, ``sources``, ``name``, ``chunks`` on the class using it."""

    __dask_scheduler__ = staticmethod(threaded_get)

    def planned(self, sites=None):
        """(Plan, Sites) for the current sites and input placements; cached."""
        where = current_sites(sites, chunk_backends(self.expr))
        placements = input_placements(self.sources, where) if self.expr.children else {}
        cache_key = plan_cache_key(where, placements)
        cached = self._plans.get(cache_key)
        if cached is not None:
            return cached
        p = make_plan(self.expr, where.count, placements=placements or None,
                      memory_limit=where.memory_limit, keep=config.get("keep"), force=config.get("force"))
        self._plans[cache_key] = (p, where)
        return p, where

    def __dask_graph__(self):
        held = self._persisted_futures()
        if held is not None:  # raw futures as values, so futures_of / wait / progress see them
            return HighLevelGraph.from_collections(self.name, held)
        p, where = self.planned()
        self._report(p)
        if p.__dict__.get("graph") is None:
            p.graph, p.out_keys = self._emit(p, where, self.name)
        return p.graph

    def _report(self, p):
        """Open ``measure()`` blocks learn of the plan; ``explain()`` shows it."""
        from .. import diagnostics
        diagnostics.register(p.explain)
        self._last_explain = p.explain

    def _emit(self, p, where, output_name):
        """The plan's Dask graph: client arrays scattered to their planned workers, then the IA
        plan emitted. Returns (graph, output keys)."""
        sources = self.sources
        if where.client is not None and not _in_event_loop(where.client):
            sources = _scatter_in_memory_inputs(p.root, sources, where)
        return emit(p.root, sources, where.workers, self.name.split("-")[-1], output_name)

    def _persisted_futures(self):
        if self.expr.children:
            return None
        src = self.sources[self.expr.name]
        if not isinstance(src, PersistedSource) or not src.graph:
            return None
        return {(self.name,) + k: f for k, f in src.blocks.items()}

    def __dask_keys__(self):
        numblocks = tuple(len(c) for c in self.chunks)
        if not numblocks:
            return [(self.name,)]

        def nest(prefix):
            if len(prefix) == len(numblocks):
                return (self.name,) + prefix
            return [nest(prefix + (i,)) for i in range(numblocks[len(prefix)])]
        return nest(())

    def __dask_layers__(self):
        return (self.name,)

    def __dask_tokenize__(self):
        return self.name

    @staticmethod
    def __dask_optimize__(dsk, keys, **kwargs):
        return dsk  # no fusion: fusion would drop the per-task worker pins

    def __dask_postcompute__(self):
        if self._last_explain is not None:
            from .. import diagnostics
            diagnostics.register(self._last_explain, computed=True)
        return _finalize, (self.ndim,)

    def __dask_postpersist__(self):
        if self._last_explain is not None:  # persisting: dask gathers no result
            from .. import diagnostics
            diagnostics.unregister_computed(self._last_explain)
        return type(self)._from_persisted, (self.expr.type, self.name)

    @property
    def dask(self):
        return self.__dask_graph__()

    def to_dask(self):
        """A dask.array over the emitted plan (lazy: nothing runs)."""
        import dask.array as da
        graph = self.__dask_graph__()
        if self.expr.type.backend == "cupy":  # dask.array knows CuPy metas (not torch ones)
            from .. import backends
            meta = backends.get("cupy").zeros((0,) * self.ndim, self.dtype)
        else:
            meta = np.empty((0,) * self.ndim, dtype=self.dtype)
        return da.Array(graph, self.name, self.chunks, meta=meta)


def input_placements(sources, where) -> dict:
    """{input name: {key: (site, ...)}} for inputs already on the cluster (planned where they are)."""
    placements = {}
    if where.client is not None and not _in_event_loop(where.client):
        ensure_installed(where.client)
        for name, src in sources.items():
            held = src.placement(where.client)
            if held is not None:
                placements[name] = {k: tuple(where.site_of(a) for a in v) for k, v in held.items()}
    return placements


def chunk_backends(expr) -> set:
    return {n.type.backend for n in expr.walk()}


def plan_cache_key(where, placements):
    return (where.count, where.workers, repr(config.get("force")), where.memory_limit,
            repr(sorted((n, sorted(p.items())) for n, p in placements.items())))


def _scatter_in_memory_inputs(root, sources, where):
    """Client-side arrays go to their planned workers by scatter, keeping the graph small."""
    out = dict(sources)
    for node in root.walk():
        src = sources.get(getattr(getattr(node, "input", None), "name", None))
        if isinstance(src, ArraySource) and out[src.input.name] is src:
            sites = {k: cs[0][0] for k, cs in node.copies.items()}
            out[src.input.name] = src.scattered(where.client, sites, where.workers)
    return out


def _in_event_loop(client) -> bool:
    """True inside the client's event loop (e.g. ``wait``/``progress`` asking for futures),
    where blocking scheduler queries are impossible; plans made there skip placement lookups."""
    import asyncio
    try:
        return asyncio.get_running_loop() is client.loop.asyncio_loop
    except RuntimeError:
        return False


def _finalize(results, ndim):
    if ndim == 0:
        return results if not isinstance(results, list) else results[0]
    from dask.array.core import concatenate3
    return concatenate3(results)


"""The Dask collection protocol for RelArray: plan at graph time, emit, pin, finalize, persist.

Graph construction is pure: ``__dask_graph__`` (``.dask``, ``to_dask()``, ``is_dask_collection``,
``dask.compute``, ``Client.compute``) reads the cluster (``session.Session.snapshot``), plans and
emits, and changes nothing on it. ``compute``/``persist`` first install what a plan runs with
(``session.install``: the scheduler plugin, the memory-manager policy, the chunk backends'
worker dispatch) and then, while they run, the graph scatters client arrays to the workers the
plan puts them on and holds the replicas it planned with. A graph made outside them carries
client arrays inside it, each block a task pinned where the plan puts it.
"""

from __future__ import annotations

import gc
import hashlib
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from dask.base import DaskMethodsMixin
from dask.highlevelgraph import HighLevelGraph
from dask.threaded import get as threaded_get
from dask.utils import format_bytes

from .. import backends, config
from ..optimizer import MemoryLimitError, Plan, plan_many
from ..optimizer.explain import Explain
from ..tra.dag import walk_many
from . import compat, recovery
from .emit import emit
from .rates import learn, planning_rates
from .session import session, snapshot
from .sites import Sites, active_client, current_sites, in_event_loop
from .sources import ArraySource, PersistedSource, SiteGone, placements_of


@dataclass
class Planned:
    """A cached plan, the sites it was made for, and, once emitted, its Dask graph, the input
    keys it reads by key and the client arrays it scattered (``scatters``: the graph reads
    them from the workers; otherwise they are inside it)."""

    plan: Plan
    where: Sites
    cache_key: tuple = ()
    graph: HighLevelGraph | None = None
    reads: frozenset = frozenset()
    scattered: tuple = ()  # the client arrays the emitted graph reads, sent to the workers
    scatters: bool = False  # the graph was emitted by compute/persist: client arrays scattered
    moved: int | None = None  # the bytes the emitted graph moves
    explain: Explain | None = None  # the plan's report with those bytes, made when first asked for

    def emitted(self, graph, reads, moved: int, scatters: bool = False):
        """Record the emitted graph; the report predicts the bytes this graph moves."""
        self.graph, self.reads, self.moved, self.scatters = graph, reads, moved, scatters

    @property
    def report(self) -> Explain:
        """The plan's report (made when asked for: computing needs none of it)."""
        if self.moved is None:
            return local_words(self.plan.explain, self.where)
        if self.explain is None:
            self.explain = exact_bytes(local_words(self.plan.explain, self.where), self.moved)
        return self.explain


def local_words(explain: Explain, where) -> Explain:
    """``explain`` of a local plan says so (the scheduler that runs it; nothing moves)."""
    if getattr(where, "local", "") and not explain.local:
        explain.local = where.local  # a fact of this plan: it was made for a local scheduler
    return explain


def exact_bytes(explain: Explain, moved: int) -> Explain:
    """``explain`` predicting ``moved`` bytes: the search's estimate counts moves to sites where
    no task reads the copy, which the graph never sends."""
    if moved == explain.predicted_bytes:
        return explain
    note = (
        f"({format_bytes(explain.predicted_bytes - moved)} of the search's estimate are copies no task reads: "
        "the graph does not send them)"
    )
    return replace(explain, predicted_bytes=moved, notes=[*explain.notes, note])


class DaskCollection(DaskMethodsMixin):
    """Mixin: needs ``expr``, ``sources``, ``name``, ``chunks`` and ``_plans`` (a dict) on the
    class using it. A collection of several arrays (``autodiff.Joint``) overrides ``roots``,
    ``output_names`` and ``one_layout``: its roots are planned and emitted as one DAG."""

    __dask_scheduler__ = staticmethod(threaded_get)
    one_layout = False  # every shared node computed in one layout (``optimizer.plan_many``)

    # what the class using the mixin provides (declared for the type checker only)
    name: str
    sources: dict
    _plans: dict
    _last_entry: Planned | None

    if TYPE_CHECKING:

        @property
        def expr(self) -> Any: ...

        @property
        def chunks(self) -> tuple: ...

        @property
        def ndim(self) -> int: ...

        @property
        def dtype(self) -> Any: ...

        @property
        def device(self) -> Any: ...

        @classmethod
        def _from_persisted(cls, dsk, type_, name, device=None, lineage=None, rename=None) -> Any: ...

    @property
    def roots(self) -> tuple:
        """The TRA expressions this collection computes."""
        return (self.expr,)

    @property
    def output_names(self) -> tuple:
        """The key prefix of each root's output blocks."""
        return (self.name,)

    @property
    def array_type(self) -> type:
        """The class of one array (lost inputs are persisted again as one, ``recovery``)."""
        return type(self)

    def planned(self, sites=None):
        """(Plan, Sites) for the current sites and input placements; cached."""
        entry = self._planned_entry(sites)
        return entry.plan, entry.where

    def _plan_lock(self):
        """One thread at a time plans and emits this collection, so threads computing it at once
        share one plan and one graph: the scheduler gets each key with one spec. (The client's
        event loop, where ``wait`` may ask for the graph, never waits on the lock.)"""
        client = active_client()
        if client is None or in_event_loop(client):
            return nullcontext()
        lock = self.__dict__.get("_lock")
        return lock if lock is not None else self.__dict__.setdefault("_lock", threading.RLock())

    def _planned_entry(self, sites=None) -> Planned:
        with self._plan_lock():
            derived = any(e.children for e in self.roots)
            held = held_inputs(self.sources) if derived else {}
            memo = self._executing()
            info, found = cluster_snapshot(held, memo) if sites is None else (None, None)
            where = current_sites(sites, chunk_backends(self.roots), info)
            placements = input_placements(self.sources, where, held, found) if derived else {}
            cache_key = plan_cache_key(where, placements)
            if cache_key not in self._plans:
                self._plans[cache_key] = Planned(self._make_plan(where, placements), where, cache_key)
            return self._plans[cache_key]

    def _make_plan(self, where, placements) -> Plan:
        return plan_many(
            self.roots,
            where.count,
            placements=placements or None,
            memory_limit=where.memory_limit,
            keep=config.get("keep"),
            force=config.get("force"),
            rates=planning_rates(where),
            one_layout=self.one_layout,
            rewrite=config.get("rewrite"),
        )

    def __getstate__(self):
        """Pickled without the plan cache: plans hold the client (and sites that may be gone
        where the copy is loaded). A kernel capturing a RelArray then pickles too."""
        state = dict(self.__dict__)
        state["_plans"], state["_last_entry"] = {}, None
        state.pop("_lock", None)
        state.pop("_memo", None)
        return state

    def _executing(self) -> dict | None:
        """The memo of this collection's ``compute``/``persist`` while one runs (dask asks for
        the graph 3-4 times: one placement query), else None: graph construction is pure."""
        return self.__dict__.get("_memo")

    def __dask_graph__(self):
        """The plan's graph, made when first read: a type check (``is_dask_collection``, which
        xarray asks of every intermediate) plans nothing. Making it changes nothing on the
        cluster (the module doc): outside ``compute``/``persist``, client arrays ride inside
        the graph, and nothing is installed or held."""
        return PlannedGraph(self._graph_now)

    def _graph_now(self) -> HighLevelGraph:
        client = active_client()
        if client is not None and not in_event_loop(client):
            recovery.restore_lost(self, scatter=self._executing() is not None)
        held = self._persisted_futures()
        if held is not None:  # raw futures as values, so futures_of / wait / progress see them
            return HighLevelGraph.from_collections(self.name, held)
        live = None
        if client is not None and not in_event_loop(client):
            live = _live_outputs(client, self.__dask_keys__())
        if live is not None:
            return HighLevelGraph({n: layer for n, layer in live.items()}, {n: set() for n in live})
        entry = self._emitted_entry()
        self._report(entry)
        _report_reads(entry.reads)
        assert entry.graph is not None  # _emitted_entry emits it
        return entry.graph

    def _emitted_entry(self) -> Planned:
        """The current plan, emitted once; inside ``compute``/``persist``, emitted again with its
        client arrays scattered if a graph made outside them carried them inside."""
        with self._plan_lock(), _no_cyclic_gc():
            entry = self._planned_entry()
            scatter = self._executing() is not None and self._scatters(entry)
            if entry.graph is None or (scatter and not entry.scatters):
                graph, out_keys, reads, moves = self._emit(entry, scatter)
                moved = moves.bytes([k for keys in out_keys for k in keys.values()])
                entry.emitted(graph, reads, moved, scatter)
        return entry

    def _scatters(self, entry: Planned) -> bool:
        """Whether ``entry``'s plan, run on a Client, scatters client arrays."""
        where = entry.where
        if where.client is None or in_event_loop(where.client):
            return False
        return bool(_in_memory_inputs(entry.plan.roots, self.sources))

    def _report(self, entry: Planned):
        """Open ``measure()`` blocks learn of the plan; ``explain()`` shows it."""
        from .. import diagnostics

        if diagnostics._ACTIVE:
            diagnostics.register(entry.report, owner=self.name, outputs=self.output_names)
        self._last_entry = entry

    @property
    def _last_explain(self) -> Explain | None:
        """The report of the plan last emitted (``explain()`` with no sites shows it)."""
        entry = self.__dict__.get("_last_entry")
        return None if entry is None else entry.report

    def _emit(self, entry: Planned, scatter: bool = False):
        """The plan's Dask graph: with ``scatter`` (``compute``/``persist`` on a Client, after
        ``session.install``), client arrays scattered to their planned workers first (recorded
        on ``entry``); otherwise they are inside the graph. Returns ``emit``'s (graph, output
        keys per root, keys read, moves)."""
        sources, where, roots = self.sources, entry.where, entry.plan.roots
        if scatter:
            sources = _scatter_in_memory_inputs(roots, sources, where)
            entry.scattered = tuple(s for n, s in sources.items() if s is not self.sources[n])
        # a user's name= too; another plan of this collection gets other keys for its tasks
        token = hashlib.blake2b(f"{self.name}{entry.cache_key!r}".encode(), digest_size=8).hexdigest()
        return emit(roots, sources, where.workers, token, self.output_names)

    def _persisted_futures(self):
        (expr,) = self.roots
        if expr.children:
            return None
        src = self.sources[expr.name]
        if not isinstance(src, PersistedSource) or not src.graph:
            return None
        return {(self.name,) + k: f for k, f in src.blocks.items()}

    def __dask_keys__(self):
        numblocks = tuple(len(c) for c in self.chunks)
        return nested_keys(self.name, numblocks)

    def __dask_layers__(self):
        return (self.name,)

    def __dask_tokenize__(self):
        return self.name

    @staticmethod
    def __dask_optimize__(dsk, keys, **kwargs):
        return dsk  # no fusion: fusion would drop the per-task worker pins

    def __dask_postcompute__(self):
        from .. import diagnostics

        if diagnostics._ACTIVE and self._last_explain is not None:  # the report is made only for a measure
            diagnostics.register(self._last_explain, computed=True)
        return self._finalizer()

    def __dask_postpersist__(self):
        from .. import diagnostics

        if diagnostics._ACTIVE and self._last_explain is not None:  # persisting: dask gathers no result
            diagnostics.unregister_computed(self._last_explain)
        return self._rebuilder()

    def _finalizer(self) -> tuple:
        """(function, args) turning the output blocks into the result (no side effects)."""
        return _finalize, (self.ndim,)

    def _rebuilder(self) -> tuple:
        """(function, args) turning the persisted blocks into a collection (no side effects)."""
        return type(self)._from_persisted, (self.expr.type, self.name, self.device, lineage(self))

    def compute(self, **kwargs):
        """Compute; if an input's only copy was lost with a worker, restore it and compute
        again (``runtime/recovery.py``). A result larger than this process's free memory is
        refused before anything runs (gathering it could only fail, or hang the cluster)."""
        result_fits(getattr(self, "nbytes", 0))
        return _recovering(self, DaskMethodsMixin.compute, kwargs)

    def persist(self, **kwargs):
        return _recovering(self, DaskMethodsMixin.persist, kwargs)

    @property
    def dask(self):
        return self.__dask_graph__()

    def to_dask(self):
        """A dask.array over the emitted plan (lazy: nothing runs)."""
        import dask.array as da

        graph = self.__dask_graph__()
        meta = backends.get(self.expr.type.backend).dask_meta(self.ndim, self.dtype)
        return da.Array(graph, self.name, self.chunks, meta=meta)


def result_fits(nbytes: int) -> None:
    """Raise ``MemoryLimitError`` if a result of ``nbytes`` cannot fit in this process."""
    import psutil

    available = psutil.virtual_memory().available
    if nbytes > available:
        raise MemoryLimitError(
            f"compute() gathers the whole result, {format_bytes(nbytes)}, into this process, which has "
            f"{format_bytes(available)} free: reduce it first, persist() it on the cluster, or write it "
            "out (to_zarr, store)"
        )


def lineage(collection):
    """(expr, sources) to compute ``collection`` again; persisted inputs kept without their
    blocks (their own lineage), so a lineage never holds data, on the cluster or here (a loop
    of persists would keep every generation)."""
    expr, sources = collection.expr, collection.sources
    if not expr.children and isinstance(sources.get(expr.name), PersistedSource):
        return sources[expr.name].lineage
    return expr, {n: s.detached() if isinstance(s, PersistedSource) and s.blocks else s for n, s in sources.items()}


def _recovering(collection, method, kwargs):
    """``method`` run again after restoring lost inputs, up to ``recovery.ATTEMPTS`` times (a
    worker killed now may still be listed by the scheduler for a moment, so a retry can land
    on it)."""
    from distributed.client import FutureCancelledError
    from distributed.comm import CommClosedError

    for attempt in range(recovery.ATTEMPTS):
        collection.__dict__["_memo"] = {}  # dask asks for the graph 3-4 times: one placement query
        try:
            _install(collection, kwargs)
            return method(collection, **kwargs)
        except (CommClosedError, SiteGone):  # scattering to a worker that died after the plan was made
            if attempt == recovery.ATTEMPTS - 1:
                raise
            collection._plans.clear()
        except FutureCancelledError:
            if attempt == recovery.ATTEMPTS - 1 or not recovery.recover(collection):
                raise
        finally:
            collection.__dict__.pop("_memo", None)
        time.sleep(0.5 * (attempt + 1))


def _install(collection, kwargs) -> None:
    """What a plan runs with, installed on the cluster of the Client that will run it
    (``session.install``): once per client, and only here, in ``compute``/``persist``, never
    while making a graph. Nothing when dask runs it elsewhere (``scheduler="threads"``)."""
    from dask.base import get_scheduler

    client = active_client()
    if client is None or client.status != "running" or in_event_loop(client):
        return
    if getattr(get_scheduler(scheduler=kwargs.get("scheduler"), collections=[collection]), "__self__", None) is client:
        session(client).install(tuple(chunk_backends(collection.roots)))


def _report_reads(reads):
    """Open ``measure()`` blocks learn which input keys the plan reads by key: moving them is
    the plan's work, not other traffic."""
    from .. import diagnostics

    if diagnostics._ACTIVE:
        diagnostics.register_reads(reads)


def held_inputs(sources) -> dict:
    """{input name: {dask key: block key}} for the inputs whose blocks may be on the cluster."""
    return {name: keys for name, src in sources.items() if (keys := src.held_keys()) is not None}


def nested_keys(name: str, numblocks: tuple, prefix: tuple = ()) -> list:
    """dask's nested lists of block keys ``(name, i, j, ...)``. A module function: a closure
    calling itself is a reference cycle, which would keep the collection (and the futures of
    its persisted inputs) alive until the cyclic collector runs."""
    if not numblocks:
        return [(name,)]
    if len(prefix) + 1 == len(numblocks):
        return [(name, *prefix, i) for i in range(numblocks[-1])]
    return [nested_keys(name, numblocks, (*prefix, i)) for i in range(numblocks[len(prefix)])]


def _live_outputs(client, keys) -> dict | None:
    """{layer name: {key: Future}} when the client holds a live future (finished or on its way)
    for every output key: this very result was persisted and is still held. Computing it again
    reads those futures, as dask does for any key it already has. A new plan (input replicas
    come and go, so plans change) would send the scheduler other tasks under the same keys,
    which it rejects with a warning ("different `run_spec`").

    A future dropped a moment ago (a compute of this same expression just gathered its result)
    is released on the client's event loop, later: the loop runs what is queued before this
    answer, so a result nobody holds any more is planned again, not read from a future on its
    way out."""
    from dask.core import flatten
    from distributed import Future

    keys = list(flatten(keys))

    def all_live():
        states = compat.client_futures(client)
        return keys and all(getattr(states.get(k), "status", None) in ("pending", "finished") for k in keys)

    if client.asynchronous or not all_live():  # an asynchronous client's loop can't be waited on here
        return None
    client.sync(_queued_releases_done)
    if not all_live():
        return None
    out: dict = {}
    for k in keys:
        out.setdefault(k[0], {})[k] = Future(k, client)
    return out


async def _queued_releases_done():
    """Nothing: awaited through ``client.sync``, it returns once the callbacks queued before it
    on the client's loop (futures' releases) have run."""


SNAPSHOT_REUSE_S = 1.0  # the most one compute's placement query is reused


def cluster_snapshot(held: dict, memo: dict | None = None) -> tuple:
    """(the workers' info, where ``held``'s keys are) from the active Client's scheduler, in one
    round trip; (None, None) without a running Client. Without ``memo`` a read that changes
    nothing. With ``memo`` (a collection's, while its ``compute``/``persist`` runs), the replicas
    it reports are held for 30 s, so the plan made from it holds (workers that left meanwhile
    have their tasks re-pinned, ``faults.py``), and the same question asked again within
    ``SNAPSHOT_REUSE_S`` gets the same answer without a round trip."""
    client = active_client()
    if client is None or client.status != "running" or in_event_loop(client):
        return None, None
    keys = tuple(dk for keys in held.values() for dk in keys)
    now = time.monotonic()
    asked = (client.id, client.scheduler.address, keys)
    last = (memo or {}).get("snapshot")
    if last is not None and last[0] == asked and now - last[1] < SNAPSHOT_REUSE_S:
        return last[2]
    out = snapshot(client, keys, hold=memo is not None)
    learn(client.scheduler.address, out.get("rates"))
    answer = out["workers"], (out["who_has"], out["bound"], out["computing"])
    if memo is not None:
        memo["snapshot"] = (asked, now, answer)
    return answer


def input_placements(sources, where, held=None, found=None) -> dict:
    """{input name: {key: (site,)}} for inputs already on the cluster (planned where they are).

    A block may have replicas on several workers (earlier work copied it, ``replicate``,
    ``rebalance``): every holder is given to the planner, which treats replicas as one chunk
    (a move to any holder is free, an aggregation folds the chunk once). Holders that are
    not sites (a worker that joined or left since the sites were read) are not used; an
    input with a block on no site is planned as if lazy (correct, moves unpredicted)."""
    placements = {}
    if where.client is not None and not in_event_loop(where.client):
        held = held_inputs(sources) if held is None else held
        for name, holders in placements_of(where.client, held, found).items():
            chosen = on_sites(holders, where)
            if chosen is not None:
                placements[name] = chosen
    return placements


def on_sites(held: dict, where) -> dict | None:
    """{key: (site, ...)}: the sites holding each block. None if some block sits on no site."""
    index = {a: i for i, a in enumerate(where.workers)}
    out = {}
    for key, holders in held.items():
        sites = tuple(sorted(index[a] for a in holders if a in index))
        if not sites:
            return None
        out[key] = sites
    return out


def chunk_backends(roots) -> set:
    return {n.type.backend for n in walk_many(roots)}


def plan_cache_key(where, placements):
    return (
        where.count,
        where.workers,
        where.local,
        repr(config.get("force")),
        config.get("keep"),
        config.get("rewrite"),
        where.memory_limit,
        planning_rates(where),
        repr(sorted((n, sorted(p.items())) for n, p in placements.items())),
    )


def _in_memory_inputs(roots, sources) -> dict:
    """{input name: {key: {site, ...}}}: the sites the plan of ``roots`` puts each block of each
    client array (``ArraySource``) on."""
    sites: dict = {}
    for node in walk_many(roots):
        src = sources.get(getattr(getattr(node, "input", None), "name", None))
        if isinstance(src, ArraySource):
            held = sites.setdefault(src.input.name, {})
            for k, cs in node.copies.items():
                held.setdefault(k, set()).update(t for t, _ in cs)
    return sites


def _scatter_in_memory_inputs(roots, sources, where):
    """Client-side arrays go to their planned workers by scatter, keeping the graph small.

    A plan may place one input several times (``x @ x.T`` reads ``x`` laid out two ways),
    each placement free: every block goes to every site any placement puts it on, so no
    placed copy has to be fetched from another worker (the plan predicted none)."""
    sites = _in_memory_inputs(roots, sources)
    out = dict(sources)
    for name, held in sites.items():
        out[name] = sources[name].scattered(where.client, held, where.workers)
    return out


class PlannedGraph(HighLevelGraph):
    """A HighLevelGraph made by ``build`` when something first reads it (its layers, keys or
    tasks); pickled, it is the graph it stands for."""

    def __init__(self, build):
        self._build = build
        self._graph: HighLevelGraph | None = None

    def _made(self) -> HighLevelGraph:
        if self._graph is None:
            self._graph = self._build()
        return self._graph

    layers = property(lambda self: self._made().layers)
    dependencies = property(lambda self: self._made().dependencies)
    key_dependencies = property(lambda self: self._made().key_dependencies)

    def __reduce__(self):
        g = self._made()
        return HighLevelGraph, (g.layers, g.dependencies, g.key_dependencies)


def _finalize(results, ndim):
    if ndim == 0:
        out = results if not isinstance(results, list) else results[0]
        return out[()] if isinstance(out, np.ndarray) else out  # a NumPy scalar, as dask gives
    from dask.array.core import concatenate3

    return concatenate3(results)


@contextmanager
def _no_cyclic_gc():
    """Python's cycle collector paused while a plan is made and emitted: planning allocates many
    short-lived objects, which set off collections that each scan every object the process holds
    (xarray's, pandas', the user's: 5-15 ms a full one). Reference counting still frees what
    planning drops; the collector runs again after."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

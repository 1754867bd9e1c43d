"""Inputs whose only copy was on a worker that left: send again, recompute, or say so.

Dask recomputes a lost chunk from its task. Two kinds of dask_tra input have no task to
recompute from: ``from_array`` blocks scattered from the client, and persisted RelArrays
whose lineage bottoms out in such blocks. Losing one makes Dask cancel the computation at
once ("lost dependencies"); it never hangs. ``RelArray.compute``/``persist`` then recover
(up to ``ATTEMPTS`` runs in all): scattered blocks are sent again from the client array
(the ``ArraySource`` keeps it), persisted inputs are recomputed from their lineage (the
expression and sources they were computed from, kept on the ``PersistedSource``; client
memory only). An input with no lineage (a persisted autodiff output, a wrapped dask
collection whose persisted blocks were scattered data) cannot be recovered:
``InputLostError`` names it.

A lineage's persisted inputs have lineages of their own: a loop of ``x = f(x).persist()``
makes a chain as long as the loop. Recovery (``rebuild``) makes one expression of the chain,
substituting each persisted ancestor's lineage for it (``tra.expr.substitute``), and stops at
the nearest ancestors whose blocks are all still on the cluster (held by someone else): it reads
those. The expression is planned once and only the tasks the lost blocks need are sent (the
graph culled to them); the blocks that survived are kept. Nothing recurses: the chain is walked
with an explicit stack, each shared source once, at any depth.
"""

from __future__ import annotations

from distributed import Future

from ..tra import TRAError
from ..tra.expr import substitute
from .session import query_snapshot
from .sources import PersistedSource, fresh_name, is_future

ATTEMPTS = 3
LOST = ("cancelled", "lost")  # future statuses of blocks the cluster no longer has


class InputLostError(TRAError):
    """A worker that left held the only copy of an input's block, and the input cannot be
    recomputed (no lineage)."""


def lost_futures(src) -> list:
    """The block keys of a persisted source whose futures the cluster lost (cancelled: Dask
    cannot recompute them). A pending future (still computing, or recomputed by Dask after a
    worker left) is not lost."""
    if not isinstance(src, PersistedSource) or not src.graph:
        return []
    return [k for k, f in src.blocks.items() if f.status in LOST]


def recover(collection) -> bool:
    """Restore the lost inputs of ``collection`` (see the module doc). True if something was
    lost and is restored (the caller computes again); raises InputLostError if it cannot be."""
    found = False
    for name, src in collection.sources.items():
        if lost_futures(src):
            found = True
            rebuild(name, src, collection.array_type, scatter=True)  # inside compute/persist
    for name, src in collection.sources.items():
        gone = [k for k, f in src.graph.items() if is_future(f) and f.status != "finished"]
        if gone and not isinstance(src, PersistedSource):
            raise InputLostError(
                f"input {name}: the cluster lost {len(gone)} persisted block(s) "
                f"(e.g. {gone[0]}) of the wrapped dask collection, and Dask cannot "
                f"recompute them (scattered data); persist it again"
            )
    if any(lost_futures(s) for entry in collection._plans.values() for s in entry.scattered):
        found = True
    if found:
        collection._plans.clear()  # re-plan: new placements, scattered blocks sent again
    return found


def restore_lost(collection, scatter: bool = False):
    """Before a graph is built: persisted inputs that already lost blocks and have a lineage
    are recomputed, so every path (``dask.compute``, ``client.compute``, ``to_dask``) starts
    from data the cluster has. (Only then does making a graph send work to the cluster: the
    user's own persisted data, computed again; it installs nothing. Client arrays are
    scattered for it only with ``scatter``, inside ``compute``/``persist``.)"""
    for name, src in collection.sources.items():
        if getattr(src, "lineage", None) is not None and lost_futures(src):
            rebuild(name, src, collection.array_type, scatter)


def rebuild(name, src: PersistedSource, cls, scatter: bool = False):
    """``src``'s lost blocks computed again from its lineage (the rest kept), as the blocks of
    a collection of class ``cls`` (the RelArray class: the Dask layer imports no array code);
    its client arrays scattered with ``scatter``, else inside the graph."""
    lost = lost_futures(src)
    if src.lineage is None:
        _no_lineage(name, lost or list(src.type.iter_keys()))
    client = next(iter(src.graph.values())).client  # the client that holds the futures
    expr, sources = composed(src, client)
    # a name of its own: the lost collection's keys (the same expression, so the same name) are
    # being forgotten by the scheduler while this runs
    fresh = cls(expr, sources, name=fresh_name("recovered"))
    src.refresh({**src.blocks, **persist_blocks(fresh, lost, client, scatter)})


def composed(src: PersistedSource, client) -> tuple:
    """(expr, sources) computing ``src`` from its lineage in one expression: each persisted
    ancestor is replaced by its own lineage, up to the nearest ones whose blocks are all still
    on the cluster (read from there) or that are not persisted (sent or made again)."""
    chain = ancestors(src)
    held = on_cluster(chain, client)
    expr, sources = src.lineage
    table: dict = {}
    out: dict = {}
    stack = list(sources.items())
    while stack:
        name, s = stack.pop()
        if name in out or name in table:
            continue
        if name not in chain:  # a source that is not a persisted ancestor without blocks
            out[name] = s
        elif name in held:
            out[name] = held[name]
        elif s.lineage is None:
            _no_lineage(name, list(s.last_keys) or list(s.type.iter_keys()))
        else:
            table[name], more = s.lineage
            stack.extend(more.items())
    return substitute(expr, table), out


def ancestors(src: PersistedSource) -> dict:
    """{name: source} for every persisted ancestor without blocks (``detached``) that ``src``'s
    lineage reaches, each once, iteratively."""
    out: dict = {}
    stack = [src]
    while stack:
        s = stack.pop()
        if s.lineage is None:
            continue
        for name, t in s.lineage[1].items():
            if isinstance(t, PersistedSource) and not t.blocks and name not in out:
                out[name] = t
                stack.append(t)
    return out


def on_cluster(chain: dict, client) -> dict:
    """{name: source holding futures} for the ancestors of ``chain`` whose blocks are all in
    memory on the cluster (someone else still holds them), from one scheduler round trip."""
    keys = [dk for s in chain.values() for dk in s.last_keys.values()]
    if not keys:
        return {}
    who = query_snapshot(client, keys)[1]
    out = {}
    for name, s in chain.items():
        if s.last_keys and all(who.get(dk) or who.get(str(dk)) for dk in s.last_keys.values()):
            blocks: dict = {k: Future(dk, client) for k, dk in s.last_keys.items()}
            out[name] = PersistedSource(s.type, blocks, name=name, lineage=s.lineage)
    return out


def persist_blocks(collection, keys, client, scatter: bool = False) -> dict:
    """{block key: future} for the blocks ``keys`` of ``collection``: its plan's graph culled to
    what those blocks need, sent to the scheduler. (Emitted without the plan's report, which
    nobody reads here.)"""
    out = [(collection.name,) + tuple(k) for k in keys]
    graph = collection._emit(collection._planned_entry(), scatter)[0].cull(set(out))
    return dict(zip(keys, client.get(graph, out, sync=False)))


def _no_lineage(name, lost):
    raise InputLostError(
        f"input {name}: {len(lost)} block(s) (e.g. {lost[0]}) were only on a worker that left, "
        f"and there is no lineage to recompute them from (replicate such data with "
        f"client.replicate, or build the input again)"
    )


__all__ = ["InputLostError", "lost_futures", "recover"]

"""Inputs whose only copy was on a worker that left: send again, recompute, or say so.

Dask recomputes a lost chunk from its task. Two kinds of dask_tra input have no task to
recompute from: ``from_array`` blocks scattered from the client, and persisted RelArrays
whose lineage bottoms out in such blocks. Losing one makes Dask cancel the computation at
once ("lost dependencies"); it never hangs. ``RelArray.compute``/``persist`` then recover
(up to ``ATTEMPTS`` runs in all): scattered blocks are sent again from the client array
(the ``ArraySource`` keeps it), persisted inputs are persisted again from their lineage
(the expression and sources they were computed from, kept on the ``PersistedSource``;
client memory only). An input with no lineage (a persisted autodiff output, a wrapped dask
collection whose persisted blocks were scattered data) cannot be recovered:
``InputLostError`` names it.
"""

from __future__ import annotations

from ..tra import TRAError
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
            src.refresh(rebuild(name, src, collection.array_type))
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


def restore_lost(collection):
    """Before a graph is built: persisted inputs that already lost blocks and have a lineage
    are persisted again, so every path (``dask.compute``, ``client.compute``, ``to_dask``)
    starts from data the cluster has."""
    for name, src in collection.sources.items():
        if getattr(src, "lineage", None) is not None and lost_futures(src):
            src.refresh(rebuild(name, src, collection.array_type))


def rebuild(name, src, cls) -> PersistedSource:
    """``src``'s blocks persisted again from its lineage (inputs without blocks first), as a
    collection of class ``cls`` (the RelArray class: the Dask layer imports no array code)."""
    if src.lineage is None:
        lost = lost_futures(src) or list(src.type.iter_keys())
        raise InputLostError(
            f"input {name}: {len(lost)} block(s) (e.g. {lost[0]}) were only on a worker that left, "
            f"and there is no lineage to recompute them from (replicate such data with "
            f"client.replicate, or build the input again)"
        )
    expr, sources = src.lineage
    live = {n: rebuild(n, s, cls) if isinstance(s, PersistedSource) and not s.blocks else s for n, s in sources.items()}
    # a name of its own: the lost collection's keys (the same expression, so the same name) are
    # being forgotten by the scheduler while this runs
    fresh = cls(expr, live, name=fresh_name("recovered")).persist()
    return fresh.sources[fresh.expr.name]


__all__ = ["InputLostError", "lost_futures", "recover"]

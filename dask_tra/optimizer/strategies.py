"""Domain strategies: the IA sub-plans a TRA operator can compile to, by strategy object
(``operators.registry``: ``Bmm(side)``, ``EinDecomp(d)``, …; the names below are their
user-facing names).

A contraction (an Aggregate over a Join whose kernel distributes over the aggregation)
has the papers' three matmul strategies plus EinDecomp partition vectors:

- ``bmm``: broadcast one input (the cheaper side), partition the other by its output dims.
- ``cmm``: co-partition both inputs on the join keys, pre-aggregate locally, shuffle partials.
- ``rmm``: replicate both inputs onto the grid of output blocks (insertDim/duplicate), join
  on the full key; the aggregation is then local (the 3-D / replication algorithm).
- ``d=[...]``: EinDecomp: cut join-output key dim l into d[l] groups, one group-cell per site;
  each input goes to every cell that needs it; partial sums are then shuffled if d cuts
  an aggregated dim.

Other operators: a Join alone can co-partition, broadcast either side, or align one side
to the other's layout; an Aggregate alone is local (R2-4), two-phase (R2-5) or shuffled
(Table 1); per-tuple operators (``TupleMap``s: ReKey, Filter, Transform, Tile) never move data.

Every strategy of a contraction, a join alone and an aggregation alone is written once, a class
with its body (``contraction``, ``join_alone``, ``aggregate_alone``) against a mover
(``movers``): built here by running it (``operators.base.run``) with an IA mover, costed by
``candidates`` with a symbolic one. Tuple maps are built by ``per_tuple``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from ..ia import LocalFilter, Placed, part_all
from ..ia.nodes import local_map
from ..tra import expr as tra
from .layout import Built, place
from .movers import IAAggregator, IAMover, IASummer, ia_bytes
from .operators.base import OperatorKind, run
from .operators.registry import PREFERENCE, Local, Strategy, is_contraction, partition_vectors


def contraction(agg, left: Built, right: Built, s: int, only: Strategy | None = None) -> dict:
    """{strategy: IA root of the Aggregate} for each applicable strategy (``only``: those it
    admits; ``Bmm()`` broadcasts the side that moves fewer bytes, ``Bmm(side)`` that side)."""
    return run(agg, OperatorKind.CONTRACTION, s, lambda: IASummer(agg, (left, right), s), ia_bytes, only)


def join_alone(join, left: Built, right: Built, only: Strategy | None = None) -> dict:
    """{strategy: IA sub-plan} for a join alone built by an ``IAMover``; ``only``: the
    strategies it admits alone (``build`` expands the chosen one: each LocalJoin types its
    result)."""
    return run(join, OperatorKind.JOIN, left.node.s, lambda: IAMover(join, (left, right)), ia_bytes, only)


def aggregate_alone(agg, child: Built, only: Strategy | None = None) -> dict:
    """{strategy: IA sub-plan} for an aggregation alone (``only``: the strategies it admits)."""
    return run(agg, OperatorKind.AGGREGATE, child.node.s, lambda: IAAggregator(agg, child), ia_bytes, only)


# The plan layer, per operator kind: (node, input Alts, s, strategy) -> {strategy: IA root}; a
# contraction's ``TwoPhase(plan)`` is built by its body like every other strategy. (``build``
# may dispatch through this table; a registered operator's module builds its own: ``operators``.)
PLANS: dict[OperatorKind, Callable[..., dict]] = {
    OperatorKind.CONTRACTION: lambda node, kids, s, only: contraction(node, kids[0], kids[1], s, only),
    OperatorKind.JOIN: lambda node, kids, s, only: join_alone(node, kids[0], kids[1], only),
    OperatorKind.AGGREGATE: lambda node, kids, s, only: aggregate_alone(node, kids[0], only),
    OperatorKind.PER_TUPLE: lambda node, kids, s, only: per_tuple(node, kids[0], only),
}


def per_tuple(node, child: Built, only: Strategy | None = None) -> dict:
    """A tuple map (ReKey, Filter, Transform, Tile, ...): run where the tuples are."""
    base = child.node
    if child.free:
        t = base.type
        base = place(child, part_all(t.frontier, cast(Placed, base).input.home))
    if isinstance(node, tra.Filter):
        return {Local(): LocalFilter(base, node.predicate)}
    return {Local(): local_map(base, node)}


__all__ = [
    "PREFERENCE",
    "is_contraction",
    "partition_vectors",
    "contraction",
    "join_alone",
    "aggregate_alone",
    "per_tuple",
    "PLANS",
]

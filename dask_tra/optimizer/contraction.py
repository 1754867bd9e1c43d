"""The contraction strategies, each one class with its body written once against a mover.

A contraction Σ_g(L ⋈ R) moves its inputs as a join does, makes the block products where its
strategy says, and sums the products of each output key. A body says it in the words of a
contraction mover (``movers``): the mover's ``join`` makes the products and finishes the
aggregation. ``candidates.contraction`` runs each body with a symbolic mover (the partial sums
costed in closed form, ``symbolic``), ``strategies.contraction`` with an IA mover (the
``LocalJoin`` and ``layout.finish_aggregate``'s ``LocalAggregate``s).

- ``Bmm(side)``: ``side`` broadcast to its partners' sites, the other input partitioned by its
  output (group-by) dims; unforced, the side that moves fewer bytes (``Bmm.pick``);
- ``Cmm()``: both inputs co-partitioned on the join keys;
- ``Align(side)``: the other input kept where it is, ``side`` sent to its partners' sites (a
  join alone too);
- ``Rmm()``: both inputs replicated onto the grid of output blocks; the aggregation is local;
- ``EinDecomp(d)``: join-output key dim l cut into ``d[l]`` groups, one group-cell per site;
- ``TwoPhase(plan)``: every block product placed by the lineage-planned greedy
  (``twophase_strategy``), each input tuple sent to its products' sites.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..ia import Grid, part
from ..tra import expr as tra
from .join_alone import _Sided, align_side, broadcast_to_partners, copart, output_dims
from .operators.base import SIDES, Mover, OperatorKind, Strategy, TwoPhaseMover, check_side, partition_vectors

CONTRACTION = frozenset({OperatorKind.CONTRACTION})


def grid_join(agg, m: Mover, grid: Grid, st: Strategy) -> Any:
    """The products made on ``grid``'s cells (over the join's output key space): an input that
    holds every cut dim is laid out by the grid in its own numbering, the other replicated to
    every cell it belongs to (``Rmm``, ``EinDecomp``)."""
    sides = []
    for i in (0, 1):
        pos = m.output_dims(i)
        if set(grid.dims) <= set(pos):
            local = Grid(tuple(pos.index(d) for d in grid.dims), grid.groups)
            sides.append(m.place(i, m.partitioned(i, local), f"shuffle by {local}"))
        else:
            sides.append(m.replicate(i, grid))
    return m.join(sides[0], sides[1], grid, st)


@dataclass(frozen=True)
class Bmm(Strategy):
    """Broadcast one input (``side``; None: the side that moves fewer bytes), the other
    partitioned by its output dims."""

    kinds = CONTRACTION
    side: str | None = None

    def __post_init__(self):
        if self.side is not None:
            check_side(self, self.side)

    @property
    def name(self) -> str:
        return "bmm"

    @classmethod
    def variants(cls, node, s):
        return tuple(cls(side) for side in SIDES)

    @classmethod
    def pick(cls, made, nbytes):
        if len(made) < 2:
            return made
        best = min(made, key=lambda st: nbytes(made[st]))  # the first (left) on a tie
        return {best: made[best]}

    def body(self, agg, m: Mover) -> Any:
        join, g = agg.child, agg.group_by
        b = SIDES.index(self.side)  # the input broadcast
        o = 1 - b
        pos = output_dims(join, o)
        keep = [i for i, d in enumerate(pos) if d in g] or list(range(len(pos)))
        return broadcast_to_partners(join, m, b, part(keep, m.frontier(o)), self)


@dataclass(frozen=True)
class Cmm(Strategy):
    """Co-partition both inputs on the join keys, pre-aggregate locally, shuffle partials."""

    kinds = CONTRACTION

    @property
    def name(self) -> str:
        return "cmm"

    def body(self, agg, m: Mover) -> Any:
        return copart(agg.child, m, self)


@dataclass(frozen=True)
class Align(_Sided):
    """Keep the placed side where it is, send the ``side`` input to its partners' sites."""

    kinds = frozenset({OperatorKind.CONTRACTION, OperatorKind.JOIN})
    prefix = "align"
    side: str = "right"

    @classmethod
    def variants(cls, node, s):
        return (cls("right"), cls("left"))

    def body(self, node, m: Mover) -> Any:
        if isinstance(node, tra.Aggregate):  # a contraction: the moves of its join
            return align_side(node.child, m, self)
        return align_side(node, m, self) if node.left_keys else None  # a cross product: none to align on


@dataclass(frozen=True)
class Rmm(Strategy):
    """Replicate both inputs onto the grid of output blocks; the aggregation is local (3-D)."""

    kinds = CONTRACTION

    @property
    def name(self) -> str:
        return "rmm"

    def body(self, agg, m: Mover) -> Any:
        return grid_join(agg, m, part(agg.group_by, agg.child.type.frontier), self)


@dataclass(frozen=True)
class EinDecomp(Strategy):
    """Cut join-output key dim l into ``d[l]`` groups, one group-cell per site."""

    kinds = CONTRACTION
    d: tuple[int, ...] = ()
    cells: Grid | None = field(default=None, compare=False, repr=False)  # ``grid``, made once

    @property
    def name(self) -> str:
        return f"d={list(self.d)}"

    @property
    def grid(self) -> Grid:
        """The grid over the join's output key space: the dims ``d`` cuts, into ``d[l]`` groups."""
        return self.cells or _cells(self.d)

    @classmethod
    def variants(cls, node, s):
        return tuple([cls(d, _cells(d)) for d in partition_vectors(node.child.type.frontier, s)])

    @classmethod
    def instances(cls, node, s, only):
        if not isinstance(only, EinDecomp) or only.d == ():
            return super().instances(node, s, only)
        frontier = node.child.type.frontier  # one vector: viable when it cuts each dim at most into its blocks
        if len(only.d) != len(frontier) or math.prod(only.d) != s:
            return ()
        for x, f in zip(only.d, frontier):
            if not 1 <= x <= f:
                return ()
        return (cls(only.d, _cells(only.d)),)

    @classmethod
    def named(cls):
        return ()  # "d=[...]": any vector, parsed by ``registry.parse``

    def body(self, agg, m: Mover) -> Any:
        return grid_join(agg, m, self.grid, self)


def _cells(d: tuple[int, ...]) -> Grid:
    dims = [i for i, x in enumerate(d) if x > 1]
    return Grid(tuple(dims), tuple([d[i] for i in dims]))


@dataclass(frozen=True)
class TwoPhase(Strategy):
    """Lineage-planned placement of every block product (``twophase_strategy``); ``plan``: the
    placement costing chose (a ``twophase.TwoPhasePlan``; not part of the strategy's identity)."""

    kinds = CONTRACTION
    plan: Any = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return "two-phase"

    @classmethod
    def instances(cls, node, s, only):
        return (only,) if isinstance(only, TwoPhase) else (cls(),)  # ``only`` carries the plan

    def body(self, agg, m: TwoPhaseMover) -> Any:
        plan = m.placement(self)  # this one's plan (re-costed), or the best greedy; None: n/a
        if plan is None:
            return None
        left, right = m.to_join_groups(0, plan), m.to_join_groups(1, plan)
        return m.join(left, right, plan, TwoPhase(plan))


__all__ = ["grid_join", "Bmm", "Cmm", "Align", "Rmm", "EinDecomp", "TwoPhase"]

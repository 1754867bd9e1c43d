"""The aggregate-alone strategies, each one class with its body written once against a mover.

An aggregation that consumes no join of its own (a sum over a map, a reduction of a stored
array) is planned by the strategies registered for ``OperatorKind.AGGREGATE``. A body says,
in the words of an aggregation mover (``movers``), where the input goes and how its groups are
combined: ``candidates.aggregate_alone`` runs it with ``SymbolicAggregator`` (closed form),
``strategies.aggregate_alone`` with ``IAAggregator`` (the ``LocalAggregate``s that run).

- ``Local()``: every group already on one site, combined where it is (R2-4); a free input is
  made partitioned by the groups. (``Local`` also names a tuple map's and a registered
  operator's in-place plan, which are planned outside the bodies.)
- ``PreAggregate()`` (``two-phase``): each site combines its own tuples, the partials are
  shuffled to their group's site and combined there (R2-5); the input must hold one copy of
  each tuple and the kernel be associative and commutative;
- ``Repartition()`` (``shuffle``): the input shuffled by the groups, each combined where it lands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ia import part
from .operators.base import AggregateMover, OperatorKind, Strategy


@dataclass(frozen=True)
class Local(Strategy):
    """Run where the tuples are (an aggregation whose groups sit together, or a free input
    made by its groups; a tuple map; a Concat whose groups sit together)."""

    kinds = frozenset({OperatorKind.AGGREGATE, OperatorKind.PER_TUPLE, OperatorKind.REGISTERED})

    @property
    def name(self) -> str:
        return "local"

    def body(self, agg, m: AggregateMover) -> Any:
        g = agg.group_by
        if m.free(0):  # made where its group is
            home = m.home(0)
            x = m.place(0, m.partitioned(0, part(g, m.frontier(0), home)), "")
            return m.aggregate(x, self, part(range(len(g)), agg.type.frontier, home))
        x = m.held(0)
        return m.aggregate(x, self) if m.grouped(x) else None


@dataclass(frozen=True)
class PreAggregate(Strategy):
    """An aggregation alone: combine on each site, then shuffle the partials (R2-5)."""

    kinds = frozenset({OperatorKind.AGGREGATE})

    @property
    def name(self) -> str:
        return "two-phase"

    def body(self, agg, m: AggregateMover) -> Any:
        k = agg.kernel
        x = m.held(0)
        if m.grouped(x) or not m.single(x) or not (k.associative and k.commutative):  # replicas: folded twice
            return None
        return m.pre_aggregate(x, self)


@dataclass(frozen=True)
class Repartition(Strategy):
    """Shuffle by the groups first, then combine each group where it lands."""

    kinds = frozenset({OperatorKind.AGGREGATE, OperatorKind.REGISTERED})

    @property
    def name(self) -> str:
        return "shuffle"

    def body(self, agg, m: AggregateMover) -> Any:
        g = agg.group_by
        x = m.held(0)
        if m.grouped(x):
            return None
        home = m.home(0)
        moved = m.place(0, m.partitioned(0, part(g, m.frontier(0), home)), f"shuffle by PART{list(g)}")
        return m.aggregate(moved, self, part(range(len(g)), agg.type.frontier, home))


__all__ = ["Local", "PreAggregate", "Repartition"]

"""IA rewrite rules, one family per module, and a bottom-up driver.

Rules are data: a search enumerates ``rule.apply(node)`` wherever ``rule.matches(node)``;
``rewrite_fixpoint`` applies a chosen set until none fires. Plans are immutable: every
rewrite builds new nodes and leaves its input plan as it was.
"""

from __future__ import annotations

from ...tra.kernels import Composed
from .base import Rule
from .kernel_composition import (
    KERNEL_COMPOSITION_RULES,
    FilterBeforeMap,
    FilterBelowAggregate,
    FilterBelowJoin,
    MapBelowAggregate,
    MapIntoJoin,
    MergeFilters,
    MergeMaps,
)
from .repartition import (
    BCAST_LEFT,
    BCAST_RIGHT,
    COSHUFFLE,
    REPARTITION_RULES,
    DropInnerMove,
    DropShuffleBeforeAggregate,
    FilterBelowMove,
    JoinFeed,
    MapBelowMove,
    ShuffleIntoJoin,
    TwoPhaseAggregate,
    join_feed,
)
from .util import FixedFrontier, rebuild

ALL_RULES = KERNEL_COMPOSITION_RULES + REPARTITION_RULES


class NoFixpoint(RuntimeError):
    """Rules kept firing (some undo others, e.g. two R2-6 feeds)."""


def apply_everywhere(plan, rules) -> tuple:
    """One bottom-up pass: at each node, children first, fire the first rule that matches.

    Returns ``(new_plan, fired)`` with the names of the rules that fired, in order.
    Shared sub-plans stay shared.
    """
    memo, fired = {}, []

    def visit(node):
        if id(node) not in memo:
            new = rebuild(node, tuple(visit(c) for c in node.children))
            rule = next((r for r in rules if r.matches(new)), None)
            if rule is not None:
                new = rule.apply(new)
                fired.append(rule.name)
            memo[id(node)] = new
        return memo[id(node)]

    return visit(plan), fired


def rewrite_fixpoint(plan, rules, max_passes: int = 100):
    """Apply ``rules`` bottom-up, pass after pass, until none fires; returns the new plan.

    Pass rules that do not undo each other (at most one R2-6 feed); else NoFixpoint.
    """
    for _ in range(max_passes):
        plan, fired = apply_everywhere(plan, rules)
        if not fired:
            return plan
    raise NoFixpoint(f"rules still firing after {max_passes} passes (last pass: {fired})")


__all__ = [
    "Rule",
    "ALL_RULES",
    "KERNEL_COMPOSITION_RULES",
    "REPARTITION_RULES",
    "apply_everywhere",
    "rewrite_fixpoint",
    "NoFixpoint",
    "MergeFilters",
    "MergeMaps",
    "FilterBeforeMap",
    "MapBelowAggregate",
    "FilterBelowAggregate",
    "FilterBelowJoin",
    "MapIntoJoin",
    "DropInnerMove",
    "FilterBelowMove",
    "MapBelowMove",
    "DropShuffleBeforeAggregate",
    "TwoPhaseAggregate",
    "JoinFeed",
    "ShuffleIntoJoin",
    "join_feed",
    "BCAST_LEFT",
    "BCAST_RIGHT",
    "COSHUFFLE",
    "Composed",
    "FixedFrontier",
    "rebuild",
]

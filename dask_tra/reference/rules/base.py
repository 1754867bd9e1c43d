"""The rule interface: rules are data a search walks over (Calcite/Cascades style)."""

from __future__ import annotations


class Rule:
    """One equivalence of the IA, oriented as a rewrite.

    ``matches(node)`` checks the pattern rooted at ``node`` and the rule's precondition
    (kernel facts, partitioning read from ``copies``); ``apply(node)`` assumes it matched
    and returns the rewritten node, built from new objects (plans are never mutated).
    Both plans give the same (key, chunk) set once sites are projected away.
    """

    name = "rule"
    family = ""

    def matches(self, node) -> bool:
        raise NotImplementedError

    def apply(self, node):
        raise NotImplementedError

    def __repr__(self):
        return self.name

"""What the rewrite rules share: composed key maps and predicates, rebuilding an IA node over
new children (from its declared operands: ``IANode.over``), and partitioning facts read from a
node's ``copies`` (with the optimizer's ``partitioned_by``, ``optimizer/layout.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...ia.nodes import IANode
from ...ia.partitioning import Key, Placement
from ...tra import expr as tra
from ...tra.dag import rebuilt
from ...tra.keyfuncs import KeyMap, KeyPred


def compose_keymaps(outer: KeyMap, inner: KeyMap) -> KeyMap:
    """``key -> outer(inner(key))``; a selection when both are."""
    return KeyMap.compose(outer, inner)


def conjunction(first: KeyPred, then: KeyPred) -> KeyPred:
    """``then(k) and first(k)``: ``then`` is tested first, as when it was the inner filter."""
    return KeyPred.conjunction(first, then)


def reindexed(pred: KeyPred, source: dict, arity: int) -> KeyPred:
    """``pred`` read through a dim map (see ``KeyPred.reindexed``)."""
    return KeyPred.reindexed(pred, source, arity)


def filtered_type(node, pred: KeyPred):
    """The type ``LocalFilter(node, pred)`` would have (to test for holes before building it)."""
    return tra.Filter(tra.Input("_", node.type), pred).type


def rebuild(node: IANode, children: Sequence[IANode]) -> IANode:
    """``node``'s operator over new ``children``; ``node`` itself when they are the same objects."""
    if all(a is b for a, b in zip(node.children, children)):
        return node
    return rebuilt(node, children, "IA rules")


def one_copy_each(node: IANode) -> bool:
    """Every key sits on exactly one site (a partitioned relation, PART_D for some D)."""
    return all(len(cs) == 1 for cs in node.copies.values())


def single_origin(node: IANode) -> bool:
    """Every key holds one chunk (one origin), on however many sites: moving it is well defined."""
    return all(len({origin for _, origin in cs}) == 1 for cs in node.copies.values())


@dataclass(frozen=True)
class FixedFrontier:
    """A placement evaluated against a fixed frontier. Grids place a key relative to the
    frontier; pinning it keeps every tuple on its site when a filter shrinks the frontier."""

    placement: Placement
    frontier: tuple[int, ...]

    def sites(self, key: Key, frontier: Sequence[int], s: int) -> tuple[int, ...]:
        return self.placement.sites(key, self.frontier, s)

    def partitions_by(self, group_by: Sequence[int]) -> bool:
        return self.placement.partitions_by(group_by)

    def __str__(self) -> str:
        return str(self.placement)

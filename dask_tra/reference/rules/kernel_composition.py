"""Kernel-composition rules R1-1 … R1-7 (TRA paper, Table 2): where local kernels run.

In this IA a ``LocalMap`` carries either a key map (``ReKey``) or an array map
(``Transform``, whose key map is idOp), never both; a map "of output arity one" is a
ReKey or a Transform (Tile and Expand emit several tuples per input).
"""

from __future__ import annotations

from ...ia.nodes import LocalAggregate, LocalFilter, LocalJoin, LocalMap, local_map, rekey, transform
from ...tra import expr as tra
from ...tra.kernels import Composed
from .base import Rule
from .util import compose_keymaps, conjunction, filtered_type, rebuild, reindexed


def _is_array_map(node) -> bool:
    """A LocalMap with key map idOp and an array map of arity one (a Transform)."""
    return isinstance(node, LocalMap) and isinstance(node.op, tra.Transform)


class MergeFilters(Rule):
    """R1-1: σL(p1)(σL(p2)(R)) ≡ σL(p1 ∧ p2)(R). No precondition."""

    name, family = "R1-1", "kernel composition"

    def matches(self, node):
        return isinstance(node, LocalFilter) and isinstance(node.child, LocalFilter)

    def apply(self, node):
        inner = node.child
        return LocalFilter(inner.child, conjunction(node.op.predicate, inner.op.predicate))


class MergeMaps(Rule):
    """R1-2: λL(m1)(λL(m2)(R)) ≡ λL(m1 ∘ m2)(R).

    Precondition: both maps have output arity one and are of one kind (two Transforms
    compose their kernels, two ReKeys their key maps): one LocalMap carries one of them.
    """

    name, family = "R1-2", "kernel composition"

    def matches(self, node):
        return (
            isinstance(node, LocalMap)
            and isinstance(node.child, LocalMap)
            and isinstance(node.op, (tra.ReKey, tra.Transform))
            and type(node.op) is type(node.child.op)
        )

    def apply(self, node):
        outer, inner, base = node.op, node.child.op, node.child.child
        if isinstance(outer, tra.Transform):
            return transform(base, Composed(outer.kernel, inner.kernel))
        return rekey(base, compose_keymaps(outer.key_fn, inner.key_fn))


class FilterBeforeMap(Rule):
    """R1-3: σL(p)(λL(idOp, f)(R)) ≡ λL(idOp, f)(σL(p)(R)): filter first, map fewer chunks.

    Precondition: the map's key map is idOp (a Transform), so p sees the same keys.
    """

    name, family = "R1-3", "kernel composition"

    def matches(self, node):
        return isinstance(node, LocalFilter) and _is_array_map(node.child)

    def apply(self, node):
        m = node.child
        return local_map(LocalFilter(m.child, node.op.predicate), m.op)


class MapBelowAggregate(Rule):
    """R1-4: λL(idOp, f)(ΣL(g, agg)(R)) ≡ ΣL(g, agg)(λL(idOp, f)(R)).

    The paper's Σ with kernel agg∘(f×f). Precondition: key map idOp and f distributes
    over agg (``f.distributes(agg)``: f(agg(a, b)) = agg(f(a), f(b))). ΣL folds pairwise
    and passes single-member groups through, so f goes below the aggregation rather
    than into its kernel.
    """

    name, family = "R1-4", "kernel composition"

    def matches(self, node):
        return (
            _is_array_map(node)
            and isinstance(node.child, LocalAggregate)
            and isinstance(node.child.op, tra.Aggregate)
            and node.op.kernel.distributes(node.child.op.kernel)
        )

    def apply(self, node):
        agg = node.child
        return LocalAggregate(transform(agg.child, node.op.kernel), agg.group_by, agg.op.kernel)


class FilterBelowAggregate(Rule):
    """R1-5: σL(p)(ΣL(g, agg)(R)) ≡ ΣL(g, agg)(σL(p ∘ Π_g)(R)).

    p reads the output key, i.e. only groupByKeys of the input key. Precondition: the
    filtered input has no holes (Σ needs continuity), e.g. p bounds a key dim from above.
    """

    name, family = "R1-5", "kernel composition"

    def matches(self, node):
        return (
            isinstance(node, LocalFilter)
            and isinstance(node.child, LocalAggregate)
            and filtered_type(node.child.child, self._pushed(node)).dense
        )

    def apply(self, node):
        agg = node.child
        return rebuild(agg, (LocalFilter(agg.child, self._pushed(node)),))

    @staticmethod
    def _pushed(node):
        g = node.child.group_by
        return reindexed(node.op.predicate, dict(enumerate(g)), len(g))


class FilterBelowJoin(Rule):
    """R1-6: σL(p)(⋈L(jl, jr, k)(Rl, Rr)) ≡ ⋈L(jl, jr, k)(σL(p_l)(Rl), σL(p_r)(Rr)).

    Precondition: p declares the dims it reads (``KeyPred.dims``) and they are join key
    dims of the output (⊆ joinKeysL), so p_l and p_r read them from either side; and
    both filtered inputs have no holes (⋈ needs continuity).
    """

    name, family = "R1-6", "kernel composition"

    def matches(self, node):
        if not (isinstance(node, LocalFilter) and isinstance(node.child, LocalJoin)):
            return False
        dims, op = node.op.predicate.dims, node.child.op
        if dims is None or not dims <= set(op.left_keys):
            return False
        join = node.child
        return all(filtered_type(side, p).dense for side, p in zip(join.children, self._pushed(node)))

    def apply(self, node):
        join = node.child
        pl, pr = self._pushed(node)
        op = join.op
        return LocalJoin(
            LocalFilter(join.left, pl), LocalFilter(join.right, pr), op.left_keys, op.right_keys, op.kernel
        )

    @staticmethod
    def _pushed(node):
        p, op = node.op.predicate, node.child.op
        arity = node.type.key_arity
        left = reindexed(p, {a: a for a in op.left_keys}, arity)
        right = reindexed(p, dict(zip(op.left_keys, op.right_keys)), arity)
        return left, right


class MapIntoJoin(Rule):
    """R1-7: λL(idOp, f)(⋈L(jl, jr, k)(Rl, Rr)) ≡ ⋈L(jl, jr, f ∘ k)(Rl, Rr).

    Precondition: the map has key map idOp and output arity one (a Transform); the join
    applies k once per output tuple, so f ∘ k needs no distributivity.
    """

    name, family = "R1-7", "kernel composition"

    def matches(self, node):
        return _is_array_map(node) and isinstance(node.child, LocalJoin)

    def apply(self, node):
        join = node.child
        op = join.op
        return LocalJoin(join.left, join.right, op.left_keys, op.right_keys, Composed(node.op.kernel, op.kernel))


KERNEL_COMPOSITION_RULES = (
    MergeFilters(),
    MergeMaps(),
    FilterBeforeMap(),
    MapBelowAggregate(),
    FilterBelowAggregate(),
    FilterBelowJoin(),
    MapIntoJoin(),
)

"""Repartition rules R2-1 … R2-7 (TRA paper, Table 2, with the errata's corrected
preconditions for R2-4, R2-5 and R2-6): where tuples move, and how much.

Partitioning facts are read from a node's ``copies`` (exact, from metadata), so a rule
sees the placement the plan really has, not the one a node's parameters suggest.
"""

from __future__ import annotations

from ...ia.nodes import Broadcast, LocalAggregate, LocalFilter, LocalJoin, LocalMap, Shuffle, local_map
from ...ia.partitioning import Grid, part
from ...optimizer.layout import partitioned_by
from ...tra import expr as tra
from .base import Rule
from .util import FixedFrontier, one_copy_each, rebuild, single_origin

_MOVES = (Broadcast, Shuffle)


class DropInnerMove(Rule):
    """R2-1: MOVE2(MOVE1(R)) ≡ MOVE2(R) for any broadcasts and shuffles.

    No precondition: moves keep each chunk's origin, so the last move alone decides
    which chunk sits where.
    """

    name, family = "R2-1", "repartition"

    def matches(self, node):
        return isinstance(node, _MOVES) and isinstance(node.child, _MOVES)

    def apply(self, node):
        return rebuild(node, (node.child.child,))


class FilterBelowMove(Rule):
    """R2-2: σL(p)(BCAST(R)) ≡ BCAST(σL(p)(R)); σL(p)(SHUF_P(R)) ≡ SHUF_P(σL(p)(R)).

    No precondition; filtering first moves fewer tuples. P is pinned to the unfiltered
    frontier so that every tuple keeps its site (a sibling may be co-partitioned with it).
    """

    name, family = "R2-2", "repartition"

    def matches(self, node):
        return isinstance(node, LocalFilter) and isinstance(node.child, _MOVES)

    def apply(self, node):
        move = node.child
        below = LocalFilter(move.child, node.op.predicate)
        if isinstance(move, Broadcast):
            return Broadcast(below)
        return Shuffle(below, FixedFrontier(move.placement, move.type.frontier))


class MapBelowMove(Rule):
    """R2-3: λL(m)(BCAST(R)) ≡ BCAST(λL(m)(R)); λL(idOp, f)(SHUF(R)) ≡ SHUF(λL(idOp, f)(R)).

    Map once, then move. Preconditions: R holds one chunk per key (else the moved map
    outputs would be several chunks per key); under SHUF the key map is idOp (a
    Transform), so every tuple keeps its key, hence its site.
    """

    name, family = "R2-3", "repartition"

    def matches(self, node):
        if not (isinstance(node, LocalMap) and isinstance(node.child, _MOVES)):
            return False
        keeps_keys = isinstance(node.child, Broadcast) or node.op.keeps_keys
        return keeps_keys and single_origin(node.child.child)

    def apply(self, node):
        move = node.child
        return rebuild(move, (local_map(move.child, node.op),))


class DropShuffleBeforeAggregate(Rule):
    """R2-4: ΣL(g, agg)(SHUF(R)) ≡ ΣL(g, agg)(R).

    Corrected precondition (errata): R is already PART_D with D ⊆ g (every key has one
    copy and each group sits on one site); the shuffle keeps groups together too, so
    both sides aggregate whole groups.
    """

    name, family = "R2-4", "repartition"

    def matches(self, node):
        return (
            isinstance(node, LocalAggregate)
            and isinstance(node.child, Shuffle)
            and partitioned_by(node.child, node.group_by)
            and partitioned_by(node.child.child, node.group_by)
        )

    def apply(self, node):
        return rebuild(node, (node.child.child,))


class TwoPhaseAggregate(Rule):
    """R2-5: ΣL(g, agg)(SHUF_P(R)) ≡ ΣL(⟨0…|g|-1⟩, agg)(SHUF_P'(ΣL(g, agg)(R))).

    Local Σ, shuffle the partial results, Σ again. Corrected precondition (errata): R is
    partitioned (one copy per key) but not by g, and agg is associative and commutative
    (partials fold in another order). P must be a Grid keeping groups together; P' is P
    on the aggregated key, so each group ends on the site P gave it.
    """

    name, family = "R2-5", "repartition"

    def matches(self, node):
        if not (
            isinstance(node, LocalAggregate)
            and isinstance(node.op, tra.Aggregate)
            and isinstance(node.child, Shuffle)
            and isinstance(node.child.placement, Grid)
        ):
            return False
        kernel, shuffle, g = node.op.kernel, node.child, node.group_by
        return (
            kernel.associative
            and kernel.commutative
            and shuffle.placement.partitions_by(g)
            and one_copy_each(shuffle.child)
            and not partitioned_by(shuffle.child, g)
        )

    def apply(self, node):
        shuffle, g, kernel = node.child, node.group_by, node.op.kernel
        grid = shuffle.placement
        cut = [(g.index(d), n) for d, n in zip(grid.dims, grid.groups) if n > 1]
        partial = LocalAggregate(shuffle.child, g, kernel)
        moved = Shuffle(partial, Grid(tuple(d for d, _ in cut), tuple(n for _, n in cut)))
        return LocalAggregate(moved, tuple(range(len(g))), kernel)


BCAST_LEFT, BCAST_RIGHT, COSHUFFLE = "bcast-left", "bcast-right", "coshuffle"


def join_feed(join):
    """(mode, Rl, Rr): which of R2-6's three ways feeds ``join``, and its inputs before
    that feed; None for any other feed."""
    left, right, op = join.left, join.right, join.op
    if isinstance(left, Broadcast):
        return BCAST_LEFT, left.child, right
    if isinstance(right, Broadcast):
        return BCAST_RIGHT, left, right.child
    if (
        isinstance(left, Shuffle)
        and isinstance(right, Shuffle)
        and left.placement == part(op.left_keys, left.type.frontier)
        and right.placement == part(op.right_keys, right.type.frontier)
    ):
        return COSHUFFLE, left.child, right.child
    return None


class JoinFeed(Rule):
    """R2-6: ⋈L(BCAST(Rl), Rr) ≡ ⋈L(Rl, BCAST(Rr)) ≡ ⋈L(SHUF_jl(Rl), SHUF_jr(Rr)).

    ``JoinFeed(mode)`` turns a local join fed in one of these ways into the ``mode`` one.
    Precondition (errata: the three alternatives): the join is fed another of the three
    ways, and each input the new feed moves holds one chunk per key.
    """

    family = "repartition"
    MODES = (BCAST_LEFT, BCAST_RIGHT, COSHUFFLE)

    def __init__(self, mode: str):
        if mode not in self.MODES:
            raise ValueError(f"R2-6: mode must be one of {self.MODES}, got {mode!r}")
        self.mode = mode
        self.name = f"R2-6[{mode}]"

    def matches(self, node):
        feed = join_feed(node) if isinstance(node, LocalJoin) else None
        if feed is None or feed[0] == self.mode:
            return False
        _, left, right = feed
        moved = {BCAST_LEFT: (left,), BCAST_RIGHT: (right,), COSHUFFLE: (left, right)}[self.mode]
        return all(single_origin(n) for n in moved)

    def apply(self, node):
        _, left, right = join_feed(node)
        op = node.op
        if self.mode == BCAST_LEFT:
            left = Broadcast(left)
        elif self.mode == BCAST_RIGHT:
            right = Broadcast(right)
        else:
            left = Shuffle(left, part(op.left_keys, left.type.frontier))
            right = Shuffle(right, part(op.right_keys, right.type.frontier))
        return LocalJoin(left, right, op.left_keys, op.right_keys, op.kernel)


class ShuffleIntoJoin(Rule):
    """R2-7: SHUF_P(⋈L(SHUF(Rl), SHUF(Rr))) ≡ ⋈L(SHUF_P(Rl), SHUF_P'(Rr)).

    The output shuffle is pushed into the inputs' shuffles. Precondition: both join
    inputs are shuffled and P is a Grid on partDims ⊆ joinKeysL; P' is P on the matching
    right join dims, so joining tuples still meet, on the site P gives their output.
    """

    name, family = "R2-7", "repartition"

    def matches(self, node):
        return (
            isinstance(node, Shuffle)
            and isinstance(node.placement, Grid)
            and isinstance(node.child, LocalJoin)
            and all(isinstance(c, Shuffle) for c in node.child.children)
            and set(node.placement.dims) <= set(node.child.op.left_keys)
        )

    def apply(self, node):
        join, grid = node.child, node.placement
        op = join.op
        to_right = dict(zip(op.left_keys, op.right_keys))
        right_grid = Grid(tuple(to_right[d] for d in grid.dims), grid.groups)
        return LocalJoin(
            Shuffle(join.left.child, grid),
            Shuffle(join.right.child, right_grid),
            op.left_keys,
            op.right_keys,
            op.kernel,
        )


REPARTITION_RULES = (
    DropInnerMove(),
    FilterBelowMove(),
    MapBelowMove(),
    DropShuffleBeforeAggregate(),
    TwoPhaseAggregate(),
    JoinFeed(BCAST_LEFT),
    JoinFeed(BCAST_RIGHT),
    JoinFeed(COSHUFFLE),
    ShuffleIntoJoin(),
)

"""Domain strategies: the IA sub-plans a TRA operator can compile to, by name.

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
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..ia import Grid, LocalAggregate, LocalFilter, LocalJoin, Shuffle, SiteMap, part
from ..ia.nodes import expand, local_map
from ..tra import expr as tra
from .cost import evaluate_cost
from .layout import Alt, align, broadcast, finish_aggregate, place
from .symbolic import grid_need, held, homes

# Tie-breaking order when candidates cost the same; a new strategy is listed here.
PREFERENCE = (
    "local",
    "bmm",
    "cmm",
    "rmm",
    "copart",
    "align-left",
    "align-right",
    "bcast-left",
    "bcast-right",
    "two-phase",
    "shuffle",
)


def is_contraction(node) -> bool:
    """Σ over ⋈ whose join kernel distributes over an associative, commutative aggregation."""
    if not isinstance(node, tra.Aggregate) or not isinstance(node.child, tra.Join):
        return False
    k = node.kernel
    return k.associative and k.commutative and node.child.kernel.distributes(k)


def partition_vectors(frontier, p):
    """Every d with prod(d) == p and 1 <= d[l] <= frontier[l] (EinDecomp's viable(), any p)."""
    divisors = [[x for x in range(1, min(f, p) + 1) if p % x == 0] for f in frontier]
    return [d for d in itertools.product(*divisors) if math.prod(d) == p]


def _grid_join(join, left: Alt, right: Alt, grid: Grid):
    """LocalJoin with every join-output tuple computed on ``grid``'s site for its key."""
    out = join.type.frontier
    kl, kr = left.node.type.key_arity, right.node.type.key_arity
    rpos = [join.right_out[d] for d in range(kr)]  # output dim of each right dim
    lpos = list(range(kl))
    need = set(grid.dims)
    sides = []
    for alt, pos in ((left, lpos), (right, rpos)):
        if need <= set(pos):  # the side holds every cut dim: place it by the grid in its own numbering
            local = Grid(tuple(pos.index(d) for d in grid.dims), grid.groups)
            sides.append((place(alt, local), pos))
        else:  # replicate into the full output key space, then place by the grid
            base = place(alt, _homes(alt.node.type, grid, pos, alt.node.s)) if alt.free else alt.node
            sides.append((Shuffle(expand(base, pos, out), grid), list(range(len(out)))))
    (lnode, lp), (rnode, rp) = sides
    common = [d for d in lp if d in rp]
    return LocalJoin(lnode, rnode, [lp.index(d) for d in common], [rp.index(d) for d in common], join.kernel)


def _homes(t, grid: Grid, pos, s: int) -> SiteMap:
    """Each tuple of a free input made at one of the grid cells it is replicated to
    (``symbolic.homes``: the cost model's placement, key for key)."""
    keys = list(t.iter_keys())
    at = homes(held(grid_need(grid, pos, t.frontier, s), t))
    rows = np.ravel_multi_index(np.array(keys).T, t.frontier) if keys and t.frontier else np.zeros(len(keys), int)
    return SiteMap({k: (int(at[r]),) for k, r in zip(keys, rows)})


def contraction(agg, left: Alt, right: Alt, s: int, only=None, bside=None) -> dict:
    """name -> IA root of the Aggregate, for each applicable strategy (``only``: just that one;
    ``bside``: the side bmm broadcasts, else the one that moves fewer bytes)."""
    join, kernel, g = agg.child, agg.kernel, agg.group_by
    out = join.type.frontier
    cands = {}

    def want(name):
        return only is None or only == name

    def finish(joined):
        return finish_aggregate(joined, g, kernel)[0]

    if want("bmm"):  # broadcast one side; the other partitioned by its group-by (output) dims
        bm = {}
        for side in ("left", "right"):
            if bside not in (None, side):
                continue
            other, odims = (
                (right, range(right.node.type.key_arity)) if side == "left" else (left, range(left.node.type.key_arity))
            )
            pos = [join.right_out[d] for d in odims] if side == "left" else list(odims)
            keep = [i for i, d in enumerate(pos) if d in g] or list(range(len(pos)))
            onode = place(other, part(keep, other.node.type.frontier))
            okeys, bkeys = (join.right_keys, join.left_keys) if side == "left" else (join.left_keys, join.right_keys)
            bnode = broadcast(left if side == "left" else right, None if _same(left, right) else (onode, okeys, bkeys))
            l, r = (bnode, onode) if side == "left" else (onode, bnode)
            bm[side] = finish(LocalJoin(l, r, join.left_keys, join.right_keys, kernel=join.kernel))
        cands["bmm"] = min(bm.values(), key=_bytes) if len(bm) > 1 else next(iter(bm.values()))
    lk, rk = join.left_keys, join.right_keys
    if lk and want("cmm"):  # co-partition on the join keys
        l = place(left, part(lk, left.node.type.frontier))
        r = place(right, part(rk, right.node.type.frontier))
        cands["cmm"] = finish(LocalJoin(l, r, lk, rk, join.kernel))
    for fixed, moving, side in ((left, right, "right"), (right, left, "left")):
        if not fixed.free and want(f"align-{side}"):  # keep a placed side, bring the other to it
            joined = _align_join(join, fixed.node, moving, lk, rk, side)
            if joined is not None:
                cands[f"align-{side}"] = finish(joined)
    if want("rmm"):  # replicate onto the output-block grid
        cands["rmm"] = finish(_grid_join(join, left, right, part(g, out)))
    for d in partition_vectors(out, s):
        if want(f"d={list(d)}"):
            dims = tuple(i for i, x in enumerate(d) if x > 1)
            grid = Grid(dims, tuple(d[i] for i in dims))
            cands[f"d={list(d)}"] = finish(_grid_join(join, left, right, grid))
    return cands


def _same(left: Alt, right: Alt) -> bool:
    """One placed relation on both sides of a join (its copies serve both; ``Moves._slot``)."""
    return left.node is right.node and not left.free


def join_alone(join, left: Alt, right: Alt, only: str | None = None) -> dict:
    """{strategy: IA sub-plan} for a join alone; ``only``: that strategy's alone (``build``
    expands the chosen one: each LocalJoin types its result)."""
    lk, rk = join.left_keys, join.right_keys
    cands = {}

    def want(name):
        return only in (None, name)

    if want("bcast-left"):
        rnode = place(right, part(range(right.node.type.key_arity), right.node.type.frontier))
        cands["bcast-left"] = LocalJoin(
            broadcast(left, None if _same(left, right) else (rnode, rk, lk)), rnode, lk, rk, join.kernel
        )
    if want("bcast-right"):
        lnode = place(left, part(range(left.node.type.key_arity), left.node.type.frontier))
        cands["bcast-right"] = LocalJoin(
            lnode, broadcast(right, None if _same(left, right) else (lnode, lk, rk)), lk, rk, join.kernel
        )
    if lk:
        if want("copart"):
            cands["copart"] = LocalJoin(
                place(left, part(lk, left.node.type.frontier)),
                place(right, part(rk, right.node.type.frontier)),
                lk,
                rk,
                join.kernel,
            )
        if not left.free and want("align-right"):
            cands["align-right"] = _align_join(join, left.node, right, lk, rk, "right")
        if not right.free and want("align-left"):
            cands["align-left"] = _align_join(join, right.node, left, lk, rk, "left")
    return {k: v for k, v in cands.items() if v is not None}


def _align_join(join, fixed, moving: Alt, lk, rk, moving_side):
    """Keep one side where it is; send each tuple of the other to the sites of its partners."""
    fixed_keys, moving_keys = (lk, rk) if moving_side == "right" else (rk, lk)
    moved = align(moving, fixed, fixed_keys, moving_keys)
    l, r = (fixed, moved) if moving_side == "right" else (moved, fixed)
    return LocalJoin(l, r, lk, rk, join.kernel)


def aggregate_alone(agg, child: Alt) -> dict:
    node = (
        child.node if not child.free else place(child, part(range(child.node.type.key_arity), child.node.type.frontier))
    )
    cands = {}
    root, how = finish_aggregate(node, agg.group_by, agg.kernel)
    cands[how] = root
    if how == "two-phase":
        cands["shuffle"] = finish_aggregate(node, agg.group_by, agg.kernel, two_phase_ok=False)[0]
    if child.free:
        cands["local"] = LocalAggregate(
            place(child, part(agg.group_by, child.node.type.frontier)), agg.group_by, agg.kernel
        )
    return cands


def per_tuple(node, child: Alt) -> dict:
    """A tuple map (ReKey, Filter, Transform, Tile, ...): run where the tuples are."""
    base = (
        child.node if not child.free else place(child, part(range(child.node.type.key_arity), child.node.type.frontier))
    )
    if isinstance(node, tra.Filter):
        return {"local": LocalFilter(base, node.predicate)}
    return {"local": local_map(base, node)}


def _bytes(root):
    return evaluate_cost(root).bytes_moved

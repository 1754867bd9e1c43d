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

The join-alone strategies and the contraction's bmm, cmm and align are written once
(``join_alone``, ``contraction``) against a mover (``movers``): built here by an ``IAMover``,
costed by ``candidates`` with a ``SymbolicMover``. rmm, EinDecomp's vectors, the aggregations
alone and the tuple maps are built here and costed there, move for move.
"""

from __future__ import annotations

import numpy as np

from ..ia import Grid, LocalAggregate, LocalFilter, LocalJoin, Shuffle, SiteMap, part
from ..ia.nodes import expand, local_map
from ..tra import expr as tra
from . import contraction as bodies
from . import join_alone as join_bodies
from .cost import evaluate_cost
from .layout import Alt, finish_aggregate, place
from .movers import IAMover
from .operators.registry import (
    PREFERENCE,
    SIDES,
    Align,
    Bmm,
    Cmm,
    EinDecomp,
    Local,
    PreAggregate,
    Repartition,
    Rmm,
    Strategy,
    is_contraction,
    partition_vectors,
)
from .symbolic import grid_need, held, homes


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


class _Summing(IAMover):
    """A contraction's moves (``contraction.py``'s bodies) built; its ``join`` is the LocalJoin
    of the moved inputs, its products summed by ``layout.finish_aggregate``."""

    def __init__(self, agg, alts):
        super().__init__(agg.child, alts)
        self.agg = agg

    def join(self, left, right, at, strategy):
        return finish_aggregate(super().join(left, right, at, strategy), self.agg.group_by, self.agg.kernel)[0]


def contraction(agg, left: Alt, right: Alt, s: int, only: Strategy | None = None) -> dict:
    """{strategy: IA root of the Aggregate} for each applicable strategy (``only``: those it
    admits; ``Bmm()`` broadcasts the side that moves fewer bytes, ``Bmm(side)`` that side)."""
    join, kernel, g = agg.child, agg.kernel, agg.group_by
    out = join.type.frontier
    cands: dict[Strategy, object] = {}

    def want(strategy: Strategy) -> bool:
        return only is None or only.admits(strategy)

    def finish(joined):
        return finish_aggregate(joined, g, kernel)[0]

    def mover() -> _Summing:
        return _Summing(agg, (left, right))

    bm = {Bmm(side): bodies.bmm(agg, mover(), Bmm(side)) for side in SIDES if want(Bmm(side))}
    if bm:  # the side whose broadcast moves fewer bytes
        chosen = min(bm, key=lambda st: _bytes(bm[st])) if len(bm) > 1 else next(iter(bm))
        cands[chosen] = bm[chosen]
    if want(Cmm()) and (root := bodies.cmm(agg, mover(), Cmm())) is not None:
        cands[Cmm()] = root
    for side in ("right", "left"):
        if want(Align(side)) and (root := bodies.align(agg, mover(), Align(side))) is not None:
            cands[Align(side)] = root
    if want(Rmm()):  # replicate onto the output-block grid
        cands[Rmm()] = finish(_grid_join(join, left, right, part(g, out)))
    for d in partition_vectors(out, s):
        if want(EinDecomp(tuple(d))):
            dims = tuple(i for i, x in enumerate(d) if x > 1)
            grid = Grid(dims, tuple(d[i] for i in dims))
            cands[EinDecomp(tuple(d))] = finish(_grid_join(join, left, right, grid))
    return cands


def join_alone(join, left: Alt, right: Alt, only: Strategy | None = None) -> dict:
    """{strategy: IA sub-plan} for a join alone (``join_alone.py``: one body per strategy) built
    by an ``IAMover``; ``only``: the strategies it admits alone (``build`` expands the chosen
    one: each LocalJoin types its result)."""
    return join_bodies.run(join, lambda: IAMover(join, (left, right)), only)


def aggregate_alone(agg, child: Alt, only: Strategy | None = None) -> dict:
    """{strategy: IA sub-plan} for an aggregation alone (``only``: the strategies it admits)."""
    node = (
        child.node if not child.free else place(child, part(range(child.node.type.key_arity), child.node.type.frontier))
    )
    cands: dict[Strategy, object] = {}
    root, how = finish_aggregate(node, agg.group_by, agg.kernel)
    cands[how] = root
    if isinstance(how, PreAggregate):
        cands[Repartition()] = finish_aggregate(node, agg.group_by, agg.kernel, two_phase_ok=False)[0]
    if child.free:
        cands[Local()] = LocalAggregate(
            place(child, part(agg.group_by, child.node.type.frontier)), agg.group_by, agg.kernel
        )
    return {st: root for st, root in cands.items() if only is None or only.admits(st)}


def per_tuple(node, child: Alt, only: Strategy | None = None) -> dict:
    """A tuple map (ReKey, Filter, Transform, Tile, ...): run where the tuples are."""
    base = (
        child.node if not child.free else place(child, part(range(child.node.type.key_arity), child.node.type.frontier))
    )
    if isinstance(node, tra.Filter):
        return {Local(): LocalFilter(base, node.predicate)}
    return {Local(): local_map(base, node)}


def _bytes(root):
    return evaluate_cost(root).bytes_moved


__all__ = [
    "PREFERENCE",
    "is_contraction",
    "partition_vectors",
    "contraction",
    "join_alone",
    "aggregate_alone",
    "per_tuple",
]

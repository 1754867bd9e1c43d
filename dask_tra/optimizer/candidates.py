"""Every strategy of every TRA operator, costed in closed form (see ``symbolic``).

Each function takes the operator and a ``View`` per input and returns ``{strategy: Cand}``,
keyed by the strategy objects of ``operators.registry`` with every parameter costing chose
(``Bmm(side)``, ``EinDecomp(d)``, ``TwoPhase(plan)``), each ``Cand`` tagged with its own;
``only`` (a strategy, its open parameters None) restricts it to the candidates it admits (the
final costing of a chosen plan passes the chosen ``Cand.strategy`` back). The strategies are
those of ``strategies`` (which builds their IA plans), move for move:

- contraction: ``bmm`` (broadcast the side that moves fewer bytes, the other partitioned
  by its output dims), ``cmm`` (co-partition on the join keys, pre-aggregate, shuffle
  partials), ``align-left``/``align-right`` (keep a placed side, bring the other to its
  partners), ``rmm`` (replicate onto the output-block grid), ``d=[...]`` (EinDecomp);
- join alone: ``bcast-left``, ``bcast-right``, ``copart``, ``align-*``;
- aggregate alone: ``local``, ``two-phase``, ``shuffle``;
- per-tuple operators run where their input is.

Operators with a module in ``operators`` (Concat) are costed there. The join-alone strategies and
the contraction's bmm, cmm and align are written once (``join_alone``, ``contraction``) and
costed here by running them with a ``movers.SymbolicMover``.
"""

from __future__ import annotations

import math

import numpy as np

from ..ia.partitioning import Grid, part
from ..tra.expr import Join
from . import contraction as bodies
from . import join_alone as join_bodies
from . import twophase_strategy
from .movers import SymbolicMover
from .operators.registry import (
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
    TwoPhase,
    partition_vectors,
)
from .symbolic import (
    Cand,
    Moves,
    cell_flops,
    finish,
    grid_key_sites,
    grid_layout,
    grid_need,
    key_bytes,
    key_elements,
    makes_products,
    partials_in,
    partials_out,
    placing_sites,
    present_keys,
    reduce_to,
    row_counts,
    side_rows,
    single,
    site_sum,
    sparse_products,
    wsum,
)


def _grid_products(join, grid, s):
    """Per-site flops when the join's products are computed on ``grid``'s cells."""
    p = math.prod(grid.groups)
    flops = cell_flops(join, grid.dims, grid.groups)
    sites = (np.arange(len(flops)) * s // p) if p else np.zeros(len(flops), np.int64)
    return site_sum(flops, sites, s)


def _side_products(join, layout, pos, frontier, s):
    """Per-site flops when each product is computed where one side's tuple (single site) sits."""
    flops = cell_flops(join, pos, frontier)
    sites = placing_sites(layout)
    ok = sites >= 0
    return site_sum(flops[ok], sites[ok], s)


def _close(agg, mv: Moves, placed, s, strategy: Strategy, detail=None) -> Cand:
    """The aggregation after ``mv``'s moves, its products placed as ``(partials, flops)``."""
    partial, flops = placed
    join = agg.child  # a contraction's, or any relation an Aggregate alone pre-sums
    products = isinstance(join, Join) and makes_products(join)
    out, moved, paper, tasks, how = finish(mv, partial, agg.type, s, products)
    nb = key_bytes(agg.type)
    peak = mv.site_in + wsum(nb, partial) + (wsum(nb, out) if how != "local" else 0)
    steps = list(mv.steps)
    site_moved, site_sent = mv.site_moved, mv.site_sent
    if how != "local":
        steps.append(("aggregate partials", None, moved))
        site_moved = site_moved + partials_in(partial, out, agg.type)
        site_sent = site_sent + partials_out(partial, out, agg.type)
    return Cand(
        out,
        mv.moved + moved,
        mv.paper + paper,
        peak,
        flops,
        tasks,
        mv.present,
        dict(detail or {}, aggregate=how, steps=steps),
        site_moved,
        site_sent,
        strategy=strategy,
    )


class _Summing(SymbolicMover):
    """A contraction's moves (``contraction.py``'s bodies) costed; its ``join`` makes the
    products where ``at`` says and closes the aggregation of their partial sums (``_close``)."""

    def __init__(self, agg, views, s, side_placed, on_grid):
        super().__init__(agg.child, views, s)
        self.agg, self.side_placed, self.on_grid = agg, side_placed, on_grid

    def join(self, left, right, at, strategy) -> Cand:
        placed = self.on_grid(at) if isinstance(at, Grid) else self.side_placed((left, right)[at], at)
        detail = {"bside": strategy.side} if isinstance(strategy, Bmm) else None  # explain()'s words
        return _close(self.agg, self.mv, placed, self.s, strategy, detail)


def contraction(agg, left, right, s, only: Strategy | None = None, eindecomp=True, rates=None, prune=None) -> dict:
    """``rates``: the time objective (two-phase places by it); ``only``: the candidates that
    strategy admits (``TwoPhase(plan)``: the two-phase plan chosen before, whose placement the
    final costing re-costs rather than a new greedy's); ``prune``: the search's ``Pruner``
    (EinDecomp vectors whose lower bound cannot make the kept plans are not costed; see
    ``grid_bound``)."""
    join, g = agg.child, agg.group_by
    out = join.type.frontier
    kl, kr = left.type.key_arity, right.type.key_arity
    lpos = list(range(kl))
    rpos = [join.right_out[d] for d in range(kr)]
    views = (left, right)
    pos = (lpos, rpos)
    outf = agg.type.frontier
    cands: dict[Strategy, Cand] = {}

    def want(strategy: Strategy) -> bool:
        return only is None or only.admits(strategy)

    sparse = join.type.keys is not None
    jk = present_keys(join.type) if sparse else np.zeros((0, len(out)), np.int64)

    def side_placed(layout, i):
        """(partials, flops) when the products are made where side i's tuples (one site each) are."""
        if sparse:
            return sparse_products(
                join, g, outf, placing_sites(layout)[side_rows(jk, pos[i], views[i].type.frontier)], s
            )
        keep = [d for d in range(len(pos[i])) if pos[i][d] in g]
        partial = reduce_to(layout, views[i].type.frontier, keep, outf, [g.index(pos[i][d]) for d in keep])
        return partial, _side_products(join, layout, pos[i], views[i].type.frontier, s)

    def on_grid(grid):
        """(partials, flops) when the products are made on ``grid``'s cells."""
        if sparse:
            return sparse_products(join, g, outf, grid_key_sites(grid, out, jk, s), s)
        return grid_need(grid, g, outf, s), _grid_products(join, grid, s)

    def mover() -> _Summing:
        return _Summing(agg, views, s, side_placed, on_grid)

    best: tuple[Bmm, Cand] | None = None  # the side whose broadcast moves fewer bytes
    for bside in SIDES:
        if want(Bmm(bside)):
            c = bodies.bmm(agg, mover(), Bmm(bside))
            if best is None or c.moved < best[1].moved:
                best = Bmm(bside), c
    if best is not None:
        cands[best[0]] = best[1]
    if want(Cmm()) and (c := bodies.cmm(agg, mover(), Cmm())) is not None:
        cands[Cmm()] = c
    for side in ("right", "left"):
        if want(Align(side)) and (c := bodies.align(agg, mover(), Align(side))) is not None:
            cands[Align(side)] = c
    grids: dict[Strategy, Grid] = {Rmm(): part(g, out)}
    if eindecomp:
        for d in partition_vectors(out, s):
            dims = tuple(i for i, x in enumerate(d) if x > 1)
            grids[EinDecomp(tuple(d))] = Grid(dims, tuple(d[i] for i in dims))
    names = [st for st in grids if want(st)]
    if prune is not None and not sparse and len(set(map(id, views))) == 2:
        for st in cands:
            prune.add(st, cands[st])
        rest = [st for st in names if isinstance(st, EinDecomp) and math.prod(grids[st].groups) == s]
        bounds: dict[Strategy, tuple] = {st: grid_bound(agg, views, pos, grids[st], s) for st in rest}
        names = [st for st in names if st not in bounds] + sorted(bounds, key=lambda st: prune.seconds(*bounds[st][:3]))
    else:
        prune, bounds = None, {}
    made: dict = {}
    home = None  # where a candidate whose partials are summed puts its result (``finish``)
    for st in names:
        grid = grids[st]
        if st in bounds and bounds[st][3] > 1 and home is None:
            home = grid_layout(part(range(len(outf)), outf), outf, s)
        if st in bounds and prune.skip(*bounds[st][:3], home if bounds[st][3] > 1 else None):
            prune.pruned += 1
            continue
        mv = Moves(views, s)
        for i in (0, 1):
            if set(grid.dims) <= set(pos[i]):
                local = Grid(tuple(pos[i].index(d) for d in grid.dims), grid.groups)
                mv.place(i, grid_layout(local, views[i].type.frontier, s), f"shuffle by {local}")
            else:
                mv.replicate(i, grid, pos[i], out)
        made[st] = _close(agg, mv, on_grid(grid), s, st)
        if prune is not None:
            prune.add(st, made[st])
    cands.update((st, made[st]) for st in grids if st in made)  # in the grids' order
    fixed = only.plan if isinstance(only, TwoPhase) else None
    if want(TwoPhase()) and (fixed is not None or twophase_strategy.applies(agg, views)):
        c = twophase_strategy.cost(agg, views, s, rates, fixed)
        assert isinstance(c.strategy, TwoPhase)  # carrying its placement (``twophase_strategy.cost``)
        cands[c.strategy] = c
    return cands


def grid_bound(agg, views, pos, grid, s):
    """(per-site flops, a lower bound on tasks, a lower bound on bytes moved, partials per output
    key) of the grid
    candidate ``grid`` (∏ groups = s: each cell its own site), in O(keys + cells), without its
    layouts: each input tuple must reach the cells it belongs to (the product of the groups of
    the grid dims its side lacks), less the sites that hold it already (a free input is made at
    one of them); each output key has one partial per cell along the cut aggregated dims, all
    but one moved to its home. The flops are the candidate's own (``_grid_products``)."""
    join, g = agg.child, agg.group_by
    groups = dict(zip(grid.dims, grid.groups))
    nbytes = 0
    for v, p in zip(views, pos):
        copies = math.prod(n for d, n in groups.items() if d not in p)
        if copies > 1:
            have = 1 if v.free else row_counts(v.present)
            nbytes += int((key_bytes(v.type) * np.maximum(copies - have, 0)).sum())
    partials = math.prod(n for d, n in groups.items() if d not in g)
    out = key_bytes(agg.type)
    nbytes += int(out.sum()) * (partials - 1)
    return _grid_products(join, grid, s), len(out) * partials, nbytes, partials


def _align(join, views, f, m, s):
    """Keep side ``f`` where it is (one site per tuple); send side ``m`` to its partners' sites
    (the moves of ``join_alone.align_side``): (the Moves, side f's layout), or None."""
    mover = SymbolicMover(join, views, s)
    kept = mover.keep(f)
    if kept is None:
        return None
    keys = (join.left_keys, join.right_keys)
    mover.align(m, (kept, keys[f], keys[m]))
    return mover.mv, kept


def co_located(join, views, s) -> Align | None:
    """The align strategy under which this join moves nothing (its inputs' partners already sit
    together), or None: then it is the plan, with no search (``search.plan_node``)."""
    for f, m, side in ((0, 1, "right"), (1, 0, "left")):
        if views[f].free or views[m].free or not join.left_keys:
            continue
        c = _align(join, views, f, m, s)
        if c is not None and c[0].moved == 0:
            return Align(side)
    return None


def join_alone(join, left, right, s, only: Strategy | None = None) -> dict:
    """The join-alone strategies (``join_alone.py``: one body each) costed by a ``SymbolicMover``."""
    return join_bodies.run(join, lambda: SymbolicMover(join, (left, right), s), only)


def aggregate_alone(agg, child, s, only: Strategy | None = None) -> dict:
    g = agg.group_by
    f = child.type.frontier
    outf = agg.type.frontier
    cands: dict[Strategy, Cand] = {}

    def want(strategy: Strategy) -> bool:
        return only is None or only.admits(strategy)

    full = part(range(len(f)), f)
    mv = Moves((child,), s)
    base = mv.place(0, grid_layout(full, f, s), "") if child.free else child.layout
    partial = reduce_to(base, f, list(g), outf, list(range(len(g))))
    local = single(base) and single(partial)
    k = agg.kernel
    two_phase = not local and single(base) and k.associative and k.commutative  # replicas: fold once
    nb = key_bytes(agg.type)
    if local and want(Local()):
        cands[Local()] = Cand(
            partial,
            mv.moved,
            mv.paper,
            mv.site_in + wsum(nb, partial),
            _elements_at(child.type, base, s),
            int(partial.sum()),
            mv.present,
            {"steps": mv.steps},
            strategy=Local(),
        )
    if two_phase and want(PreAggregate()):
        cands[PreAggregate()] = _close(agg, _copy(mv), (partial, _elements_at(child.type, base, s)), s, PreAggregate())
    if not local and want(Repartition()):
        m2 = _copy(mv)
        lay = m2.place(0, grid_layout(part(g, f), f, s), f"shuffle by PART{list(g)}")
        out = grid_layout(part(range(len(outf)), outf), outf, s)
        cands[Repartition()] = Cand(
            out,
            m2.moved,
            m2.paper,
            m2.site_in + wsum(nb, out),
            _elements_at(child.type, lay, s),
            int(out.sum()),
            m2.present,
            {"steps": m2.steps},
            strategy=Repartition(),
        )
    if child.free and want(Local()):
        m3 = Moves((child,), s)
        lay = m3.place(0, grid_layout(part(g, f), f, s), "")
        out = grid_layout(part(range(len(outf)), outf), outf, s)
        cands[Local()] = Cand(
            out,
            0,
            0,
            m3.site_in + wsum(nb, out),
            _elements_at(child.type, lay, s),
            int(out.sum()),
            m3.present,
            {"steps": []},
            strategy=Local(),
        )
    return cands


def per_tuple(node, child, s, only: Strategy | None = None) -> dict:
    f = child.type.frontier
    mv = Moves((child,), s)
    base = mv.place(0, grid_layout(part(range(len(f)), f), f, s), "") if child.free else child.layout
    flops = np.zeros(s)
    tasks = 0
    # no task of its own: emission fuses a map into its reader
    lay = base if node.keeps_keys else relabelled(base, relabel_rows(node, f))
    if node.flops:
        flops = node.flops * _elements_at(child.type, base, s)
    nb = key_bytes(node.type)
    peak = wsum(key_bytes(child.type), base) + wsum(nb, lay)
    return {Local(): Cand(lay, 0, 0, peak, flops, tasks, mv.present, {}, strategy=Local())}


def relabel_rows(node, in_frontier) -> np.ndarray:
    """For a tuple map: per row of the output's layout, the row of the input's its key is made
    from (its source), -1 for a key the output does not hold."""
    out_type = node.type
    rows = np.full(math.prod(out_type.frontier), -1, np.int64)
    keys = list(out_type.iter_keys())
    if keys:
        src = np.array([node.source(k) for k in keys]).reshape(len(keys), -1)
        at = np.ravel_multi_index(src.T, in_frontier) if src.shape[1] else np.zeros(len(keys), np.int64)
        dst = (
            np.ravel_multi_index(np.array(keys).T, out_type.frontier)
            if out_type.frontier
            else np.zeros(len(keys), np.int64)
        )
        rows[dst] = at
    return rows


def relabelled(base, rows) -> np.ndarray:
    """The layout (or copies) of a relabelling's output, from its input's (``relabel_rows``)."""
    lay = np.zeros((len(rows), base.shape[1]), bool)
    held = rows >= 0
    lay[held] = base[rows[held]]
    return lay


def _elements_at(t, layout, s):
    return wsum(key_elements(t).astype(float), layout)


def _copy(mv: Moves) -> Moves:
    c = Moves(mv.views, mv.s)
    c._present, c.moved, c.paper = dict(mv._present), mv.moved, mv.paper
    c.site_in, c.steps = mv.site_in.copy(), list(mv.steps)
    c.site_moved, c.site_sent = mv.site_moved.copy(), mv.site_sent.copy()
    return c

"""Every strategy of every TRA operator, costed in closed form (see ``symbolic``).

Each function takes the operator and a ``View`` per input and returns ``{strategy: Cand}``,
keyed by the strategy objects of ``operators.registry`` with every parameter costing chose
(``Bmm(side)``, ``EinDecomp(d)``, ``TwoPhase(plan)``), each ``Cand`` tagged with its own;
``only`` (a strategy, its open parameters None) restricts it to the candidates it admits (the
final costing of a chosen plan passes the chosen ``Cand.strategy`` back).

A contraction's, a join's and an aggregation's strategies are written once, each a class with
its body (``contraction``, ``join_alone``, ``aggregate_alone``): costed here by running every
registered one (``operators.base.run``) with a symbolic mover (``movers``); ``strategies``
builds the chosen one with an IA mover. A contraction's EinDecomp vectors whose lower bound
cannot make the search's kept plans are not costed (``grid_bound``, the search's ``Pruner``).
Per-tuple operators run where their input is (``per_tuple``); operators with a module in
``operators`` (Concat) are costed there.
"""

from __future__ import annotations

import math

import numpy as np

from ..ia.partitioning import part, part_all
from .movers import Contraction, SymbolicAggregator, SymbolicMover, SymbolicSummer, grid_products, symbolic_bytes
from .operators.base import STRATEGIES, OperatorKind, planning, run
from .operators.registry import Align, Copart, EinDecomp, Local, Strategy
from .symbolic import Cand, Detail, Moves, grid_layout, key_bytes, key_elements, row_counts, wsum


def contraction(agg, left, right, s, only: Strategy | None = None, eindecomp=True, rates=None, prune=None) -> dict:
    """``rates``: the time objective (two-phase places by it); ``only``: the candidates that
    strategy admits (``TwoPhase(plan)``: the two-phase plan chosen before, whose placement the
    final costing re-costs rather than a new greedy's); ``eindecomp``: False leaves EinDecomp's
    vectors out; ``prune``: the search's ``Pruner`` (EinDecomp vectors whose lower bound cannot
    make the kept plans are not costed; see ``grid_bound``)."""
    views = (left, right)
    shared = Contraction(agg, views, s, rates)

    def mover() -> SymbolicSummer:
        return SymbolicSummer(shared)

    if prune is not None and (agg.child.type.keys is not None or len(set(map(id, views))) != 2):
        prune = None
    cands: dict[Strategy, Cand] = {}
    for cls in planning(OperatorKind.CONTRACTION, only):
        if cls is EinDecomp and not eindecomp:
            continue
        instances = cls.instances(agg, s, only)
        if cls is EinDecomp and prune is not None:
            made = _pruned(agg, instances, views, shared, prune, s)
        else:
            made = {st: c for st in instances if (c := st.body(agg, mover())) is not None}
        made = cls.pick(made, symbolic_bytes) if made else made
        if prune is not None and cls is not EinDecomp:
            for st, c in made.items():
                prune.add(st, c)
        cands.update(made)
    return cands


def _pruned(agg, instances, views, shared: Contraction, prune, s) -> dict:
    """EinDecomp's instances costed, those with one site per cell in the order of their lower
    bounds (``grid_bound``), skipping any whose bound the search's ``prune`` rules out;
    returned in ``instances``' order."""
    outf = agg.type.frontier
    bounds = {st: grid_bound(agg, views, shared.pos, st.grid, s) for st in instances if math.prod(st.grid.groups) == s}
    order = [st for st in instances if st not in bounds] + sorted(bounds, key=lambda st: prune.seconds(*bounds[st][:3]))
    made = {}
    home = None  # where a candidate whose partials are summed puts its result (``symbolic.finish``)
    for st in order:
        if st in bounds:
            summed = bounds[st][3] > 1
            if summed and home is None:
                home = grid_layout(part(range(len(outf)), outf), outf, s)
            if prune.skip(*bounds[st][:3], home if summed else None):
                prune.pruned += 1
                continue
        c = st.body(agg, SymbolicSummer(shared))
        if c is not None:
            made[st] = c
            prune.add(st, c)
    return {st: made[st] for st in instances if st in made}


def grid_bound(agg, views, pos, grid, s):
    """(per-site flops, a lower bound on tasks, a lower bound on bytes moved, partials per output
    key) of the grid
    candidate ``grid`` (∏ groups = s: each cell its own site), in O(keys + cells), without its
    layouts: each input tuple must reach the cells it belongs to (the product of the groups of
    the grid dims its side lacks), less the sites that hold it already (a free input is made at
    one of them); each output key has one partial per cell along the cut aggregated dims, all
    but one moved to its home. The flops are the candidate's own (``movers.grid_products``)."""
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
    return grid_products(join, grid, s), len(out) * partials, nbytes, partials


def co_located(join, views, s) -> dict | None:
    """{strategy: Cand} of the align strategy under which this join moves nothing (its inputs'
    partners already sit together, or one side is free: made where its partners are), or None:
    then it is the plan, with no search (``search.plan_node``), costed once here. Two free
    inputs paired key for key (a block function's ``block_info``) are co-partitioned: every join
    strategy of dask_tra's lays them out alike (one registered elsewhere may not: then they are
    searched)."""
    left, right = join.left.type, join.right.type
    if views[0].free and views[1].free:
        whole = join.left_keys == tuple(range(left.key_arity)) == join.right_keys
        alike = whole and join.left_keys and left.frontier == right.frontier and _own_join_strategies()
        return join_alone(join, views[0], views[1], s, Copart()) if alike else None
    if not join.left_keys or _apart(join, views):
        return None
    for kept, side in ((0, "right"), (1, "left")):
        if views[kept].free:
            continue
        made = join_alone(join, views[0], views[1], s, Align(side))
        if made and all(c.moved == 0 for c in made.values()):
            return made
    return None


def _apart(join, views) -> bool:
    """Whether two placed inputs joined key for key (an elementwise operation) each hold a tuple
    where the other has no copy: then neither can stay put while the other moves nothing, which
    is read from the layouts without costing the align strategies."""
    left, right = views
    if left.free or right.free or left.type.frontier != right.type.frontier:
        return False
    if not join.left_keys == tuple(range(left.type.key_arity)) == join.right_keys:
        return False
    return bool((left.layout & ~right.present).any() and (right.layout & ~left.present).any())


def _own_join_strategies() -> bool:
    """Whether every join strategy registered is one of dask_tra's own."""
    return all(cls.__module__.startswith("dask_tra.") for cls in STRATEGIES if OperatorKind.JOIN in cls.kinds)


def join_alone(join, left, right, s, only: Strategy | None = None) -> dict:
    """The join-alone strategies (one body each: ``join_alone``, ``contraction.Align``) costed
    by a ``SymbolicMover``."""
    return run(join, OperatorKind.JOIN, s, lambda: SymbolicMover(join, (left, right), s), symbolic_bytes, only)


def aggregate_alone(agg, child, s, only: Strategy | None = None) -> dict:
    """The aggregate-alone strategies (one body each: ``aggregate_alone``) costed by a
    ``SymbolicAggregator``."""
    shared: dict = {}
    return run(agg, OperatorKind.AGGREGATE, s, lambda: SymbolicAggregator(agg, child, s, shared), symbolic_bytes, only)


def per_tuple(node, child, s, only: Strategy | None = None) -> dict:
    f = child.type.frontier
    mv = Moves((child,), s)
    base = mv.place(0, grid_layout(part_all(f, child.home), f, s), "") if child.free else child.layout
    flops = np.zeros(s)
    tasks = 0
    # no task of its own: emission fuses a map into its reader
    lay = base if node.keeps_keys else relabelled(base, relabel_rows(node, f))
    if node.flops:
        flops = node.flops * _elements_at(child.type, base, s)
    nb = key_bytes(node.type)
    peak = wsum(key_bytes(child.type), base) + wsum(nb, lay)
    return {Local(): Cand(lay, 0, 0, peak, flops, tasks, mv.present, Detail(), strategy=Local())}


def relabel_rows(node, in_frontier) -> np.ndarray:
    """For a tuple map: per row of the output's layout, the row of the input's its key is made
    from (its source), -1 for a key the output does not hold. Kept on the node (read-only): the
    search and the final costing both ask."""
    kept = node.__dict__.get("_relabel_rows")
    if kept is None or kept[0] != tuple(in_frontier):
        rows = _relabel_rows(node, in_frontier)
        rows.setflags(write=False)
        kept = node.__dict__["_relabel_rows"] = (tuple(in_frontier), rows)
    return kept[1]


def _relabel_rows(node, in_frontier) -> np.ndarray:
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

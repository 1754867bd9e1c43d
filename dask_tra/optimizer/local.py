"""The local plan: one site, nothing moves (dask's threaded and synchronous schedulers).

On one site every strategy of an operator moves nothing and computes the same flops; the
strategies differ only in the IA operators they build. There is no choice to search, so
``plan_local`` gives each operator the strategy the search ranks first on one site (the
``strategies.PREFERENCE`` order): a contraction makes each block product where its right block
is and sums the products of an output block in one task (``bmm``, its left input "broadcast" to
the one site), a join co-partitions (``copart``, or ``bcast-left`` for a cross product), an
aggregation and a per-tuple map run in place (``local``), a registered operator (``operators``)
takes its own first strategy. Each is costed exactly, in closed form (``local_cand``): every
block at site 0, no byte moved, the operator's flops, one task per result block it makes (none
for a per-tuple map: emission fuses it into its reader); emission fuses maximally as always.

Cost: one strategy per operator, no candidate search (``search.candidates`` is never called).
``choose_local`` names every operator's strategy in O(1) (``local_strategy``; a registered
operator by its own ``local`` rule), which is all the IA build needs; ``cost_local`` costs each
in a few vectorised passes over its blocks (its one-site layout column), when the plan's cost
is first read (``Plan.cost``: ``explain()``, ``measure()``) or, under a memory limit, at once.
``tests/test_local_plans.py`` checks every closed form against the search's own costing on one
site, and the plan's cost against the searched plan's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..tra import expr as tra
from ..tra.dag import walk_many
from ..tra.errors import TRAError
from . import operators
from .cost import Cost, Rates, combine_terms, measure_terms
from .memory import held_for_readers
from .operators.registry import CONTRACTION_KINDS, Bcast, Bmm, Copart, Local, Strategy
from .search import Alt, chosen, combine, fused_joins, input_alt, inputs_of, kind_of, views_of
from .symbolic import (
    Cand,
    Detail,
    cell_flops,
    gather,
    held,
    key_bytes,
    placing_sites,
    present_keys,
    reduce_to,
    sparse_products,
)


def column(t) -> np.ndarray:
    """Every block of relation type ``t`` on site 0: its one-site layout (holes have none)."""
    return held(np.ones((math.prod(t.frontier), 1), bool), t)


def _nbytes(t, layout=None) -> np.ndarray:
    """Bytes of ``t``'s blocks that ``layout`` puts on the site; all of them when None (every
    present block: the one-site ``column``)."""
    return np.array([t.nbytes], np.int64) if layout is None else key_bytes(t) @ layout


def _elements(t) -> np.ndarray:
    return np.array([float(t.elements())])


def local_cand(node, kind: str, views) -> tuple[str, Cand]:
    """(strategy name, its exact costing on one site, tagged with its strategy) for ``node`` over
    its inputs' ``views`` (``search.views_of``); the same numbers as ``search.candidates(..., s=1,
    only=cand.strategy)``."""
    strategy = local_strategy(node, kind, [v.free for v in views])
    own = kind not in CONTRACTION_KINDS and not isinstance(node, (tra.Join, tra.Aggregate))
    if own and (op := operators.lookup(node)) is not None:  # a registered operator costs itself
        made = op.costs(node, *views, 1, None)
        strategy = strategy or min(made, key=lambda st: (st.preference, st.name))
        cand = made[strategy]
    elif strategy is None:
        raise TRAError(f"{node.describe()}: no local strategy for {type(node).__name__}")
    elif kind in CONTRACTION_KINDS:
        cand = _contraction(node, *views)
    elif isinstance(node, tra.Join):
        cand = _join(node, *views)
    elif isinstance(node, tra.Aggregate):
        cand = _aggregate(node, views[0])
    else:
        cand = _per_tuple(node, views[0])
    cand.strategy = strategy
    cand.layout = held(cand.layout, node.type)
    cand.terms = measure_terms(node, cand, views)
    return strategy.name, cand


def local_strategy(node, kind: str, free: list[bool]) -> Strategy | None:
    """The strategy the search ranks first for ``node`` on one site, named without costing it
    (``free``: whether each input is free); None where only its costing tells (a registered
    operator with no ``local`` rule)."""
    if kind in CONTRACTION_KINDS:
        return Bmm("left")  # each product where its right block is, summed per output block
    if isinstance(node, tra.Join):
        return Copart() if node.left_keys else Bcast("left")
    if isinstance(node, tra.Aggregate):
        return Local()
    if (op := operators.lookup(node)) is not None:
        return None if op.local is None else op.local(node, *free)
    if isinstance(node, tra.TupleMap):
        return Local()
    raise TRAError(f"{node.describe()}: no strategies for operator {type(node).__name__} (optimizer/operators)")


def _contraction(agg, left, right) -> Cand:
    """``bmm`` broadcasting the left input: products where the right blocks are, each output
    block's products summed in one task (``candidates.contraction`` with one site)."""
    join, g = agg.child, agg.group_by
    outf = agg.type.frontier
    rpos = [join.right_out[d] for d in range(right.type.key_arity)]
    rlay = column(right.type)
    if join.type.keys is not None:
        jk = present_keys(join.type)
        partial, flops = sparse_products(join, g, outf, np.zeros(len(jk), np.int64), 1)
    else:
        keep = [d for d in range(len(rpos)) if rpos[d] in g]
        partial = reduce_to(rlay, right.type.frontier, keep, outf, [g.index(rpos[d]) for d in keep])
        flops = np.array([cell_flops(join, rpos, right.type.frontier).sum()])
    dense = join.type.keys is None and agg.type.keys is None
    site_in = _nbytes(left.type) + _nbytes(right.type)
    return Cand(
        partial,
        0,
        left.type.elements(),  # the paper's broadcast: every left float to the one site
        site_in + _nbytes(agg.type, None if dense else partial),
        flops,
        int(partial.sum()),
        [column(left.type), rlay],
        Detail(bside="left", aggregate="local"),
        np.zeros(1, np.int64),
        np.zeros(1),
    )


def _join(join, left, right) -> Cand:
    """``copart`` (``bcast-left`` for a join with no join keys), as ``candidates.join_alone``."""
    outf = join.type.frontier
    lay, rlay = column(left.type), column(right.type)
    if join.left_keys:
        paper = 0
        layout = np.ones((math.prod(outf), 1), bool)
    else:
        paper = left.type.elements()
        rpos = [join.right_out[d] for d in range(right.type.key_arity)]
        layout = gather(rlay, right.type.frontier, rpos, outf)
    sites = placing_sites(layout)
    ok = sites >= 0
    flops = np.array([cell_flops(join, list(range(len(outf))), outf)[ok].sum()])
    site_in = _nbytes(left.type) + _nbytes(right.type)
    return Cand(
        layout,
        0,
        paper,
        site_in + _nbytes(join.type, None if join.type.keys is None else layout),
        flops,
        int(layout.sum()),
        [lay, rlay],
        Detail(),
        np.zeros(1, np.int64),
        np.zeros(1),
    )


def _aggregate(agg, child) -> Cand:
    """``local``: every group summed where it is, one task per result block
    (``candidates.aggregate_alone`` with one site)."""
    f, outf = child.type.frontier, agg.type.frontier
    base = column(child.type)
    if child.free:  # an input aggregated where it is made: one task per result block
        out = np.ones((math.prod(outf), 1), bool)
        return Cand(
            out,
            0,
            0,
            _nbytes(child.type) + _nbytes(agg.type),
            _elements(child.type),
            int(out.sum()),
            [base],
            Detail(),
        )
    dense = child.type.keys is None
    if dense:
        partial = np.ones((math.prod(outf), 1), bool)
    else:
        partial = reduce_to(base, f, list(agg.group_by), outf, list(range(len(agg.group_by))))
    return Cand(
        partial,
        0,
        0,
        _nbytes(agg.type, None if dense and agg.type.keys is None else partial),
        _elements(child.type),
        int(partial.sum()),
        [base],
        Detail(),
    )


def _per_tuple(node, child) -> Cand:
    """``local``: a tuple map runs where its input is, fused into its reader (no task)."""
    flops = node.flops * _elements(child.type) if node.flops else np.zeros(1)
    peak = _nbytes(child.type) + _nbytes(node.type)
    return Cand(column(node.type), 0, 0, peak, flops, 0, [column(child.type)], Detail())


@dataclass(frozen=True)
class Chosen:
    """An operator's local strategy before it is costed (``cost_local`` puts its ``Cand`` in its
    place); ``strategy`` None: its costing picks it (``local_strategy``)."""

    strategy: Strategy | None


def choose_local(placements, order) -> dict[int, Alt]:
    """{id(node): Alt} giving every node of ``order`` (``walk_many``) its local strategy with no
    costing, O(1) an operator: the layouts and costs are filled in by ``cost_local`` when asked."""
    fused = fused_joins(order)
    alts: dict[int, Alt] = {}
    for node in order:
        if id(node) in fused:
            continue
        if isinstance(node, tra.Input):
            alts[id(node)] = input_alt(node, 1, placements or {})
            continue
        kind = kind_of(node)
        combo = tuple(alts[id(c)] for c in inputs_of(node, kind))
        strategy = local_strategy(node, kind, [a.free for a in combo])
        # no layout until costed: nothing reads it before (the IA build reads the strategy)
        alts[id(node)] = Alt(node, strategy.name if strategy else "", combo, Chosen(strategy), None)  # type: ignore[arg-type]
    return alts


def undecided(alts: dict[int, Alt]) -> bool:
    """Whether some operator's strategy waits for its costing (``Chosen(None)``)."""
    return any(isinstance(a.cand, Chosen) and a.cand.strategy is None for a in alts.values())


def cost_local(roots, alts: dict[int, Alt], rates: Rates, memory_limit: int | None, order):
    """Cost the chosen ``alts`` exactly, each in place (``local_cand``): (the exact Cost,
    {id(alt): Cand}); None when an operator's working set exceeds ``memory_limit``."""
    cands: dict[int, Cand] = {}
    for node in order:
        alt = alts.get(id(node))
        if alt is None or not alt.inputs:  # a join planned inside its contraction, an input
            continue
        name, cand = local_cand(node, kind_of(node), views_of(alt.inputs))
        vars(alt).update(vars(combine(node, name, cand, alt.inputs, rates)))
        if memory_limit is not None and alt.peak.max() > memory_limit:
            return None
        alt.table = {name: (alt.bytes, alt.seconds)}
        cands[id(alt)] = cand
    return local_cost(tuple(alts[id(r)] for r in roots), cands, rates), cands


def plan_local(roots, placements, rates: Rates, memory_limit: int | None, order=None):
    """The local plan of ``roots``, costed: (their Alts, the exact Cost, {id(alt): Cand}); None
    when an operator's working set exceeds ``memory_limit`` (the search then decides, and
    explains a refusal). ``order``: the nodes in ``walk_many`` order, when already walked."""
    order = walk_many(roots) if order is None else order
    alts = choose_local(placements, order)
    costed = cost_local(roots, alts, rates, memory_limit, order)
    return None if costed is None else (tuple(alts[id(r)] for r in roots), *costed)


def local_cost(roots, cands, rates: Rates) -> Cost:
    """The exact cost of a local plan (what ``final_costs`` sums on one site, with no re-costing:
    nothing moves, so no operator's copies change another's cost)."""
    tasks = paper = 0
    flops = np.zeros(1)
    terms: dict[str, float] = {}
    every = chosen(roots)
    for alt in every:
        cand = cands.get(id(alt))
        if cand is None:
            continue
        tasks += cand.tasks
        paper += cand.paper
        flops = flops + cand.flops
        terms = combine_terms(terms, (cand.terms,))
    if cands:
        peak = np.zeros(1, np.int64)
        for a in roots:
            np.maximum(peak, np.asarray(a.peak, np.int64), out=peak)
        if rates.threads:  # streamed: results read at different times are held meanwhile
            peak = peak + held_for_readers(every, 1)[0]
    else:  # a plan that is just placed inputs
        peak = np.zeros(1, np.int64)
        for a in roots:
            peak = np.maximum(peak, key_bytes(a.node.type) @ a.layout)
    zero = np.zeros(1)
    return Cost(
        0,
        {0: int(peak[0])},
        paper,
        tasks,
        (float(flops[0]),),
        rates.seconds(0, tasks, flops, zero, terms, zero),
        (0.0,),
        (0.0,),
        terms,
    )


__all__ = ["plan_local", "choose_local", "cost_local", "undecided", "local_cand", "local_cost", "column"]

"""Movers: one strategy body, two interpretations (its closed-form cost and its IA plan).

A strategy body (``Strategy.body``: ``join_alone``, ``contraction``, ``aggregate_alone``) says
which input goes where and how the result is made, in the mover's words: ``partitioned`` (a
target layout by a grid over an input's key dims), ``place`` (an input laid out as a target),
``broadcast`` (an input to every site holding a partner tuple), ``keep`` (a placed input where
it is), ``align`` (an input to its partners' sites) and ``replicate`` (an input to every cell
of a grid over the join's output keys it belongs to), then ``join``. A contraction's mover
also says a two-phase plan's words (``placement``, ``to_join_groups``); an aggregation's its
own (``held``, ``grouped``, ``aggregate``, ``pre_aggregate``). Two movers interpret each:

- symbolic (``SymbolicMover``, ``SymbolicSummer``, ``SymbolicAggregator``) costs it in closed
  form: handles are layouts (``symbolic``), every move is counted by ``symbolic.Moves``, and
  ``join``/``aggregate`` return the ``Cand`` the search compares;
- IA (``IAMover``, ``IASummer``, ``IAAggregator``) builds it: handles are IA nodes
  (``layout.place``/``broadcast``/``align``), and ``join``/``aggregate`` return the IA node
  that runs.

So the two cannot drift apart: a strategy is written once, and ``tests/test_symbolic.py``
checks that the costing of every registered strategy equals its expanded plan's bytes.
A mover answers None where a move does not apply (``keep`` of a replicated input).
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from ..ia import LocalAggregate, LocalJoin, Placed, Shuffle, SiteMap, part, part_all
from ..ia.nodes import IANode, expand
from ..ia.partitioning import Grid
from ..tra.expr import Join
from . import twophase_strategy as two_phase
from .contraction import Bmm, TwoPhase
from .cost import evaluate_cost
from .join_alone import output_dims
from .layout import Built, align, broadcast, finish_aggregate, partitioned_by, place
from .layout import start as start_of
from .operators.base import AggregateMover, ContractionMover, Mover, TwoPhaseMover
from .symbolic import (
    Cand,
    Detail,
    Moves,
    View,
    cell_flops,
    finish,
    gather,
    grid_key_sites,
    grid_layout,
    grid_need,
    held,
    homes,
    key_bytes,
    key_elements,
    makes_products,
    partials_in,
    partials_out,
    placing_sites,
    present_keys,
    reduce_to,
    side_rows,
    single,
    site_sum,
    sparse_products,
    start,
    wsum,
)
from .twophase import TwoPhasePlan

# ---------------------------------------------------------------- symbolic: closed-form costs


class SymbolicMover:
    """A strategy body costed in closed form: handles are layouts (keys × sites)."""

    def __init__(self, join, views: tuple[View, ...], s: int, pos: tuple | None = None):
        self.j, self.views, self.s = join, tuple(views), s
        self.mv = Moves(self.views, s)
        self.pos = pos or (output_dims(join, 0), output_dims(join, 1))

    def free(self, i: int) -> bool:
        return self.views[i].free

    def home(self, i: int) -> tuple[int, int] | None:
        return self.views[i].home

    def output_dims(self, i: int) -> list[int]:
        return self.pos[i]

    def frontier(self, i: int) -> tuple[int, ...]:
        return tuple(self.views[i].type.frontier)

    def partitioned(self, i: int, grid: Grid) -> np.ndarray:
        f = self.views[i].type.frontier
        return grid_layout(grid, f, self.s)

    def place(self, i: int, target: np.ndarray, what: str) -> np.ndarray:
        return self.mv.place(i, target, what)

    def broadcast(self, i: int, partners: tuple) -> np.ndarray:
        target, theirs, ours = partners
        return self.mv.broadcast(i, (target, self.views[1 - i].type, theirs, ours))

    def keep(self, i: int) -> np.ndarray | None:
        v = self.views[i]
        if not single(v.layout):
            return None
        return self.mv.place(i, v.layout, "")

    def align(self, i: int, partners: tuple) -> np.ndarray:
        kept, theirs, ours = partners
        v, other = self.views[i], self.views[1 - i]
        need = reduce_to(kept, other.type.frontier, list(theirs), v.type.frontier, list(ours))
        empty = ~need.any(axis=1)
        need = need.copy()
        need[empty, 0] = True
        return self.mv.place(i, need, "send to partners")

    def replicate(self, i: int, grid: Grid) -> np.ndarray:
        return self.mv.replicate(i, grid, self.pos[i], self.j.type.frontier)

    def join(self, left, right, at: int | Grid, strategy) -> Cand:
        j, mv, s = self.j, self.mv, self.s
        outf = j.type.frontier
        if isinstance(at, Grid):
            layout = grid_layout(at, outf, s)
        else:
            layout = gather((left, right)[at], self.views[at].type.frontier, self.pos[at], outf)
        flops = np.zeros(s)
        if single(layout):  # each product made where its result tuple sits
            sites = placing_sites(layout)
            ok = sites >= 0
            flops = site_sum(cell_flops(j, list(range(len(outf))), outf)[ok], sites[ok], s)
        nb = key_bytes(j.type)
        return Cand(
            layout,
            mv.moved,
            mv.paper,
            mv.site_in + wsum(nb, layout),
            flops,
            int(layout.sum()),
            mv.present,
            Detail(mv.steps),
            mv.site_moved,
            mv.site_sent,
            strategy=strategy,
        )


def close_aggregate(agg, mv: Moves, placed, s, strategy, detail: Detail | None = None, home=None) -> Cand:
    """The aggregation after ``mv``'s moves, its products (or tuples) placed as ``(partials,
    flops)``: local where each group has one partial, else the partials summed at their homes
    (PART(all dims) turned by ``home``)."""
    partial, flops = placed
    join = agg.child  # a contraction's, or any relation an Aggregate alone pre-sums
    products = isinstance(join, Join) and makes_products(join)
    out, moved, paper, tasks, how = finish(mv, partial, agg.type, s, products, home)
    nb = key_bytes(agg.type)
    peak = mv.site_in + wsum(nb, partial) + (wsum(nb, out) if how != "local" else 0)
    steps = list(mv.steps)
    site_moved, site_sent = mv.site_moved, mv.site_sent
    if how != "local":
        steps.append(("aggregate partials", None, moved))
        site_moved = site_moved + partials_in(partial, out, agg.type)
        site_sent = site_sent + partials_out(partial, out, agg.type)
    facts = detail or Detail()
    return Cand(
        out,
        mv.moved + moved,
        mv.paper + paper,
        peak,
        flops,
        tasks,
        mv.present,
        Detail(steps, how, facts.bside, facts.placement, facts.balance),
        site_moved,
        site_sent,
        strategy=strategy,
    )


class Contraction:
    """What every candidate of one contraction's costing shares: where its products' partial
    sums are when the products are made where one side's tuples are (``side_placed``) or on a
    grid's cells (``on_grid``), and the time objective (two-phase places by it)."""

    def __init__(self, agg, views, s: int, rates=None):
        join = agg.child
        self.agg, self.views, self.s, self.rates = agg, tuple(views), s, rates
        self.pos = (output_dims(join, 0), output_dims(join, 1))
        self.outf = agg.type.frontier
        self.sparse = join.type.keys is not None
        self.jk = present_keys(join.type) if self.sparse else np.zeros((0, len(join.type.frontier)), np.int64)

    def side_placed(self, layout, i):
        """(partials, flops) when the products are made where side i's tuples (one site each) are."""
        agg, s = self.agg, self.s
        join, g, pos, v = agg.child, agg.group_by, self.pos[i], self.views[i]
        if self.sparse:
            rows = side_rows(self.jk, pos, v.type.frontier)
            return sparse_products(join, g, self.outf, placing_sites(layout)[rows], s)
        keep = [d for d in range(len(pos)) if pos[d] in g]
        partial = reduce_to(layout, v.type.frontier, keep, self.outf, [g.index(pos[d]) for d in keep])
        flops = cell_flops(join, pos, v.type.frontier)
        sites = placing_sites(layout)
        ok = sites >= 0
        return partial, site_sum(flops[ok], sites[ok], s)

    def on_grid(self, grid: Grid):
        """(partials, flops) when the products are made on ``grid``'s cells."""
        agg, s = self.agg, self.s
        join, g = agg.child, agg.group_by
        if self.sparse:
            return sparse_products(join, g, self.outf, grid_key_sites(grid, join.type.frontier, self.jk, s), s)
        return grid_need(grid, g, self.outf, s), grid_products(join, grid, s)


def grid_products(join, grid: Grid, s: int) -> np.ndarray:
    """Per-site flops when the join's products are computed on ``grid``'s cells."""
    p = math.prod(grid.groups)
    flops = cell_flops(join, grid.dims, grid.groups)
    sites = grid.cell_sites(np.arange(len(flops)), s) if p else np.zeros(len(flops), np.int64)
    return site_sum(flops, sites, s)


class SymbolicSummer(SymbolicMover):
    """A contraction's body costed: its ``join`` makes the products where ``at`` says and
    closes the aggregation of their partial sums (``close_aggregate``); a two-phase plan is
    costed from its placement's own figures (``twophase_strategy.cand``)."""

    def __init__(self, c: Contraction):
        super().__init__(c.agg.child, c.views, c.s, c.pos)
        self.c = c
        self.lineage = None  # the two-phase placement's lineage and costs (``placement``)
        self.present: list = [None, None]
        self.site_in = 0  # bytes each site holds once the inputs are at their join groups

    def placement(self, strategy: TwoPhase) -> TwoPhasePlan | None:
        c = self.c
        if strategy.plan is None and not two_phase.applies(c.agg, c.views):
            return None
        self.lineage, plan = two_phase.placement(c.agg, c.views, c.s, c.rates, strategy.plan)
        return plan

    def to_join_groups(self, i: int, plan: TwoPhasePlan) -> np.ndarray:
        assert self.lineage is not None  # ``placement`` came first
        present, site_in = two_phase.to_join_groups(self.lineage, plan, i, self.s)
        self.present[i] = present
        self.site_in += site_in
        return present

    def join(self, left, right, at, strategy) -> Cand:
        c = self.c
        if isinstance(at, Grid):
            return close_aggregate(c.agg, self.mv, c.on_grid(at), self.s, strategy)
        if isinstance(at, TwoPhasePlan):
            assert self.lineage is not None  # ``placement`` came first
            return two_phase.cand(c.agg, self.lineage, at, self.present, self.site_in, self.s)
        detail = Detail(bside=strategy.side) if isinstance(strategy, Bmm) else None  # explain()'s words
        return close_aggregate(c.agg, self.mv, c.side_placed((left, right)[at], at), self.s, strategy, detail)


class SymbolicAggregator:
    """An aggregation's body costed in closed form; ``shared``: what its candidates share (the
    layout a free input is first made in, each held layout's partials)."""

    def __init__(self, agg, view: View, s: int, shared: dict):
        self.agg, self.v, self.s, self.shared = agg, view, s, shared
        self.mv = Moves((view,), s)

    def free(self, i: int) -> bool:
        return self.v.free

    def frontier(self, i: int) -> tuple[int, ...]:
        return tuple(self.v.type.frontier)

    def home(self, i: int) -> tuple[int, int] | None:
        return start(self.v)

    def partitioned(self, i: int, grid: Grid) -> np.ndarray:
        return grid_layout(grid, self.v.type.frontier, self.s)

    def place(self, i: int, target: np.ndarray, what: str) -> np.ndarray:
        return self.mv.place(0, target, what)

    def held(self, i: int) -> np.ndarray:
        if not self.v.free:
            return self.v.layout
        f = self.v.type.frontier
        if "base" not in self.shared:
            self.shared["base"] = grid_layout(part_all(f, self.v.home), f, self.s)
        return self.mv.place(0, self.shared["base"], "")

    def _partial(self, x: np.ndarray) -> np.ndarray:
        """Where each group has tuples (``x`` OR-reduced over the aggregated dims)."""
        kept = self.shared.get("partial")
        if kept is None or kept[0] is not x:
            g, f = self.agg.group_by, self.v.type.frontier
            kept = self.shared["partial"] = (x, reduce_to(x, f, list(g), self.agg.type.frontier, list(range(len(g)))))
        return kept[1]

    def grouped(self, x: np.ndarray) -> bool:
        return self.single(x) and self._known(("grouped", x), lambda: single(self._partial(x)))

    def single(self, x: np.ndarray) -> bool:
        return self._known(("single", x), lambda: single(x))

    def _known(self, what: tuple, fact):
        """``fact()`` of a held layout, once per layout across the candidates (``shared``)."""
        kept = self.shared.get(what[0])
        if kept is None or kept[0] is not what[1]:
            kept = self.shared[what[0]] = (what[1], fact())
        return kept[1]

    def _elements(self, x: np.ndarray):
        return wsum(key_elements(self.v.type).astype(float), x)

    def aggregate(self, x: np.ndarray, strategy, at: Grid | None = None) -> Cand:
        mv, outf = self.mv, self.agg.type.frontier
        layout = self._partial(x) if at is None else grid_layout(at, outf, self.s)
        return Cand(
            layout,
            mv.moved,
            mv.paper,
            mv.site_in + wsum(key_bytes(self.agg.type), layout),
            self._elements(x),
            int(layout.sum()),
            mv.present,
            Detail(mv.steps),
            strategy=strategy,
        )

    def pre_aggregate(self, x: np.ndarray, strategy) -> Cand:
        placed = (self._partial(x), self._elements(x))
        return close_aggregate(self.agg, self.mv, placed, self.s, strategy, home=self.home(0))


# ---------------------------------------------------------------- IA: the plan that runs


class IAMover:
    """A strategy body built: handles are IA nodes, over the inputs' ``layout.Built``s."""

    def __init__(self, join, alts: tuple[Built, ...]):
        self.j, self.alts = join, tuple(alts)
        self.dims = (output_dims(join, 0), output_dims(join, 1))  # the output dim of each input dim
        self.pos = list(self.dims)  # ... and where each moved input's dims are (``replicate``)
        self.replicated = False

    def _same(self) -> bool:
        """One placed relation on both sides (its copies serve both; ``Moves._slot``)."""
        left, right = self.alts
        return left.node is right.node and not left.free

    def free(self, i: int) -> bool:
        return self.alts[i].free

    def home(self, i: int) -> tuple[int, int] | None:
        return cast(Placed, self.alts[i].node).input.home if self.alts[i].free else None

    def frontier(self, i: int) -> tuple[int, ...]:
        return tuple(self.alts[i].node.type.frontier)

    def output_dims(self, i: int) -> list[int]:
        return self.dims[i]

    def partitioned(self, i: int, grid: Grid):
        return place(self.alts[i], grid)

    def place(self, i: int, target, what: str):
        return target  # ``partitioned`` made it, placed (``layout.place``)

    def broadcast(self, i: int, partners: tuple):
        return broadcast(self.alts[i], None if self._same() else partners)

    def keep(self, i: int):
        return self.alts[i].node

    def align(self, i: int, partners: tuple):
        kept, theirs, ours = partners
        return align(self.alts[i], kept, theirs, ours)

    def replicate(self, i: int, grid: Grid) -> IANode:
        alt, pos, out = self.alts[i], self.pos[i], self.j.type.frontier
        base = place(alt, _homes(alt.node.type, grid, pos, alt.node.s)) if alt.free else alt.node
        self.pos[i], self.replicated = list(range(len(out))), True  # now in the output's key space
        return Shuffle(expand(base, pos, out), grid)

    def join(self, left, right, at, strategy) -> LocalJoin:
        j = self.j
        if not self.replicated:
            return LocalJoin(left, right, j.left_keys, j.right_keys, j.kernel, like=j)
        lp, rp = self.pos  # join on the output dims both sides hold
        common = [d for d in lp if d in rp]
        return LocalJoin(left, right, [lp.index(d) for d in common], [rp.index(d) for d in common], j.kernel)


def _homes(t, grid: Grid, pos, s: int) -> SiteMap:
    """Each tuple of a free input made at one of the grid cells it is replicated to
    (``symbolic.homes``: the cost model's placement, key for key)."""
    keys = list(t.iter_keys())
    at = homes(held(grid_need(grid, pos, t.frontier, s), t))
    rows = np.ravel_multi_index(np.array(keys).T, t.frontier) if keys and t.frontier else np.zeros(len(keys), int)
    return SiteMap({k: (int(at[r]),) for k, r in zip(keys, rows)})


class IASummer(IAMover):
    """A contraction's body built: its ``join`` is the LocalJoin of the moved inputs, its
    products summed by ``layout.finish_aggregate``; a two-phase plan's by
    ``twophase_strategy.joined``."""

    def __init__(self, agg, alts, s: int):
        super().__init__(agg.child, alts)
        self.agg, self.s = agg, s

    def placement(self, strategy: TwoPhase) -> TwoPhasePlan | None:
        return strategy.plan

    def to_join_groups(self, i: int, plan: TwoPhasePlan) -> IANode:
        return two_phase.send_side(self.alts[i], i, self.s, plan)

    def join(self, left, right, at, strategy):
        if isinstance(at, TwoPhasePlan):
            return two_phase.joined(self.agg, left, right, at)
        products = super().join(left, right, at, strategy)
        return finish_aggregate(products, self.agg.group_by, self.agg.kernel, like=self.agg)[0]


class IAAggregator:
    """An aggregation's body built: handles are IA nodes over its input's ``layout.Built``."""

    def __init__(self, agg, alt: Built):
        self.agg, self.alt = agg, alt
        self.start = start_of(alt)  # read before ``held`` places a free input

    def free(self, i: int) -> bool:
        return self.alt.free

    def frontier(self, i: int) -> tuple[int, ...]:
        return tuple(self.alt.node.type.frontier)

    def home(self, i: int) -> tuple[int, int] | None:
        return self.start

    def partitioned(self, i: int, grid: Grid):
        return place(self.alt, grid)

    def place(self, i: int, target, what: str):
        return target

    def held(self, i: int) -> IANode:
        if self.alt.free:
            t = self.alt.node.type
            self.alt = Built(place(self.alt, part_all(t.frontier, self.home(0))))  # now placed
        return self.alt.node

    def grouped(self, x: IANode) -> bool:
        return partitioned_by(x, self.agg.group_by)

    def single(self, x: IANode) -> bool:
        return all(len(cs) == 1 for cs in x.copies.values())

    def aggregate(self, x: IANode, strategy, at: Grid | None = None) -> IANode:
        return LocalAggregate(x, self.agg.group_by, self.agg.kernel, like=self.agg)

    def pre_aggregate(self, x: IANode, strategy) -> IANode:
        k = self.agg.kernel
        pre = LocalAggregate(x, self.agg.group_by, k, like=self.agg)
        g = tuple(range(len(self.agg.group_by)))
        return LocalAggregate(Shuffle(pre, part(g, pre.type.frontier, self.home(0))), g, k)


def symbolic_bytes(cand: Cand) -> int:
    """What a costed candidate moves (``Strategy.pick``)."""
    return cand.moved


def ia_bytes(root: IANode) -> int:
    """What a built sub-plan moves (``Strategy.pick``)."""
    return evaluate_cost(root).bytes_moved


__all__ = [
    "Mover",
    "TwoPhaseMover",
    "ContractionMover",
    "AggregateMover",
    "SymbolicMover",
    "SymbolicSummer",
    "SymbolicAggregator",
    "Contraction",
    "close_aggregate",
    "grid_products",
    "IAMover",
    "IASummer",
    "IAAggregator",
    "symbolic_bytes",
    "ia_bytes",
]

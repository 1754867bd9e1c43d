"""The optimizer: compile TRA expressions into IA plans by cost-based search, and explain them.

No Dask here. Entry points: ``plan(expr, sites)`` and ``plan_many(exprs, sites)``. The
search costs every candidate in closed form from layouts (``symbolic``, ``candidates``); on
one site nothing moves and there is nothing to search: each operator gets its one local plan
directly (``local``). The chosen plan's IA nodes are built once, on first use of ``Plan.root``
(``build``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial

import numpy as np

from ..ia.nodes import IANode
from ..tra import expr as tra
from ..tra.dag import render, walk_many
from ..tra.expr import Expr
from . import cache
from .blocks import block_grids
from .build import build
from .candidates import relabel_rows, relabelled
from .cost import TERMS, Cost, Rates, combine_terms, evaluate_cost
from .explain import Explain, Move, OperatorReport, fmt_bytes, ia_tree, operand, operation
from .local import choose_local, cost_local, plan_local, undecided
from .memory import held_for_readers, largest_block, working_set
from .operators import registry
from .operators.registry import CONTRACTION_KINDS
from .rewrite import simplify
from .search import (
    Alt,
    MemoryLimitError,
    TooManyBlocksError,
    check_blocks,
    chosen,
    combine,
    costing_key,
    flows,
    input_alt,
    inputs_of,
    kind_of,
    memoized,
    search,
    views_of,
)
from .search import candidates as _candidates
from .symbolic import key_bytes, type_facts


@dataclass(eq=False)
class Plan:
    """A chosen plan: the expressions, the alternative chosen for each, its exact predicted cost,
    and the report. ``explain`` (the report) and ``root``/``roots`` (the IA plan) are built on
    first use: a plan replayed from the cache for a new SGD step needs neither to be chosen.
    A local plan (one site, nothing moves) is costed on first use too (``costing``)."""

    exprs: tuple
    sites: int
    alts: tuple
    _cost: Cost | None
    _cands: dict | None  # id(alt) -> the chosen candidate's costing (``symbolic.Cand``)
    rates: Rates
    costing: Callable[[], tuple[Cost, dict]] | None = None  # makes (cost, cands) when first read

    @property
    def cost(self) -> Cost:
        return self._costed()[0]

    @property
    def cands(self) -> dict:
        return self._costed()[1]

    def _costed(self) -> tuple[Cost, dict]:
        if self._cost is None or self._cands is None:
            assert self.costing is not None, "a plan is given its cost or a way to make it"
            self._cost, self._cands = self.costing()
        return self._cost, self._cands

    @cached_property
    def roots(self) -> list[IANode]:
        return build(self.alts, self.sites)

    @cached_property
    def explain(self) -> Explain:
        ops, steps = _report(self.alts, self.cands)
        cost = self.cost
        received_by = np.array(cost.site_moved) if cost.site_moved else None
        sent_by = np.array(cost.site_sent) if cost.site_sent else None
        return Explain(
            "\n".join(render(e) for e in self.exprs),
            self.sites,
            ops,
            cost.bytes_moved,
            dict(cost.peak_memory),
            gather_bytes=sum(_gather_bytes(a) for a in self.alts),
            ia_plan="\n".join(steps),
            predicted_seconds=cost.seconds,
            breakdown=self.rates.breakdown(
                cost.bytes_moved, cost.tasks, np.array(cost.site_flops), received_by, cost.terms, sent_by
            ),
            grids=partial(block_grids, self),
        )

    @property
    def root(self) -> IANode:
        return self.roots[0]


# input name -> {key: (site, ...)}: inputs already placed on a cluster
Placements = Mapping[str, Mapping[tuple[int, ...], Sequence[int]]]
# one strategy (a name or a ``registry.Strategy``) for every contraction, or {operator kind: strategy}
Force = registry.Force


def plan(
    expr: Expr,
    sites: int,
    placements: Placements | None = None,
    memory_limit: int | None = None,
    force: Force | None = None,
    keep: int = 6,
    rates: Rates | None = None,
) -> Plan:
    """Choose an IA plan for ``expr`` on ``sites`` sites.

    placements: input name -> {key: (site, ...)} for inputs already placed (costed where they are,
        any replica usable); other inputs are laid out freely.
    memory_limit: bytes per site; plans whose peak estimate exceeds it are not chosen.
    force: a strategy name for every contraction (e.g. ``"cmm"``), or {kind: strategy}.
    rates: the time objective's constants (``cost.Rates``).
    """
    return plan_many((expr,), sites, placements, memory_limit, force, keep, rates)


def plan_many(
    exprs: Iterable[Expr],
    sites: int,
    placements: Placements | None = None,
    memory_limit: int | None = None,
    force: Force | None = None,
    keep: int = 6,
    rates: Rates | None = None,
    one_layout: bool = False,
    rewrite: bool = True,
) -> Plan:
    """One plan for several expressions sharing sub-expressions (each shared node planned once;
    with ``one_layout`` each is also computed in one layout only). With ``rewrite`` the
    expressions are first simplified (``simplify``: slices pushed toward the inputs, per-tuple
    chains fused, equal sub-expressions merged); the plan computes the simplified ones. A plan
    for an expression of the same structure, placements and settings is replayed from
    ``cache`` without a search. On one site with no memory limit, each operator gets its local
    strategy in O(1) (``choose_local``, never cached) and the plan is costed when first read."""
    if sites < 1:
        raise ValueError(f"sites must be >= 1, got {sites}")
    odd = next((name for name in placements or () if not isinstance(name, str)), None)
    if odd is not None:
        raise TypeError(
            f"placements must map input names to {{key: sites}}; got the key {odd!r} (a block key? "
            "wrap the map as {input_name: {key: sites}})"
        )
    exprs = simplify(exprs) if rewrite else tuple(exprs)
    rates = rates or Rates()
    local = sites == 1 and force is None  # nothing moves: no choice to search (``local``)
    if local and memory_limit is None:  # chosen now, costed when asked (faster than a cached replay)
        order = walk_many(exprs)
        check_blocks(order)
        alts_of = choose_local(placements, order)
        if not undecided(alts_of):
            alts = tuple(alts_of[id(e)] for e in exprs)
            return Plan(exprs, 1, alts, None, None, rates, partial(cost_local, exprs, alts_of, rates, None, order))
    digest, order, inputs = cache.structure(exprs)
    settings = (sites, memory_limit, repr(force), keep, rates, one_layout, tuple(TERMS))
    exact, loose = cache.keys(digest, inputs, placements, settings)
    hit = cache.get(exact)
    found = _replay(hit, order) if hit is not None else None
    if found is None and local:
        check_blocks(order)
        made = plan_local(exprs, placements, rates, memory_limit, order)
        if made is not None:  # else an operator is over the memory limit: the search explains it
            alts, cost, cands = made
            if memory_limit is not None and rates.threads and cost.max_peak > memory_limit:
                _refuse_held(alts, cost, memory_limit, sites)
            cache.put(exact, _template(alts, cost, cands, {}, order))
            found = alts, cost, cands
    if found is None and not local and cache.get(loose) is not None:
        recosted = _recost(cache.get(loose), order, sites, placements, rates, memory_limit)
        if recosted is not None:
            roots, cost, cands, seen = recosted
            cache.put(exact, _template(roots, cost, cands, seen, order))
            found = roots, cost, cands
    if found is not None:
        alts, cost, cands = found
    else:
        check_blocks(order)
        best, _ = search(exprs, sites, placements, memory_limit, force, keep, rates, one_layout)
        alts = tuple(best[id(e)] for e in exprs)
        cost, cands, seen = final_costs(alts, sites, rates)
        if memory_limit is not None and rates.threads and cost.max_peak > memory_limit:
            _refuse_held(alts, cost, memory_limit, sites)
        template = _template(alts, cost, cands, seen, order)
        cache.put(exact, template)
        cache.put(loose, template)
    return Plan(exprs, sites, alts, cost, cands, rates)


def _refuse_held(alts, cost, memory_limit, s):
    """MemoryLimitError for a plan whose streamed operators fit but whose results read by
    several operators, held together, do not (a plan over the limit without such results only
    holds its inputs and its results, which dask spills)."""
    held, most = held_for_readers(chosen(alts), s)
    if most is None:  # nothing held for later readers: the peak is the inputs and results (they spill)
        return
    what = f"{most.node.describe()} ({kind_of(most.node)}) is read by several operations and held until the last"
    raise MemoryLimitError(
        f"no plan fits {memory_limit:,} bytes per site: {what}; with the results held for later "
        f"readers ({int(held.max()):,} bytes) a site needs {cost.max_peak:,} bytes, its largest block "
        f"is {largest_block(most.node.type):,} bytes"
    )


def final_costs(roots, s, rates):
    """Exact costs of a chosen plan: each alternative re-costed once, in topological order, with
    the copies earlier consumers already moved (a second move of a tuple to a site is free).
    Returns (Cost, {id(alt): Cand}, {id(alt): what it was costed over (``_seen``)})."""
    totals = _Totals(s, rates)
    memo: dict = {}
    for alt in chosen(roots):
        if alt.inputs:
            present = totals.copies(alt.inputs)
            if _as_costed(alt.inputs, present):  # no input has copies beyond its layout
                cand = alt.cand
            else:
                cand = _one_candidate(alt.node, alt.strategy, alt.cand, alt.inputs, present, s, rates, memo)
            totals.add(alt, cand, _seen(alt.inputs, present))
        else:
            totals.present[id(alt)] = alt.layout
    return totals.cost(roots, rates), totals.cands, totals.seen


class _Totals:
    """A plan's exact cost summed operator by operator (``final_costs``), with the copies each
    operator leaves where its consumers find them (``present``).

    A pure relabelling (a tuple map that copies: ReKey, Filter) of a placed relation has its input's chunks (the IA
    keeps their origin): a copy of one moved to a site is a copy of the other there. Such an
    alternative's copies are kept on the relation it relabels (``same``)."""

    def __init__(self, s, rates):
        self.rates = rates
        self.present, self.cands = {}, {}
        self.seen = {}  # id(alt) -> ``_seen`` of the inputs its candidate was costed over
        self.same = {}  # id(relabelling alt) -> (id(the alt whose chunks it has), its rows there)
        self.moved = self.paper = self.tasks = 0
        self.flops, self.site_moved, self.site_sent = np.zeros(s), np.zeros(s), np.zeros(s)
        self.peak = np.zeros(s, np.int64)
        self.terms: dict[str, float] = {}

    def copies(self, alts) -> dict:
        """{id(alt): where its tuples have copies} for ``alts``."""
        out = {}
        for a in alts:
            if id(a) in self.same:
                base, rows = self.same[id(a)]
                out[id(a)] = relabelled(self.present[base], rows)
            elif id(a) in self.present:
                out[id(a)] = self.present[id(a)]
        return out

    def _keep(self, alt, p):
        if id(alt) in self.same:
            base, rows = self.same[id(alt)]
            held = rows >= 0
            grown = self.present[base].copy()
            grown[rows[held]] |= p[held]
            self.present[base] = grown
        else:
            self.present[id(alt)] = p

    def add(self, alt, cand, seen):
        for a, p in zip(alt.inputs, cand.present):
            if not a.free:
                self._keep(a, p)
        child = alt.inputs[0]
        if getattr(alt.node, "pure_copy", False) and not child.free:
            base, rows = self.same.get(id(child), (id(child), None))
            own = relabel_rows(alt.node, child.node.type.frontier)
            self.same[id(alt)] = (base, own if rows is None else np.where(own >= 0, rows[own], -1))
        else:
            self.present[id(alt)] = alt.layout
        self.cands[id(alt)] = cand
        self.seen[id(alt)] = seen
        self.moved += cand.moved
        into, out_of = flows(cand, len(self.flops))
        self.site_moved += into
        self.site_sent += out_of
        self.paper += cand.paper
        self.tasks += cand.tasks
        self.terms = combine_terms(self.terms, (cand.terms,))
        self.flops += cand.flops
        working = working_set(alt.node, cand, alt.inputs, self.rates, len(self.flops))
        np.maximum(self.peak, working, out=self.peak)

    def cost(self, roots, rates) -> Cost:
        peak = self.peak
        if not self.cands:  # a plan that is just placed inputs
            for a in roots:
                peak = np.maximum(peak, key_bytes(a.node.type) @ a.layout)
        elif rates.threads:  # streamed: results read at different times are held meanwhile
            peak = peak + held_for_readers(chosen(roots), len(peak))[0]
        return Cost(
            self.moved,
            dict(enumerate(int(p) for p in peak)),
            self.paper,
            self.tasks,
            tuple(float(f) for f in self.flops),
            rates.seconds(self.moved, self.tasks, self.flops, self.site_moved, self.terms, self.site_sent),
            tuple(float(b) for b in self.site_moved),
            tuple(float(b) for b in self.site_sent),
            dict(self.terms),
        )


def _as_costed(inputs, present) -> bool:
    """Whether every input is where the search costed it (its layout, no copies other operators
    moved): the search's costing of the operator is then its exact one."""
    return all(a.free or present[id(a)] is a.layout or np.array_equal(present[id(a)], a.layout) for a in inputs)


def _one_candidate(node, strategy, cand, inputs, present, s, rates, memo=None):
    """The costing of ``strategy`` for ``node`` over ``inputs`` (with the copies in ``present``),
    or None if it no longer applies; ``cand`` is the costing it was chosen by, its strategy
    object with the parameters it chose (bmm's side, the two-phase placement). ``memo``: as
    ``search.plan_node``'s, for one costing of a plan's operators."""
    kind, views = kind_of(node), views_of(inputs, present)
    key = costing_key(node, kind, views, cand.strategy) if memo is not None and not TERMS else None
    return memoized(memo, key, partial(_candidates, node, kind, views, s, cand.strategy, rates)).get(cand.strategy)


def _seen(inputs, present) -> tuple:
    """What an operator's costing reads of its inputs (``views_of``): which are one relation,
    whether free or placed, where each is and where copies of it are. Equal for two operators
    of one structure, the costing is equal too (``_recost`` reuses it)."""
    first: dict = {}
    out = []
    for a in inputs:
        copies = a.layout if a.free else present[id(a)]
        out.append(
            (first.setdefault(id(a), len(first)), a.free, a.placement is not None, a.layout.tobytes(), copies.tobytes())
        )
    return tuple(out)


def _recost(template, order, s, placements, rates, memory_limit):
    """A cached plan's choices re-costed for other input placements, in one pass: one candidate
    per operator, costed with the copies earlier operators moved (as ``final_costs``), or the
    cached costing itself where the operator's inputs are where they were (downstream of an
    input that moved, a strategy often lays its result out as before); None if a choice no
    longer applies or no longer fits the memory limit."""
    entries, root_pos, _, facts = template
    for node, known in zip(order, facts):
        for name, value in known.items():
            node.type._cache.setdefault(name, value)
    made = []
    totals = _Totals(s, rates)
    for node_index, alt, cand, was in entries:
        node = order[node_index]
        if cand is None:
            made.append(input_alt(node, s, placements or {}))
            totals.present[id(made[-1])] = made[-1].layout
            continue
        kids = tuple(made[j] for j in alt.inputs)
        present = totals.copies(kids)
        seen = _seen(kids, present)
        c = cand if seen == was else _one_candidate(node, alt.strategy, cand, kids, present, s, rates)
        if c is None:
            return None
        new = combine(node, alt.strategy, c, kids, rates)
        new.table = alt.__dict__.get("table") or {alt.strategy: (new.bytes, new.seconds)}  # a pending one has none
        made.append(new)
        totals.add(new, c, seen)
    roots = tuple(made[j] for j in root_pos)
    cost = totals.cost(roots, rates)
    if memory_limit is not None and max(cost.peak_memory.values(), default=0) > memory_limit:
        return None
    return roots, cost, totals.cands, totals.seen


def _report(roots, cands):
    ops, steps = [], []
    for alt in chosen(roots):
        if id(alt) not in cands:
            continue
        kind = kind_of(alt.node)
        cand = cands[id(alt)]
        ops.append(
            OperatorReport(
                kind,
                alt.strategy,
                {n: b for n, (b, _) in alt.table.items()},
                _describe(alt.node, kind),
                alt.bytes,
                int(alt.peak.max()),
                {n: t for n, (_, t) in alt.table.items()},
                alt.seconds,
                label=operation(alt.node),
                operands=tuple(operand(c.node) for c in alt.inputs),
                moves=[
                    Move(
                        what,
                        alt.inputs[i].node.describe() if i is not None else "partial results",
                        operand(alt.inputs[i].node) if i is not None else "partial results",
                        int(nbytes),
                    )
                    for what, i, nbytes in cand.detail.steps
                    if what
                ],
                facts=cand.detail.facts(),
            )
        )
        steps.extend(_steps(alt, cands[id(alt)], kind))
    return ops, steps


def _template(roots, cost, cands, seen, order):
    """A chosen plan with its TRA nodes replaced by their walk positions (for ``cache``); with
    each operator's costing, what it was costed over (``_seen``), and the structural facts of
    the nodes' types (``type_facts``)."""
    index = {id(n): i for i, n in enumerate(order)}
    alts = chosen(roots)
    pos = {id(a): j for j, a in enumerate(alts)}
    entries = [
        (
            index[id(a.node)],
            a.over(None, tuple(pos[id(c)] for c in a.inputs)),
            cands.get(id(a)),
            seen.get(id(a)),
        )
        for a in alts
    ]
    return entries, [pos[id(r)] for r in roots], cost, [type_facts(n.type) for n in order]


def _replay(template, order):
    entries, root_pos, cost, _ = template
    made: list[Alt] = []
    cands: dict[int, object] = {}
    for node_index, alt, cand, _ in entries:
        new = alt.over(order[node_index], tuple(made[j] for j in alt.inputs))
        made.append(new)
        if cand is not None:
            cands[id(new)] = cand
    return tuple(made[j] for j in root_pos), cost, cands


def _steps(alt, cand, kind):
    head = f"{kind} {_describe(alt.node, kind)}: {alt.strategy}"
    out = [head]
    for what, i, nbytes in cand.detail.steps:
        if not what:
            continue
        src = alt.inputs[i].node.describe() if i is not None else "partial results"
        out.append(f"  {what} {src}: {fmt_bytes(nbytes)}")
    if cand.detail.bside:
        out.append(f"  (broadcasts the {cand.detail.bside} input)")
    if cand.detail.placement is not None:
        out.append(f"  placement: {cand.detail.placement} (lineage-planned, per block product)")
    if cand.detail.balance is not None:
        flops = ", ".join(f"{f / 1e6:.3g}" for f in cand.flops)
        out.append(f"  compute balance: busiest site / mean = {cand.detail.balance:.2f} (MFLOP per site: {flops})")
    return out


def _gather_bytes(alt) -> int:
    """Bytes to bring every result tuple to one site (the one already holding the most)."""
    if not alt.layout.size:
        return 0
    first = alt.layout.argmax(axis=1)
    has = alt.layout.any(axis=1)
    per_site = np.bincount(first[has], weights=key_bytes(alt.node.type)[has], minlength=alt.layout.shape[1])
    return int(per_site.sum() - per_site.max())


def _describe(node, kind):
    if kind in CONTRACTION_KINDS:
        return f"{node.describe()} ∘ {node.child.describe()}"
    return node.describe()


def gather_bytes(root: IANode) -> int:
    """Bytes to bring every result tuple of an IA plan to one site (the one holding the most)."""
    per_site: dict[int, int] = {}
    for key, copies in root.copies.items():
        n = root.type.dtype.itemsize
        for d in root.type.chunk_shape(key):
            n *= d
        site = copies[0][0]
        per_site[site] = per_site.get(site, 0) + n
    return sum(per_site.values()) - max(per_site.values(), default=0)


__all__ = [
    "plan",
    "plan_many",
    "Plan",
    "Explain",
    "OperatorReport",
    "MemoryLimitError",
    "TooManyBlocksError",
    "evaluate_cost",
    "kind_of",
    "Rates",
    "ia_tree",
    "inputs_of",
]

"""Plan search: a dynamic programme over TRA nodes and the layouts of their results.

For each TRA node (children first) and each kept alternative of its children, every
applicable strategy is costed in closed form (``candidates``, from the children's layouts;
no block product is enumerated). Per node we keep the cheapest alternative for each
distinct result layout, at most ``keep`` of them: EinDecomp's M[v, d] table with concrete
layouts as the d. A consumer may thus take a costlier producer plan that is already laid
out as it needs. Greedy planning (the cheapest plan per operator) is one path through this
table, so the result is never worse than greedy under the objective.

The objective is predicted time (``cost.Rates``): bytes over bandwidth, tasks times the
per-task overhead, the busiest site's flops over the compute rate, and any registered
``cost.CostTerm``. Ties go to fewer bytes, then lower peak memory, then the strategy
preference order.

An operator with one plan (one kept alternative of each input, one candidate, fitting the
memory limit) is not ranked: its alternative is ``Pending``, its totals summed when first read.

Several roots are planned as one DAG: ``search`` takes a tuple of roots, shared nodes are
planned once, and with ``one_layout`` every node is computed in one layout (consumers that
would like another one pay a move instead of a recomputation).

Cost: O(nodes × keep² × strategies) candidate costings, each linear in the keys of the
operator's inputs and outputs (and in grid cells).
"""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ..ia.partitioning import part_all
from ..tra import expr as tra
from ..tra.dag import walk_many
from ..tra.errors import TRAError
from ..tra.kernels import Einsum
from . import candidates as C
from . import operators
from .cache import own_token, type_token
from .cost import TERMS, Rates, combine_terms, measure_terms
from .memory import largest_block, working_set
from .operators.registry import (
    CONTRACTION_KINDS,
    PREFERENCE,
    EinDecomp,
    Forced,
    OperatorKind,
    Strategy,
    is_contraction,
    operator_kind,
    parse_force,
)
from .symbolic import View, grid_layout, held, sitemap_layout


class MemoryLimitError(TRAError):
    """No plan for an operator fits the per-site memory limit."""


MAX_BLOCKS = 10_000_000  # blocks of one operator's relation: planning keeps per-block tables


class TooManyBlocksError(TRAError):
    """An operator's relation has more blocks than planning supports (``MAX_BLOCKS``)."""


def check_blocks(nodes) -> None:
    """Raise ``TooManyBlocksError`` before planning allocates per-block tables it cannot hold."""
    for node in nodes:
        n = node.type.n_tuples
        if n > MAX_BLOCKS:
            grid = " × ".join(f"{f:,}" for f in node.type.frontier)
            raise TooManyBlocksError(
                f"{node.describe()} has {n:,} blocks ({grid}); dask_tra plans every block and supports "
                f"at most {MAX_BLOCKS:,} per operation: use larger chunks"
            )


def kind_of(node) -> str:
    if is_contraction(node):
        k = node.child.kernel
        if isinstance(k, Einsum):
            return "matmul" if k.is_matmul else "einsum"
        return "contraction"
    return type(node).__name__.lower()


@dataclass(eq=False)
class Alt:
    """One way to compute a TRA node: a strategy over chosen alternatives of its inputs.

    ``layout`` is where its result sits; the totals are over the sub-plan (a shared
    sub-plan counted once per use: the search's estimate; ``final_costs`` is exact)."""

    node: object
    strategy: str
    inputs: tuple
    cand: object
    layout: np.ndarray
    free: bool = False
    placement: object = None  # inputs: the SiteMap of data already placed
    bytes: int = 0
    tasks: int = 0
    # always given (every Alt is built with them); the None default only keeps the field order
    flops: np.ndarray = None  # type: ignore[assignment]
    peak: np.ndarray = None  # type: ignore[assignment]
    seconds: float = 0.0
    table: dict = field(default_factory=dict)  # candidate -> (bytes, seconds)
    site_moved: np.ndarray | None = None  # bytes each site receives over the sub-plan (None: none)
    site_sent: np.ndarray | None = None  # bytes each site sends over the sub-plan (None: none)
    terms: dict = field(default_factory=dict)  # registered CostTerms over the sub-plan: name -> total

    @property
    def children(self) -> tuple:
        return self.inputs

    def over(self, node, inputs: tuple) -> "Alt":
        """This alternative for ``node`` over ``inputs`` (its other fields shared): a plan cache
        entry's template and its replay, made once per operator (``dataclasses.replace`` would
        run ``__init__`` over every field again)."""
        new = object.__new__(type(self))  # a Pending stays one: its totals are summed over ``inputs``
        new.__dict__.update(self.__dict__)
        new.node, new.inputs = node, inputs
        return new

    @property
    def signature(self) -> builtins.bytes:  # builtins: the field ``bytes`` shadows the type here
        """Where every tuple is, by value: alternatives with equal signatures are interchangeable.
        Made once (``Alt.over`` copies it with the layout)."""
        sig = self.__dict__.get("_signature")
        if sig is None:
            sig = self.__dict__["_signature"] = layout_signature(self.layout)
        return sig


class _Settled:
    """A sub-plan total of a ``Pending`` alternative: summed (with every pending one below it,
    iteratively) when first read, then kept in the instance, which reads it from there on."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, alt, owner=None):
        if alt is None:
            return self
        settle(alt)
        return alt.__dict__[self.name]


class Pending(Alt):
    """An alternative made without its sub-plan totals (``pending``); each is summed when first
    read. (Made by ``pending`` alone; ``Alt.over`` copies one as one.)"""

    bytes = _Settled("bytes")
    tasks = _Settled("tasks")
    flops = _Settled("flops")
    peak = _Settled("peak")
    seconds = _Settled("seconds")
    table = _Settled("table")
    site_moved = _Settled("site_moved")
    site_sent = _Settled("site_sent")
    terms = _Settled("terms")


def pending(node, name, cand, combo, rates) -> Alt:
    """``combine``'s alternative with its totals summed only when first read: an operator with
    one plan (one input alternative each, one candidate) has no choice to rank, and a later
    choice, ``explain`` or a cost term may never read them."""
    new = object.__new__(Pending)
    new.__dict__.update(node=node, strategy=name, inputs=tuple(combo), cand=cand, layout=cand.layout)
    new.__dict__.update(free=False, placement=None, _rates=rates)  # ``_rates``: what ``settle`` sums with
    return new


def settle(alt) -> None:
    """Sum the totals of ``alt`` and of every pending alternative below it, inputs first."""
    todo = [alt]
    while todo:
        a = todo[-1]
        if "seconds" in a.__dict__:
            todo.pop()
            continue
        waiting = [c for c in a.inputs if "seconds" not in c.__dict__]
        if waiting:
            todo.extend(waiting)
            continue
        todo.pop()
        made = totals(a.node, a.cand, a.inputs, a.__dict__.pop("_rates"))
        made["table"] = {a.strategy: (made["bytes"], made["seconds"])}
        a.__dict__.update(made)


def layout_signature(layout) -> builtins.bytes:
    return np.packbits(layout).tobytes() + bytes(str(layout.shape), "ascii")


def fused_joins(order) -> set:
    """ids of Joins planned inside the contraction that consumes them (their only consumer)."""
    consumers = Counter(id(c) for n in order for c in n.children)
    return {id(n.child) for n in order if is_contraction(n) and consumers[id(n.child)] == 1}


def inputs_of(node, kind):
    return node.child.children if kind in CONTRACTION_KINDS else node.children


def search(roots, s, placements=None, memory_limit=None, force=None, keep=6, rates=None, one_layout=False):
    """{id(root): best Alt} for each root; every TRA node planned once per kept layout.
    ``force``: a strategy (name or ``registry.Strategy``) for every contraction, or {kind:
    strategy}; parsed here, once (``registry.parse_force``: a ``ValueError`` names the forms)."""
    force = parse_force(force)
    placements = placements or {}
    rates = rates or Rates()
    order = walk_many(roots)
    fused = fused_joins(order)
    alts = {}
    memo: dict = {}
    for node in order:
        if id(node) in fused:
            continue
        if isinstance(node, tra.Input):
            alts[id(node)] = [input_alt(node, s, placements)]
            continue
        alts[id(node)] = plan_node(node, alts, s, memory_limit, force, keep, rates, memo)
    if one_layout:
        alts = _one_layout(roots, order, fused, alts, s, memory_limit, force, keep, rates, memo)
    return {id(r): alts[id(r)][0] for r in roots}, alts


def input_alt(node, s, placements) -> Alt:
    f = node.type.frontier
    if node.name in placements:
        mapping = {tuple(k): tuple(v) for k, v in placements[node.name].items()}
        if node.whole is not None:  # the blocks this input reads of a placed relation
            mapping = {k: mapping[k] for k in node.type.iter_keys()}
        return Alt(
            node,
            "placed",
            (),
            None,
            held(sitemap_layout(mapping, f, s), node.type),
            placement=mapping,
            flops=np.zeros(s),
            peak=np.zeros(s, np.int64),
        )
    return Alt(
        node,
        "free",
        (),
        None,
        held(grid_layout(part_all(f, node.home), f, s), node.type),
        free=True,
        flops=np.zeros(s),
        peak=np.zeros(s, np.int64),
    )


def views_of(alts, present=None) -> list:
    """One View per distinct input alternative (``present``: copies already made, by alt id)."""
    made = {}
    for a in alts:
        if id(a) not in made:
            p = a.layout if present is None or a.free else present[id(a)]
            home = a.node.home if a.free else None
            made[id(a)] = View(a.node.type, a.layout, p, a.free, a.placement is not None, home)
    return [made[id(a)] for a in alts]


PRUNE_SITES = 32  # from this many sites on, dominated EinDecomp vectors are not costed (``Pruner``)


class Pruner:
    """Skips a contraction's EinDecomp candidates that cannot be among the ``keep`` plans
    ``plan_node`` keeps: their predicted time is bounded below from their flops and lower
    bounds on their tasks and bytes (``candidates.grid_bound``), with the input alternatives'
    totals added as ``combine`` adds them; a bound above the ``keep``-th best distinct layout's
    time so far (this node's earlier options and the candidates costed before) rules it out.
    Only where the objective is the time alone (no memory limit, no forced strategy, no
    registered cost term) and on ``PRUNE_SITES`` sites or more (fewer have few vectors, and
    ``explain`` lists every one). ``costed``/``pruned`` count the candidates (tests read them)."""

    costed = 0  # over the process: exact EinDecomp costings the search made
    skipped = 0  # and skipped

    def __init__(self, node, combo, rates, keep, options, s):
        self.node, self.combo, self.rates, self.keep, self.s = node, combo, rates, keep, s
        self.best: dict = {}
        self.made: dict[Strategy, Alt] = {}  # the candidates costed so far, as alternatives
        self.pruned = 0
        for a in options:
            self._note(a)
        moved = [a.site_moved for a in combo if a.site_moved is not None]
        sent = [a.site_sent for a in combo if a.site_sent is not None]
        self.moved = np.sum(moved, axis=0) if moved else np.zeros(s)
        self.sent = np.sum(sent, axis=0) if sent else np.zeros(s)
        self.flops = np.sum([a.flops for a in combo], axis=0) if combo else np.zeros(s)
        self.tasks = sum(a.tasks for a in combo)

    def _note(self, a):
        sig = a.signature
        if a.seconds < self.best.get(sig, float("inf")):
            self.best[sig] = a.seconds

    def add(self, strategy: Strategy, cand):
        a = self.made[strategy] = combine(self.node, strategy.name, cand, self.combo, self.rates)
        self._note(a)
        Pruner.costed += isinstance(strategy, EinDecomp)

    def seconds(self, flops, tasks, nbytes) -> float:
        """A lower bound on the predicted time of a candidate with these (``grid_bound``)."""
        r = self.rates
        received = max(float(self.moved.max(initial=0)), (float(self.moved.sum()) + nbytes) / self.s)
        transfer = max(received, float(self.sent.max(initial=0))) / r.bandwidth
        busiest = float((self.flops + flops).max(initial=0))
        return transfer + (self.tasks + tasks) * r.task_overhead + busiest / r.flop_rate

    def skip(self, flops, tasks, nbytes, layout=None) -> bool:
        """Whether a candidate with this bound cannot be kept: it is slower than the ``keep``-th
        best layout, or than the best of its own layout (``layout``, where it is known before
        costing: then it never represents that layout)."""
        worst_kept = sorted(self.best.values())[self.keep - 1] if len(self.best) >= self.keep else float("inf")
        if layout is not None:
            worst_kept = min(worst_kept, self.best.get(layout_signature(layout), float("inf")))
        skip = round(self.seconds(flops, tasks, nbytes), 9) > round(worst_kept, 9)
        Pruner.skipped += skip
        return skip


# The cost layer, per operator kind: (node, views, s, only, rates, prune) -> {strategy: Cand}.
# (Each looks its family's costing up in ``candidates`` when called.)
COSTS: dict[OperatorKind, Callable[..., dict]] = {
    OperatorKind.CONTRACTION: lambda node, views, s, only, rates, prune: C.contraction(
        node, views[0], views[1], s, only, rates=rates, prune=prune
    ),
    OperatorKind.JOIN: lambda node, views, s, only, rates, prune: C.join_alone(node, views[0], views[1], s, only),
    OperatorKind.AGGREGATE: lambda node, views, s, only, rates, prune: C.aggregate_alone(node, views[0], s, only),
    OperatorKind.REGISTERED: lambda node, views, s, only, rates, prune: _registered(node).costs(node, *views, s, only),
    OperatorKind.PER_TUPLE: lambda node, views, s, only, rates, prune: C.per_tuple(node, views[0], s, only),
}


def _registered(node):
    op = operators.lookup(node)
    if op is None:  # ``operator_kind`` says REGISTERED only for a registered class
        raise TRAError(f"cost: {node.describe()}: no module of optimizer/operators plans {type(node).__name__}")
    return op


def candidates(node, kind, views, s, only: Strategy | None = None, rates=None, prune=None) -> dict:
    """{strategy: Cand} (``registry.Strategy`` objects, every parameter filled in; ``only``: the
    candidates that strategy admits, e.g. a chosen ``Cand.strategy`` re-costed); a block-sparse
    result's layout gives its holes no site. ``kind``: ``kind_of(node)``. The costing is
    ``COSTS``' for the node's operator kind; an operator of none raises a ``TRAError`` naming
    the layer."""
    family = operator_kind(node)
    cost = COSTS.get(family) if family is not None else None
    if cost is None:
        raise TRAError(
            f"cost: {node.describe()}: no strategies for operator {type(node).__name__} "
            f"(operator kind {family.value if family else None}; see optimizer/operators and search.COSTS)"
        )
    return finished(node, cost(node, views, s, only, rates, prune), views)


def finished(node, cands: dict, views) -> dict:
    """A costing's candidates made whole: each tagged with its strategy, its layout with the
    result's holes given no site, its registered cost terms measured."""
    for st, c in cands.items():
        if c.strategy is None:  # a registered module's costing tagged by its key
            c.strategy = st
        c.layout = held(c.layout, node.type)
        c.terms = measure_terms(node, c, views)
    return cands


def plan_node(node, alts, s, memory_limit, force, keep, rates, memo=None):
    """The kept alternatives of ``node`` (``force``: ``registry.parse_force``'s, or unparsed).
    ``memo`` (one search's): candidates by what their costing reads (``costing_key``), so an
    operator repeated with equal types over equally laid out inputs (a loop's steps, a
    groupby's like groups) is costed once."""
    kind = kind_of(node)
    options: list[Alt] = []
    rejected: dict[str, int] = {}
    wanted = forced(force, kind)
    # (input alternatives, their candidates when already costed)
    work: list[tuple[tuple, dict | None]] = [(c, None) for c in _combos([alts[id(c)] for c in inputs_of(node, kind)])]
    if wanted is None and operator_kind(node) is OperatorKind.JOIN:
        together: list[tuple[tuple, dict | None]] = [
            (combo, made) for combo, _ in work if (made := _co_located(node, kind, views_of(combo), s, memo))
        ]
        work = together or work  # inputs already together: that plan moves nothing, no search
    prunes = s >= PRUNE_SITES and wanted is None and memory_limit is None and not TERMS and kind in CONTRACTION_KINDS
    for combo, costed in work:
        pruner = Pruner(node, combo, rates, keep, options, s) if prunes and costed is None else None
        views = views_of(combo)
        if costed is not None:
            cands = costed
        else:
            key = costing_key(node, kind, views, None) if memo is not None and pruner is None and not TERMS else None
            cands = memoized(memo, key, partial(candidates, node, kind, views, s, rates=rates, prune=pruner))
        if wanted is not None and not any(wanted.admits(st) for st in cands):
            names = sorted(st.name for st in cands)
            raise TRAError(f"{node.describe()}: strategy {wanted.name!r} is not applicable; candidates are {names}")
        if len(work) == 1 and len(cands) == 1 and wanted is None and fits(node, cands, combo, rates, memory_limit):
            ((st, c),) = cands.items()  # one plan: nothing to rank, its totals summed when read
            return [pending(node, st.name, c, combo, rates)]
        kept = pruner.made if pruner is not None else {}
        made = {st: kept.get(st) or combine(node, st.name, c, combo, rates) for st, c in cands.items()}
        table = {st.name: (a.bytes, a.seconds) for st, a in made.items()}
        for st, a in made.items():
            if wanted is not None and not wanted.admits(st):
                continue
            if memory_limit is not None and a.peak.max() > memory_limit:
                rejected[st.name] = int(a.peak.max())
                continue
            a.table = table
            options.append(a)
    if not options:
        need = min(rejected.values())
        block = max(largest_block(c.type) for c in (node, *inputs_of(node, kind)))
        raise MemoryLimitError(
            f"{node.describe()} ({kind}): no plan fits {memory_limit:,} bytes per site; "
            f"the smallest needs {need:,} bytes on its busiest site, its largest block is "
            f"{block:,} bytes (strategies tried: {', '.join(sorted(rejected))})"
        )
    options.sort(key=rank)
    best, seen = [], set()
    for a in options:
        sig = a.signature
        if sig not in seen:
            seen.add(sig)
            best.append(a)
        if len(best) == keep:
            break
    return best


def fits(node, cands, combo, rates, memory_limit) -> bool:
    """Whether the one candidate in ``cands`` fits ``memory_limit`` per site: its own working set
    does (every input alternative kept fits already, and a sub-plan's peak is the largest of
    its operators')."""
    if memory_limit is None:
        return True
    (c,) = cands.values()
    if int(np.max(c.peak, initial=0)) <= memory_limit:  # the working set is at most the resident peak
        return True
    return int(working_set(node, c, combo, rates, len(c.flops)).max()) <= memory_limit


def _co_located(node, kind, views, s, memo) -> dict | None:
    """``candidates.co_located``'s candidates made whole, once per costing key in ``memo`` (a
    loop's steps join alike)."""
    own = costing_key(node, kind, views, None) if memo is not None and not TERMS else None

    def cost():
        made = C.co_located(node, views, s)
        return None if made is None else finished(node, made, views)

    return memoized(memo, None if own is None else ("co_located", own), cost)


def costing_key(node, kind, views, only) -> tuple:
    """Everything a candidate costing reads: the operator (a contraction's join too) with its
    type, and per input view its type, layouts and which views are one relation. Candidates are
    read-only once made, so two nodes with one key share them."""
    own = (own_token(node.child), own_token(node)) if kind in CONTRACTION_KINDS else own_token(node)
    return (
        own,
        only,
        tuple(
            (
                type_token(v.type),
                layout_signature(v.layout),
                layout_signature(v.present),
                v.free,
                v.placed,
                next(j for j, w in enumerate(views) if w is v),
            )
            for v in views
        ),
    )


def memoized(memo, key, cost):
    """``cost()``, made once per ``key`` in ``memo`` (a key of None: made every time; a None
    made is kept as any other answer)."""
    if key is None:
        return cost()
    if key not in memo:
        memo[key] = cost()
    return memo[key]


def flows(cand, s) -> tuple[np.ndarray, np.ndarray]:
    """(bytes each site receives, bytes each site sends) for a candidate; either spread evenly
    when the candidate does not know it per site."""

    def per_site(values):
        return np.full(s, cand.moved / s) if values is None else np.asarray(values, np.float64)

    return per_site(cand.site_moved), per_site(cand.site_sent)


def combine(node, name, cand, combo, rates) -> Alt:
    """The alternative computing ``node`` by ``cand`` over the input alternatives ``combo``, with
    the totals of its sub-plan (one pass over the inputs: the search and every re-cost of a
    cached plan call this per operator)."""
    return Alt(node, name, tuple(combo), cand, cand.layout, **totals(node, cand, combo, rates))


def totals(node, cand, combo, rates) -> dict:
    """The sub-plan totals of ``cand`` over ``combo`` (``Alt``'s fields of those names)."""
    flops = np.array(cand.flops, np.float64)
    peak = working_set(node, cand, combo, rates, len(flops)).copy()  # read-only: kept with ``cand``
    site_moved, site_sent = flows(cand, len(flops))
    nbytes, tasks = cand.moved, cand.tasks
    for a in combo:
        flops += a.flops
        np.maximum(peak, np.asarray(a.peak, np.int64), out=peak)
        nbytes += a.bytes
        tasks += a.tasks
        if a.site_moved is not None:
            site_moved = site_moved + a.site_moved
        if a.site_sent is not None:
            site_sent = site_sent + a.site_sent
    terms = combine_terms(cand.terms, (a.terms for a in combo))
    return dict(
        bytes=nbytes,
        tasks=tasks,
        flops=flops,
        peak=peak,
        seconds=rates.seconds(nbytes, tasks, flops, site_moved, terms, site_sent),
        site_moved=site_moved,
        site_sent=site_sent,
        terms=terms,
    )


def rank(alt):
    name = alt.strategy
    pref = alt.cand.strategy.preference if alt.cand is not None else len(PREFERENCE)
    return (round(alt.seconds, 9), alt.bytes, int(alt.peak.max()), pref, name)


def forced(force, kind) -> Strategy | None:
    """The strategy ``force`` (parsed or not) imposes on an operator of kind ``kind``."""
    parsed: Forced | None = parse_force(force)
    return None if parsed is None else parsed.get(kind)


def _combos(lists):
    out: list[tuple] = [()]
    for options in lists:
        out = [c + (a,) for c in out for a in options]
    return out


def chosen(roots) -> list:
    """The alternatives a plan uses, children first, each once."""
    return walk_many(roots)


def _one_layout(roots, order, fused, alts, s, memory_limit, force, keep, rates, memo):
    """Restrict every node that the best plan computes in several layouts to one of them, the
    node earliest in topological order first, keeping the cheapest restriction."""
    fixed: dict[str, int] = {}  # str(id(node)) -> index of the alternative it is restricted to
    while True:
        best = [alts[id(r)][0] for r in roots]
        used = Counter(id(a.node) for a in chosen(best) if not isinstance(a.node, tra.Input))
        node = next((n for n in order if used.get(id(n), 0) > 1), None)
        if node is None:
            return alts
        hits = [i for i, a in enumerate(alts[id(node)]) if any(a is b for b in chosen(best))]
        trials = []
        for i in hits:
            trial = dict(fixed, **{str(id(node)): i})
            a = _research(order, fused, alts, s, memory_limit, force, keep, rates, trial, memo)
            total = sum(a[id(r)][0].seconds for r in roots)
            trials.append((total, i, trial, a))
        _, _, fixed, alts = min(trials, key=lambda t: (t[0], t[1]))


def _research(order, fused, alts, s, memory_limit, force, keep, rates, fixed, memo):
    out = {}
    for node in order:
        if id(node) in fused:
            continue
        if isinstance(node, tra.Input):
            out[id(node)] = alts[id(node)]
            continue
        options = plan_node(node, out, s, memory_limit, force, keep, rates, memo)
        i = fixed.get(str(id(node)))
        out[id(node)] = options if i is None else [options[min(i, len(options) - 1)]]
    return out


__all__ = [
    "search",
    "costing_key",
    "memoized",
    "COSTS",
    "MemoryLimitError",
    "kind_of",
    "Alt",
    "chosen",
    "input_alt",
    "plan_node",
]

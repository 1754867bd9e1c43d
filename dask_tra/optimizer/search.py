"""Plan search: a dynamic programme over TRA nodes and the layouts of their results.

For each TRA node (children first) and each kept alternative of its children, every
applicable strategy builds an IA sub-plan; the one cost model prices the whole
sub-plan (so repartitioning between operators is priced exactly, as EinDecomp's edge
costs). Per node we keep the cheapest alternative for each distinct result layout
(where every tuple sits), at most ``keep`` of them: EinDecomp's M[v, d] table with
concrete layouts as the d. A consumer may thus take a costlier producer plan that is
already laid out as it needs. Greedy planning (the cheapest plan per operator) is one
path through this table, so the result is never worse than greedy.

Sub-expressions with several consumers are planned once per kept layout and costed
once in the final DAG (shared IA nodes are walked once).

Cost: O(nodes × keep² × strategies) sub-plan costings, each linear in the sub-plan's
tuples; metadata only, no chunk is touched.
"""
from __future__ import annotations

from collections import Counter

from ..ia import Placed, SiteMap, part
from ..tra import expr as tra
from ..tra.errors import TRAError
from . import strategies as S
from .cost import evaluate_cost
from .layout import Alt, signature

PREFERENCE = ("local", "bmm", "cmm", "rmm", "copart", "align-left", "align-right",
              "bcast-left", "bcast-right", "two-phase", "shuffle")


class MemoryLimitError(TRAError):
    """No plan for an operator fits the per-site memory limit."""


def kind_of(node) -> str:
    if S.is_contraction(node):
        k = node.child.kernel.name
        return "matmul" if k == "matmul" else ("einsum" if k.startswith("einsum") else "contraction")
    return type(node).__name__.lower()


def search(expr, s: int, placements=None, memory_limit=None, force=None, keep=6):
    """Best Alt for ``expr`` on ``s`` sites. ``placements``: input name -> {key: sites}."""
    placements = placements or {}
    consumers = Counter(id(c) for n in expr.walk() for c in n.children)
    fused = {id(n.child) for n in expr.walk() if S.is_contraction(n) and consumers[id(n.child)] == 1}
    alts = {}
    for node in expr.walk():
        if id(node) in fused:
            continue
        if isinstance(node, tra.Input):
            alts[id(node)] = [_input_alt(node, s, placements)]
            continue
        alts[id(node)] = _plan_node(node, alts, s, memory_limit, force, keep)
    return alts[id(expr)][0]


def _input_alt(node, s, placements):
    if node.name in placements:
        mapping = {tuple(k): tuple(v) for k, v in placements[node.name].items()}
        return Alt(Placed(node, SiteMap(mapping), s), free=False, strategy="placed")
    return Alt(Placed(node, part(range(node.type.key_arity), node.type.frontier), s), free=True,
               strategy="free")


def _plan_node(node, alts, s, memory_limit, force, keep):
    kind = kind_of(node)
    if kind in ("matmul", "einsum", "contraction"):
        inputs = node.child.children
    else:
        inputs = node.children
    options = []
    rejected = {}
    for combo in _combos([alts[id(c)] for c in inputs]):
        cands = _candidates(node, kind, combo, s)
        wanted = _forced(force, kind)
        if wanted is not None:
            if wanted not in cands:
                raise TRAError(f"{node.describe()}: strategy {wanted!r} is not applicable; "
                               f"candidates are {sorted(cands)}")
        costs = {name: evaluate_cost(root) for name, root in cands.items()}
        table = {name: c.bytes_moved for name, c in costs.items()}
        for name, root in cands.items():
            if wanted is not None and name != wanted:
                continue
            c = costs[name]
            if memory_limit is not None and c.max_peak > memory_limit:
                rejected[name] = c.max_peak
                continue
            notes = {}
            for a in combo:
                notes.update(a.notes)
            notes[id(node)] = (node, kind, name, table, c)
            options.append(Alt(root, strategy=name, notes=notes, cost=c))
    if not options:
        need = min(rejected.values())
        raise MemoryLimitError(f"{node.describe()} ({kind}): no plan fits {memory_limit:,} bytes per site; "
                               f"the smallest needs {need:,} bytes on its busiest site "
                               f"(strategies tried: {', '.join(sorted(rejected))})")
    options.sort(key=_rank)
    best, seen = [], set()
    for a in options:
        sig = signature(a.node)
        if sig not in seen:
            seen.add(sig)
            best.append(a)
        if len(best) == keep:
            break
    return best


def _rank(alt):
    name = alt.strategy
    pref = PREFERENCE.index(name) if name in PREFERENCE else len(PREFERENCE)
    return (alt.cost.bytes_moved, alt.cost.max_peak, pref, name)


def _candidates(node, kind, combo, s):
    if kind in ("matmul", "einsum", "contraction"):
        return S.contraction(node, combo[0], combo[1], s)
    if isinstance(node, tra.Join):
        return S.join_alone(node, combo[0], combo[1])
    if isinstance(node, tra.Aggregate):
        return S.aggregate_alone(node, combo[0])
    if isinstance(node, tra.Concat):
        return S.concat(node, combo[0])
    return S.per_tuple(node, combo[0])


def _forced(force, kind):
    if force is None:
        return None
    if isinstance(force, str):
        return force if kind in ("matmul", "einsum", "contraction") else None
    return force.get(kind)


def _combos(lists):
    if not lists:
        yield ()
        return
    head, *rest = lists
    for a in head:
        for tail in _combos(rest):
            yield (a,) + tail

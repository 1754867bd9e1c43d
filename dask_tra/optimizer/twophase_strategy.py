"""The ``two-phase`` contraction strategy: lineage-planned placement (``twophase``) as one more
candidate of the search, costed exactly and built as an IA plan like every other.

A contraction Σ_g(L ⋈ R) is an aggregated join tree: its join groups are the block products
(one per join-output key whose two tuples exist) and its aggregation groups the output keys.
``cost`` runs the pilot run on the inputs' key sets (metadata: a block-sparse relation's keys,
every key of a dense one) with each tuple's current sites (a placed input's copies, none for a
free one), places every group by the paper's greedy (``twophase.place_greedy``, time
objective with the search's ``Rates``). ``contraction.TwoPhase``'s body, written once, says the
rest: each input to its join groups, the products made and summed. Its symbolic mover
(``movers.SymbolicSummer``) costs it from the placement's own figures (``cand``), its IA mover
(``movers.IASummer``) builds it: each input tuple shuffled to the sites of its join groups (a free
one made first at its home), a ``LocalJoin`` computing each product at its one site, a local
pre-sum per site, the partials shuffled to their group's site and summed there.

Considered when it can beat the whole-relation strategies and its lineage is small: an input
is block-sparse or an input already placed on the cluster (persisted data, whose placement may
be irregular), the two sides are different relations, and there are at most
``MAX_JOIN_GROUPS`` block products. Planning is then linear in the lineage (the greedy's
``O(N_g N_s N̄_j)``); dense inputs made by the plan and dense intermediates (laid out by the
whole-relation strategies themselves) never pay for it, so planning a dense product or chain
stays independent of its block count.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import cast

import numpy as np

from ..ia import LocalAggregate, LocalJoin, Placed, Shuffle, SiteMap
from ..ia.nodes import IANode
from .contraction import TwoPhase
from .cost import Rates
from .layout import Built, has_placement
from .symbolic import Cand, Detail, cell_flops, key_bytes, key_elements, present_keys
from .twophase import Lineage, Problem, TwoPhasePlan, evaluate, evaluate_placement, greedy, lineage, problem, static

MAX_JOIN_GROUPS = 5_000  # the candidate (both greedy runs and the rivals) costs ~20 µs per join group: ~0.1 s


def _keys(t) -> np.ndarray:
    """The keys relation type ``t`` holds, row-major."""
    if t.keys is not None:
        return present_keys(t)
    return np.indices(t.frontier, np.int64).reshape(t.key_arity, -1).T


def _rows(keys: np.ndarray, frontier) -> np.ndarray:
    return np.ravel_multi_index(keys.T, frontier) if keys.shape[1] else np.zeros(len(keys), np.int64)


def _products(join, lk: np.ndarray, rk: np.ndarray) -> int:
    """Block products of ``join`` (join groups), counted from the key sets without listing them."""
    lcode = _rows(lk[:, list(join.left_keys)], [join.left.type.frontier[d] for d in join.left_keys])
    rcode = _rows(rk[:, list(join.right_keys)], [join.right.type.frontier[d] for d in join.right_keys])
    n = max(int(lcode.max(initial=-1)), int(rcode.max(initial=-1))) + 1
    return int(np.bincount(lcode, minlength=n) @ np.bincount(rcode, minlength=n))


def applies(agg, views) -> bool:
    left, right = views
    if left is right and not left.free:
        return False  # one relation on both sides: its tuples would be counted as two
    if not (left.type.key_arity and right.type.key_arity):
        return False  # a single block: nothing to place
    if left.placed or right.placed or left.type.keys is not None or right.type.keys is not None:
        return _products(agg.child, _keys(left.type), _keys(right.type)) <= MAX_JOIN_GROUPS
    return False  # dense, made by this plan: its layouts are the whole-relation strategies' own


class _Contraction:
    """The contraction as an aggregated join tree over its existing keys (labels: the join's
    output dims), with the bytes and flops of each group. What depends on the key sets only
    (the lineage, the groups' bytes and flops) is made once per contraction and kept on its
    type: the search and the final costing both read it."""

    def __init__(self, agg, views):
        join = agg.child
        self.agg, self.join, self.views = agg, join, views
        memo = ("two-phase", id(views[0].type), id(views[1].type))
        if memo not in agg.type._cache:
            agg.type._cache[memo] = _lineage_and_costs(agg, views)
        self.keys, self.rows, self.lin, self.join_keys, self.agg_rows, self.costs = agg.type._cache[memo]
        self.tuple_sites = [None if v.free else v.present[r] for v, r in zip(views, self.rows)]


def _lineage_and_costs(agg, views) -> tuple:
    join = agg.child
    kl, kr = join.left.type.key_arity, join.right.type.key_arity
    labels = [tuple(range(kl)), tuple(join.right_out[d] for d in range(kr))]
    keys = [_keys(v.type) for v in views]
    rows = [_rows(k, v.type.frontier) for k, v in zip(keys, views)]
    lin: Lineage = lineage(keys, labels, tuple(agg.group_by))
    order = [lin.join_labels.index(d) for d in range(len(join.type.frontier))]
    join_keys = lin.join_keys[:, order]
    agg_rows = _rows(lin.agg_keys, agg.type.frontier)
    join_rows = _rows(join_keys, join.type.frontier)
    dims = range(len(join.type.frontier))
    costs = dict(
        tuple_bytes=[key_bytes(v.type)[r] for v, r in zip(views, rows)],
        join_flops=cell_flops(join, dims, join.type.frontier).ravel()[join_rows],
        out_bytes=key_bytes(agg.type)[agg_rows],
        add_flops=key_elements(agg.type)[agg_rows].astype(float),
    )
    return keys, rows, lin, join_keys, agg_rows, costs


def placement(agg, views, s: int, rates: Rates | None = None, fixed: TwoPhasePlan | None = None):
    """(the contraction's lineage and costs, the placement): the greedy's (``_best``), or
    ``fixed``'s re-costed for where the inputs are now."""
    p = _Contraction(agg, views)
    rates = rates or Rates()
    if fixed is None:
        return p, _best(p, s, rates)
    placed = evaluate_placement(
        p.lin,
        s,
        fixed.join_sites,
        fixed.agg_sites,
        tuple_sites=p.tuple_sites,
        homes=fixed.homes,
        rates=rates,
        **p.costs,
    )
    return p, TwoPhasePlan(p.lin, s, fixed.join_sites, fixed.agg_sites, placed.homes, placed, strategy=fixed.strategy)


def to_join_groups(p: _Contraction, plan: TwoPhasePlan, i: int, s: int) -> tuple[np.ndarray, np.ndarray]:
    """(where input ``i``'s copies are once each tuple is at its join groups' sites, the bytes of
    it each site then holds)."""
    v = p.views[i]
    rows = np.zeros((math.prod(v.type.frontier), s), bool)
    rows[p.rows[i]] = _need(p, plan, i, s)
    return (rows if v.free else v.present | rows), key_bytes(v.type) @ rows


def cand(agg, p: _Contraction, plan: TwoPhasePlan, present: list, site_in, s: int) -> Cand:
    """The two-phase candidate of ``plan`` (inputs at their join groups: ``present``,
    ``site_in``), with its exact bytes, per-site received bytes and flops."""
    nb = key_bytes(agg.type)
    partial = np.zeros((math.prod(agg.type.frontier), s), bool)
    partial[p.agg_rows[p.lin.join_agg], plan.join_sites] = True
    out = np.zeros_like(partial)
    out[p.agg_rows, plan.agg_sites] = True
    c = plan.cost
    steps = [
        ("send to join groups", 0, int(c.site_input_received.sum() - _received(p, plan, 1))),
        ("send to join groups", 1, _received(p, plan, 1)),
        ("aggregate partials", None, int(c.partial_bytes_moved)),
    ]
    return Cand(
        out,
        int(c.bytes_moved),
        int(c.bytes_moved // max(agg.type.dtype.itemsize, 1)),
        site_in + nb @ partial + nb @ out,
        np.asarray(c.site_flops, float),
        # the products are folded into their site's pre-sum (emission fuses them): a task per
        # partial, plus a final sum where a group has several (as ``symbolic.finish`` counts)
        int(partial.sum()) + int((partial.sum(axis=1) > 1).sum()),
        present,
        Detail(steps, placement=plan.strategy, balance=_balance(c.site_flops)),
        np.asarray(c.site_received, np.int64),
        np.asarray(c.site_sent, np.float64),
        strategy=TwoPhase(plan),
    )


def _best(p: _Contraction, s: int, rates: Rates) -> TwoPhasePlan:
    """The paper's greedy (time first, then bytes), its bytes-first variant and the static
    whole-relation placements, costed in one model: the fastest predicted, then fewest bytes.
    (The greedy alone can trade bytes for balance and lose to a static rule: see ``twophase``.)
    One ``problem`` serves them all."""
    q = problem(p.lin, s, tuple_sites=p.tuple_sites, rates=rates, **p.costs)
    plans = [replace(greedy(q, objective=o), strategy=f"greedy, {o} first") for o in ("seconds", "bytes")]
    plans += [static(q, rule) for rule in ("output", "join")]
    plans += [_owner(q, i) for i, held in enumerate(p.tuple_sites) if held is not None]
    return min(plans, key=lambda o: (round(o.cost.seconds, 9), o.cost.bytes_moved))


def _owner(q: Problem, i: int) -> TwoPhasePlan:
    """Owner computes, by placed input ``i``: each join group where its input-``i`` tuple is
    (lowest replica), each aggregation group where most of its join groups are (lowest site on
    ties)."""
    lin, s = q.lin, q.s
    rows = q.held[q.jt[:, i]]
    xs = np.where(rows.any(axis=1), rows.argmax(axis=1), 0).astype(np.int64)
    votes = np.zeros((lin.n_agg, s), np.int64)
    np.add.at(votes, (lin.join_agg, xs), 1)
    ys = votes.argmax(axis=1).astype(np.int64)
    c = evaluate(q, xs, ys)
    return TwoPhasePlan(lin, s, xs, ys, c.homes, c, strategy=f"static-owner-{i}")


def _need(p: _Contraction, plan: TwoPhasePlan, i: int, s: int) -> np.ndarray:
    """(tuples of input i, s): the sites each tuple must be on (its join groups', else its home
    or where it is)."""
    need = np.zeros((len(p.rows[i]), s), bool)
    need[p.lin.join_tuples[:, i], plan.join_sites] = True
    return need


def _received(p: _Contraction, plan: TwoPhasePlan, i: int) -> int:
    """Bytes of input i's tuples sent to the sites of their join groups."""
    v = p.views[i]
    need = _need(p, plan, i, plan.sites)
    have = np.zeros_like(need)
    if v.free:
        homes = plan.input_homes(i)
        have[np.flatnonzero(homes >= 0), homes[homes >= 0]] = True
    else:
        have = v.present[p.rows[i]]
    return int(p.costs["tuple_bytes"][i] @ (need & ~have).sum(axis=1))


def _balance(site_flops) -> float:
    """Busiest site's compute over the mean (1.0: perfectly balanced)."""
    f = np.asarray(site_flops, float)
    return float(f.max() / f.mean()) if f.size and f.mean() > 0 else 1.0


def send_side(alt: Built, i: int, s: int, plan: TwoPhasePlan) -> IANode:
    """Input ``i`` (``alt``) with each tuple at the sites of its join groups (a free one made
    first at its home)."""
    t = alt.node.type
    keys = [tuple(int(x) for x in k) for k in _keys(t)]
    need = np.zeros((len(keys), s), bool)
    need[plan.lineage.join_tuples[:, i], plan.join_sites] = True
    node = alt.node
    if alt.free:
        homes = plan.input_homes(i)
        first = np.where(homes >= 0, homes, np.where(need.any(axis=1), need.argmax(axis=1), 0))
        node = Placed(cast(Placed, node).input, SiteMap({k: (int(h),) for k, h in zip(keys, first)}), s)
    where = {}
    for k, row in zip(keys, need):
        sites = tuple(int(x) for x in np.flatnonzero(row))
        where[k] = sites or (node.copies[k][0][0],)
    placement = SiteMap(where)
    return node if has_placement(node, placement) else Shuffle(node, placement)


def joined(agg, left: IANode, right: IANode, plan: TwoPhasePlan) -> IANode:
    """Each block product made at its one site, pre-summed per site, the partials shuffled to
    their group's site and summed there."""
    join = agg.child
    order = [plan.lineage.join_labels.index(d) for d in range(len(join.type.frontier))]
    at = {tuple(int(x) for x in k): int(t) for k, t in zip(plan.lineage.join_keys[:, order], plan.join_sites)}
    product = LocalJoin(left, right, join.left_keys, join.right_keys, join.kernel, at=at)
    pre = LocalAggregate(product, agg.group_by, agg.kernel)
    home = SiteMap({tuple(int(x) for x in k): (int(t),) for k, t in zip(plan.lineage.agg_keys, plan.agg_sites)})
    if has_placement(pre, home):
        return pre
    return LocalAggregate(Shuffle(pre, home), tuple(range(len(agg.group_by))), agg.kernel)


__all__ = ["MAX_JOIN_GROUPS", "applies", "placement", "to_join_groups", "cand", "send_side", "joined"]

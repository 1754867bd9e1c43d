"""A strategy is one class, in one place: its parameters, its kinds, its variants and its body.

``Stripe(k)`` below is a join strategy defined in this file alone (nothing of dask_tra is
edited for it): both inputs partitioned by their ``k``-th join key dim only. Defining the class
registers it; the search costs it (its body run with a symbolic mover), the plan builder builds
it (the same body with an IA mover), ``force=`` finds it by object and by name, and its
predicted bytes equal its expanded plan's and the reference executor's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import dask_tra as dt
from dask_tra.ia import execute, part, project
from dask_tra.optimizer import cache, evaluate_cost, kind_of, plan
from dask_tra.optimizer.operators import base
from dask_tra.optimizer.operators.base import OperatorKind, Strategy
from dask_tra.optimizer.operators.registry import STRATEGIES, Bmm, parse, parse_force, variants
from dask_tra.optimizer.search import candidates, chosen
from dask_tra.optimizer.symbolic import Detail
from dask_tra.tra import RelationType, TRAError, assemble
from dask_tra.tra import expr as tra


@dataclass(frozen=True)
class Stripe(Strategy):
    """A join alone: both inputs partitioned by their ``k``-th join key dim only."""

    kinds = frozenset({OperatorKind.JOIN})
    k: int = 0

    @property
    def name(self) -> str:
        return f"stripe-{self.k}"

    @classmethod
    def variants(cls, join, s):
        return tuple(cls(k) for k in range(len(join.left_keys)))

    @classmethod
    def named(cls):
        return (cls(0), cls(1))

    def body(self, join, m):
        if self.k >= len(join.left_keys):
            return None
        lk, rk = join.left_keys[self.k], join.right_keys[self.k]
        left = m.place(0, m.partitioned(0, part([lk], m.frontier(0))), f"shuffle by PART[{lk}]")
        right = m.place(1, m.partitioned(1, part([rk], m.frontier(1))), f"shuffle by PART[{rk}]")
        return m.join(left, right, part([lk], join.type.frontier), self)


# Defining the class registered it (``test_defining_a_strategy_registers_it``). This module is
# imported with every other when pytest collects: ``Stripe`` plans joins only while its tests run.
STRATEGIES.remove(Stripe)


@pytest.fixture(autouse=True, scope="module")
def _registered_here_only():
    STRATEGIES.append(Stripe)
    cache.clear()
    yield
    STRATEGIES.remove(Stripe)
    cache.clear()  # no plan that uses it is kept for later tests


def _sum_of_two(rng, shape=(7, 6), chunks=(3, 4)):
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    z = dt.from_array(a, chunks=chunks) + dt.from_array(b, chunks=chunks)
    return z, a + b


def _inputs(z):
    return {name: {k: src.chunk(k) for k in src.type.iter_keys()} for name, src in z.sources.items()}


def _placements(z, s, rng):
    return {name: {k: tuple(sorted({int(rng.integers(s)) for _ in range(int(rng.integers(1, 3)))})) for k in blocks}
            for name, blocks in _inputs(z).items()}


@pytest.mark.parametrize("s", [1, 2, 3, 4])
@pytest.mark.parametrize("placed", [False, True])
@pytest.mark.parametrize("k", [0, 1])
def test_a_strategy_defined_in_a_test_file_is_costed_as_it_is_built(s, placed, k):
    rng = np.random.default_rng(100 * s + 10 * k + placed)
    z, want = _sum_of_two(rng)
    placements = _placements(z, s, rng) if placed else None
    for force in ({"join": Stripe(k)}, {"join": f"stripe-{k}"}):
        p = plan(z.expr, s, placements=placements, force=force)
        res = execute(p.root, _inputs(z))
        np.testing.assert_allclose(assemble(z.expr.type, project(p.root, res)), want)
        assert res.bytes_moved == evaluate_cost(p.root).bytes_moved == p.cost.bytes_moved
        joins = [a for a in chosen(p.alts) if kind_of(a.node) == "join"]
        assert joins and all(p.cands[id(a)].strategy == Stripe(k) for a in joins)
        assert p.explain.operators[-1].strategy == f"stripe-{k}"


def test_a_strategy_defined_in_a_test_file_joins_the_registry_and_the_search():
    rng = np.random.default_rng(3)
    z, _ = _sum_of_two(rng)
    join = next(n for n in z.expr.walk() if isinstance(n, tra.Join))
    assert [st for st in variants(join, 4) if isinstance(st, Stripe)] == [Stripe(0), Stripe(1)]
    assert parse("stripe-1", frozenset({OperatorKind.JOIN})) == Stripe(1)
    assert parse_force({"join": "stripe-0"}).get("join") == Stripe(0)
    p = plan(z.expr, 4)  # unforced: a candidate like every other, in explain()'s table
    assert {"stripe-0", "stripe-1", "copart"} <= set(p.explain.operators[-1].candidates)
    with pytest.raises(ValueError, match="stripe-0"):  # named among the accepted forms
        parse("stripe-9", frozenset({OperatorKind.JOIN}))


def test_defining_a_strategy_registers_it():
    @dataclass(frozen=True)
    class Twice(Stripe):
        @property
        def name(self) -> str:
            return f"twice-{self.k}"

    try:
        assert STRATEGIES[-1] is Twice and Twice.kinds == Stripe.kinds
    finally:
        STRATEGIES.remove(Twice)


def test_every_strategy_is_a_class_with_a_body_run_by_one_loop():
    """The contraction, join and aggregation strategies of dask_tra each define ``body``; the
    one loop (``base.run``) runs them for both movers."""
    for cls in STRATEGIES:
        plans = cls.kinds & {OperatorKind.CONTRACTION, OperatorKind.JOIN, OperatorKind.AGGREGATE}
        if plans:
            assert cls.body is not Strategy.body, cls
    assert base.planning(OperatorKind.JOIN, Stripe(1)) == [Stripe]


def test_explain_facts_are_typed():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((8, 6)), rng.standard_normal((6, 40))
    z = dt.from_array(a, chunks=(8, 6)) @ dt.from_array(b, chunks=(6, 4))
    p = plan(z.expr, 4, force="bmm")
    cand = next(p.cands[id(x)] for x in chosen(p.alts) if id(x) in p.cands and isinstance(p.cands[id(x)].strategy, Bmm))
    assert isinstance(cand.detail, Detail)
    assert cand.detail.bside == cand.strategy.side
    assert all(isinstance(what, str) and isinstance(nbytes, int) for what, _, nbytes in cand.detail.steps)
    assert cand.detail.facts() == {"bside": cand.strategy.side}  # what explain() reports of it


class _Unplanned(tra.Expr):
    def __init__(self, t):
        self.children = ()
        self.type = t

    def describe(self):
        return "Unplanned()"


def test_an_operator_no_layer_plans_names_the_cost_layer():
    node = _Unplanned(RelationType.from_shapes((4, 4), (2, 2)) if hasattr(RelationType, "from_shapes")
                      else dt.from_array(np.zeros((4, 4)), chunks=2).expr.type)
    with pytest.raises(TRAError, match=r"^cost: Unplanned\(\): no strategies for operator _Unplanned"):
        candidates(node, "unplanned", [], 2)


def test_two_phase_is_built_by_its_body_through_the_contraction_movers(monkeypatch):
    """``TwoPhase(plan)`` is built like every strategy, by its body through the IA contraction
    mover (``strategies.PLANS``): the bytes it moves are the bytes it was costed at, and it
    computes the product."""
    from dask_tra.optimizer import strategies
    from dask_tra.optimizer.operators.registry import TwoPhase

    built = []
    real = strategies.PLANS[OperatorKind.CONTRACTION]

    def spy(node, kids, s, only):
        made = real(node, kids, s, only)
        built.extend(k for k in made if isinstance(k, TwoPhase))
        return made

    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((9, 8)), rng.standard_normal((8, 7))
    z = dt.from_array(a, chunks=(3, 2)) @ dt.from_array(b, chunks=(2, 3))
    for s in (2, 3):
        placements = _placements(z, s, rng)
        cache.clear()
        monkeypatch.setitem(strategies.PLANS, OperatorKind.CONTRACTION, spy)
        got = plan(z.expr, s, placements=placements, force="two-phase")
        assert got.root  # built now (``Plan.root`` is built on first use)
        monkeypatch.undo()
        assert built and evaluate_cost(got.root).bytes_moved == got.cost.bytes_moved
        res = execute(got.root, _inputs(z))
        np.testing.assert_allclose(assemble(z.expr.type, project(got.root, res)), a @ b)

"""A new term of the time objective is one registration (``cost.register_term``): the search,
the final costing, the plan cache and ``explain()`` carry it without naming it. The term here,
``spill`` (bytes above a per-site memory budget on the fullest site, at a cost per byte), is
defined in the test alone: it is checked against the plan's peak memory, and a high enough
cost changes the plan chosen."""

from __future__ import annotations

import numpy as np
import pytest

from dask_tra.optimizer import plan
from dask_tra.optimizer.cost import TERMS, CostTerm, register_term
from dask_tra.tra import Aggregate, Input, Join, split
from dask_tra.tra import kernels as K
from dask_tra.tra.kernels import Einsum

BUDGET = 900  # bytes per site before Dask would spill
PENALTY = {"s_per_byte": 0.0}


def _spill(node, cand, views):
    """Bytes above the budget on the candidate's fullest site."""
    return max(0.0, float(np.max(cand.peak)) - BUDGET)


@pytest.fixture
def spill():
    register_term(CostTerm("spill", _spill, lambda b, rates: b * PENALTY["s_per_byte"], "{:.0f} B spilled", max))
    yield
    del TERMS["spill"]


def _matmul():
    rng = np.random.default_rng(5)
    ta, ra = split(rng.standard_normal((9, 12)), (3, (5, 2, 5)))
    tb, rb = split(rng.standard_normal((12, 4)), ((5, 2, 5), 2))
    a, b = Input("a", ta), Input("b", tb)
    e = Aggregate(Join(a, b, (1,), (0,), Einsum("ij,jk->ik")), (0, 2), K.add)
    placed = {"a": {k: (i % 4,) for i, k in enumerate(sorted(ra))}, "b": {k: (3 - i % 4,) for i, k in enumerate(rb)}}
    return e, placed


def test_the_term_is_measured_combined_and_explained(spill):
    e, placed = _matmul()
    seen = set()
    for force in (None, "bmm", "cmm", "rmm"):
        p = plan(e, 4, placements=placed, force=force)
        assert p.cost.terms["spill"] == max(0, p.cost.max_peak - BUDGET)  # the max over operators
        assert f"{p.cost.terms['spill']:.0f} B spilled" in str(p.explain)
        seen.add(p.cost.terms["spill"])
    assert len(seen) > 1 and max(seen) > 0  # the strategies differ in it


def test_a_costly_term_changes_the_plan(spill):
    e, placed = _matmul()
    PENALTY["s_per_byte"] = 0.0
    cheap = plan(e, 4, placements=placed)
    PENALTY["s_per_byte"] = 1.0  # a spilled byte costs more than everything else together
    costly = plan(e, 4, placements=placed, keep=7)  # other settings: not the cached plan
    names = costly.explain.operators[-1].candidates
    least = min(plan(e, 4, placements=placed, force=n).cost.terms["spill"] for n in names)
    assert costly.cost.terms["spill"] == least < cheap.cost.terms["spill"]
    assert costly.cost.seconds >= costly.cost.terms["spill"]


def test_without_the_term_nothing_is_added():
    e, placed = _matmul()
    p = plan(e, 4, placements=placed)
    assert p.cost.terms == {} and "spilled" not in str(p.explain)

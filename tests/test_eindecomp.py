"""EinDecomp planner: the paper's worked numbers (as corrected by the errata), the DP
against a brute-force oracle, and the matrix-chain comparison with the baselines."""
from __future__ import annotations

import itertools
from math import prod

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dask_tra.reference.eindecomp import (
    EinGraph,
    EinSum,
    EinsumVertex,
    brute_force,
    cost_agg,
    cost_join,
    cost_repart,
    count_viable,
    evaluate,
    expand,
    greedy,
    plan,
    sqrt_plan,
    viable,
)
from dask_tra.reference.eindecomp_graph import vertex_cost


def matmul(n: int = 8) -> EinSum:
    return EinSum.parse("ij,jk->ik", {"i": n, "j": n, "k": n})


# --- the worked examples of section 7 (8 x 8 matmul, labels (i, j, k)) ---------------

def test_join_cost_worked_example():
    mm = matmul()
    assert expand(mm, (4, 1, 4)) == (4, 1, 1, 4)
    assert cost_join(mm, (4, 1, 4)) == 16 * (16 + 16) == 512


def test_agg_cost_worked_example():
    mm = matmul()
    assert cost_agg(mm, (4, 1, 4)) == 0  # nothing aggregated: n_agg = 1
    assert cost_agg(mm, (2, 2, 4)) == 16 / 2 * (2 - 1) * 8 == 64


def test_repart_cost_worked_example():
    # producer [2,2,2,4] outputs Z as [2,4]; consumer [4,1,1,4] wants its left input as [4,1]
    assert cost_repart((2, 4), (4, 1), (8, 8)) == 320
    assert cost_repart((2, 4), (2, 4), (8, 8)) == 0

    g = EinGraph()
    for name in "XYW":
        g.input(name, (8, 8))
    g.einsum("Z", "ij,jk->ik", "X", "Y")
    g.einsum("Z2", "ij,jk->ik", "Z", "W")
    costs = evaluate(g, {"Z": (2, 2, 4), "Z2": (4, 1, 4)}).costs
    assert costs["Z"].total == 64 + cost_join(matmul(), (2, 2, 4))
    assert costs["Z2"].repart == 320
    assert costs["Z2"].total == 512 + 320


def test_elementwise_addition_has_no_aggregation():
    add = EinSum.parse("ij,ij->ij", {"i": 64, "j": 32})
    for d in viable(add, 8):
        assert cost_agg(add, d) == 0
        assert cost_join(add, d) == 2 * 64 * 32


# --- viable() ---------------------------------------------------------------------------

def test_viable_matmul_p8_has_ten_vectors():
    mm = matmul()
    found = {expand(mm, d) for d in viable(mm, 8)}
    printed = {(2, 1, 1, 4), (4, 1, 1, 2), (8, 1, 1, 1), (1, 1, 1, 8),
               (2, 2, 2, 2), (4, 2, 2, 1), (1, 2, 2, 4), (1, 8, 8, 1)}
    assert len(found) == 10
    assert found == printed | {(2, 4, 4, 1), (1, 4, 4, 2)}


def test_viable_count_n10_d6():
    six = EinSum.parse("abcd,cdef->abef", dict.fromkeys("abcdef", 4096))
    assert len(viable(six, 2**10)) == count_viable(10, 6) == 3003


@given(
    bounds=st.lists(st.integers(1, 40), min_size=1, max_size=4),
    n=st.integers(0, 4),
)
def test_viable_is_every_power_of_two_split_within_bounds(bounds, n):
    labels = "abcd"[: len(bounds)]
    es = EinSum.parse(f"{labels}->{labels}", dict(zip(labels, bounds)))
    expected = {
        d for d in itertools.product(*([2**e for e in range(n + 1)],) * len(bounds))
        if prod(d) == 2**n and all(k <= b for k, b in zip(d, bounds))
    }
    got = viable(es, 2**n)
    assert len(got) == len(set(got)) and set(got) == expected


def test_viable_rejects_p_not_power_of_two():
    with pytest.raises(ValueError):
        viable(matmul(), 6)


# --- single operators --------------------------------------------------------------------

@pytest.mark.parametrize("n", [8, 64, 1024])
def test_square_matmul_at_p8_is_the_3d_algorithm(n):
    mm = matmul(n)
    g = EinGraph()
    g.input("X", (n, n))
    g.input("Y", (n, n))
    g.einsum("Z", "ij,jk->ik", "X", "Y")
    chosen = plan(g, 8).partitioning["Z"]
    assert expand(mm, chosen) == (2, 2, 2, 2)
    local = {d: cost_join(mm, d) + cost_agg(mm, d) for d in viable(mm, 8)}
    assert all(cost > local[chosen] for d, cost in local.items() if d != chosen)


def test_spec_validation():
    with pytest.raises(ValueError):
        EinSum.parse("ij,jk->il", {"i": 2, "j": 2, "k": 2, "l": 2})  # broadcast
    with pytest.raises(ValueError):
        EinSum.parse("ii->i", {"i": 2})
    g = EinGraph()
    g.input("X", (4, 8))
    with pytest.raises(ValueError):
        g.einsum("Z", "ij,jk->ik", "X", "X")  # j bound to 8 and 4


# --- DP against the brute-force oracle --------------------------------------------------

SIZES = st.sampled_from([2, 4, 8, 16])


@st.composite
def graphs(draw, dag: bool):
    """1-3 EinSums (mostly binary) over random small inputs; a forest unless ``dag``."""
    g = EinGraph()
    inputs: list[str] = []
    open_ops: list[str] = []  # outputs still free to consume
    letters = iter("abcdefghijklmnopqrstuvwxyz")

    def operand() -> str:
        if open_ops and draw(st.booleans()):
            name = draw(st.sampled_from(open_ops))
            if not dag:
                open_ops.remove(name)
            return name
        if inputs and draw(st.integers(0, 3)) == 0:
            return draw(st.sampled_from(inputs))
        shape = tuple(draw(st.lists(SIZES, min_size=1, max_size=2)))
        fixed = None
        if draw(st.booleans()):
            fixed = tuple(draw(st.sampled_from([k for k in (1, 2, 4) if k <= n])) for n in shape)
        inputs.append(g.input(f"in{len(inputs)}", shape, fixed))
        return inputs[-1]

    for i in range(draw(st.integers(1, 3))):
        x = operand()
        operands, specs = [x], ["".join(next(letters) for _ in g[x].shape)]
        if draw(st.integers(0, 4)):  # else unary: a map, maybe aggregating
            y = x if isinstance(g[x], EinsumVertex) and draw(st.integers(0, 3)) == 0 else operand()
            y_labels = ""
            for n in g[y].shape:
                shared = [a for a, m in zip(specs[0], g[x].shape) if m == n and a not in y_labels]
                y_labels += draw(st.sampled_from(shared)) if shared and draw(st.booleans()) else next(letters)
            operands.append(y)
            specs.append(y_labels)
        union = list(dict.fromkeys("".join(specs)))
        out = draw(st.permutations(union))[: draw(st.integers(1, min(2, len(union))))]
        open_ops.append(g.einsum(f"op{i}", f"{','.join(specs)}->{''.join(out)}", *operands))
    return g


def _feasible(g: EinGraph, p: int) -> bool:
    return all(viable(v.einsum, p) for v in g.operators)


def _is_viable_plan(g: EinGraph, result, p: int) -> bool:
    return all(result.partitioning[v.name] in viable(v.einsum, p) for v in g.operators)


@settings(max_examples=150, deadline=None)
@given(g=graphs(dag=False), p=st.sampled_from([2, 4, 8]))
def test_dp_equals_brute_force_on_trees(g, p):
    assume(_feasible(g, p))
    assert g.is_forest()
    dp, oracle = plan(g, p), brute_force(g, p)
    assert dp.method == "eindecomp" and _is_viable_plan(g, dp, p)
    assert dp.total == oracle.total


@settings(max_examples=100, deadline=None)
@given(g=graphs(dag=True), p=st.sampled_from([2, 4, 8]))
def test_every_search_is_bounded_by_brute_force_on_dags(g, p):
    assume(_feasible(g, p))
    oracle = brute_force(g, p).total
    for search in (plan, greedy, sqrt_plan):
        result = search(g, p)
        assert _is_viable_plan(g, result, p)
        assert result.total >= oracle
        assert result.total == evaluate(g, result.partitioning).total


def test_dag_with_shared_intermediate_is_linearized():
    g = EinGraph()
    for name in "XYWPQR":
        g.input(name, (64, 64))
    g.einsum("Z", "ij,jk->ik", "X", "Y")
    g.einsum("U", "ij,jk->ik", "Z", "W")
    g.einsum("V", "ij,jk->ik", "P", "Q")
    g.einsum("S", "ij,ij->ij", "U", "V")
    g.einsum("T", "ij,ij->ij", "Z", "R")  # Z has two consumers
    assert not g.is_forest()
    result = plan(g, 8)
    assert result.method == "eindecomp-linearized"
    assert _is_viable_plan(g, result, 8)
    assert brute_force(g, 8).total <= result.total
    # Z -> U -> S is the first path; V and T come later, alone, with every neighbour
    # planned, so their edges to those neighbours are charged and each is locally optimal
    for name in "VT":
        for d in viable(g[name].einsum, 8):
            assert evaluate(g, {**result.partitioning, name: d}).total >= result.total
    assert result.costs["S"].repart == 0


@pytest.mark.parametrize("search", [plan, brute_force, greedy, sqrt_plan])
def test_too_few_blocks_for_p_is_an_error(search):
    g = EinGraph()
    g.input("X", (2, 2))
    g.einsum("S", "ij->i", "X")
    with pytest.raises(ValueError, match="no viable partitioning"):
        search(g, 8)


# --- matrix chains (experiment 1) --------------------------------------------------------

def skewed_chain(s: int) -> EinGraph:
    """(A x B) + (C x (D x E)), A: s x .1s, B: .1s x s, C: s x .1s, D: .1s x 10s, E: 10s x s."""
    g = EinGraph()
    for name, shape in dict(A=(s, s // 10), B=(s // 10, s), C=(s, s // 10),
                            D=(s // 10, 10 * s), E=(10 * s, s)).items():
        g.input(name, shape)
    g.einsum("AB", "ij,jk->ik", "A", "B")
    g.einsum("DE", "ij,jk->ik", "D", "E")
    g.einsum("CDE", "ij,jk->ik", "C", "DE")
    g.einsum("SUM", "ij,ij->ij", "AB", "CDE")
    return g


@pytest.mark.parametrize("s", [1000, 10_000])
def test_skewed_chain_dp_beats_sqrt_and_greedy(s):
    g = skewed_chain(s)
    dp, gr, sq = plan(g, 8), greedy(g, 8), sqrt_plan(g, 8)
    assert dp.total == pytest.approx(brute_force(g, 8).total)
    assert dp.total < sq.total
    assert dp.total < gr.total  # greedy's AB layout clashes with CDE's at the addition
    assert dp.costs["SUM"].repart == 0 < gr.costs["SUM"].repart


def test_dp_strictly_beats_greedy_without_ties():
    """(X x Y) x W at p=4: greedy's unique local best for XY forces a costly second step."""
    g = EinGraph()
    g.input("X", (256, 64))
    g.input("Y", (64, 64))
    g.input("W", (64, 1024))
    g.einsum("XY", "ij,jk->ik", "X", "Y")
    g.einsum("XYW", "ij,jk->ik", "XY", "W")
    gr = greedy(g, 4)
    known: dict = {}
    for v in g.operators:  # every greedy step had a unique best: no tie-breaking luck involved
        local = sorted(vertex_cost(g, v, {**known, v.name: d}).total for d in viable(v.einsum, 4))
        assert local[0] < local[1]
        assert vertex_cost(g, v, {**known, v.name: gr.partitioning[v.name]}).total == local[0]
        known[v.name] = gr.partitioning[v.name]
    assert plan(g, 4).total < gr.total

"""The ``two-phase`` contraction strategy in the search: exact (NumPy's result, predicted bytes ==
the IA plan's == the simulating executor's), on random sparsity and random placements, and on a
4-worker LocalCluster measured bytes == predicted."""
import numpy as np
import pytest
from distributed import Client, LocalCluster, futures_of, wait
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dask_tra as dt
from dask_tra.ia import execute, project
from dask_tra.optimizer import evaluate_cost, plan
from dask_tra.optimizer import twophase_strategy


def _blocks_equal(z, blocks, want):
    """Every block the plan holds equals NumPy's, and every block it lacks is zero in NumPy's."""
    offs = [np.cumsum((0,) + c) for c in z.chunks]
    held = np.zeros(want.shape, bool)
    for k, v in blocks.items():
        at = tuple(slice(o[i], o[i + 1]) for o, i in zip(offs, k))
        np.testing.assert_allclose(v, want[at], rtol=1e-10, atol=1e-10)
        held[at] = True
    assert not want[~held].any()


@st.composite
def programs(draw):
    n, k, m = (draw(st.integers(2, 14)) for _ in range(3))
    ck = draw(st.integers(1, k))
    seed = draw(st.integers(0, 2**16))
    a = dt.block_sparse_random((n, k), chunks=(draw(st.integers(1, n)), ck), density=draw(st.floats(0.0, 1.0)),
                               seed=seed)
    if draw(st.booleans()):
        b = dt.block_sparse_random((k, m), chunks=(ck, draw(st.integers(1, m))), density=draw(st.floats(0.0, 1.0)),
                                   seed=seed + 1)
    else:
        b = dt.random.uniform(-1, 1, (k, m), chunks=(ck, draw(st.integers(1, m))), seed=seed + 2)
    return a, b, draw(st.integers(1, 5)), draw(st.booleans()), seed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.sampled_from(["two-phase", None]))
def test_two_phase_is_exact_on_random_sparsity_and_placements(case, force):
    a, b, s, placed, seed = case
    z = a @ b
    rng = np.random.default_rng(seed)
    inputs = {name: {k: src.chunk(k) for k in src.type.iter_keys()} for name, src in z.sources.items()}
    placements = None
    if placed:  # already on the cluster, some blocks with a replica
        placements = {name: {k: tuple(sorted({int(rng.integers(s)) for _ in range(int(rng.integers(1, 3)))}))
                             for k in blocks} for name, blocks in inputs.items()}
    p = plan(z.sparse_expr, s, placements=placements, force=force)
    res = execute(p.root, inputs)
    _blocks_equal(z, project(p.root, res), a.compute() @ b.compute())
    assert res.bytes_moved == evaluate_cost(p.root).bytes_moved == p.cost.bytes_moved
    assert p.explain.predicted_bytes == p.cost.bytes_moved
    if force:
        assert [o.strategy for o in p.explain.operators] == ["two-phase"]


def test_explain_names_two_phase_with_its_bytes_and_compute_balance():
    a = dt.block_sparse_random((60, 80), chunks=(10, 10), density=0.3, seed=5)
    b = dt.random.uniform(-1, 1, (80, 40), chunks=(10, 20), seed=6)
    with dt.config.set(force="two-phase"):
        e = (a @ b).explain(sites=4)
    (op,) = e.operators
    assert op.strategy == "two-phase" and op.predicted_bytes == e.predicted_bytes
    assert "two-phase placement" in str(e) and "busiest worker / mean" in str(e)
    algebra = str(e.view(detail="algebra"))
    assert "two-phase" in algebra and "compute balance" in algebra


def _matmul(z):
    return next(op for op in z.planned(4)[0].explain.operators if op.kind == "matmul")


def test_dense_lazy_inputs_never_pay_for_a_lineage(monkeypatch):
    """Planning a dense product of lazily made inputs stays independent of its block count; a
    lineage over ``MAX_JOIN_GROUPS`` block products is not built either."""
    a = dt.random.uniform(-1, 1, (400, 400), chunks=10, seed=1)
    assert "two-phase" not in _matmul(a @ a.T).candidates
    x = dt.block_sparse_random((100, 100), chunks=10, density=0.5, seed=2)
    assert "two-phase" in _matmul(x @ a[:100, :100]).candidates
    monkeypatch.setattr(twophase_strategy, "MAX_JOIN_GROUPS", 10)
    assert "two-phase" not in _matmul(x @ a[:100, :50]).candidates


def test_dense_chains_pay_for_a_lineage_only_where_an_input_is_placed():
    """A dense intermediate is laid out by the whole-relation strategies themselves: the product
    reading it gets no two-phase candidate unless its other side is data already placed."""
    from dask_tra.optimizer import plan

    a, b, c = (dt.random.uniform(-1, 1, (60, 60), chunks=15, seed=i) for i in range(3))
    e = ((a @ b) @ c).expr

    def two_phase_at(placements):
        ops = [o for o in plan(e, 4, placements=placements).explain.operators if o.kind == "matmul"]
        return ["two-phase" in o.candidates for o in ops]

    assert two_phase_at(None) == [False, False]
    placed_c = {c.expr.name: {(i, j): [(i + j) % 4] for i in range(4) for j in range(4)}}
    assert two_phase_at(placed_c) == [False, True]


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=4, threads_per_worker=1, processes=True, dashboard_address=":0") as cl, \
            Client(cl) as c:
        yield c


@pytest.mark.parametrize("force", ["two-phase", None])
def test_on_a_local_cluster_two_phase_is_exact_and_measured(client, force):
    """Persisted inputs after a rebalance (an irregular placement) and random sparsity."""
    a = dt.block_sparse_random((600, 500), chunks=(50, 50), density=0.25, seed=11)
    b = dt.random.uniform(-1, 1, (500, 300), chunks=(50, 100), seed=12)
    a, b = a.persist(), b.persist()
    wait(futures_of([a, b]))
    client.rebalance()
    A, B = a.compute(), b.compute()
    z = a @ b
    with dt.config.set(force=force):
        with dt.diagnostics.measure() as m:
            got = z.persist()
            wait(futures_of(got))
        np.testing.assert_allclose(got.compute(), A @ B, rtol=1e-10, atol=1e-10)
    assert m.predicted_bytes > 0 or force is None
    assert m.bytes_moved == m.predicted_bytes, (m.bytes_moved, m.predicted_bytes)
    if force:
        assert [o.strategy for o in z.explain().operators] == ["two-phase"]


def test_the_example_runs_and_checks_itself(capsys):
    """examples/block_sparse.py at a small size (it asserts NumPy's result and measured ==
    predicted bytes for every plan)."""
    import runpy
    from pathlib import Path

    example = runpy.run_path(str(Path(__file__).parent.parent / "examples" / "block_sparse.py"))
    example["main"](n=1000, k=1000, m=500, block=125, density=0.1)
    out = capsys.readouterr().out
    assert "two-phase" in out and "moved (= predicted)" in out

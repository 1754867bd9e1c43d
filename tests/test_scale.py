"""Scale is part of correct: deep chains, loops of updates and repeated plans.

Speed itself is measured by ``python -m benchmarks scale``; here, what can fail: recursion,
results, the size of what is printed, and whether a repeated plan skips the search.
"""
import sys

import numpy as np

import dask_tra as dt
from dask_tra.optimizer import cache

search = sys.modules["dask_tra.optimizer.search"]


def test_a_chain_of_1000_elementwise_ops_computes():
    base = np.random.default_rng(0).standard_normal((23, 31))
    x = dt.from_array(base, chunks=(7, 9))
    y = x
    for i in range(1000):
        y = y * 1.0001 + (i % 3)
    want = base.copy()
    for i in range(1000):
        want = want * 1.0001 + (i % 3)
    np.testing.assert_allclose(y.compute(), want, rtol=1e-12)
    assert "tra_ops=" in repr(y) and y.explain(sites=3).predicted_bytes >= 0


def test_a_loop_of_updates_prints_each_shared_node_once():
    X = dt.from_array(np.random.default_rng(1).standard_normal((40, 6)), chunks=(10, 6))
    y = dt.from_array(np.random.default_rng(2).standard_normal((40, 1)), chunks=(10, 1))
    w = dt.zeros((6, 1), chunks=(6, 1))
    sizes = []
    for n in (10, 20, 40):
        w = dt.zeros((6, 1), chunks=(6, 1))
        for _ in range(n):
            w = w - 1e-3 * (X.T @ (X @ w - y))
        sizes.append(len(w.explain(sites=2).expression))
    # each iteration adds a constant amount of text (a tree print would double it every step)
    assert sizes[2] - sizes[1] < 2.5 * (sizes[1] - sizes[0])
    Xn, yn = X.compute(), y.compute()
    wn = np.zeros((6, 1))
    for _ in range(40):
        wn = wn - 1e-3 * (Xn.T @ (Xn @ wn - yn))
    np.testing.assert_allclose(w.compute(), wn, rtol=1e-10)


def test_a_repeated_step_replays_its_plan_without_searching(monkeypatch):
    cache.clear()

    def step(seed):
        X = dt.random.uniform(-1, 1, (60, 20), chunks=(15, 20), seed=1)
        W = dt.from_array(np.random.default_rng(seed).standard_normal((20, 8)), chunks=(20, 4))
        return ((X @ W) ** 2).sum()

    first = step(0).explain(sites=3)
    calls = []
    real = search.plan_node
    monkeypatch.setattr(search, "plan_node", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = step(1)
    e = again.explain(sites=3)
    assert calls == []  # no search: the first step's plan was replayed
    assert e.predicted_bytes == first.predicted_bytes
    assert [o.strategy for o in e.operators] == [o.strategy for o in first.operators]
    want = ((dt.random.uniform(-1, 1, (60, 20), chunks=(15, 20), seed=1).compute()
             @ np.random.default_rng(1).standard_normal((20, 8))) ** 2).sum()
    np.testing.assert_allclose(again.compute(), want, rtol=1e-10)  # the replay computes the new step
    other = dt.random.uniform(-1, 1, (60, 20), chunks=(12, 20), seed=1)  # another structure: a search
    (other @ other.T).explain(sites=3)
    assert calls


def test_a_plan_is_recosted_not_searched_when_inputs_moved(monkeypatch):
    """Last step's outputs land elsewhere: the cached choices are kept and re-costed exactly."""
    from dask_tra.ia import execute
    from dask_tra.optimizer import plan
    cache.clear()
    rng = np.random.default_rng(3)
    a = dt.from_array(rng.standard_normal((12, 9)), chunks=(4, 3))
    b = dt.from_array(rng.standard_normal((9, 6)), chunks=(3, 3))
    z = a @ b
    na, nb = (n.name for n in z.expr.walk() if not n.children)
    keys = {na: list(np.ndindex(3, 3)), nb: list(np.ndindex(3, 2))}
    first = {n: {k: (i % 3,) for i, k in enumerate(ks)} for n, ks in keys.items()}
    moved = {n: {k: ((i + 1) % 3,) for i, k in enumerate(ks)} for n, ks in keys.items()}
    p1 = plan(z.expr, 3, placements=first)
    calls = []
    real = search.plan_node
    monkeypatch.setattr(search, "plan_node", lambda *a, **k: calls.append(1) or real(*a, **k))
    p2 = plan(z.expr, 3, placements=moved)
    assert calls == []
    assert [o.strategy for o in p2.explain.operators] == [o.strategy for o in p1.explain.operators]
    inputs = {n: {k: src.chunk(k) for k in src.type.iter_keys()} for n, src in z.sources.items()}
    assert execute(p2.root, inputs).bytes_moved == p2.cost.bytes_moved  # exact for the new placements


def test_a_recost_reuses_the_costing_of_operators_whose_inputs_did_not_move(monkeypatch):
    """Placed inputs move between plans of one structure: the re-cost keeps the costing of
    operators whose inputs are where they were, and its cost is what costing every operator
    afresh gives (W is read twice: the second read finds the first one's copies)."""
    import dask_tra.optimizer as opt
    from dask_tra.ia import execute
    cache.clear()
    rng = np.random.default_rng(5)
    X = dt.from_array(rng.standard_normal((40, 10)), chunks=(7, 10))
    W = dt.from_array(rng.standard_normal((10, 6)), chunks=(10, 3))
    V = dt.from_array(rng.standard_normal((6, 10)), chunks=(3, 5))
    z = ((dt.maximum(X @ W, 0) @ V) ** 2 + (X @ (V.T @ W.T)) - 1).sum(axis=1)
    inputs = {n.name: n.type for n in z.expr.walk() if not n.children}
    computed = []
    real = opt._one_candidate
    monkeypatch.setattr(opt, "_one_candidate", lambda *a, **k: computed.append(1) or real(*a, **k))
    reused = 0
    for trial in range(12):
        where = {n: {k: tuple(sorted(set(rng.integers(0, 3, 1 + (trial % 2)).tolist())))
                     for k in np.ndindex(*t.frontier)} for n, t in inputs.items()}
        if trial % 3:  # X stays where it was: W and V moved
            xs = next(n for n, t in inputs.items() if t.frontier == (6, 1))
            where[xs] = {k: (k[0] % 3,) for k in np.ndindex(6, 1)}
        computed.clear()
        p = opt.plan(z.expr, 3, placements=where)
        ops = len(p.explain.operators)
        if trial and len(computed) < ops:  # re-costed (a choice that no longer applies: a search)
            reused += ops - len(computed)
        fresh, _, _ = opt.final_costs(p.alts, 3, p.rates)
        assert fresh == p.cost, trial
        data = {n: {k: src.chunk(k) for k in src.type.iter_keys()} for n, src in z.sources.items()}
        assert execute(p.root, data).bytes_moved == p.cost.bytes_moved
    assert reused > 0  # some operators' costings were reused

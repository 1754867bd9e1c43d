"""Planning scales with the number of sites (issue 35 item 4): counts, not clocks.

``python -m benchmarks scale --only sites`` times it; here: the work per operator that grows
with the sites (EinDecomp vectors costed exactly: each costing is O(keys × sites) vectorised
work), the exactness of the per-site sums, and that skipping dominated vectors changes no plan.
"""

import sys

import numpy as np
import pytest

import dask_tra as dt
from dask_tra.optimizer import cache
from dask_tra.optimizer.strategies import partition_vectors
from dask_tra.optimizer.symbolic import col_counts, row_counts, wsum

search = sys.modules["dask_tra.optimizer.search"]
symbolic = sys.modules["dask_tra.optimizer.symbolic"]


def _matmul_sum(nb, seed=0):
    n = nb * 100
    A = dt.random.random((n, n), chunks=100, seed=seed + 1)
    B = dt.random.random((n, n), chunks=100, seed=seed + 2)
    return (A @ B).sum(0)


def _counted(monkeypatch, z, sites):
    """(EinDecomp vectors costed exactly, layouts moved by ``Moves._send``) planning ``z``."""
    sends = []
    real = symbolic.Moves._send
    monkeypatch.setattr(symbolic.Moves, "_send", lambda self, *a: sends.append(1) or real(self, *a))
    cache.clear()
    before = search.Pruner.costed
    e = z.explain(sites=sites)
    return search.Pruner.costed - before, len(sends), e


def test_exact_costings_per_operator_do_not_grow_with_sites(monkeypatch):
    nb = 64
    counts = {}
    for sites in (64, 256, 1024):
        costed, sends, _ = _counted(monkeypatch, _matmul_sum(nb), sites)
        counts[sites] = (costed, sends, len(partition_vectors((nb, nb, nb), sites)))
    for sites, (costed, sends, vectors) in counts.items():
        # 28–36 vectors to choose from, of which a handful are costed exactly
        assert vectors >= 28 and costed <= 8, (sites, counts)
        # bmm (3 moves), cmm (2), rmm (2) and two per vector costed, and the final costing
        assert sends <= 12 + 2 * costed, (sites, counts)
    assert counts[1024][0] <= counts[64][0] + 2


@pytest.mark.parametrize("nb,sites", [(8, 32), (16, 64), (12, 36), (16, 256)])
def test_skipping_dominated_vectors_changes_no_plan(monkeypatch, nb, sites):
    got = _matmul_sum(nb).explain(sites=sites)
    cache.clear()
    monkeypatch.setattr(search.Pruner, "skip", lambda self, *a: False)
    want = _matmul_sum(nb).explain(sites=sites)
    assert [o.strategy for o in got.operators] == [o.strategy for o in want.operators]
    assert got.predicted_bytes == want.predicted_bytes
    assert got.predicted_seconds == pytest.approx(want.predicted_seconds, rel=1e-12)
    kept = got.operators[0].candidates
    assert all(want.operators[0].candidates[k] == v for k, v in kept.items())  # the costed ones, exactly


def test_a_chain_plans_alike_with_and_without_skipping(monkeypatch):
    def chain():
        rng = np.random.default_rng(3)
        a = dt.from_array(rng.standard_normal((60, 40)), chunks=(10, 10))
        b = dt.from_array(rng.standard_normal((40, 50)), chunks=(10, 10))
        c = dt.from_array(rng.standard_normal((50, 30)), chunks=(10, 10))
        return ((a @ b) @ c).sum(1)

    cache.clear()
    got = chain().explain(sites=36)
    cache.clear()
    monkeypatch.setattr(search.Pruner, "skip", lambda self, *a: False)
    want = chain().explain(sites=36)
    assert [o.strategy for o in got.operators] == [o.strategy for o in want.operators]
    assert got.predicted_bytes == want.predicted_bytes


def test_per_site_sums_are_exact():
    rng = np.random.default_rng(5)
    for keys, sites, kinds in ((300, 7, 1), (500, 64, 3), (2000, 33, 400), (70000, 3, 2)):
        m = rng.random((keys, sites)) < 0.3
        w = rng.choice(rng.integers(0, 2**40, kinds), keys).astype(np.int64)
        assert np.array_equal(wsum(w, m), w @ m)
        assert np.array_equal(col_counts(m), m.sum(axis=0))
        assert np.array_equal(row_counts(m), m.sum(axis=1))
        f = w / rng.integers(1, 4, keys)
        np.testing.assert_allclose(wsum(f, m), f @ m, rtol=1e-12)

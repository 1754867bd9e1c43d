"""Block-sparse RelArrays (a missing block is zeros): creation, key sets from metadata, exact
results vs NumPy on the dense equivalent, closed-form bytes == the IA plan's, and on a
4-worker LocalCluster measured bytes == predicted."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dask_tra as dt
from dask_tra.array.testing import assert_eq
from dask_tra.optimizer import evaluate_cost
from dask_tra.tra import Aggregate, Input, IntegrityError, Join, RelationType
from dask_tra.tra import kernels as K

CHUNKS_A = ((2, 1, 3), (3, 3, 1))  # 6 x 7, ragged
CHUNKS_B = ((3, 3, 1), (2, 2, 1))  # 7 x 5


def blocks_of(chunks, keys, seed, sign=1.0):
    rng = np.random.default_rng(seed)
    return {k: sign * rng.uniform(0.5, 1.5, tuple(c[i] for c, i in zip(chunks, k))) for k in keys}


def dense_of(x):
    """The dense equivalent, assembled by NumPy from the blocks (not by dask_tra)."""
    out = np.zeros(x.shape)
    src = x.sources[x.sparse_expr.name]
    starts = [np.concatenate([[0], np.cumsum(c)]) for c in x.chunks]
    for k in x.sparse_expr.type.keys:
        out[tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, k))] = src.chunk(k)
    return out


# a: block row 1 and block column 2 all missing; b: block column 1 missing
A_KEYS = [(0, 0), (0, 1), (2, 0), (2, 1)]
B_KEYS = [(0, 0), (1, 2), (2, 0), (2, 2)]


@pytest.fixture
def ab():
    a = dt.from_blocks(blocks_of(CHUNKS_A, A_KEYS, 1, -1.0), (6, 7), CHUNKS_A)
    b = dt.from_blocks(blocks_of(CHUNKS_B, B_KEYS, 2), (7, 5), CHUNKS_B)
    return a, b, dense_of(a), dense_of(b)


OPS = {
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b),
    "matmul-T": (lambda a, b: b.T @ a.T, lambda a, b: b.T @ a.T),
    "gram": (lambda a, b: a @ a.T, lambda a, b: a @ a.T),
    "einsum": (lambda a, b: dt.einsum("ij,jk->ki", a, b), lambda a, b: np.einsum("ij,jk->ki", a, b)),
    "einsum-sum": (lambda a, b: dt.einsum("ij->j", a), lambda a, b: np.einsum("ij->j", a)),
    "tensordot": (lambda a, b: dt.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1)),
    "sum": (lambda a, b: a.sum(), lambda a, b: a.sum()),
    "sum0": (lambda a, b: a.sum(axis=0), lambda a, b: a.sum(axis=0)),
    "sum1-keepdims": (lambda a, b: b.sum(axis=1, keepdims=True), lambda a, b: b.sum(axis=1, keepdims=True)),
    "max": (lambda a, b: a.max(), lambda a, b: a.max()),  # every present block is negative
    "min1": (lambda a, b: b.min(axis=1), lambda a, b: b.min(axis=1)),
    "mean": (lambda a, b: a.mean(), lambda a, b: a.mean()),
    "mean0": (lambda a, b: a.mean(axis=0), lambda a, b: a.mean(axis=0)),
    "prod0": (lambda a, b: (a + 2).prod(axis=0), lambda a, b: (a + 2).prod(axis=0)),
    "add": (lambda a, b: a + a.T.T, lambda a, b: a + a),
    "exp": (lambda a, b: dt.exp(a), lambda a, b: np.exp(a)),
    "plus-one": (lambda a, b: a + 1, lambda a, b: a + 1),
    "scale": (lambda a, b: a * 3, lambda a, b: a * 3),
    "transpose": (lambda a, b: a.T, lambda a, b: a.T),
    "matmul-then-exp": (lambda a, b: dt.exp(a @ b), lambda a, b: np.exp(a @ b)),
    "slice": (lambda a, b: a[1:5, 2:], lambda a, b: a[1:5, 2:]),
}


@pytest.mark.parametrize("op", list(OPS))
def test_exact_vs_numpy_on_the_dense_equivalent(ab, op):
    a, b, A, B = ab
    mine, ref = OPS[op]
    assert_eq(mine(a, b), ref(A, B), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", list(OPS))
def test_fully_empty_array(op):
    a = dt.from_blocks({}, (6, 7), CHUNKS_A)
    b = dt.from_blocks({}, (7, 5), CHUNKS_B)
    mine, ref = OPS[op]
    assert_eq(mine(a, b), ref(np.zeros((6, 7)), np.zeros((7, 5))), rtol=1e-12, atol=1e-12)


def test_key_sets_come_from_metadata(ab):
    a, b, _, _ = ab
    assert a.nnzblocks == 4 and a.sparse_expr.type.keys == frozenset(A_KEYS)
    # (i,k) in a, (k,j) in b: block (i,j) of a @ b is held iff some k meets
    want = {(i, j) for i, k in A_KEYS for k2, j in B_KEYS if k == k2}
    assert (a @ b).sparse_expr.type.keys == frozenset(want)
    assert a.T.sparse_expr.type.keys == frozenset((j, i) for i, j in A_KEYS)
    assert a.sum(axis=0).sparse_expr.type.keys == frozenset({(0,), (1,)})  # block column 2 is missing
    assert (a @ b).numblocks == (3, 3) and (a @ b).shape == (6, 5)
    # an operation that cannot skip missing blocks reads the zero-filled (dense) view
    assert dt.exp(a).sparse_expr.type.keys is None


def test_missing_blocks_are_skipped_not_made(ab):
    a, b, _, _ = ab
    z = a @ b
    join = z.sparse_expr.child
    assert isinstance(join, Join) and len(join.type.keys) == 4  # products of pairs that meet only
    assert {n.name for n in z.sparse_expr.walk() if isinstance(n, Input)} == {a.sparse_expr.name, b.sparse_expr.name}
    s = a.sum()
    assert {n.type.keys for n in s.sparse_expr.walk() if isinstance(n, Input)} == {frozenset(A_KEYS)}


def test_from_sparse_scipy_block_present_iff_nonzero():
    m = sp.lil_matrix((7, 9))
    m[0, 0] = 1.5
    m[6, 8] = -2.0
    m[3, 4] = 0.0  # an explicit zero does not make its block present
    m = m.tocsr()
    m.data[m.data == 0] = 0
    x = dt.from_sparse(m, chunks=(3, 4))
    assert x.sparse_expr.type.keys == frozenset({(0, 0), (2, 2)})
    assert_eq(x, m.toarray())
    coo = sp.coo_matrix(([1.0, 2.0, -3.0], ([1, 1, 5], [2, 2, 7])), shape=(7, 9))  # duplicates sum
    assert_eq(dt.from_sparse(coo, chunks=((2, 5), (4, 5))), coo.toarray())


def test_from_sparse_pydata_if_installed():
    sparse = pytest.importorskip("sparse")
    d = np.zeros((5, 6))
    d[4, 5] = 3.0
    x = dt.from_sparse(sparse.COO.from_numpy(d), chunks=2)
    assert x.nnzblocks == 1
    assert_eq(x, d)


def test_block_sparse_random_is_seeded_and_at_density():
    x = dt.block_sparse_random((40, 30), chunks=(4, 3), density=0.3, seed=7)
    y = dt.array.block_sparse_random((40, 30), chunks=(4, 3), density=0.3, seed=7)
    assert x.sparse_expr.type.keys == y.sparse_expr.type.keys
    assert 15 <= x.nnzblocks <= 45
    np.testing.assert_array_equal(x.compute(), y.compute())
    assert_eq(x, dense_of(x))
    with pytest.raises(ValueError, match="density"):
        dt.block_sparse_random((4, 4), 2, density=1.5)


def test_from_blocks_checks_shapes():
    with pytest.raises(ValueError, match=r"block \(0, 0\) has shape"):
        dt.from_blocks({(0, 0): np.ones((2, 2))}, (4, 4), 3)
    with pytest.raises(IndexError, match="outside the block grid"):
        dt.from_blocks({(2, 0): np.ones((2, 2))}, (4, 4), 2)


def test_tra_joins_and_aggregates_skip_holes_only_when_sound():
    t = RelationType.from_chunks(((2, 2), (2, 2)), np.float64).with_(keys=frozenset({(0, 1), (1, 0)}))
    d = RelationType.from_chunks(((2, 2), (2, 2)), np.float64)
    j = Join(Input("A", t), Input("B", d), [1], [0], K.matmul)
    assert j.type.keys == frozenset({(0, 1, 0), (0, 1, 1), (1, 0, 0), (1, 0, 1)})
    assert Aggregate(j, [0, 2], K.add).type.keys is None  # every output block receives a product
    with pytest.raises(IntegrityError, match="Join"):
        Join(Input("A", t), Input("B", d), [0, 1], [0, 1], K.add)  # a missing block is not skippable under add
    with pytest.raises(IntegrityError, match="Aggregate"):
        Aggregate(Input("A", t), [0], K.maximum)  # max must see the zeros


@pytest.mark.parametrize("sites", [1, 2, 3, 4])
def test_closed_form_bytes_equal_the_ia_plan(ab, sites):
    a, b, _, _ = ab
    for z in (a @ b, a @ a.T, b.T @ a.T, dt.einsum("ij,jk->ik", a, b), a.sum(axis=1)):
        for strategy in (None, "bmm", "cmm", "rmm"):
            with dt.config.set(force=strategy):
                p = z.planned(sites)[0]
            assert evaluate_cost(p.root).bytes_moved == p.cost.bytes_moved, (strategy, sites)


def _chunks(draw, n):
    sizes = []
    while n:
        c = draw(st.integers(1, n))
        sizes.append(c)
        n -= c
    return tuple(sizes)


@st.composite
def sparse_pair(draw):
    i, k, j = (draw(st.integers(1, 9)) for _ in range(3))
    ca = (_chunks(draw, i), _chunks(draw, k))
    cb = (ca[1], _chunks(draw, j))
    grid_a = [(p, q) for p in range(len(ca[0])) for q in range(len(ca[1]))]
    grid_b = [(p, q) for p in range(len(cb[0])) for q in range(len(cb[1]))]
    ka = draw(st.lists(st.sampled_from(grid_a), unique=True))
    kb = draw(st.lists(st.sampled_from(grid_b), unique=True))
    seed = draw(st.integers(0, 100))
    a = dt.from_blocks(blocks_of(ca, ka, seed, -1.0), (i, k), ca)
    b = dt.from_blocks(blocks_of(cb, kb, seed + 1), (k, j), cb)
    return a, b, draw(st.integers(1, 4))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sparse_pair())
def test_random_block_sparse_programs(case):
    a, b, sites = case
    A, B = dense_of(a), dense_of(b)
    for z, want in ((a @ b, A @ B), (a.max(axis=0), A.max(axis=0)), (a.sum(axis=1), A.sum(axis=1)), (a + 1, A + 1)):
        assert_eq(z, want, rtol=1e-12, atol=1e-12)
        p = z.planned(sites)[0]
        assert evaluate_cost(p.root).bytes_moved == p.cost.bytes_moved


@pytest.mark.parametrize("strategy", [None, "bmm", "cmm"])
def test_on_a_local_cluster_measured_bytes_equal_predicted(client, strategy):
    a = dt.block_sparse_random((400, 600), chunks=(50, 75), density=0.2, seed=3)
    b = dt.block_sparse_random((600, 300), chunks=(75, 100), density=0.4, seed=4)
    A, B = dense_of(a), dense_of(b)
    with dt.config.set(force=strategy):
        for z, want in ((a @ b, A @ B), (a @ b.sum(axis=1), A @ B.sum(axis=1))):
            with dt.diagnostics.measure() as m:
                got = z.compute()
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
            assert m.predicted_bytes > 0
            assert m.bytes_moved == m.predicted_bytes, (m.bytes_moved, m.predicted_bytes)
            assert z.explain().measured_bytes == m.bytes_moved

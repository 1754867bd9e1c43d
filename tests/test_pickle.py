"""Standard ``pickle`` round-trips derived arrays of every operation family, their kernels, key
maps, predicates, plans and emitted graphs: nothing in an expression or a graph is a lambda or
a closure, and every kernel compares equal to its unpickled copy."""
import pickle

import dask
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra import autodiff as ad
from dask_tra.tra.expr import Filter, ReKey
from dask_tra.tra.tasks import Data, identity

rng = np.random.default_rng(12)
A = rng.standard_normal((7, 5))  # ragged chunks: (3, 3, 1) x (2, 2, 1)
B = rng.standard_normal((5, 4))
I = rng.integers(-9, 9, (7, 5))


def _x():
    return da.from_array(A, chunks=((3, 3, 1), (2, 2, 1)))


def _b():
    return da.from_array(B, chunks=((2, 3), (3, 1)))


def _i():
    return da.from_array(I, chunks=3)


def _grad_tanh(x, b):
    return ad.grad(da.sum(da.tanh(x @ b) * 2.0), [x, b])[0]


def _grad_tanh_np(a, b):
    return (2.0 * (1 - np.tanh(a @ b) ** 2)) @ b.T


CASES = {
    # elementwise and ufuncs (baked scalars, broadcasting, three operands)
    "add-scalar": (lambda x, b: 1.5 - x, lambda a, b: 1.5 - a),
    "multiply": (lambda x, b: x * x, lambda a, b: a * a),
    "broadcast": (lambda x, b: x + x[0], lambda a, b: a + a[0]),
    "ufunc-exp": (lambda x, b: np.exp(x), lambda a, b: np.exp(a)),
    "ufunc-power": (lambda x, b: da.power(x, 3), lambda a, b: a ** 3),
    "ufunc-two-outputs": (lambda x, b: np.modf(x)[1], lambda a, b: np.modf(a)[1]),
    "ufunc-kwargs": (lambda x, b: np.add(x, x, dtype=np.float32), lambda a, b: np.add(a, a, dtype=np.float32)),
    "where": (lambda x, b: da.where(x > 0, x, -1.0), lambda a, b: np.where(a > 0, a, -1.0)),
    "where-three-arrays": (lambda x, b: da.where(x > 0, x, 2 * x), lambda a, b: np.where(a > 0, a, 2 * a)),
    "where-nan": (lambda x, b: da.where(x > 0, x, np.nan), lambda a, b: np.where(a > 0, a, np.nan)),
    "clip": (lambda x, b: da.clip(x, -0.5, 0.5), lambda a, b: np.clip(a, -0.5, 0.5)),
    "astype": (lambda x, b: x.astype(np.float32), lambda a, b: a.astype(np.float32)),
    "round": (lambda x, b: da.round(x, 1), lambda a, b: np.round(a, 1)),
    "isclose": (lambda x, b: da.isclose(x, x + 1e-9), lambda a, b: np.isclose(a, a + 1e-9)),
    # reductions
    "sum": (lambda x, b: x.sum(0), lambda a, b: a.sum(0)),
    "mean-keepdims": (lambda x, b: x.mean(1, keepdims=True), lambda a, b: a.mean(1, keepdims=True)),
    "max": (lambda x, b: da.max(x, 1), lambda a, b: a.max(1)),
    "nanmax": (lambda x, b: da.nanmax(x), lambda a, b: np.nanmax(a)),
    "argmax": (lambda x, b: da.argmax(x, 0), lambda a, b: a.argmax(0)),
    "argmin-flat": (lambda x, b: da.argmin(x), lambda a, b: a.argmin()),
    "var": (lambda x, b: x.var(1, ddof=1), lambda a, b: a.var(1, ddof=1)),
    "std": (lambda x, b: x.std(0), lambda a, b: a.std(0)),
    "cumsum": (lambda x, b: da.cumsum(x, 0), lambda a, b: np.cumsum(a, 0)),
    "cumprod": (lambda x, b: da.cumprod(x, 1), lambda a, b: np.cumprod(a, 1)),
    # contractions
    "matmul": (lambda x, b: x @ b, lambda a, b: a @ b),
    "einsum": (lambda x, b: da.einsum("ij,jk->ki", x, b), lambda a, b: np.einsum("ij,jk->ki", a, b)),
    "einsum-diagonal": (lambda x, b: da.einsum("ii->i", x[:5]), lambda a, b: np.einsum("ii->i", a[:5])),
    "einsum-extended": (lambda x, b: da.einsum("ik,jk->ij", x, x, combine="sqdiff", aggregate="max"),
                        lambda a, b: ((a[:, None] - a[None]) ** 2).max(-1)),
    "tensordot": (lambda x, b: da.tensordot(x, x, axes=([0], [0])), lambda a, b: np.tensordot(a, a, ([0], [0]))),
    # structure, gathers, joins of arrays
    "transpose": (lambda x, b: x.T, lambda a, b: a.T),
    "reshape": (lambda x, b: x.reshape(5, 7), lambda a, b: a.reshape(5, 7)),
    "slicing": (lambda x, b: x[::-2, 1:4], lambda a, b: a[::-2, 1:4]),
    "fancy-indexing": (lambda x, b: x[[4, 0, 4, 6]], lambda a, b: a[[4, 0, 4, 6]]),
    "boolean-mask": (lambda x, b: x[:, np.array([True, False, True, True, False])],
                     lambda a, b: a[:, [True, False, True, True, False]]),
    "concatenate": (lambda x, b: da.concatenate([x, x[:2]], 0), lambda a, b: np.concatenate([a, a[:2]], 0)),
    "stack": (lambda x, b: da.stack([x, 2 * x], 1), lambda a, b: np.stack([a, 2 * a], 1)),
    "rechunk": (lambda x, b: x.rechunk((4, 3)), lambda a, b: a),
    "roll": (lambda x, b: da.roll(x, 2, 0), lambda a, b: np.roll(a, 2, 0)),
    "tril": (lambda x, b: da.tril(x, -1), lambda a, b: np.tril(a, -1)),
    "broadcast_to": (lambda x, b: da.broadcast_to(x[0], (3, 5)), lambda a, b: np.broadcast_to(a[0], (3, 5))),
    "diff-bool": (lambda x, b: da.diff(x > 0, axis=1), lambda a, b: np.diff(a > 0, axis=1)),
    # creation and random
    "arange": (lambda x, b: da.arange(3, 20, 2, chunks=4) * 2, lambda a, b: np.arange(3, 20, 2) * 2),
    "eye": (lambda x, b: da.eye(6, chunks=4, k=1) + 1, lambda a, b: np.eye(6, k=1) + 1),
    "full": (lambda x, b: da.full((4, 3), 2.5, chunks=2) - x[:4, :3], lambda a, b: 2.5 - a[:4, :3]),
    "random": (lambda x, b: da.random.random((6, 4), chunks=(4, 3), seed=3) * 2,
               lambda a, b: da.random.random((6, 4), chunks=(4, 3), seed=3).compute() * 2),
    # autodiff
    "grad": (_grad_tanh, _grad_tanh_np),
    "grad-reductions": (lambda x, b: ad.grad(da.max(x) + da.mean(da.exp(x[1:5])), x),
                        lambda a, b: (a == a.max()) + np.pad(np.exp(a[1:5]) / a[1:5].size, ((1, 2), (0, 0)))),
}


def _walk(x):
    return list(x.expr.walk())


def _functions(node):
    """The kernel, key map or predicate a TRA node carries."""
    return [getattr(node, a) for a in ("kernel", "key_fn", "predicate") if hasattr(node, a)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_derived_array_round_trips_and_computes_like_numpy(case):
    build, ref = CASES[case]
    y = build(_x(), _b())
    z = pickle.loads(pickle.dumps(y))
    np.testing.assert_allclose(np.asarray(z.compute()), ref(A, B), rtol=1e-6, atol=1e-12)
    for n in _walk(y):  # every kernel, key map and predicate: equal (and hashed alike) after the trip
        for f in _functions(n):
            back = pickle.loads(pickle.dumps(f))
            assert back == f and hash(back) == hash(f), (case, n.describe())


def test_integer_array_ops_round_trip():
    y = (_i() // 4) % 3 + da.abs(_i())
    z = pickle.loads(pickle.dumps(y))
    np.testing.assert_array_equal(z.compute(), (I // 4) % 3 + np.abs(I))


@pytest.mark.parametrize("case", ["matmul", "grad", "fancy-indexing", "var", "where-three-arrays"])
def test_emitted_graph_pickles_and_runs(case):
    """The plan's Dask graph, standard-pickled and run by the threaded scheduler, gives NumPy's result."""
    build, ref = CASES[case]
    y = build(_x(), _b())
    graph = pickle.loads(pickle.dumps(dict(y.__dask_graph__())))
    blocks = dask.threaded.get(graph, y.__dask_keys__())
    np.testing.assert_allclose(np.block(_as_lists(blocks)), ref(A, B), rtol=1e-6, atol=1e-12)


def _as_lists(blocks):
    return [_as_lists(b) for b in blocks] if isinstance(blocks, (list, tuple)) else blocks


def test_plan_pickles():
    y = (_x() @ _b()).sum(0)
    plan, _ = y.planned(sites=3)
    back = pickle.loads(pickle.dumps(plan))
    assert repr(back.root) == repr(plan.root)
    assert back.cost.bytes_moved == plan.cost.bytes_moved


def test_computed_array_pickles_without_its_cached_plans():
    y = _x() + 1
    y.compute()
    assert y._plans
    z = pickle.loads(pickle.dumps(y))
    assert z._plans == {}
    np.testing.assert_allclose(z.compute(), A + 1)


def test_key_maps_and_predicates_compare_by_value():
    """Two gathers built alike carry equal key maps and predicates; a different gather does not."""
    def key_functions(r):
        return [f for n in _walk(r) if isinstance(n, (ReKey, Filter)) for f in _functions(n)]
    x = _x()
    one, again, other = key_functions(x[[4, 0, 4]]), key_functions(x[[4, 0, 4]]), key_functions(x[[0, 4, 4]])
    assert one and one == again
    assert one != other


def test_data_tasks_are_marked_and_run_as_tasks():
    chunk = np.arange(3)
    t = pickle.loads(pickle.dumps(Data(chunk)))
    assert isinstance(t, Data) and t.value is not chunk
    np.testing.assert_array_equal(t.value, chunk)
    fn, *args = t  # still a task tuple: (identity, chunk)
    assert fn is identity
    np.testing.assert_array_equal(fn(*args), chunk)


def test_composed_key_maps_and_predicates_pickle_and_agree():
    """The compositions rewrite rules build (a map after a map, a filter after a filter, a
    predicate read through a dim map) are picklable values that compute the composition."""
    from dask_tra.tra.keyfuncs import KeyMap, KeyPred, dims_in
    from dask_tra.tra.kernels import Bound
    swap, shift = KeyMap.selecting((1, 0)), KeyMap.table({(i, j): (i + 1, j) for i in range(3) for j in range(2)},
                                                        "shift")
    low, even = KeyPred(Bound(dims_in, (0,), frozenset({0, 1})), "k0<2", frozenset({0})), KeyPred(
        Bound(dims_in, (1,), frozenset({0, 2})), "even(k1)", frozenset({1}))
    both = pickle.loads(pickle.dumps(KeyPred.conjunction(low, even)))
    through = pickle.loads(pickle.dumps(KeyPred.reindexed(low, {0: 1}, 1)))
    twice = pickle.loads(pickle.dumps(KeyMap.compose(swap, swap)))
    after = pickle.loads(pickle.dumps(KeyMap.compose(swap, shift)))
    keys = [(i, j) for i in range(3) for j in range(2)]
    assert [both(k) for k in keys] == [k[0] < 2 and k[1] % 2 == 0 for k in keys] and both.dims == {0, 1}
    assert [through((a, b)) for a in range(3) for b in range(3)] == [b < 2 for a in range(3) for b in range(3)]
    assert twice.select == (0, 1) and [twice(k) for k in keys] == keys
    assert after.select is None and [after(k) for k in keys] == [(j, i + 1) for i, j in keys]
    assert after == KeyMap.compose(swap, shift) and after != KeyMap.compose(shift, swap)


def test_arrays_pickle_after_running_on_a_cluster(client):
    """Plans made under a Client hold it: a computed RelArray pickles without them and plans
    again; a persisted one pickles its futures (as distributed does for any collection)."""
    y = _grad_tanh(_x(), _b())
    np.testing.assert_allclose(y.compute(), _grad_tanh_np(A, B))
    z = pickle.loads(pickle.dumps(y))
    np.testing.assert_allclose(z.compute(), _grad_tanh_np(A, B))
    p = (_x() @ _b()).persist()
    q = pickle.loads(pickle.dumps(p))
    np.testing.assert_allclose(q.compute(), A @ B)


def test_deep_lineage_pickles():
    """A persisted array after 500 persisted generations (a chain of 500 lineages; nested, pickle
    and deepcopy make several calls a link, past the recursion limit) pickles and copies, its
    lineage and the result intact; the lineage holds no generation's data (a persist loop would
    keep them all)."""
    import copy
    from dask_tra.runtime.recovery import ancestors
    x, want = _x(), A
    for _ in range(500):
        x = (1 - x).persist()
        want = 1 - want
    [src] = x.sources.values()
    chain = ancestors(src)
    assert len(chain) == 499 and all(not s.blocks for s in chain.values())
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        np.testing.assert_array_equal(y.compute(), want)
        [copied] = y.sources.values()
        assert len(ancestors(copied)) == 499

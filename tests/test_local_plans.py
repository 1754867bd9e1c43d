"""The local plan: with no Client and no sites set, one site, nothing moves, no candidate search.

Counts, not clocks: planning costs no candidate (``search.candidates`` and the costings behind
it are never called), each operator's closed-form costing equals the search's own on one site,
and with ``config.set(sites=4)`` the multi-site plan comes back as before.
"""

import sys

import dask
import numpy as np
import pytest

import dask_tra as dt
from dask_tra.array.testing import assert_eq
from dask_tra.optimizer import MemoryLimitError, cache, final_costs, plan_many
from dask_tra.optimizer.cost import Rates
from dask_tra.optimizer.local import local_cand, plan_local
from dask_tra.optimizer.search import candidates, chosen, kind_of, views_of

from test_block_sparse import A_KEYS, B_KEYS, CHUNKS_A, CHUNKS_B, blocks_of, dense_of

S = sys.modules["dask_tra.optimizer.search"]  # the module (``optimizer.search`` is also its function)
C = sys.modules["dask_tra.optimizer.candidates"]
O = sys.modules["dask_tra.optimizer"]


@pytest.fixture
def costings(monkeypatch):
    """Counts every candidate costing (the search's and the final re-costing's) by kind."""
    calls = {}

    def counted(name, real):
        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return real(*args, **kwargs)

        return wrapper

    for name in ("contraction", "join_alone", "aggregate_alone", "per_tuple"):
        monkeypatch.setattr(C, name, counted(name, getattr(C, name)))
    monkeypatch.setattr(S, "plan_node", counted("plan_node", S.plan_node))
    monkeypatch.setattr(S, "candidates", counted("candidates", S.candidates))
    monkeypatch.setattr(O, "_candidates", counted("candidates", O._candidates))
    return calls


@pytest.fixture
def arrays():
    rng = np.random.default_rng(35)
    a, b = rng.standard_normal((23, 17)), rng.standard_normal((17, 11))
    x, y = dt.from_array(a, chunks=((5, 7, 6, 5), (4, 4, 9))), dt.from_array(b, chunks=((4, 4, 9), (3, 8)))
    return a, b, x, y


def expression(x, y):
    """Elementwise, reductions and matmuls, with a slice and a transpose."""
    return ((x * 2 + 1) @ y).sum(0) + (x.T[:11, :] @ x).mean() - abs(y).max(axis=0)


def reference(a, b):
    return ((a * 2 + 1) @ b).sum(0) + (a.T[:11, :] @ a).mean() - abs(b).max(axis=0)


@pytest.mark.parametrize("scheduler", ["threads", "sync"])
def test_no_client_plans_locally_with_no_candidate_costing(arrays, costings, scheduler):
    a, b, x, y = arrays
    cache.clear()
    z = expression(x, y)
    plan, where = z.planned()
    assert where.count == 1 and plan.sites == 1 and where.local == "threaded scheduler"
    assert costings == {}  # not one candidate costed, neither by the search nor by the final costing
    assert plan.cost.bytes_moved == 0 and plan.cost.tasks > 0
    np.testing.assert_allclose(z.compute(scheduler=scheduler), reference(a, b), rtol=1e-12)
    (r,) = dask.compute(z, scheduler=scheduler)
    np.testing.assert_allclose(r, reference(a, b), rtol=1e-12)
    assert costings == {}


def test_one_costing_per_operator(arrays, costings, monkeypatch):
    _, _, x, y = arrays
    made = []
    real = sys.modules["dask_tra.optimizer.local"].local_cand
    monkeypatch.setattr(sys.modules["dask_tra.optimizer.local"], "local_cand", lambda *a: made.append(1) or real(*a))
    cache.clear()
    plan, _ = expression(x, y).planned()
    operators = [alt for alt in chosen(plan.alts) if alt.inputs]
    assert made == [] and plan.roots  # chosen and built into IA with no costing: the cost waits
    assert plan.cost.tasks > 0 and len(made) == len(operators) and costings == {}
    assert all(len(alt.table) == 1 for alt in operators)  # one strategy each: nothing was compared
    plan.explain
    assert len(made) == len(operators)  # costed once


def test_explain_says_local(arrays):
    _, _, x, y = arrays
    z = expression(x, y)
    text = str(z.explain())
    assert text.startswith("dask_tra local plan (threaded scheduler): nothing moves")
    assert "between workers" not in text and "broadcast" not in text and "workers" not in text.split("\n")[0]
    assert "local plan (threaded scheduler) on 1 site: nothing moves" in z.explain(detail="algebra").text()
    assert "steps:" in z.explain(full=True).text()
    z.compute()
    assert str(z.explain()).startswith("dask_tra local plan (threaded scheduler)")  # the plan that ran
    with dask.config.set(scheduler="sync"):
        assert str(expression(x, y).explain()).startswith("dask_tra local plan (synchronous scheduler)")


def test_sites_set_by_the_user_plan_as_before(arrays, costings):
    a, b, x, y = arrays
    z = expression(x, y)
    cache.clear()
    with dt.config.set(sites=4):
        plan, where = z.planned()
        text = str(z.explain())
    assert where.count == 4 and not where.local
    assert costings.get("plan_node", 0) > 0  # the search ran
    explicit = plan_many(z.roots, 4, keep=dt.config.get("keep"))  # as planning for 4 sites always did
    assert plan.cost.bytes_moved == explicit.cost.bytes_moved > 0
    assert text.startswith("dask_tra plan on 4 workers") and "between workers (predicted)" in text
    assert z.planned(sites=4)[0].cost.bytes_moved == plan.cost.bytes_moved  # sites= as before, too
    with dt.config.set(sites=4):
        np.testing.assert_allclose(expression(x, y).compute(), reference(a, b), rtol=1e-12)


def _block_sparse():
    a = dt.from_blocks(blocks_of(CHUNKS_A, A_KEYS, 1, -1.0), (6, 7), CHUNKS_A)
    b = dt.from_blocks(blocks_of(CHUNKS_B, B_KEYS, 2), (7, 5), CHUNKS_B)
    return a, b


def _cases(x, y):
    s, t = _block_sparse()
    return [
        expression(x, y),
        x.T @ x + x.T @ dt.from_array(np.ones((23, 17)), chunks=(6, 5)),  # joins of placed inputs
        dt.concatenate([x, x], axis=0).sum(1),  # a registered operator (Concat)
        x + dt.from_array(np.ones((23, 17)), chunks=(6, 5)),  # a rechunk-join
        s @ t,  # block-sparse
        (s + 1).sum(axis=1),
    ]


@pytest.mark.parametrize("threads", [0, 4])
def test_local_costings_are_the_searchs_on_one_site(arrays, threads):
    """Every closed form equals the search's own costing of that strategy on one site, and the
    plan's cost equals the searched one-site plan's (made by ``search`` + ``final_costs``)."""
    _, _, x, y = arrays
    rates = Rates(threads=threads)
    for z in _cases(x, y):
        alts, cost, _ = plan_local(z.roots, None, rates, None)
        for alt in chosen(alts):
            if not alt.inputs:
                continue
            kind = kind_of(alt.node)
            name, got = local_cand(alt.node, kind, views_of(alt.inputs))
            assert got.strategy.name == name
            want = candidates(alt.node, kind, views_of(alt.inputs), 1, only=got.strategy, rates=rates)[got.strategy]
            assert (got.moved, got.paper, got.tasks) == (want.moved, want.paper, want.tasks), (kind, name)
            assert np.array_equal(got.layout, want.layout) and np.array_equal(got.peak, want.peak), (kind, name)
            np.testing.assert_allclose(got.flops, want.flops, rtol=1e-12)
        best, _ = S.search(z.roots, 1, rates=rates)
        searched, _, _ = final_costs(tuple(best[id(r)] for r in z.roots), 1, rates)
        assert cost.bytes_moved == searched.bytes_moved == 0
        assert (cost.tasks, cost.paper_floats, cost.peak_memory) == (
            searched.tasks,
            searched.paper_floats,
            searched.peak_memory,
        )
        assert cost.seconds == pytest.approx(searched.seconds, rel=1e-12)
        cache.clear()
        lazy = plan_many(z.roots, 1, rates=rates, rewrite=False)  # chosen now, costed when read
        assert [a.strategy for a in chosen(lazy.alts)] == [a.strategy for a in chosen(alts)]
        assert (lazy.cost.tasks, lazy.cost.peak_memory, lazy.cost.seconds) == (cost.tasks, cost.peak_memory, cost.seconds)


def test_local_plans_are_exact_on_block_sparse_and_ragged(arrays):
    a, b, x, y = arrays
    s, t = _block_sparse()
    S_, T_ = dense_of(s), dense_of(t)
    assert_eq(s @ t, S_ @ T_, rtol=1e-12, atol=1e-12)
    assert_eq((s + 1).sum(axis=1), (S_ + 1).sum(axis=1), rtol=1e-12)
    assert_eq(dt.concatenate([x, x], axis=0).sum(1), np.concatenate([a, a], axis=0).sum(1), rtol=1e-12)
    assert s.planned()[0].sites == 1


def test_a_local_plan_over_the_memory_limit_is_refused_by_the_search(arrays):
    _, _, x, y = arrays
    cache.clear()
    with pytest.raises(MemoryLimitError, match="no plan fits"):
        plan_many((x @ y).roots, 1, memory_limit=100)


def test_an_equal_local_plan_is_chosen_again_with_no_search(arrays, costings):
    """A local plan is chosen in O(1) an operator, faster than a cached plan is replayed: it
    is not cached, and an expression of equal structure gets equal choices and cost."""
    _, _, x, y = arrays
    cache.clear()
    first = plan_many(expression(x, y).roots, 1)
    again = plan_many(expression(x, y).roots, 1)
    assert again.cost == first.cost and costings == {}
    assert [a.strategy for a in chosen(again.alts)] == [a.strategy for a in chosen(first.alts)]


def test_the_local_ia_plan_reuses_the_tra_types(arrays, monkeypatch):
    """Building a local plan's IA infers no join or aggregation type again: each LocalJoin and
    LocalAggregate takes the TRA operator it computes (``like``), over inputs of its types."""
    from dask_tra.tra import Aggregate, Join

    a, b, x, y = arrays
    z = expression(x, y)
    plan, _ = z.planned()
    made = []
    for cls in (Join, Aggregate):
        real = cls.__init__
        monkeypatch.setattr(cls, "__init__", lambda self, *args, _real=real: made.append(1) or _real(self, *args))
    roots = plan.roots
    assert made == [] and [r.type for r in roots] == [e.type for e in plan.exprs]
    monkeypatch.undo()
    np.testing.assert_allclose(z.compute(), reference(a, b), rtol=1e-12)


def test_a_registered_operator_is_chosen_locally_with_no_costing(arrays, monkeypatch):
    """A Concat (a rechunk's merge) names its one-site strategy by its own rule (``local``),
    so the local plan still costs nothing until read, and costs it as the search would."""
    from dask_tra.tra import Concat

    a, _, x, _ = arrays
    z = x.rechunk((23, 17)).sum(0)
    made = []
    real = sys.modules["dask_tra.optimizer.local"].local_cand
    monkeypatch.setattr(
        sys.modules["dask_tra.optimizer.local"], "local_cand", lambda *args: made.append(1) or real(*args)
    )
    cache.clear()
    plan, _ = z.planned()
    concats = [alt for alt in chosen(plan.alts) if isinstance(alt.node, Concat)]
    assert concats and made == []
    assert plan.cost.tasks > 0 and len(made) == sum(1 for alt in chosen(plan.alts) if alt.inputs)
    assert all(plan.cands[id(alt)].strategy.name == alt.strategy for alt in concats)
    np.testing.assert_allclose(z.compute(), a.sum(0), rtol=1e-12)


def test_an_input_block_no_task_reads_is_never_made(monkeypatch):
    """A slice of a transposed input plans whole input layouts; emission makes the task of an
    input block only where a task reads it (1 of 400 here), not every block then culls."""
    from dask_tra.runtime import emit

    made = []
    real = emit._input_task
    monkeypatch.setattr(emit, "_input_task", lambda dk, spec: made.append(dk) or real(dk, spec))
    a = np.arange(400.0 * 400).reshape(400, 400)
    x = dt.from_array(_OnDemand(a), chunks=20)  # read on demand: its blocks are made by tasks
    y = (x + x.T)[:10, :10]
    np.testing.assert_array_equal(y.compute(scheduler="sync"), (a + a.T)[:10, :10])
    blocks = [dk for dk in made if dk[0].startswith("from")]  # (and the slice's one piece table)
    assert len(blocks) == 1  # the one block both reads share


class _OnDemand:
    """An array-like read block by block (as an HDF5 dataset is), not an in-memory array."""

    def __init__(self, a):
        self.a, self.shape, self.dtype = a, a.shape, a.dtype

    def __getitem__(self, box):
        return self.a[box]


def test_an_in_memory_block_is_an_argument_of_its_readers_on_one_site():
    """On one site nothing moves: a block already in memory (a view of the user's array) is
    passed to the tasks reading it, not made by a task of its own; the values and an output
    that is such a block itself are unchanged."""
    from dask.task_spec import DataNode

    a = np.random.default_rng(3).standard_normal((9, 7))
    x = dt.from_array(a, chunks=((4, 5), (3, 4)))
    y = (x * 2 + x.T[:7, :7].sum()).sum(axis=0)
    graph = dict(y.__dask_graph__())
    assert not [k for k, v in graph.items() if isinstance(v, DataNode)]  # no block is a task
    assert len(graph) == 3  # a task per output block and the shared sum, the blocks inside
    np.testing.assert_allclose(y.compute(scheduler="sync"), (a * 2 + a.T[:7, :7].sum()).sum(axis=0))
    same = dict(x.__dask_graph__())
    assert all(isinstance(v, DataNode) for v in same.values()) and len(same) == 4  # the outputs themselves
    np.testing.assert_array_equal(x.compute(scheduler="sync"), a)


def test_a_sum_of_many_in_memory_blocks_still_folds_in_bounded_parallel_leaves(monkeypatch):
    """An in-memory block is no task on one site, but a fold counts its bytes as when it was
    one: a sum over more blocks than ``FOLD_BYTES`` holds is folded as a tree whose leaves run
    in parallel, not by one task reading every block in turn."""
    from dask.task_spec import DataNode

    from dask_tra.optimizer import memory as mem

    a = np.random.default_rng(5).standard_normal((1600, 100))
    x = dt.from_array(a, chunks=(100, 100))  # 16 blocks of 80,000 bytes
    monkeypatch.setattr(mem, "FOLD_BYTES", 4 * 80_000 + 1_000)  # 4 blocks (and their partial sums) a leaf
    y = x.sum()
    graph = dict(y.__dask_graph__())
    assert not [k for k, v in graph.items() if isinstance(v, DataNode)]
    assert len(graph) == 16 // 4 + 1  # 4 leaves of 4 blocks, and the root
    np.testing.assert_allclose(y.compute(scheduler="threads"), a.sum())


def test_the_cycle_collector_pauses_while_planning_only(arrays, monkeypatch):
    """Planning and emitting run with Python's cycle collector paused, and leave it as it was."""
    import gc

    from dask_tra.runtime import collection

    _, _, x, y = arrays
    seen = []
    real = collection.plan_many
    monkeypatch.setattr(collection, "plan_many", lambda *a, **k: seen.append(gc.isenabled()) or real(*a, **k))
    assert gc.isenabled()
    expression(x, y).compute()
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        (x + 1).sum().compute()
        assert seen == [False, False] and not gc.isenabled()  # the user's setting kept
    finally:
        gc.enable()

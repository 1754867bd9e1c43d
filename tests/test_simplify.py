"""The logical rewrite pass (``optimizer.rewrite``): every rule keeps the exact (key, chunk)
set under the reference executor, on random data and ragged chunks, and fires where it should."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dask_tra as dt
import dask_tra.array as da
from dask_tra.array.kernels import Permute
from dask_tra.optimizer import plan_many
from dask_tra.optimizer.rewrite import RULES, common_subexpressions, simplify
from dask_tra.tra import Aggregate, Concat, Filter, Join, ReKey, Transform, evaluate, kernels as K
from dask_tra.tra.dag import render, walk_many
from dask_tra.tra.kernels import Bound, Composed
from dask_tra.tra.keyfuncs import KeyMap, KeyPred, dims_in

RULE = {r.name: r for r in RULES}


@st.composite
def chunking(draw, n):
    """A ragged dask-style chunk tuple for an axis of length n (n >= 1)."""
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=3))) if n > 1 else []
    edges = [0] + cuts + [n]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


@st.composite
def arrays(draw, square=False):
    """A random 2-d RelArray with ragged chunks, and its NumPy value."""
    m = draw(st.integers(1, 12))
    n = m if square else draw(st.integers(1, 12))
    cm = draw(chunking(m))
    cn = cm if square else draw(chunking(n))
    a = np.random.default_rng(draw(st.integers(0, 2**31))).standard_normal((m, n))
    return da.from_array(a, chunks=(cm, cn)), a


def relation(expr, sources):
    inputs = {n: {k: s.chunk(k) for k in s.type.iter_keys()} for n, s in sources.items()}
    return evaluate(expr, inputs)


def assert_same_relation(before, after, sources, scale=None):
    """The same keys and chunks. A rule may leave a chunk in another memory layout
    (``permute_below_concat`` writes a transposed concatenation in C order), and NumPy's pairwise
    summation follows the layout: a reduction read after it may differ in the last bits, so
    floats compare to a few ulps (of ``scale`` where given: a rule that reorders a sum, whose
    rounding error grows with the terms' magnitudes and count, not the result's), everything
    else exactly."""
    assert after.type.same_as(before.type)
    want, got = relation(before, sources), relation(after, sources)
    assert sorted(got) == sorted(want)
    for k, chunk in want.items():
        chunk, other = np.asarray(chunk), np.asarray(got[k])
        if chunk.dtype.kind in "fc":
            assert other.dtype == chunk.dtype
            ulps = 8 * np.finfo(chunk.dtype).eps
            size = float(np.nanmax(np.abs(chunk), initial=0)) if scale is None else scale
            np.testing.assert_allclose(other, chunk, rtol=ulps, atol=ulps * size)
        else:
            np.testing.assert_array_equal(other, chunk)


def prefix(dim, blocks):
    """A Filter predicate keeping the first ``blocks`` blocks along key dim ``dim``."""
    return KeyPred(Bound(dims_in, (dim,), frozenset(range(blocks))), f"first{blocks}[{dim}]", frozenset({dim}))


def block(dim, b):
    """A Filter predicate keeping block ``b`` along key dim ``dim`` (a hole before it)."""
    return KeyPred(Bound(dims_in, (dim,), frozenset({b})), f"block{b}[{dim}]", frozenset({dim}))


swap = KeyMap.selecting((1, 0))


# one builder per rule: an expression (over the arrays' sources) where the rule applies
def _merge_filters(x, draw):
    return Filter(Filter(x.expr, prefix(0, draw(st.integers(0, 3)))), prefix(1, draw(st.integers(0, 3))))


def _filter_into_input(x, draw):
    """A block of the input, maybe behind a hole (its type block-sparse), or its first rows."""
    pred = block(0, draw(st.integers(0, 3))) if draw(st.integers(0, 1)) else prefix(0, draw(st.integers(0, 3)))
    return Filter(x.expr, pred)


def _filter_through_rekey(x, draw):
    return Filter(ReKey(x.expr, swap), prefix(draw(st.integers(0, 1)), draw(st.integers(0, 3))))


def _relabel_through_transform(x, draw):
    if draw(st.integers(0, 1)) == 1:
        return x.T  # ReKey over Transform
    sin = K.Elementwise("sin", lambda xp, c: xp.sin(c), 1)
    return Filter(Transform(x.expr, sin), prefix(0, draw(st.integers(0, 3))))


def _filter_through_join(x, draw):
    return (x + x.T * 3)[: draw(st.integers(1, x.shape[0]))]


def _slice_through_join(x, draw):
    """x + x.T with the transpose's keys crossed in the join (right dim 1 pairs output dim 0),
    one block row kept and renumbered, as a slice does."""
    joined = Join(x.expr, Transform(x.expr, Permute((1, 0))), (0, 1), (1, 0), K.add)
    row = draw(st.integers(0, x.expr.type.frontier[0] - 1))
    return ReKey(Filter(joined, prefix(0, row + 1) if row == 0 else block(0, row)), KeyMap.renumbering(0, {row: 0}, 2))


def _filter_through_aggregate(x, draw):
    (agg,) = [n for n in walk_many([x.sum(axis=0).expr]) if isinstance(n, Aggregate)]  # block sums added
    return Filter(agg, prefix(0, draw(st.integers(0, 3))))


def _merge_rekeys(x, draw):
    return ReKey(ReKey(x.expr, swap), swap)


def _drop_identity_rekey(x, draw):
    if draw(st.integers(0, 1)) == 1:  # a renumbering that keeps every block where it was
        return ReKey(x.expr, KeyMap.renumbering(0, {i: i for i in range(x.expr.type.frontier[0])}, 2))
    return ReKey(x.expr, KeyMap.selecting((0, 1)))


def _fuse_transforms(x, draw):
    return (x * 2 + 1) ** 2


def _drop_identity_transform(x, draw):
    return Transform(x.expr, Permute((0, 1)))


def _permute_below_concat(x, draw):
    """Each block column concatenated into one block, then transposed: alone, with a map after
    it, or through a relabelling (a rechunk, ``.T`` and a reduction read so)."""
    joined = Concat(x.expr, 0, 0)
    if draw(st.integers(0, 1)) == 1:
        joined = ReKey(joined, KeyMap.selecting((0,)))
    kernel = Permute((1, 0))
    if draw(st.integers(0, 1)) == 1:
        kernel = Composed(K.Elementwise("sin", lambda xp, c: xp.sin(c), 1), kernel)
    return Transform(joined, kernel)


def _reduce_below_concat(x, draw):
    """Each block column concatenated, reduced along the concatenated axis, and aggregated per
    column block with the reduction's merge (a NaN-skipping sum and count, as xarray's groupby
    mean, among them); NaNs and zeros in the data (a part of zeros has any() False)."""
    from dask_tra.array.reductions import NanSumCount

    x = da.where(x > 1.5, np.nan, da.where(abs(x) < 0.7, 0.0, x))
    reduce, merge = [
        (K.Reduce("sum", (0,), keepdims=True), K.add),
        (NanSumCount((0,), np.float64, np.float64), K.add),
        (K.Reduce("prod", (0,), keepdims=True), K.mul),
        (K.Reduce("any", (0,), keepdims=True), K.maximum),
    ][draw(st.integers(0, 3))]
    return Aggregate(Transform(Concat(x.expr, 0, 0), reduce), (0,), merge), x.sources


BUILDERS = {
    f.__name__.strip("_"): f
    for f in (
        _merge_filters,
        _filter_into_input,
        _filter_through_rekey,
        _relabel_through_transform,
        _filter_through_join,
        _slice_through_join,
        _filter_through_aggregate,
        _merge_rekeys,
        _drop_identity_rekey,
        _fuse_transforms,
        _permute_below_concat,
        _drop_identity_transform,
        _reduce_below_concat,
    )
}


def test_every_rule_has_a_builder():
    assert set(BUILDERS) == set(RULE)


@pytest.mark.parametrize("name", sorted(RULE))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_each_rule_keeps_the_relation(name, data):
    x, a = data.draw(arrays(square=True))
    built = BUILDERS[name](x, data.draw)
    expr, sources = _built(built, x)
    (after,) = simplify([expr], rules=(RULE[name],))
    reordered = len(a) * float(np.abs(a).sum()) if name == "reduce_below_concat" else None  # sums regrouped
    assert_same_relation(expr, after, sources, reordered)


def _built(built, x):
    """(expression, sources) of a builder's result: a RelArray, an expression over ``x``'s
    sources, or an (expression, sources) pair."""
    if isinstance(built, dt.RelArray):
        return built.expr, built.sources
    return built if isinstance(built, tuple) else (built, x.sources)


@pytest.mark.parametrize("name", sorted(RULE))
def test_each_rule_fires(name):
    """On a 6x6 array in 2x2 blocks, keeping one block row: the rule rewrites the expression."""
    x = da.from_array(np.arange(36.0).reshape(6, 6), chunks=2)
    draw = lambda strategy: 1  # noqa: E731  (the builders' choices: one block, or a 1-row slice)
    built = BUILDERS[name](x, draw)
    expr, sources = _built(built, x)
    (after,) = simplify([expr], rules=(RULE[name],))
    assert after is not expr
    assert_same_relation(expr, after, sources)


@st.composite
def pipelines(draw):
    """A random chain of array operations, with its NumPy value."""
    x, a = draw(arrays(square=True))
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["T", "scale", "add_self_T", "slice", "sum0", "rechunk", "square"]))
        if op == "T":
            x, a = x.T, a.T
        elif op == "scale":
            x, a = x * 3 - 1, a * 3 - 1
        elif op == "square":
            x, a = x**2, a**2
        elif op == "add_self_T" and a.shape[0] == a.shape[1] and x.chunks[0] == x.chunks[1]:
            x, a = x + x.T, a + a.T
        elif op == "slice" and a.ndim == 2:
            i = draw(st.integers(0, a.shape[0]))
            j = draw(st.integers(0, a.shape[1]))
            step = draw(st.sampled_from([1, 1, 2, -1]))
            x, a = x[:i:step, j:], a[:i:step, j:]
        elif op == "sum0" and a.ndim == 2:
            x, a = x.sum(0)[None, :], a.sum(0)[None, :]
        elif op == "rechunk" and all(a.shape):
            c = tuple(draw(chunking(s)) for s in a.shape)
            x = x.rechunk(c)
    return x, a


def test_a_sum_after_a_transposed_concatenation_agrees_to_ulps_and_integers_exactly():
    """``permute_below_concat`` concatenates the transposed blocks in C order; a sum read next
    adds in the new layout's order (every float seed here differs in a last bit), which the
    relation check allows, while integers, whose sums do not depend on order, stay exact."""
    a = np.random.default_rng(0).standard_normal((8, 8))
    for data in (a, (a * 100).astype(np.int64)):
        y = da.from_array(data, chunks=(3, 5)).rechunk(8).T.sum(0)[None, :]
        (after,) = simplify([y.expr])
        assert any(isinstance(n, Concat) and n.array_dim == 1 for n in walk_many([after]))  # the rule fired
        assert_same_relation(y.expr, after, y.sources)
        np.testing.assert_allclose(y.compute(scheduler="sync"), data.T.sum(0)[None, :], rtol=1e-12)


@settings(max_examples=80, deadline=None)
@given(pipelines())
def test_random_pipelines_keep_their_relation_and_value(case):
    x, a = case
    (after,) = simplify([x.expr])
    assert_same_relation(x.expr, after, x.sources)
    np.testing.assert_allclose(x.compute(scheduler="sync"), a, rtol=1e-12, atol=1e-12)


def test_slices_of_big_expressions_compute_only_the_blocks_they_keep():
    x = da.ones((2000, 2000), chunks=500)  # 4 x 4 blocks
    for y in ((x + x.T)[:100, :100], x.T.T[:5, :5]):
        (after,) = simplify([y.expr])
        joins = [n for n in walk_many([after]) if n.type.key_arity == 2 and n.children]
        assert all(np.prod(n.type.frontier) == 1 for n in joins if not isinstance(n, ReKey))
        np.testing.assert_array_equal(y.compute(scheduler="sync"), np.full(y.shape, 2.0 if y.shape[0] == 100 else 1.0))


def test_a_slice_in_the_middle_reads_only_its_blocks():
    """x[600:700] keeps block 1 of 4 along axis 0: the sum's inputs are cut to that block row."""
    x = da.ones((2000, 2000), chunks=500)
    y = (x + x.T)[600:700]
    (after,) = simplify([y.expr])
    adds = [n for n in walk_many([after]) if getattr(getattr(n, "kernel", None), "name", "") == "add"]
    assert [n.type.frontier for n in adds] == [(1, 4)]
    np.testing.assert_array_equal(y.compute(scheduler="sync"), np.full((100, 2000), 2.0))


def test_a_slice_of_x_plus_its_transpose_reads_x_once_with_no_filter_left():
    """Both reads of ``x`` are cut to its block (0, 0), by two paths (one through the
    transpose): the two cuts are one predicate, merged, and the merged cut moves into the
    inputs, so the simplified expression filters nothing."""
    x = da.zeros((2000, 2000), chunks=500).map_blocks(_located, dtype=float)
    y = (x + x.T)[:100, :100]
    (after,) = simplify([y.expr])
    nodes = walk_many([after])
    assert not [n for n in nodes if isinstance(n, Filter)], render(after)
    assert len([n for n in nodes if isinstance(n, Join) and n.kernel.name == "located"]) == 1
    assert_same_relation(y.expr, after, y.sources)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.frozensets(st.integers(0, 3))), min_size=1, max_size=5),
    st.randoms(use_true_random=False),
)
def test_block_set_conjunctions_have_one_form_whatever_their_order(parts, rnd):
    """A conjunction of block sets tests what the parts do together, and is equal (so merged
    by common sub-expressions) to the same parts conjoined in any other order."""
    import itertools

    preds = [KeyPred.blocks_in(d, b, f"in{sorted(b)}@{d}") for d, b in parts]

    def conjoin(ps):
        out = ps[0]
        for p in ps[1:]:
            out = KeyPred.conjunction(out, p)
        return out

    shuffled = list(preds)
    rnd.shuffle(shuffled)
    a, b = conjoin(preds), conjoin(shuffled)
    assert a == b and a.dims == frozenset(d for d, _ in parts)
    for key in itertools.product(range(4), repeat=3):
        assert a(key) == all(key[d] in blocks for d, blocks in parts)
    moved = a.read_dims(lambda d: 2 - d)  # read through a reversal of the 3 dims
    for key in itertools.product(range(4), repeat=3):
        assert moved(key) == a(key[::-1])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 2), min_size=2, max_size=3),
    st.frozensets(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), max_size=20),
    st.permutations([0, 1, 2]),
    st.sets(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), max_size=30),
)
def test_a_tuple_set_is_read_through_a_dim_map_and_kept_in_closed_form(dims, allowed, perm, sparse):
    """``dims_in`` over several dims (a gather's placed pieces) read through a dim map stays a
    tuple set (no wrapper called per key), tests what the wrapped predicate would, and a
    Filter keeps exactly the keys it passes, on dense and sparse relations."""
    import itertools

    from dask_tra.tra import Input
    from dask_tra.tra.relation import ChunkAxis, RelationType

    allowed = frozenset(a[: len(dims)] for a in allowed)
    pred = KeyPred(Bound(dims_in, tuple(dims), allowed), "pieces", frozenset(dims))
    moved = KeyPred.reindexed(pred, {d: perm[d] for d in range(3)}, 3)
    assert moved.tuple_set() == (tuple(perm[d] for d in dims), allowed)
    for key in itertools.product(range(4), repeat=3):
        assert moved(key) == pred(tuple(key[perm[d]] for d in range(3)))
    assert pred.read_dims({d: perm[d] for d in range(3) if d != dims[0]}.get) is None  # a dim read from nowhere
    for keys in (None, frozenset(sparse) or None):
        t = RelationType((4, 4, 4), (ChunkAxis.const(2),), np.dtype("f8"), keys=keys)
        kept = Filter(Input("x", t), moved).type.iter_keys()
        assert sorted(kept) == sorted(k for k in t.iter_keys() if pred(tuple(k[perm[d]] for d in range(3))))


def test_transposes_and_identity_rekeys_cancel():
    x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
    (after,) = simplify([x.T.T.expr])
    assert after is x.expr


def test_common_subexpressions_merge_by_content_not_by_name():
    x = da.from_array(np.arange(16.0).reshape(4, 4), chunks=2)
    y = (x * 2) + (x * 2)  # two multiply nodes, equal content
    (merged,) = common_subexpressions((y.expr,))
    assert len(walk_many([merged])) < len(walk_many([y.expr]))
    assert_same_relation(y.expr, merged, x.sources)
    # two kernels with one name but different functions stay apart
    f = K.Elementwise("f", lambda xp, c: c + 1, 1)
    g = K.Elementwise("f", lambda xp, c: c - 1, 1)
    merged = common_subexpressions((Transform(x.expr, f), Transform(x.expr, g), Transform(x.expr, f)))
    assert merged[0] is not merged[1] and merged[0] is merged[2]


def _plus_one():
    def f(c):
        return c + 1

    return f


def _minus_one():
    def f(c):
        return c - 1

    return f


def test_named_arrays_merge_by_their_token_and_equal_names_stay_apart():
    """Nodes the array layer named merge by their content token (``dag.TOKEN``), which tells two
    functions named alike apart by what they are."""
    x = da.from_array(np.arange(16.0).reshape(4, 4), chunks=2)
    plus = _plus_one()
    a, b = x.map_blocks(plus), x.map_blocks(_minus_one())
    assert a.name != b.name
    y = a + b + x.map_blocks(plus)
    (merged,) = common_subexpressions((y.expr,))
    assert len(walk_many([merged])) == len(walk_many([y.expr])) - 1  # the two a's are one
    assert_same_relation(y.expr, merged, y.sources)
    np.testing.assert_array_equal(y.compute(scheduler="sync"), 3 * np.arange(16.0).reshape(4, 4) + 1)


def test_rewritten_nodes_keep_their_token(monkeypatch):
    """A node rebuilt over simplified inputs, or rewritten by a rule, computes what it did and
    keeps its content token: merging after the rewrites compares tokens, not contents."""
    from dask_tra.optimizer import rewrite
    from dask_tra.tra.dag import TOKEN

    x = da.from_array(np.arange(36.0).reshape(6, 6), chunks=2)
    y = ((x + 1) * 2 - 3).sum(axis=0) + ((x + 1) * 2 - 3).sum(axis=0)
    contents = []
    real = rewrite.content
    monkeypatch.setattr(rewrite, "content", lambda node: contents.append(node) or real(node))
    (out,) = simplify([y.expr])
    assert len(walk_many([out])) < len(walk_many([y.expr]))  # the transforms fused, the sums merged
    assert contents == [] and all(TOKEN in n.__dict__ for n in walk_many([out]))
    assert_same_relation(y.expr, out, y.sources)


def test_a_shared_operator_is_not_computed_twice():
    """A slice of a result another output also reads is not pushed below it (its blocks would
    be computed twice)."""
    x = da.from_array(np.arange(36.0).reshape(6, 6), chunks=2)
    s = x * 2
    whole, part = s.expr, s[:2].expr
    out = simplify([whole, part])
    transforms = [n for n in walk_many(out) if isinstance(n, Transform)]
    assert len(transforms) == 1


def test_a_deep_chain_simplifies_without_recursion():
    x = da.from_array(np.arange(16.0).reshape(4, 4), chunks=2)
    y = x
    for i in range(1500):
        y = y.T if i % 2 else y + 1
    (after,) = simplify([y.expr])
    assert len(walk_many([after])) < len(walk_many([y.expr]))
    np.testing.assert_array_equal(y.compute(scheduler="sync"), np.arange(16.0).reshape(4, 4) + 750)


def test_the_plan_computes_the_simplified_expression():
    """The plan of a 5x5 corner of a transposed 4x4-block array computes one block (its flops are counts)."""
    x = da.ones((2000, 2000), chunks=500) * 2
    y = x.T.T[:5, :5]
    rewritten, raw = plan_many([y.expr], 4), plan_many([y.expr], 4, rewrite=False)
    assert sum(rewritten.cost.site_flops) * 4 < sum(raw.cost.site_flops)  # one block of the 16, not all
    assert [render(e) for e in rewritten.exprs] == [render(e) for e in simplify([y.expr])]


def test_the_rewrite_can_be_turned_off():
    x = da.from_array(np.arange(36.0).reshape(6, 6), chunks=2)
    y = (x * 2 + 1)[:2]
    with dt.config.set(rewrite=False):
        assert [render(e) for e in y.planned()[0].exprs] == [render(y.expr)]
    assert [render(e) for e in y.planned()[0].exprs] == [render(e) for e in simplify([y.expr])]


def _located(block, block_info=None):
    """A block that depends on where it is (``block_info``), as the benchmarks' random arrays."""
    (r0, _), (c0, _) = block_info[0]["array-location"]
    return block + (r0 * 10_000 + c0)


@pytest.mark.parametrize(
    "index, blocks",
    [
        ((slice(0, 5), slice(0, 5)), 1),
        ((slice(3000, 3100), slice(650, 1000)), 2),
        ((slice(299, 301), 1203), 2),
        (([5, 3999], slice(100, 3000, 7)), 20),
    ],
)
def test_a_slice_of_a_block_function_on_both_axes_computes_only_its_blocks(index, blocks):
    """Each sliced axis keeps its blocks below every gather, and the cuts move below a user's
    block function (its declared output sizes cut with them, ``Kernel.restricted``)."""
    import dask.array

    def build(lib):
        x = lib.zeros((4000, 4000), chunks=300).map_blocks(_located, dtype=float)
        return (x.T.T * 2)[index], (x + x.T)[index]

    for y, ref in zip(build(da), build(dask.array)):
        np.testing.assert_array_equal(y.compute(scheduler="sync"), ref.compute(scheduler="sync"))
        assert y.chunks == ref.chunks
    (y, _) = build(da)
    (after,) = simplify([y.expr])
    calls = [n for n in walk_many([after]) if isinstance(n, Join) and n.kernel.name == "located"]
    assert [n.type.n_tuples for n in calls] == [blocks]
    assert_same_relation(y.expr, after, y.sources)  # the reference executor: the same (key, chunk) set


def test_types_compare_by_extent_not_by_how_an_axis_is_written():
    from dask_tra.tra.relation import ChunkAxis, RelationType

    along = RelationType((1, 3), (ChunkAxis((0,), [5]), ChunkAxis.along(1, (2, 2, 1))), np.float64)
    const = RelationType((1, 3), (ChunkAxis.const(5), ChunkAxis.along(1, (2, 2, 1))), np.float64)
    other = RelationType((1, 3), (ChunkAxis.const(4), ChunkAxis.along(1, (2, 2, 1))), np.float64)
    assert along.same_as(const) and const.same_as(along)
    assert not along.same_as(other)


@pytest.mark.parametrize(
    "index, blocks",
    [
        ((slice(0, 100), slice(0, 100)), 1),
        ((slice(0, 5), slice(3000, 3400)), 9),  # the box of both readers' blocks: {0, 10, 11}²
    ],
)
def test_a_slice_of_an_expression_reading_a_result_twice_computes_the_blocks_its_readers_keep(index, blocks):
    """``x`` is read by ``x + x.T`` twice: each read is cut by the slice, so ``x`` is cut to the
    box of blocks some read keeps (``rewrite._cut_shared``), then the cut moves below it."""
    import dask.array

    def build(lib):
        x = lib.zeros((4000, 4000), chunks=300).map_blocks(_located, dtype=float)
        return (x * x.T + x)[index]

    y = build(da)
    np.testing.assert_array_equal(y.compute(scheduler="sync"), build(dask.array).compute(scheduler="sync"))
    (after,) = simplify([y.expr])
    calls = [n for n in walk_many([after]) if isinstance(n, Join) and n.kernel.name == "located"]
    assert [n.type.n_tuples for n in calls] == [blocks]
    assert_same_relation(y.expr, after, y.sources)


def test_a_slice_graph_holds_only_the_tasks_its_blocks_need():
    """The plan places whole inputs; emission drops what no output reads, so the scheduler
    (and dask's ``order``) sees the slice's tasks only."""
    x = da.zeros((4000, 4000), chunks=300).map_blocks(_located, dtype=float)
    graph = dict(x.T.T[:5, :5].__dask_graph__())
    tasks = [k for k, v in graph.items() if not hasattr(v, "value")]  # data nodes aside
    assert len(tasks) <= 2, sorted(graph)


def test_a_filtered_input_is_planned_and_emitted_as_its_kept_blocks_only():
    """σ over an input becomes the input's kept blocks: the plan places one block row of 20
    and the emitted graph asks the source for that row's two blocks alone."""
    a = np.arange(400.0 * 40).reshape(400, 40)
    x = da.from_array(a, chunks=20)  # 20 x 2 blocks
    y = x[250:255]
    (name,) = x.sources
    (after,) = simplify([y.expr])
    (leaf,) = [n for n in walk_many([after]) if getattr(n, "name", None) == name]
    assert leaf.type.n_tuples == 2 and leaf.whole is x.expr.type
    src = x.sources[name]
    asked = []
    task = src.task
    src.task = lambda key: asked.append(key) or task(key)
    try:
        np.testing.assert_array_equal(y.compute(scheduler="sync"), a[250:255])
    finally:
        del src.task
    assert set(asked) == {(12, 0), (12, 1)}


def test_a_transpose_keeps_its_key_table_exact():
    """A transpose of a whole grid is typed in closed form and makes its key table when asked."""
    x = da.from_array(np.arange(60.0).reshape(3, 4, 5), chunks=(2, 3, 2))
    t = ReKey(x.expr, KeyMap.selecting((2, 0, 1)))
    assert t.sources == {(k[2], k[0], k[1]): k for k in x.expr.type.iter_keys()}
    assert t.type.frontier == (3, 2, 2) and t.type.array_chunks() is None
    np.testing.assert_array_equal(
        x.transpose(2, 0, 1).compute(scheduler="sync"), np.arange(60.0).reshape(3, 4, 5).transpose(2, 0, 1)
    )


def test_a_transpose_after_a_rechunk_reaches_its_reader_in_c_order():
    """The transpose moves below the rechunk's concatenation (``permute_below_concat``), which
    writes C order: the block function after it reads contiguous rows (xarray's quantile sorts
    them), and the values are NumPy's."""
    a = np.random.default_rng(1).standard_normal((6, 4, 5))
    x = da.from_array(a, chunks=(2, 4, 5)).rechunk((6, 4, 5)).transpose(1, 2, 0)
    flags = x.map_blocks(lambda b: np.full((1, 1, 1), b.flags.c_contiguous), chunks=(1, 1, 1), dtype=bool)
    assert flags.compute().all()
    np.testing.assert_array_equal(x.compute(), a.transpose(1, 2, 0))


class _Scale(K.Kernel):
    """``chunk * by``: its result's dtype follows ``by``'s type (1, 1.0 and True differ)."""

    name = "scale"

    def __init__(self, by):
        self.by = by

    def __call__(self, chunk):
        return chunk * self.by

    def out_axes(self, frontier, axes):
        return tuple(axes)

    def out_dtype(self, dtype):
        return (np.zeros(1, dtype) * self.by).dtype


def test_common_subexpressions_keep_parameters_of_other_types_apart():
    """1, 1.0 and True are equal in Python, and hash alike; as parameters they make other dtypes
    (int8 * 1.0 is float64): nodes differing only so are not one node."""
    x = da.from_array(np.arange(8, dtype=np.int8).reshape(2, 4), chunks=2)
    nodes = tuple(Transform(x.expr, _Scale(by)) for by in (1, 1.0, True, np.float32(1), 1))
    merged = common_subexpressions(nodes)
    assert len({id(m) for m in merged[:4]}) == 4 and merged[4] is merged[0]
    assert [m.type.dtype for m in merged] == [np.int8, np.float64, np.int8, np.float32, np.int8]

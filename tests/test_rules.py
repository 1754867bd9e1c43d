"""Property tests for the IA rewrite rules (TRA paper Table 2, errata preconditions).

For every rule, on random small relations (ragged chunks, 1..4 sites): the rewritten
plan gives the same (key, chunk) set once sites are projected away; the rule does not
match when its precondition fails; repartition rules change bytes moved as they must.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dask_tra.ia import (Broadcast, Grid, LocalAggregate, LocalFilter, LocalJoin, Placed, Shuffle,
                         execute, expand, part, project, rekey, tile, transform)
from dask_tra.optimizer.cost import evaluate_cost
from dask_tra.reference.rules import (ALL_RULES, BCAST_LEFT, BCAST_RIGHT, COSHUFFLE,
                                      KERNEL_COMPOSITION_RULES, DropInnerMove,
                                      DropShuffleBeforeAggregate, FilterBeforeMap,
                                      FilterBelowAggregate, FilterBelowJoin, FilterBelowMove,
                                      JoinFeed, MapBelowAggregate, MapBelowMove, MapIntoJoin,
                                      MergeFilters, MergeMaps, NoFixpoint, ShuffleIntoJoin,
                                      TwoPhaseAggregate, apply_everywhere, join_feed,
                                      rewrite_fixpoint)
from dask_tra.tra import Input, split
from dask_tra.tra import kernels as K
from dask_tra.tra.keyfuncs import KeyMap, KeyPred

SETTINGS = settings(max_examples=60, deadline=None)
sites = st.integers(1, 4)

# unary array maps; the facts say what each distributes over
neg = K.Elementwise("negative", lambda xp, a: -a, 1, distributes_over={"add", "subtract"})
twice = K.Elementwise("twice", lambda xp, a: 2 * a, 1,
                      distributes_over={"add", "subtract", "maximum", "minimum"})
square = K.Elementwise("square", lambda xp, a: a * a, 1)
transpose = K.Einsum("ij->ji")
colsum = K.Reduce("sum", (0,), keepdims=True)
MAPS = [neg, twice, square, transpose, colsum]
first = K.Elementwise("first", lambda xp, a, b: a, 2, associative=True)  # not commutative
average = K.Elementwise("average", lambda xp, a, b: (a + b) / 2, 2, commutative=True)  # not associative
AGGS = [K.add, K.mul, K.maximum, K.minimum, K.sub, first, average]
DISTRIBUTING = [(f, agg) for f in MAPS for agg in AGGS if f.distributes(agg)]
KEYMAPS = [KeyMap.selecting((1, 0)), KeyMap.selecting((0, 1)),
           KeyMap(lambda k: (k[0] + 1, k[1]), "shift0"),
           KeyMap(lambda k: (k[0] + k[1], k[1]), "shear")]
KEYMAPS3 = [KeyMap(lambda k: (k[0], k[1] + 1, k[2]), "shift1"),
            KeyMap(lambda k: (k[0], k[1], k[1] + k[2]), "shear")]

# join shapes: (input index letters, joinKeysL, joinKeysR, kernels)
JOINS = {"matmul": (("ik", "kj"), (1,), (0,), [K.matmul]),
         "elementwise": (("ij", "ij"), (0, 1), (0, 1), [K.add, K.sub, K.mul]),
         "rowvec": (("ij", "j"), (1,), (0,), [K.add, K.mul])}


# ---------------------------------------------------------------- strategies

@st.composite
def chunking(draw, n):
    """A ragged dask-style chunk tuple for an axis of length n (n >= 1)."""
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=3))) if n > 1 else []
    edges = [0] + cuts + [n]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


@st.composite
def relations(draw, *specs, uniform=""):
    """Inputs A, B, ... blocked from random arrays indexed by letters; a letter shared by
    two specs ("ik", "kj") has one chunking; letters in ``uniform`` get equal chunks."""
    chunks = {}
    for letter in sorted(set("".join(specs))):
        if letter in uniform:
            chunks[letter] = (draw(st.integers(1, 3)),) * draw(st.integers(1, 3))
        else:
            chunks[letter] = draw(chunking(draw(st.integers(1, 9))))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return _inputs(specs, chunks, rng)


@st.composite
def grids(draw, frontier, dims=None):
    """A Grid over a random subset of ``dims`` (default all key dims), random group counts."""
    pool = draw(st.permutations(list(range(len(frontier)) if dims is None else dims)))
    chosen = tuple(pool[:draw(st.integers(0, len(pool)))])
    return Grid(chosen, tuple(draw(st.integers(1, max(frontier[d], 1))) for d in chosen))


@st.composite
def placed(draw, node, s, dims=None):
    return Placed(node, draw(grids(node.type.frontier, dims)), s)


def lt(d, c):
    return KeyPred(lambda k: k[d] < c, f"k{d}<{c}", frozenset({d}))


@st.composite
def predicates(draw, arity, dims=None):
    """A key predicate reading a dim of ``dims`` (default any): bounds, parity, equality, opaque."""
    pool = list(range(arity)) if dims is None else list(dims)
    d, c = draw(st.sampled_from(pool)), draw(st.integers(0, 4))
    kind = draw(st.sampled_from(["lt", "ge", "odd", "eq", "opaque"]))
    if kind == "lt":
        return lt(d, c)
    if kind == "ge":
        return KeyPred(lambda k: k[d] >= c, f"k{d}>={c}", frozenset({d}))
    if kind == "odd":
        return KeyPred(lambda k: k[d] % 2 == 1, f"odd(k{d})", frozenset({d}))
    if kind == "eq":
        e = draw(st.sampled_from(pool))
        return KeyPred(lambda k: k[d] == k[e], f"k{d}==k{e}", frozenset({d, e}))
    return KeyPred(lambda k: k[d] < c, f"opaque(k{d}<{c})")


@st.composite
def joins(draw):
    """(left Input, right Input, joinKeysL, joinKeysR, kernel, data) for a random join shape."""
    letters, jl, jr, kernels = JOINS[draw(st.sampled_from(sorted(JOINS)))]
    (a, b), data = draw(relations(*letters))
    return a, b, jl, jr, draw(st.sampled_from(kernels)), data


@st.composite
def group_keys(draw, arity, nonempty=False):
    dims = draw(st.permutations(list(range(arity))))
    return tuple(dims[:draw(st.integers(1 if nonempty else 0, arity))])


@st.composite
def aggregation_input(draw, nonempty=False):
    """(group keys g, an "ij" relation whose chunk axes vary only along g, its data)."""
    g = draw(group_keys(2, nonempty))
    uniform = "".join(l for d, l in enumerate("ij") if d not in g)
    (x,), data = draw(relations("ij", uniform=uniform))
    return g, x, data


def _inputs(specs, chunks, rng):
    """Inputs A, B, ... indexed by the letters of ``specs``, chunked per letter, random data."""
    nodes, data = [], {}
    for name, letters in zip("ABCD", specs):
        shape = tuple(sum(chunks[l]) for l in letters)
        t, rel = split(rng.standard_normal(shape), tuple(chunks[l] for l in letters))
        nodes.append(Input(name, t))
        data[name] = rel
    return nodes, data


def fixed(*specs):
    """Deterministic inputs A, B, ... for precondition tests (i, k ragged; j uniform; 2+ blocks each)."""
    chunks = {"i": (2, 1, 3), "j": (2, 2), "k": (1, 3, 2)}
    rng = np.random.default_rng(0)
    return _inputs(specs, chunks, rng)


# ---------------------------------------------------------------- checks

def result(plan, inputs):
    """The projected output, after checking that all copies of a key hold the same chunk."""
    res = execute(plan, inputs)
    first = {}
    for (key, _, _), v in res.values[plan.uid].items():
        np.testing.assert_allclose(v, first.setdefault(key, v), rtol=1e-9, atol=1e-12)
    return project(plan, res)


def assert_same(old, new, inputs):
    a, b = result(old, inputs), result(new, inputs)
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_allclose(b[k], a[k], rtol=1e-9, atol=1e-12)


def rewrite(rule, plan, inputs):
    """Apply a matching rule, check it keeps the projected result; return the new plan."""
    assert rule.matches(plan)
    before = repr(plan)
    new = rule.apply(plan)
    assert repr(plan) == before and new is not plan
    assert new.type.frontier == plan.type.frontier
    assert_same(plan, new, inputs)
    return new


def moved(plan):
    return evaluate_cost(plan).bytes_moved


def sites_of(plan):
    return {k: sorted({t for t, _ in cs}) for k, cs in plan.copies.items()}


# ---------------------------------------------------------------- R1: kernel composition

@SETTINGS
@given(st.data(), sites)
def test_r1_1_merge_filters(data, s):
    (a,), inputs = data.draw(relations("ij"))
    p1, p2 = data.draw(predicates(2)), data.draw(predicates(2))
    x = data.draw(placed(a, s))
    plan = LocalFilter(LocalFilter(x, p2), p1)
    new = rewrite(MergeFilters(), plan, inputs)
    assert isinstance(new, LocalFilter) and new.child is x
    assert moved(new) == moved(plan)
    assert not MergeFilters().matches(LocalFilter(transform(x, neg), p1))


@SETTINGS
@given(st.data(), sites, st.booleans())
def test_r1_2_merge_maps(data, s, arrays):
    if arrays:
        (a,), inputs = data.draw(relations("ij"))
        x = data.draw(placed(a, s))
        plan = transform(transform(x, data.draw(st.sampled_from(MAPS))), data.draw(st.sampled_from(MAPS)))
    else:  # three key dims, so that composing permutations depends on their order
        (a,), inputs = data.draw(relations("ijk"))
        x = data.draw(placed(a, s))
        keymaps = st.one_of(st.permutations(range(3)).map(KeyMap.selecting), st.sampled_from(KEYMAPS3))
        plan = rekey(rekey(x, data.draw(keymaps)), data.draw(keymaps))
    new = rewrite(MergeMaps(), plan, inputs)
    assert new.child is x
    select = getattr(new.op, "key_fn", None) and new.op.key_fn.select
    if select is not None:  # a composed selection still says which dims it selects
        assert all(tuple(k[d] for d in select) == new.op.key_fn(k) for k in a.type.iter_keys())
    assert moved(new) == moved(plan)


def test_r1_2_needs_arity_one_maps_of_one_kind():
    (a,), _ = fixed("ij")
    x = Placed(a, part((0,), a.type.frontier), 2)
    assert not MergeMaps().matches(rekey(transform(x, neg), KEYMAPS[0]))
    assert not MergeMaps().matches(transform(rekey(x, KEYMAPS[0]), neg))
    assert not MergeMaps().matches(tile(tile(x, 1, 1), 1, 1))
    frontier = a.type.frontier + (2,)
    assert not MergeMaps().matches(transform(expand(x, (0, 1), frontier), neg))


@SETTINGS
@given(st.data(), sites)
def test_r1_3_filter_before_map(data, s):
    (a,), inputs = data.draw(relations("ij"))
    x = data.draw(placed(a, s))
    plan = LocalFilter(transform(x, data.draw(st.sampled_from(MAPS))), data.draw(predicates(2)))
    new = rewrite(FilterBeforeMap(), plan, inputs)
    assert isinstance(new.child, LocalFilter)
    assert moved(new) == moved(plan)
    # a key map other than idOp changes the keys the predicate sees
    assert not FilterBeforeMap().matches(LocalFilter(rekey(x, KEYMAPS[0]), lt(0, 1)))


@SETTINGS
@given(st.data(), sites, st.booleans())
def test_r1_4_map_below_aggregate(data, s, distributing):
    g, a, inputs = data.draw(aggregation_input())
    f, agg = data.draw(st.sampled_from(DISTRIBUTING if distributing else
                                       [(f, agg) for f in MAPS for agg in AGGS]))
    x = data.draw(placed(a, s))
    plan = transform(LocalAggregate(Shuffle(x, part(g, a.type.frontier)), g, agg), f)
    assert MapBelowAggregate().matches(plan) == f.distributes(agg)
    if f.distributes(agg):
        new = rewrite(MapBelowAggregate(), plan, inputs)
        assert isinstance(new, LocalAggregate)
        assert moved(new) == moved(plan)


def test_r1_4_needs_distributivity():
    (a,), _ = fixed("ij")
    x = Shuffle(Placed(a, part((1,), a.type.frontier), 3), part((0,), a.type.frontier))
    assert not MapBelowAggregate().matches(transform(LocalAggregate(x, (0,), K.add), square))
    assert not MapBelowAggregate().matches(transform(LocalAggregate(x, (0,), K.maximum), transpose))
    assert MapBelowAggregate().matches(transform(LocalAggregate(x, (0,), K.maximum), twice))


@SETTINGS
@given(st.data(), sites, st.booleans())
def test_r1_5_filter_below_aggregate(data, s, bound):
    g, a, inputs = data.draw(aggregation_input(nonempty=True))
    x = data.draw(placed(a, s))
    p = lt(data.draw(st.integers(0, len(g) - 1)), data.draw(st.integers(0, 4))) if bound \
        else data.draw(predicates(len(g)))
    agg = data.draw(st.sampled_from(AGGS))
    plan = LocalFilter(LocalAggregate(Shuffle(x, part(g, a.type.frontier)), g, agg), p)
    if bound:  # an upper bound on a group key leaves no holes
        assert FilterBelowAggregate().matches(plan)
    if FilterBelowAggregate().matches(plan):
        new = rewrite(FilterBelowAggregate(), plan, inputs)
        assert isinstance(new, LocalAggregate)
        assert moved(new) <= moved(plan)


def test_r1_5_needs_a_filtered_input_without_holes():
    (a,), _ = fixed("ij")
    x = Shuffle(Placed(a, part((1,), a.type.frontier), 2), part((0,), a.type.frontier))
    agg = LocalAggregate(x, (0,), K.add)
    ge1 = KeyPred(lambda k: k[0] >= 1, "k0>=1", frozenset({0}))
    assert not FilterBelowAggregate().matches(LocalFilter(agg, ge1))
    assert FilterBelowAggregate().matches(LocalFilter(agg, lt(0, 1)))


@SETTINGS
@given(st.data(), sites, st.booleans())
def test_r1_6_filter_below_join(data, s, on_join_key):
    a, b, jl, jr, kernel, inputs = data.draw(joins())
    join = LocalJoin(Broadcast(data.draw(placed(a, s))), data.draw(placed(b, s)), jl, jr, kernel)
    arity = join.type.key_arity
    p = lt(data.draw(st.sampled_from(jl)), data.draw(st.integers(0, 4))) if on_join_key \
        else data.draw(predicates(arity))
    plan = LocalFilter(join, p)
    if on_join_key:
        assert FilterBelowJoin().matches(plan)
    if p.dims is None or not p.dims <= set(jl):
        assert not FilterBelowJoin().matches(plan)
    if FilterBelowJoin().matches(plan):
        new = rewrite(FilterBelowJoin(), plan, inputs)
        assert isinstance(new, LocalJoin)
        assert moved(new) == moved(plan)


def test_r1_6_needs_join_key_dims_and_no_holes():
    (a, b), _ = fixed("ik", "kj")
    join = LocalJoin(Broadcast(Placed(a, part((0,), a.type.frontier), 2)),
                     Placed(b, part((1,), b.type.frontier), 2), (1,), (0,), K.matmul)
    assert FilterBelowJoin().matches(LocalFilter(join, lt(1, 1)))
    assert not FilterBelowJoin().matches(LocalFilter(join, lt(0, 1)))  # not a join key
    assert not FilterBelowJoin().matches(LocalFilter(join, KeyPred(lambda k: k[1] < 1, "?")))  # dims unknown
    holes = KeyPred(lambda k: k[1] >= 1, "k1>=1", frozenset({1}))
    assert not FilterBelowJoin().matches(LocalFilter(join, holes))


@SETTINGS
@given(st.data(), sites)
def test_r1_7_map_into_join(data, s):
    a, b, jl, jr, kernel, inputs = data.draw(joins())
    join = LocalJoin(Broadcast(data.draw(placed(a, s))), data.draw(placed(b, s)), jl, jr, kernel)
    plan = transform(join, data.draw(st.sampled_from(MAPS)))
    new = rewrite(MapIntoJoin(), plan, inputs)
    assert isinstance(new, LocalJoin) and new.children == join.children
    assert moved(new) == moved(plan)
    assert not MapIntoJoin().matches(rekey(join, KeyMap.selecting(tuple(reversed(range(join.type.key_arity))))))


# ---------------------------------------------------------------- R2: repartition

@st.composite
def moves(draw, node):
    if draw(st.booleans()):
        return Broadcast(node)
    return Shuffle(node, draw(grids(node.type.frontier)))


@SETTINGS
@given(st.data(), sites)
def test_r2_1_only_the_last_move_is_needed(data, s):
    (a,), inputs = data.draw(relations("ij"))
    x = data.draw(placed(a, s))
    plan = data.draw(moves(data.draw(moves(x))))
    new = rewrite(DropInnerMove(), plan, inputs)
    assert new.child is x and sites_of(new) == sites_of(plan)
    assert moved(new) <= moved(plan)
    assert not DropInnerMove().matches(Broadcast(LocalFilter(Broadcast(x), lt(0, 1))))


@SETTINGS
@given(st.data(), sites, st.booleans())
def test_r2_2_filter_below_move(data, s, bound):
    (a,), inputs = data.draw(relations("ij"))
    p = lt(data.draw(st.integers(0, 1)), data.draw(st.integers(1, 3))) if bound else data.draw(predicates(2))
    plan = LocalFilter(data.draw(moves(data.draw(placed(a, s)))), p)
    new = rewrite(FilterBelowMove(), plan, inputs)
    assert isinstance(new.child, LocalFilter)
    assert sites_of(new) == sites_of(plan)  # every tuple keeps its site
    assert moved(new) <= moved(plan)


def test_r2_2_keeps_sites_when_the_filter_shrinks_the_frontier():
    (a,), inputs = fixed("ij")  # 3 row blocks: a 2-group grid puts block 1 on site 0, not site 1
    plan = LocalFilter(Shuffle(Placed(a, part((1,), a.type.frontier), 2), Grid((0,), (2,))), lt(0, 2))
    new = rewrite(FilterBelowMove(), plan, inputs)
    assert sites_of(new) == sites_of(plan) == {(0, 0): [0], (0, 1): [0], (1, 0): [0], (1, 1): [0]}


@SETTINGS
@given(st.data(), sites)
def test_r2_3_map_below_move(data, s):
    (a,), inputs = data.draw(relations("ij"))
    x = data.draw(placed(a, s))
    f = data.draw(st.sampled_from(MAPS))
    plan = data.draw(st.sampled_from([
        transform(Shuffle(x, data.draw(grids(a.type.frontier))), f),
        transform(Broadcast(x), f),
        rekey(Broadcast(x), data.draw(st.sampled_from(KEYMAPS))),
        expand(Broadcast(x), (0, 2), a.type.frontier[:1] + (2,) + a.type.frontier[1:])]))
    new = rewrite(MapBelowMove(), plan, inputs)
    assert sites_of(new) == sites_of(plan)
    if getattr(plan.op, "kernel", None) is colsum:  # the map shrinks chunks: fewer bytes move
        assert moved(new) <= moved(plan)
    else:  # the map keeps each chunk's bytes: the same bytes move
        assert moved(new) == moved(plan)


def test_r2_3_needs_idop_keys_under_shuffle_and_one_chunk_per_key():
    (a, b), _ = fixed("ij", "ij")
    x = Placed(a, part((0,), a.type.frontier), 3)
    assert not MapBelowMove().matches(rekey(Shuffle(x, part((1,), a.type.frontier)), KEYMAPS[0]))
    assert MapBelowMove().matches(rekey(Broadcast(x), KEYMAPS[0]))
    y = Placed(b, part((0,), b.type.frontier), 3)
    everywhere = LocalJoin(Broadcast(x), Broadcast(y), (0, 1), (0, 1), K.add)  # computed at every site
    assert not MapBelowMove().matches(transform(Broadcast(everywhere), neg))


@SETTINGS
@given(st.data(), sites, st.booleans())
def test_r2_4_drop_shuffle_before_aggregate(data, s, by_group_keys):
    g, a, inputs = data.draw(aggregation_input())
    x = data.draw(placed(a, s, dims=g if by_group_keys else None))
    plan = LocalAggregate(Shuffle(x, part(g, a.type.frontier)), g, data.draw(st.sampled_from(AGGS)))
    if by_group_keys:  # PART_D with D ⊆ groupByKeys
        assert DropShuffleBeforeAggregate().matches(plan)
    if DropShuffleBeforeAggregate().matches(plan):
        new = rewrite(DropShuffleBeforeAggregate(), plan, inputs)
        assert new.child is x
        assert moved(new) == 0 <= moved(plan)  # the shuffle was the plan's only move


def test_r2_4_needs_input_partitioned_within_group_keys():
    (a,), _ = fixed("ij")
    f = a.type.frontier
    by_j = Placed(a, part((1,), f), 2)  # j is outside the group keys <0>
    assert not DropShuffleBeforeAggregate().matches(LocalAggregate(Shuffle(by_j, part((0,), f)), (0,), K.add))
    by_i = Placed(a, part((0,), f), 2)
    assert DropShuffleBeforeAggregate().matches(LocalAggregate(Shuffle(by_i, part((0,), f)), (0,), K.add))
    # the shuffle itself must keep groups together, or the old plan aggregates partial groups
    assert not DropShuffleBeforeAggregate().matches(LocalAggregate(Shuffle(by_i, part((1,), f)), (0,), K.add))


@st.composite
def cmm_join(draw, s):
    """CMM's local join: A by its column blocks, B by its row blocks; output <i,k,j> partitioned by k."""
    (a, b), inputs = draw(relations("ik", "kj"))
    pa, pb = draw(placed(a, s)), draw(placed(b, s))
    join = LocalJoin(Shuffle(pa, part((1,), a.type.frontier)), Shuffle(pb, part((0,), b.type.frontier)),
                     (1,), (0,), K.matmul)
    return join, inputs


@SETTINGS
@given(st.data(), sites)
def test_r2_5_two_phase_aggregation(data, s):
    join, inputs = data.draw(cmm_join(s))
    agg = data.draw(st.sampled_from(AGGS))
    plan = LocalAggregate(Shuffle(join, part((0, 2), join.type.frontier)), (0, 2), agg)
    split_k = s >= 2 and join.type.frontier[1] >= 2  # some group spans two sites
    assert TwoPhaseAggregate().matches(plan) == (agg.associative and agg.commutative and split_k)
    if TwoPhaseAggregate().matches(plan):
        new = rewrite(TwoPhaseAggregate(), plan, inputs)
        assert sites_of(new) == sites_of(plan)
        assert moved(new) <= moved(plan)  # one partial per group and site moves, not every tuple


def test_r2_5_keeps_each_group_on_its_site():
    (a, b), inputs = fixed("ik", "kj")
    join = LocalJoin(Shuffle(Placed(a, part((0,), a.type.frontier), 2), part((1,), a.type.frontier)),
                     Placed(b, part((0,), b.type.frontier), 2), (1,), (0,), K.matmul)
    plan = LocalAggregate(Shuffle(join, part((0, 2), join.type.frontier)), (0, 2), K.add)
    new = rewrite(TwoPhaseAggregate(), plan, inputs)  # k blocks 0 and 1 share site 0: they pre-aggregate
    assert sites_of(new) == sites_of(plan) and sites_of(new)[(1, 1)] == [1]
    assert moved(new) < moved(plan)


def test_r2_5_needs_associative_commutative_kernel_and_unpartitioned_input():
    (a,), _ = fixed("ij")
    f = a.type.frontier
    by_j = Placed(a, part((1,), f), 2)

    def plan(x, k):
        return LocalAggregate(Shuffle(x, part((0,), f)), (0,), k)

    assert TwoPhaseAggregate().matches(plan(by_j, K.add))
    assert not TwoPhaseAggregate().matches(plan(by_j, K.sub))
    assert not TwoPhaseAggregate().matches(plan(by_j, first))  # associative, not commutative
    assert not TwoPhaseAggregate().matches(plan(by_j, average))  # commutative, not associative
    assert not TwoPhaseAggregate().matches(plan(Placed(a, part((0,), f), 2), K.add))  # already by group keys
    assert not TwoPhaseAggregate().matches(plan(Broadcast(by_j), K.add))  # several copies per key


@SETTINGS
@given(st.data(), sites, st.sampled_from(JoinFeed.MODES), st.sampled_from(JoinFeed.MODES))
def test_r2_6_join_feeds(data, s, feed, mode):
    a, b, jl, jr, kernel, inputs = data.draw(joins())
    pa, pb = data.draw(placed(a, s)), data.draw(placed(b, s))
    fed = {BCAST_LEFT: (Broadcast(pa), pb), BCAST_RIGHT: (pa, Broadcast(pb)),
           COSHUFFLE: (Shuffle(pa, part(jl, a.type.frontier)), Shuffle(pb, part(jr, b.type.frontier)))}
    plan = LocalJoin(*fed[feed], jl, jr, kernel)
    rule = JoinFeed(mode)
    assert rule.matches(plan) == (feed != mode)
    if feed == mode:
        return
    new = rewrite(rule, plan, inputs)
    assert join_feed(new) == (mode, pa, pb)
    cost = evaluate_cost(new)
    if mode == BCAST_LEFT:  # BMM's closed form: s × |broadcast operand|
        assert cost.bytes_moved == (s - 1) * a.type.nbytes and cost.paper_floats == s * a.type.elements()
    elif mode == BCAST_RIGHT:
        assert cost.bytes_moved == (s - 1) * b.type.nbytes and cost.paper_floats == s * b.type.elements()
    else:
        assert cost.bytes_moved <= a.type.nbytes + b.type.nbytes


def test_r2_6_needs_one_chunk_per_key_in_what_it_moves():
    (a, b, c), _ = fixed("ij", "ij", "ij")
    pa, pb, pc = (Placed(x, part((0,), x.type.frontier), 3) for x in (a, b, c))
    per_site = LocalJoin(Broadcast(pb), Broadcast(pc), (0, 1), (0, 1), K.add)  # computed anew at every site
    plan = LocalJoin(Broadcast(pa), per_site, (0, 1), (0, 1), K.add)
    assert not JoinFeed(BCAST_RIGHT).matches(plan)
    assert not JoinFeed(COSHUFFLE).matches(plan)
    assert not JoinFeed(BCAST_LEFT).matches(plan)  # already fed that way
    assert not JoinFeed(BCAST_LEFT).matches(LocalJoin(pa, pb, (0, 1), (0, 1), K.add))  # none of the three
    with pytest.raises(ValueError):
        JoinFeed("replicate")


@SETTINGS
@given(st.data(), sites)
def test_r2_7_shuffle_into_join(data, s):
    a, b, jl, jr, kernel, inputs = data.draw(joins())
    join = LocalJoin(Shuffle(data.draw(placed(a, s)), part(jl, a.type.frontier)),
                     Shuffle(data.draw(placed(b, s)), part(jr, b.type.frontier)), jl, jr, kernel)
    grid = data.draw(grids(join.type.frontier))
    plan = Shuffle(join, grid)
    assert ShuffleIntoJoin().matches(plan) == (set(grid.dims) <= set(jl))
    if ShuffleIntoJoin().matches(plan):
        new = rewrite(ShuffleIntoJoin(), plan, inputs)
        assert isinstance(new, LocalJoin)
        assert sites_of(new) == sites_of(plan)  # every output tuple where P puts it


# ---------------------------------------------------------------- the driver

def test_rule_catalogue():
    names = [r.name for r in ALL_RULES]
    assert len(set(names)) == len(names)
    assert {n[:4] for n in names} == {f"R1-{i}" for i in range(1, 8)} | {f"R2-{i}" for i in range(1, 8)}
    assert all(r.family in ("kernel composition", "repartition") and type(r).__doc__ for r in ALL_RULES)


def diag_plan(s, c):
    """The paper's §5.2.1 example with an upper-bound filter: λ(twice)(σ(k0<c)(⋈(BCAST(X), Y)))."""
    (x, y), inputs = fixed("ij", "ij")
    px, py = Placed(x, part((0,), x.type.frontier), s), Placed(y, part((0, 1), y.type.frontier), s)
    join = LocalJoin(Broadcast(px), py, (0, 1), (0, 1), K.add)
    return transform(LocalFilter(join, lt(0, c)), twice), px, py, inputs


@pytest.mark.parametrize("s", [1, 3])
def test_fixpoint_pushes_the_filter_down_and_fuses_the_map(s):
    plan, px, py, inputs = diag_plan(s, 1)
    before = repr(plan)
    rules = KERNEL_COMPOSITION_RULES + (DropInnerMove(), FilterBelowMove())
    new = rewrite_fixpoint(plan, rules)
    assert apply_everywhere(new, rules)[1] == []
    assert repr(plan) == before  # the input plan is untouched
    assert_same(plan, new, inputs)
    assert isinstance(new, LocalJoin) and new.op.kernel.name == "twice∘add"
    assert isinstance(new.left, Broadcast) and new.left.child.child is px and new.right.child is py
    assert moved(new) <= moved(plan)



def test_apply_everywhere_keeps_shared_subplans_shared():
    (a,), inputs = fixed("ij")
    x = Placed(a, part((0,), a.type.frontier), 2)
    shared = LocalFilter(LocalFilter(x, lt(0, 2)), lt(1, 3))
    plan = LocalJoin(shared, shared, (0, 1), (0, 1), K.mul)
    new, fired = apply_everywhere(plan, [MergeFilters()])
    assert fired == ["R1-1"] and new.left is new.right
    assert_same(plan, new, inputs)


def test_rules_that_undo_each_other_have_no_fixpoint():
    plan, _, _, _ = diag_plan(2, 1)
    join = plan.child.child
    with pytest.raises(NoFixpoint):
        rewrite_fixpoint(join, [JoinFeed(BCAST_LEFT), JoinFeed(BCAST_RIGHT)], max_passes=10)

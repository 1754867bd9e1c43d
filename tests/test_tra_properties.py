"""Property tests: TRA expressions agree with NumPy on random data and ragged chunkings."""
import itertools
import math

import numpy as np
from hypothesis import given, settings, strategies as st

from dask_tra.tra import Aggregate, Concat, Input, Join, ReKey, Tile, Transform, evaluate
from dask_tra.tra import assemble, split, kernels as K
from dask_tra.tra.keyfuncs import KeyMap
from dask_tra.tra.relation import ChunkAxis, RelationType


@st.composite
def chunking(draw, n):
    """A ragged dask-style chunk tuple for an axis of length n (n >= 1)."""
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=3))) if n > 1 else []
    edges = [0] + cuts + [n]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.integers(0, 2**31))
def test_join_aggregate_is_matmul(data, i, k, j, seed):
    ci, ck, cj = data.draw(chunking(i)), data.draw(chunking(k)), data.draw(chunking(j))
    a, b = rand((i, k), seed), rand((k, j), seed + 1)
    ta, ra = split(a, (ci, ck))
    tb, rb = split(b, (ck, cj))
    e = Aggregate(Join(Input("A", ta), Input("B", tb), (1,), (0,), K.matmul), (0, 2), K.add)
    out = evaluate(e, {"A": ra, "B": rb})
    np.testing.assert_allclose(assemble(e.type, out), a @ b, rtol=1e-10, atol=1e-12)
    assert e.type.array_chunks() == (ci, cj)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.lists(st.integers(1, 6), min_size=3, max_size=3), st.integers(0, 2**31))
def test_join_aggregate_is_einsum(data, dims, seed):
    """'abk,kc->abc' style contraction: batch dims in the key, one contracted key dim."""
    a_, k_, c_ = dims
    b_ = 3
    ca, ck, cc = data.draw(chunking(a_)), data.draw(chunking(k_)), data.draw(chunking(c_))
    x, y = rand((a_, b_, k_), seed), rand((k_, c_), seed + 1)
    tx, rx = split(x, (ca, (b_,), ck))
    ty, ry = split(y, (ck, cc))
    j = Join(Input("X", tx), Input("Y", ty), (2,), (0,), K.Einsum("abk,kc->abc"))
    e = Aggregate(j, (0, 1, 3), K.add)
    out = evaluate(e, {"X": rx, "Y": ry})
    np.testing.assert_allclose(assemble(e.type, out), np.einsum("abk,kc->abc", x, y), rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 8), st.integers(1, 8), st.integers(0, 2**31))
def test_elementwise_join_on_all_keys(data, m, n, seed):
    cm, cn = data.draw(chunking(m)), data.draw(chunking(n))
    a, b = rand((m, n), seed), rand((m, n), seed + 1)
    ta, ra = split(a, (cm, cn))
    tb, rb = split(b, (cm, cn))
    e = Join(Input("A", ta), Input("B", tb), (0, 1), (0, 1), K.mul)
    np.testing.assert_allclose(assemble(e.type, evaluate(e, {"A": ra, "B": rb})), a * b)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 8), st.integers(1, 8), st.integers(0, 2**31))
def test_transpose_by_rekey_and_transform(data, m, n, seed):
    cm, cn = data.draw(chunking(m)), data.draw(chunking(n))
    a = rand((m, n), seed)
    t, r = split(a, (cm, cn))
    e = Transform(ReKey(Input("A", t), KeyMap.selecting((1, 0))),
                  K.Custom("T", lambda c: c.T, out_axes_fn=lambda axes: axes[::-1]))
    np.testing.assert_array_equal(assemble(e.type, evaluate(e, {"A": r})), a.T)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 8), st.integers(1, 8), st.integers(0, 2**31),
       st.sampled_from(["sum", "max", "min"]))
def test_reduction_by_transform_then_aggregate(data, m, n, seed, op):
    cm, cn = data.draw(chunking(m)), data.draw(chunking(n))
    a = rand((m, n), seed)
    t, r = split(a, (cm, cn))
    agg = {"sum": K.add, "max": K.maximum, "min": K.minimum}[op]
    e = Aggregate(Transform(Input("A", t), K.Reduce(op, (0,), keepdims=True)), (1,), agg)
    out = evaluate(e, {"A": r})
    got = np.concatenate([out[(j,)] for j in range(len(cn))], axis=1)[0]
    np.testing.assert_allclose(got, getattr(np, op)(a, axis=0))


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 12), st.integers(1, 4), st.integers(0, 2**31))
def test_tile_concat_round_trip(data, n, tile, seed):
    """Tiles concatenated back are the chunks; a chunk shorter than the longest has as many
    tiles, its last ones empty, each tile the chunk's slice."""
    c = data.draw(chunking(n))
    x = rand((3, n), seed)
    t, r = split(x, ((3,), c))
    tiled = Tile(Input("X", t), 1, tile)
    assert tiled.type.frontier == (1, len(c), -(-max(c) // tile))
    tiles = evaluate(tiled, {"X": r})
    for (i, b, k), chunk in tiles.items():
        np.testing.assert_array_equal(chunk, r[(0, b)][:, k * tile : (k + 1) * tile])
        assert tiled.type.chunk_shape((i, b, k)) == chunk.shape
    e = Concat(tiled, 2, 1)
    got = evaluate(e, {"X": r})
    assert e.type.array_chunks() == t.array_chunks()
    np.testing.assert_array_equal(assemble(e.type, got), x)


@settings(max_examples=30, deadline=None)
@given(st.data(), st.integers(1, 10), st.integers(0, 2**31))
def test_metadata_counts_match_data(data, n, seed):
    """The type's exact element count equals the data's, through a join (ragged both ways)."""
    c = data.draw(chunking(n))
    x = rand((n, n), seed)
    t, r = split(x, (c, c))
    e = Join(Input("X", t), Input("X", t), (1,), (0,), K.matmul)
    out = evaluate(e, {"X": r})
    assert e.type.elements() == sum(v.size for v in out.values())
    assert all(v.shape == e.type.chunk_shape(k) for k, v in out.items())


@st.composite
def _axes_over(draw):
    """A key frontier and chunk axes, each reading up to two of its key dims (some shared)."""
    frontier = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))
    axes = []
    for _ in range(draw(st.integers(0, 3))):
        dims = sorted(draw(st.sets(st.integers(0, len(frontier) - 1), max_size=min(2, len(frontier))))) if frontier else []
        shape = tuple(frontier[d] for d in dims)
        sizes = draw(st.lists(st.integers(0, 4), min_size=math.prod(shape), max_size=math.prod(shape)))
        axes.append(ChunkAxis(tuple(dims), np.array(sizes, np.int64).reshape(shape)))
    return frontier, axes


@settings(max_examples=150, deadline=None)
@given(_axes_over())
def test_elements_sum_every_block(case):
    """A relation's element count (summed in closed form) equals the sum over its blocks."""
    frontier, axes = case
    t = RelationType(frontier, tuple(axes), np.dtype("f8"))
    blocks = itertools.product(*(range(f) for f in frontier))
    assert t.elements() == sum(math.prod(t.chunk_shape(k)) for k in blocks)


def test_a_node_over_inputs_of_its_own_types_is_copied_with_its_type(monkeypatch):
    """``over`` with inputs typed exactly as the old ones copies the node (no type inference,
    the same type object) and drops what it knew of the DAG below; other types rebuild it."""
    x = np.arange(24.0).reshape(4, 6)
    t, r = split(x, (2, 3))
    a, b = Input("A", t), Input("B", t)
    j = Join(a, a, (0, 1), (0, 1), K.add)
    assert j.input_names == {"A"}
    made = []
    real = Join.__init__
    monkeypatch.setattr(Join, "__init__", lambda self, *args: made.append(1) or real(self, *args))
    k = j.over(b, b)
    assert made == [] and k.type is j.type and k.children == (b, b) and k.left is b
    assert k.input_names == {"B"}
    np.testing.assert_array_equal(assemble(k.type, evaluate(k, {"B": r})), 2 * x)
    wide, _ = split(x, (4, 3))
    other = Input("B", wide)
    k2 = j.over(other, other)  # another chunking: the constructor infers the type again
    assert made == [1] and k2.type.frontier == (1, 2)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_a_filter_keeps_the_keys_its_predicate_keeps(frontier, data):
    """A conjunction of one-dim predicates (a slice's, or opaque ones reading one dim) keeps
    exactly the keys it accepts, in the grid's order, as testing every key would; its frontier
    bounds them, its chunks are the input's, and it is dense exactly when they fill the box."""
    from dask_tra.tra import Filter
    from dask_tra.tra.kernels import Bound
    from dask_tra.tra.keyfuncs import KeyPred, dims_in

    frontier = tuple(frontier)
    chunks = [data.draw(st.lists(st.integers(1, 3), min_size=f, max_size=f)) for f in frontier]  # ragged
    t = RelationType.from_chunks(chunks, np.dtype("f8"))
    pred = None
    for _ in range(data.draw(st.integers(1, 3))):
        d = data.draw(st.integers(0, len(frontier) - 1))
        keep = frozenset(data.draw(st.sets(st.integers(0, frontier[d] - 1))))
        if data.draw(st.booleans()):
            part = KeyPred(Bound(dims_in, (d,), keep), f"in{d}", frozenset({d}))
        else:  # not recognised as a block set: asked once per value of its dim
            part = KeyPred(lambda k, d=d, keep=keep: k[d] in keep, f"opaque{d}", frozenset({d}))
        pred = part if pred is None else KeyPred.conjunction(pred, part)
    f = Filter(Input("X", t), pred)
    want = [k for k in itertools.product(*(range(n) for n in frontier)) if pred(k)]
    assert list(f.type.iter_keys()) == want if want else f.type.n_tuples == 0
    assert f.type.frontier == tuple(1 + max((k[d] for k in want), default=-1) for d in range(len(frontier)))
    assert (f.type.keys is None) == (len(want) == math.prod(f.type.frontier))
    for k in want:
        assert f.type.chunk_shape(k) == t.chunk_shape(k)


@settings(max_examples=200, deadline=None)
@given(_axes_over(), st.data())
def test_a_rekey_that_places_dims_is_typed_in_closed_form_as_by_its_table(case, data):
    """A ReKey that keeps, drops (extent 1) and adds (extent 1) key dims (``select_dims``, what
    ``keepdims`` and new axes make) gets in closed form the type its key table gives: the same
    frontier, keys and chunk extents at every key."""
    from dask_tra.tra.keyfuncs import KeyMap, select_dims
    from dask_tra.tra.kernels import Bound

    frontier, axes = case
    t = RelationType(frontier, tuple(axes), np.dtype("f8"))
    must = [d for d, f in enumerate(frontier) if f > 1]
    ones = [d for d, f in enumerate(frontier) if f == 1]
    extra = sorted(data.draw(st.sets(st.sampled_from(ones)))) if ones else []
    placed = list(data.draw(st.permutations(must + extra)))
    for _ in range(data.draw(st.integers(0 if placed else 1, 2))):
        placed.insert(data.draw(st.integers(0, len(placed))), None)
    placed = tuple(placed)
    x = Input("x", t)
    closed = ReKey(x, KeyMap(Bound(select_dims, placed), "placed"))
    by_table = ReKey(x, KeyMap(lambda k: select_dims(placed, k), "opaque"))  # not recognised: its table
    assert "sources" not in closed.__dict__  # no table was made
    assert closed.type.same_as(by_table.type)
    for k in by_table.type.iter_keys():
        assert closed.type.chunk_shape(k) == by_table.type.chunk_shape(k)


def test_a_constant_axis_is_one_shared_immutable_object_per_extent():
    """``ChunkAxis.const`` shares one axis per extent (types built again compare by identity),
    which is safe only because an axis cannot be changed; a bad extent is still refused."""
    import pytest

    from dask_tra.tra.errors import TRAError

    a = ChunkAxis.const(7)
    assert a is ChunkAxis.const(np.int64(7)) is ChunkAxis.const(np.array(7)) and a == ChunkAxis((), 7)
    assert a is not ChunkAxis.const(8)
    assert not a.sizes.flags.writeable and a.size_at(()) == 7
    with pytest.raises(ValueError):
        a.sizes[()] = 3
    with pytest.raises(TRAError, match="negative extent"):
        ChunkAxis.const(-1)


@settings(max_examples=150, deadline=None)
@given(_axes_over())
def test_an_axis_reads_its_constant_extent_once_and_a_constant_axis_relabels_as_itself(case):
    """``constant`` is the extent every key shares (None if they differ or there is no key),
    the same when asked again and on a truncated view; a constant axis relabelled is itself."""
    frontier, axes = case
    for ax in axes:
        sizes = ax.sizes
        want = int(sizes.flat[0]) if sizes.size and (sizes == sizes.flat[0]).all() else None
        assert ax.constant == want and ax.constant == want
        cut = ax.truncate(tuple(max(1, f - 1) for f in frontier))
        assert cut.constant == (int(cut.sizes.flat[0]) if cut.sizes.size and (cut.sizes == cut.sizes.flat[0]).all() else None)
    const = ChunkAxis.const(5)
    assert const.relabel({0: 1}) is const and const.constant == 5


@settings(max_examples=150, deadline=None)
@given(_axes_over(), st.data())
def test_a_rekey_that_places_dims_is_found_to_be_the_identity_without_its_table(case, data):
    """The rewrite pass drops a ReKey that maps every key to itself; for one that only places
    dims (``key[0,0,0]`` of ``keepdims``) it decides so in closed form, as its table would."""
    from dask_tra.optimizer.rewrite import _is_identity
    from dask_tra.tra.kernels import Bound
    from dask_tra.tra.keyfuncs import select_dims

    frontier, axes = case
    t = RelationType(frontier, tuple(axes), np.dtype("f8"))
    must = [d for d, f in enumerate(frontier) if f > 1]
    ones = [d for d, f in enumerate(frontier) if f == 1]
    kept = sorted(must + (sorted(data.draw(st.sets(st.sampled_from(ones)))) if ones else []))
    placed = list(data.draw(st.sampled_from([kept, data.draw(st.permutations(kept))])))
    for _ in range(data.draw(st.integers(0 if placed else 1, 1))):
        placed.insert(data.draw(st.integers(0, len(placed))), None)
    node = ReKey(Input("x", t), KeyMap(Bound(select_dims, tuple(placed)), "placed"))
    want = node.type.key_arity == t.key_arity and all(k == v for k, v in ReKey(node.child, KeyMap(
        lambda k: select_dims(tuple(placed), k), "opaque")).sources.items())
    assert _is_identity(node) == want
    assert "sources" not in node.__dict__


@settings(max_examples=200, deadline=None)
@given(_axes_over(), st.data())
def test_a_renumbering_is_typed_in_closed_form_as_by_its_table(case, data):
    """A renumbering ReKey (a slice's ``keep_blocks``, or any table over one dim) over a dense
    relation, or one with holes along its dim, gets the type its key table gives; a table
    that is not a numbering of the blocks present leaves the table to decide (and to refuse)."""
    import pytest

    from dask_tra.tra import Filter
    from dask_tra.tra.errors import TRAError
    from dask_tra.tra.keyfuncs import KeyPred

    frontier, axes = case
    if not frontier:
        return
    t = RelationType(frontier, tuple(axes), np.dtype("f8"))
    axis = data.draw(st.integers(0, len(frontier) - 1))
    x = Input("x", t)
    if data.draw(st.booleans()):
        keep = data.draw(st.sets(st.integers(0, frontier[axis] - 1), min_size=1))
        x = Filter(x, KeyPred.blocks_in(axis, frozenset(keep), "keep"))
    present = sorted({k[axis] for k in x.type.iter_keys()})
    news = data.draw(st.permutations(range(len(present))))
    table = dict(zip(present, news))
    if data.draw(st.booleans()):  # maybe not a numbering: a gap, a clash, a block left out
        table = data.draw(st.dictionaries(st.integers(0, 3), st.integers(0, 3)))
    opaque = KeyMap(lambda k: k[:axis] + (table[k[axis]],) + k[axis + 1 :], "opaque")
    try:
        by_table = ReKey(x, opaque)
    except (TRAError, LookupError):
        with pytest.raises((TRAError, LookupError)):
            ReKey(x, KeyMap.renumbering(axis, table, len(frontier)))
        return
    closed = ReKey(x, KeyMap.renumbering(axis, table, len(frontier)))
    numbering = all(v in table for v in present) and sorted(table[v] for v in present) == list(range(len(present)))
    holes_numbered = x.type.keys is not None and all(i in table for i in range(x.type.frontier[axis]))
    if numbering and not holes_numbered:  # (a whole grid's numbering keeps the holes: the table's)
        assert "sources" not in closed.__dict__  # typed in closed form: no table made
    assert closed.type.same_as(by_table.type)
    for k in by_table.type.iter_keys():
        assert closed.type.chunk_shape(k) == by_table.type.chunk_shape(k)
    assert closed.sources == by_table.sources

"""The TRA paper's section-3 worked examples, each as its own test."""
import numpy as np
import pytest

from dask_tra.tra import (Aggregate, ChunkAxis, Concat, Filter, Input, Join, ReKey, RelationType,
                          Tile, Transform, evaluate)
from dask_tra.tra import kernels as K
from dask_tra.tra.keyfuncs import KeyMap, get_key0, is_eq

R_A = {(0, 0): np.array([[1, 2], [3, 4]]), (0, 1): np.array([[5, 6], [7, 8]]),
       (1, 0): np.array([[9, 10], [11, 12]]), (1, 1): np.array([[13, 14], [15, 16]])}
A = Input("A", RelationType.from_chunks(((2, 2), (2, 2)), np.int64))

# R_B: a 2x8 matrix partitioned by columns only (key arity 1)
R_B = {(0,): np.array([[1, 2, 5, 6], [3, 4, 7, 8]]), (1,): np.array([[9, 10, 13, 14], [11, 12, 15, 16]])}
B = Input("B", RelationType((2,), (ChunkAxis.const(2), ChunkAxis.const(4)), np.int64))


def same(got, want):
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_sum_vertically_groups_on_key_1():
    same(evaluate(Aggregate(A, (1,), K.add), {"A": R_A}),
         {(0,): np.array([[10, 12], [14, 16]]), (1,): np.array([[18, 20], [22, 24]])})


def test_sum_everything_into_one_array():
    same(evaluate(Aggregate(A, (), K.add), {"A": R_A}), {(): np.array([[28, 32], [36, 40]])})


def test_self_join_key_010():
    j = Join(A, A, (1,), (0,), K.matmul)
    out = evaluate(j, {"A": R_A})
    assert j.type.frontier == (2, 2, 2) and len(out) == 8
    np.testing.assert_array_equal(out[(0, 1, 0)], [[111, 122], [151, 166]])


def test_matmul_is_join_then_aggregate():
    mm = Aggregate(Join(A, A, (1,), (0,), K.matmul), (0, 2), K.add)
    full = np.block([[R_A[0, 0], R_A[0, 1]], [R_A[1, 0], R_A[1, 1]]])
    out = evaluate(mm, {"A": R_A})
    np.testing.assert_array_equal(np.block([[out[0, 0], out[0, 1]], [out[1, 0], out[1, 1]]]), full @ full)


def test_diagonal_via_filter_rekey_transform():
    d = Transform(ReKey(Filter(A, is_eq), get_key0), K.diag_kernel())
    same(evaluate(d, {"A": R_A}), {(0,): np.array([[1, 0], [0, 4]]), (1,): np.array([[13, 0], [0, 16]])})
    assert d.type.frontier == (2,) and d.type.dense


def test_tile_example():
    t = Tile(B, 1, 2)
    same(evaluate(t, {"B": R_B}), {
        (0, 0): np.array([[1, 2], [3, 4]]), (0, 1): np.array([[5, 6], [7, 8]]),
        (1, 0): np.array([[9, 10], [11, 12]]), (1, 1): np.array([[13, 14], [15, 16]])})
    assert t.type.frontier == (2, 2)


def test_tile_then_rekey_gives_two_by_eight():
    r = ReKey(Tile(B, 1, 2), KeyMap(lambda k: (2 * k[0] + k[1],), "2k0+k1"))
    out = evaluate(r, {"B": R_B})
    same(out, {(0,): np.array([[1, 2], [3, 4]]), (1,): np.array([[5, 6], [7, 8]]),
               (2,): np.array([[9, 10], [11, 12]]), (3,): np.array([[13, 14], [15, 16]])})
    assert r.type.frontier == (4,) and r.type.dense


def test_concat_undoes_tile():
    c = Concat(Tile(B, 1, 2), 1, 1)
    same(evaluate(c, {"B": R_B}), R_B)
    assert c.type.frontier == (2,) and c.type.chunk_shape((0,)) == (2, 4)


@pytest.mark.parametrize("tile", [2, 4, 5])
def test_tile_concat_round_trip_ragged(tile):
    rng = np.random.default_rng(tile)
    x = rng.standard_normal((3, 7))
    t = RelationType((2,), (ChunkAxis.const(3), ChunkAxis.along(0, (4, 3))), x.dtype)
    rel = {(0,): x[:, :4], (1,): x[:, 4:]}
    tiled = Tile(Input("X", t), 1, tile)
    assert tiled.type.chunk_shape((1, tiled.type.frontier[1] - 1)) == (3, 3 - (tiled.type.frontier[1] - 1) * tile)
    same(evaluate(Concat(tiled, 1, 1), {"X": rel}), rel)


def test_substitute_makes_one_expression_of_a_chain_of_lineages():
    """``substitute`` replaces inputs by expressions that read other replaced inputs (a chain of
    persisted lineages, far deeper than the recursion limit), iteratively; a shared node stays
    shared, and an expression that reads its own input is refused."""
    from dask_tra.tra.errors import TRAError
    from dask_tra.tra.expr import substitute
    t = A.type
    step = lambda name: Join(Input(name, t), A, [0, 1], [0, 1], K.add)  # noqa: E731
    table = {f"g{i}": step(f"g{i - 1}") for i in range(1, 3000)}
    table["g0"] = Transform(A, K.identity)
    deep = substitute(Transform(Input("g2999", t), K.identity), table)
    assert len(deep.walk()) == 3002 and deep.walk()[0] is A
    same(evaluate(deep, {"A": R_A}), {k: v * 3000 for k, v in R_A.items()})
    shared = Transform(Input("g", t), K.identity)
    out = substitute(Join(shared, shared, [0, 1], [0, 1], K.add), {"g": A})
    assert out.children[0] is out.children[1] and out.children[0].children[0] is A
    with pytest.raises(TRAError, match="its substitute reads it"):
        substitute(Input("h", t), {"h": step("h")})


def test_a_filter_asks_each_part_of_its_predicate_once_per_value_it_reads():
    """A Filter's keys are exactly those its predicate keeps; a conjunction is asked part by part,
    each part once per value of the dims it declares (not once per key)."""
    from dask_tra.tra import Filter, Input, RelationType
    from dask_tra.tra.keyfuncs import KeyPred

    calls = []

    def rows(key):
        calls.append(key)
        return key[0] % 3 != 1

    def cols(key):
        calls.append(key)
        return key[1] in (0, 4, 7)

    t = RelationType.from_chunks(((2,) * 20, (3,) * 9), np.float64)
    both = KeyPred.conjunction(KeyPred(cols, "cols", frozenset({1})), KeyPred(rows, "rows", frozenset({0})))
    f = Filter(Input("x", t), both)
    assert f.type.keys == frozenset((i, j) for i in range(20) for j in range(9) if i % 3 != 1 and j in (0, 4, 7))
    assert len(calls) == 20 + 9

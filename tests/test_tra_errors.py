"""Bad input fails clearly: the error names the operator and, where there is one, the key."""
import numpy as np
import pytest

from dask_tra.tra import (Aggregate, ChunkAxis, ChunkShapeError, Custom, Filter, Input, IntegrityError,
                          Join, KernelError, KeyMap, KeyPred, ReKey, RelationType, Tile, TRAError,
                          Transform, evaluate, split)
from dask_tra.tra import kernels as K


def rel_of(shape, chunks, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    t, r = split(x, chunks)
    return x, t, r


def test_join_on_keys_whose_extents_disagree():
    _, ta, _ = rel_of((6, 6), (3, 3))
    _, tb, _ = rel_of((6, 6), (2, 3))
    with pytest.raises(TRAError, match=r"Join\(\[1\],\[0\],matmul\).*extents disagree.*2 blocks.*3"):
        Join(Input("A", ta), Input("B", tb), (1,), (0,), K.matmul)


def test_join_chunk_extents_disagree_names_key():
    ta = RelationType.from_chunks(((3, 3), (4, 2)), np.float64)
    tb = RelationType.from_chunks(((3, 3), (3, 3)), np.float64)
    with pytest.raises(ChunkShapeError, match=r"Join.*matmul.*key <0,0,0> \(4 vs 3\)"):
        Join(Input("A", ta), Input("B", tb), (1,), (0,), K.matmul)


def test_rekey_producing_duplicates():
    _, t, _ = rel_of((4, 4), (2, 2))
    with pytest.raises(IntegrityError, match=r"ReKey\(sum\).*<0,1> and <1,0> both map to <1>"):
        ReKey(Input("A", t), KeyMap(lambda k: (k[0] + k[1],), "sum"))


def test_rekey_negative_key():
    _, t, _ = rel_of((4, 4), (2, 2))
    with pytest.raises(IntegrityError, match=r"ReKey\(neg\).*negative"):
        ReKey(Input("A", t), KeyMap(lambda k: (k[0] - 1, k[1]), "neg"))


def test_filter_holes_refused_by_consumer_naming_both():
    _, t, _ = rel_of((4, 4), (2, 2))
    f = Filter(Input("A", t), KeyPred(lambda k: k != (0, 1), "not01"))
    with pytest.raises(IntegrityError, match=r"Aggregate.*Filter\(not01\).*<0,1>"):
        Aggregate(f, (0,), K.maximum)  # a missing block is zeros: max must see them (add may skip)


def test_kernel_that_raises_names_operator_and_key():
    x, t, r = rel_of((4, 4), (2, 2))

    def boom(c):
        if c[0, 0] == x[2, 2]:
            raise FloatingPointError("bad chunk")
        return c
    e = Transform(Input("A", t), Custom("boom", boom))
    with pytest.raises(KernelError, match=r"Transform\(boom\).*FloatingPointError: bad chunk at key <1,1>") as info:
        evaluate(e, {"A": r})
    assert isinstance(info.value.__cause__, FloatingPointError)


def test_kernel_returning_wrong_shape():
    x, t, r = rel_of((4, 4), (2, 2))
    e = Transform(Input("A", t), Custom("shrink", lambda c: c[:1]))
    with pytest.raises(ChunkShapeError, match=r"Transform\(shrink\).*shape \(1, 2\) at key <0,0>.*\(2, 2\)"):
        evaluate(e, {"A": r})


def test_input_chunk_disagrees_with_metadata():
    x, t, r = rel_of((5, 4), (3, 2))
    r[(1, 1)] = np.zeros((3, 2))
    with pytest.raises(ChunkShapeError, match=r"Input\[A\].*key <1,1> has shape \(3, 2\).*\(2, 2\)"):
        evaluate(Input("A", t), {"A": r})


def test_input_missing_key():
    x, t, r = rel_of((4, 4), (2, 2))
    del r[(0, 1)]
    with pytest.raises(ChunkShapeError, match=r"Input\[A\].*missing \['<0,1>'\]"):
        evaluate(Input("A", t), {"A": r})




def test_aggregate_over_ragged_dim_refused():
    _, t, _ = rel_of((5, 4), (3, 2))
    with pytest.raises(ChunkShapeError, match=r"Aggregate\(\[1\],add\).*varies with key dim 0"):
        Aggregate(Input("A", t), (1,), K.add)


def test_wrong_kernel_arity_and_bad_key_dims():
    _, t, _ = rel_of((4, 4), (2, 2))
    a = Input("A", t)
    with pytest.raises(TRAError, match="takes 1 chunks, needs 2"):
        Join(a, a, (1,), (0,), K.identity)
    with pytest.raises(TRAError, match="key dim 5 out of range"):
        Aggregate(a, (5,), K.add)
    with pytest.raises(TRAError, match="expected a Kernel"):
        Transform(a, np.exp)

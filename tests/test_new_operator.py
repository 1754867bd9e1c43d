"""New TRA operators, defined here in the test alone. A per-tuple operator is one class.
``Flip`` below (``np.flip`` of an array relation along one axis, as a single operator) is
written against ``TupleMap`` and ``register_rjp`` only, here in the test, and runs through
every layer with nothing else edited: the reference executor, planning and its cache, the IA
executor, emission on a LocalCluster, ``explain``, block-sparse arrays (their dense view
rebuilds it from its declared operands) and the backward pass. If a layer starts recognising
operators by type again, these tests fail. An operator that moves data (``Merge`` below) adds
its reference semantics and one strategy module (``dask_tra/optimizer/operators/``)."""

from __future__ import annotations

import numpy as np
import pytest

import dask_tra as dt
from dask_tra.array.relations import wrap
from dask_tra.ia import execute, project
from dask_tra.optimizer import operators, plan
from dask_tra.optimizer.candidates import per_tuple as per_tuple_costs
from dask_tra.optimizer.layout import Built
from dask_tra.optimizer.operators import concat as concat_op
from dask_tra.optimizer.operators.registry import Local
from dask_tra.optimizer.strategies import per_tuple as per_tuple_plans
from dask_tra.optimizer.symbolic import Cand, View
from dask_tra.tra import (
    ChunkAxis,
    Concat,
    Expr,
    Input,
    Join,
    KeyMap,
    ReKey,
    RelationType,
    TRAError,
    assemble,
    evaluate,
    split,
)
from dask_tra.tra import kernels as K
from dask_tra.tra.executor import register_reference
from dask_tra.tra.expr import TupleMap
from dask_tra.tra.vjp import GradError, register_rjp

pytestmark = pytest.mark.numpy_chunks  # the chunk function is np.flip


class Flip(TupleMap):
    """Flip(axis): reverse the blocks along key dim ``axis`` and every chunk along chunk axis
    ``axis`` (an array relation's key dim i counts blocks along axis i)."""

    _parameters = ("child", "axis")

    def __init__(self, child, axis: int):
        self.children = (child,)
        self.child, self.axis = child, axis
        t = child.type
        ax = t.axes[axis]
        sizes = np.flip(ax.sizes, ax.key_dims.index(axis)) if axis in ax.key_dims else ax.sizes
        axes = t.axes[:axis] + (ChunkAxis(ax.key_dims, sizes),) + t.axes[axis + 1 :]
        keys = None if t.keys is None else frozenset(map(self.source, t.keys))
        self.type = RelationType(t.frontier, axes, t.dtype, t.backend, keys)

    def source(self, key):
        n = self.child.type.frontier[self.axis]
        return key[: self.axis] + (n - 1 - key[self.axis],) + key[self.axis + 1 :]

    def out_keys(self, key):
        return [self.source(key)]  # an involution

    def chunk_task(self, key):
        return (np.flip, self.axis)

    def describe(self):
        return f"Flip({self.axis})"


@register_rjp(Flip)
def _flip_rjp(node, g):
    return Flip(g, node.axis)


def flip(x, axis):
    """A per-tuple operator keeps a missing block missing: it reads the block-sparse expression."""
    return wrap(Flip(x.sparse_expr, axis), x)


RNG = np.random.default_rng(7)
A, B = RNG.standard_normal((11, 7)), RNG.standard_normal((11, 7))
CHUNKS = ((4, 1, 6), (3, 4))  # ragged both ways


def test_reference_and_ia_executors_match_numpy():
    ta, ra = split(A, CHUNKS)
    x = Input("a", ta)
    for axis in (0, 1):
        e = Flip(x, axis)
        tb, rb = split(B, CHUNKS[:axis] + (CHUNKS[axis][::-1],) + CHUNKS[axis + 1 :])  # aligned with e
        y = Input("b", tb)
        np.testing.assert_array_equal(assemble(e.type, evaluate(e, {"a": ra})), np.flip(A, axis))
        # then a join that needs the flipped tuples elsewhere: the plan moves them, exactly as predicted
        both = Join(e, y, (0, 1), (0, 1), K.add)
        for placements in ({}, {"a": {k: (i % 3,) for i, k in enumerate(ra)}}):
            p = plan(both, 3, placements=placements)
            res = execute(p.root, {"a": ra, "b": rb})
            np.testing.assert_array_equal(assemble(both.type, project(p.root, res)), np.flip(A, axis) + B)
            assert res.bytes_moved == p.cost.bytes_moved
        assert plan(e, 3, placements={"a": {k: (1,) for k in ra}}).cost.bytes_moved == 0  # runs where it is


def test_on_a_cluster_inside_larger_expressions(client):
    x = dt.from_array(A, chunks=CHUNKS)
    w = dt.from_array(RNG.standard_normal((7, 5)), chunks=((2, 5), (5,)))
    y = flip(x, 0) * 2.0 + flip(flip(x, 1), 1)
    np.testing.assert_allclose(y.compute(), np.flip(A, 0) * 2.0 + A)
    np.testing.assert_allclose((flip(x, 1) @ w).compute(), np.flip(A, 1) @ w.compute())
    np.testing.assert_allclose(flip(x, 0).sum(axis=0).compute(), A.sum(axis=0))
    assert "Flip(0)" in str(flip(x, 0).explain(sites=4).view(detail="algebra"))


SPARSE_KEYS = [(0, 0), (0, 1), (2, 0), (2, 1)]  # block row 1 missing


def _sparse():
    """A block-sparse A (its missing blocks zeros) and its dense equivalent, made by NumPy."""
    starts = [np.concatenate([[0], np.cumsum(c)]) for c in CHUNKS]
    box = {k: tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, k)) for k in SPARSE_KEYS}
    dense = np.zeros_like(A)
    for b in box.values():
        dense[b] = A[b]
    return dt.from_blocks({k: A[b] for k, b in box.items()}, A.shape, CHUNKS), dense


def test_block_sparse_input():
    x, dense = _sparse()
    sparse = Input("a", x.sparse_expr.type)
    for axis in (0, 1):
        e = Flip(sparse, axis)
        rel = evaluate(e, {"a": {k: x.sources[x.sparse_expr.name].chunk(k) for k in SPARSE_KEYS}})
        assert set(rel) == set(e.type.keys) == {e.source(k) for k in SPARSE_KEYS}  # the holes move, stay holes
        y = flip(x, axis)
        assert y.sparse_expr.type.keys == e.type.keys
        np.testing.assert_array_equal(np.asarray(y.compute()), np.flip(dense, axis))
        np.testing.assert_allclose(np.asarray((y * 2.0 + 1.0).compute()), np.flip(dense, axis) * 2.0 + 1.0)
    w = RNG.standard_normal((7, 5))
    np.testing.assert_allclose(np.asarray((flip(x, 0) @ dt.from_array(w, chunks=((3, 4), 5))).compute()),
                               np.flip(dense, 0) @ w)


def test_gradient_through_the_registered_rjp(client):
    x = dt.from_array(A, chunks=CHUNKS)
    c = RNG.standard_normal(A.shape)
    loss = (flip(x, 0) * dt.from_array(c, chunks=(5, 3))).sum()
    g = dt.grad(loss, x).compute()
    np.testing.assert_allclose(g, np.flip(c, 0))  # d/dx sum(flip(x) * c) = flip(c)


# ---------------------------------------------------------------- an operator that moves data
# Merge is planned by a strategy module of its own (what ``dask_tra/optimizer/operators/``
# holds), registered here: nothing else in the optimizer, the IA or emission knows it.


class Merge(Expr):
    """Merge(keyDim, r): concatenate every ``r`` consecutive blocks along key dim ``key_dim`` into
    one, along chunk axis ``key_dim`` (a rechunk that merges blocks). Typed, and planned, as a
    ReKey (block -> (group, position)) followed by a Concat over the positions."""

    _parameters = ("child", "key_dim", "r")

    def __init__(self, child, key_dim: int, r: int):
        self.children = (child,)
        self.child, self.key_dim, self.r = child, key_dim, r
        t = child.type
        if t.frontier[key_dim] % r:
            raise TRAError(f"Merge({key_dim},{r}): {t.frontier[key_dim]} blocks do not split into groups of {r}")
        self.split = ReKey(child, KeyMap.table({k: self.group(k) for k in t.iter_keys()}, f"group[{key_dim},{r}]"))
        self.type = self.concat_over(Input("_", self.split.type)).type

    def group(self, key):
        d, r = self.key_dim, self.r
        return key[:d] + (key[d] // r,) + key[d + 1 :] + (key[d] % r,)

    def concat_over(self, expr):
        return Concat(expr, expr.type.key_arity - 1, self.key_dim)

    def describe(self):
        return f"Merge({self.key_dim},{self.r})"


def _merge_reference(node, rel):
    groups = {}
    for k in sorted(rel):
        g = node.group(k)
        groups.setdefault(g[:-1], []).append(rel[k])
    return {g: np.concatenate(cs, axis=node.key_dim) for g, cs in groups.items()}


def _merge_plans(node, child):
    split = per_tuple_plans(node.split, child)[Local()]
    return concat_op.plans(node.concat_over(Input("_", node.split.type)), Built(split))


def _merge_costs(node, child, s, only=None):
    rk = per_tuple_costs(node.split, child, s)[Local()]
    view = View(node.split.type, rk.layout, rk.layout, placed=child.placed)
    out = {}
    for strategy, c in concat_op.costs(node.concat_over(Input("_", node.split.type)), view, s, only).items():
        peak = np.maximum(rk.peak, c.peak)
        out[strategy] = Cand(c.layout, c.moved, c.paper, peak, rk.flops + c.flops, rk.tasks + c.tasks, rk.present,
                             c.detail, c.site_moved, strategy=strategy)
    return out


register_reference(Merge, _merge_reference)
operators.register(Merge, _merge_plans, _merge_costs)


def merge(x, axis, r):
    return wrap(Merge(x.expr, axis, r), x)


CHUNKS4 = ((4, 1, 2, 4), (3, 4))


def test_a_data_moving_operator_from_its_own_strategy_module():
    ta, ra = split(A, CHUNKS4)
    e = Merge(Input("a", ta), 0, 2)
    assert e.type.frontier == (2, 2)
    np.testing.assert_array_equal(assemble(e.type, evaluate(e, {"a": ra})), A)
    scattered = {k: (i % 3,) for i, k in enumerate(sorted(ra))}  # groups split across sites: a shuffle
    together = {k: (k[0] // 2,) for k in ra}  # each group on one site: local
    for placements, strategy in (({}, "shuffle"), (scattered, "shuffle"), (together, "local")):
        p = plan(e, 3, placements={"a": placements} if placements else None)
        assert p.explain.operators[-1].strategy == strategy
        res = execute(p.root, {"a": ra})
        np.testing.assert_array_equal(assemble(e.type, project(p.root, res)), A)
        assert res.bytes_moved == p.cost.bytes_moved
        if placements:
            assert (res.bytes_moved > 0) == (placements is scattered)
    with pytest.raises(TRAError, match=r"Merge\(0,3\): 4 blocks do not split into groups of 3"):
        Merge(Input("a", ta), 0, 3)


def test_a_data_moving_operator_on_a_cluster(client):
    x = dt.from_array(A, chunks=CHUNKS4)
    m = merge(x, 0, 2)
    assert m.chunks == ((5, 6), (3, 4))
    np.testing.assert_array_equal(m.compute(), A)
    np.testing.assert_allclose((merge(x, 1, 2) @ dt.from_array(B.T, chunks=(7, 4))).compute(), A @ B.T)
    assert "Merge(0,2)" in str(m.explain(sites=4).view(detail="algebra"))
    with pytest.raises(GradError, match=r"Merge\(0,2\).*no registered RJP"):
        dt.grad(m.sum(), x)

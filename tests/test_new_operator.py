"""A new per-tuple TRA operator is one class. ``Flip`` below (``np.flip`` of an array
relation along one axis, as a single operator) is written against ``TupleMap`` and
``register_rjp`` only, here in the test, and runs through every layer with nothing else
edited: the reference executor, planning and its cache, the IA executor, emission on a
LocalCluster, ``explain`` and the backward pass. If a layer starts recognising operators
by type again, these tests fail."""

from __future__ import annotations

import numpy as np
import pytest

import dask_tra as dt
from dask_tra.array.relations import wrap
from dask_tra.ia import execute, project
from dask_tra.optimizer import plan
from dask_tra.tra import ChunkAxis, Input, Join, RelationType, assemble, evaluate, split
from dask_tra.tra import kernels as K
from dask_tra.tra.expr import TupleMap
from dask_tra.tra.vjp import register_rjp

pytestmark = pytest.mark.numpy_chunks  # the chunk function is np.flip


class Flip(TupleMap):
    """Flip(axis): reverse the blocks along key dim ``axis`` and every chunk along chunk axis
    ``axis`` (an array relation's key dim i counts blocks along axis i)."""

    def __init__(self, child, axis: int):
        self.children = (child,)
        self.child, self.axis, self.params = child, axis, (axis,)
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
    return wrap(Flip(x.expr, axis), x)


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
    assert "Flip(0)" in str(flip(x, 0).explain(sites=4))


def test_gradient_through_the_registered_rjp(client):
    x = dt.from_array(A, chunks=CHUNKS)
    c = RNG.standard_normal(A.shape)
    loss = (flip(x, 0) * dt.from_array(c, chunks=(5, 3))).sum()
    g = dt.grad(loss, x).compute()
    np.testing.assert_allclose(g, np.flip(c, 0))  # d/dx sum(flip(x) * c) = flip(c)

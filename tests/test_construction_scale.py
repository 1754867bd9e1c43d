"""Building an operation costs the same however deep the expression it extends (issue 35, item 6).

Node facts (the inputs a node reads, whether it reads a block-sparse one, its naming token) are
kept on the TRA nodes and made from the children's, so ``x = x + 1`` visits a constant number of
nodes at depth 100 and at depth 10,000. The tests count node visits, never time: every walk of a
DAG (``tra.dag.walk_many``) and every node a fact computation looks at (``tra.dag.fill``)."""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.blocksparse import from_blocks
from dask_tra.tra import dag


@pytest.fixture
def visits(monkeypatch):
    """Counts of the nodes walked (``walk``) and looked at by fact computations (``fill``),
    wherever a dask_tra module holds those helpers."""
    counter: Counter = Counter()
    walk_many, fill = dag.walk_many, dag.fill

    def counting_walk_many(roots):
        order = walk_many(roots)
        counter["walk"] += len(order)
        return order

    def counting_fill(root, done, compute):
        def seen(node):
            counter["fill"] += 1
            return done(node)

        fill(root, seen, compute)

    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("dask_tra"):
            for attr, orig, new in (("walk_many", walk_many, counting_walk_many), ("fill", fill, counting_fill)):
                if getattr(mod, attr, None) is orig:
                    monkeypatch.setattr(mod, attr, new)
    return counter


def _chain(x, op, n):
    for _ in range(n):
        x = op(x)
    return x


def _visits_per_op(visits, x, op, depth, window=20):
    """Node visits per ``op`` applied to a chain ``depth`` ops deep (the mean of ``window``)."""
    x = _chain(x, op, depth - window)
    visits.clear()
    _chain(x, op, window)
    return sum(visits.values()) / window


def _small():
    return da.from_array(np.arange(12.0).reshape(3, 4), chunks=2)


def _sparse():
    return from_blocks({(0, 0): np.ones((2, 2)), (1, 1): np.full((2, 2), 2.0)}, (4, 4), 2)


DEEP = [
    ("add", _small, lambda x: x + 1),
    ("mul", _small, lambda x: x * 2),
]
SHALLOWER = [  # ops whose chains are slower to build (more nodes or relations per op)
    ("slice", lambda: da.from_array(np.arange(3000.0).reshape(1500, 2), chunks=(100, 2)), lambda x: x[1:]),
    ("sum", _small, lambda x: x.sum(axis=0, keepdims=True)),
    ("where", _small, lambda x: da.where(x > 0, x, 0)),
    ("sparse", _sparse, lambda x: (x * 2) + 1),
    ("sparse.T", _sparse, lambda x: x.T),  # stays block-sparse: its dense view is rebuilt per op
    ("x+x", _small, lambda x: x + x),
]


@pytest.mark.parametrize(
    "make, op, deep",
    [(m, o, 10_000) for _, m, o in DEEP] + [(m, o, 1000) for _, m, o in SHALLOWER],
    ids=[n for n, _, _ in DEEP] + [n for n, _, _ in SHALLOWER],
)
def test_visits_per_op_do_not_grow_with_depth(visits, make, op, deep):
    shallow = _visits_per_op(visits, make(), op, 100)
    assert shallow > 0  # the counters see the fact computations
    assert _visits_per_op(visits, make(), op, deep) <= 2 * shallow
    assert visits["walk"] == 0  # no operation walks its expression


def test_deep_chain_is_usable_without_recursion():
    x = _chain(_small(), lambda x: x + 1, 10_000)
    assert x.name.startswith("add-")
    assert x.chunks == ((2, 1), (2, 2))
    assert x.dtype == np.float64
    assert "tra_ops=10000" in repr(x)
    assert repr(x.expr).count("Transform(add") == 10_000
    assert len(x.sources) == 1
    y = _chain(_small(), lambda x: x + 1, 10_000)
    assert y.name == x.name  # deterministic: the same operations on the same data


def test_chain_computes_as_numpy():
    base = np.arange(12.0).reshape(3, 4)
    x = da.from_array(base, chunks=2)
    want = base
    for i in range(50):
        x = x * 0.5 + i if i % 3 else -x
        want = want * 0.5 + i if i % 3 else -want
    np.testing.assert_allclose(x.compute(), want)


def test_sparse_chain_computes_as_numpy():
    x = _sparse()
    want = x.compute()
    for i in range(20):
        x = x * 2 if i % 2 else x + 1
        want = want * 2 if i % 2 else want + 1
    np.testing.assert_allclose(x.compute(), want)


def test_node_facts_share_sets():
    x = _small()
    y = x + 1
    assert y.expr.input_names is x.expr.input_names  # one child: the child's set
    z = y * x
    assert z.expr.input_names is x.expr.input_names  # children reading the same inputs
    s = from_blocks({(0, 0): np.ones((2, 2))}, (3, 4), 2)
    (raw,) = s.sparse_expr.input_names
    t = s.T  # block-sparse: a transpose keeps the missing blocks missing
    assert t.sparse_expr.holes and not t.expr.holes and not z.expr.holes
    assert {n.name for n in t.sparse_expr.sparse_inputs} == t.sparse_expr.input_names == {raw}
    assert set(t.sources) == t.expr.input_names | {raw} == {raw, raw + "-zero-filled"}
    w = z + t.T
    assert set(w.sources) == w.expr.input_names == {x.expr.name, raw + "-zero-filled"}
    np.testing.assert_allclose(w.compute(), z.compute() + s.compute())

"""Declared operands and the per-layer registries (issue 32, item 4): every node rebuilds, and
pickles, from its ``_parameters``; each layer looks a node's meaning up by type (along its
MRO), and a node type a layer does not know gets an error naming the layer and the node."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dask_tra.array.zerofill import BlocksSource, densify
from dask_tra.autodiff.rjp import rjp
from dask_tra.ia import Placed, execute, part
from dask_tra.ia.nodes import IANode, LocalMap, Shuffle, transform
from dask_tra.optimizer import cache
from dask_tra.reference.rules import rebuild
from dask_tra.runtime.emit import emit
from dask_tra.tra import (
    Aggregate,
    Concat,
    Expr,
    Filter,
    Input,
    Join,
    KeyMap,
    ReKey,
    Tile,
    TRAError,
    Transform,
    assemble,
    evaluate,
    split,
)
from dask_tra.tra import kernels as K
from dask_tra.tra.dag import Registry
from dask_tra.tra.expr import TupleMap, with_children
from dask_tra.tra.kernels import Bound
from dask_tra.tra.keyfuncs import KeyPred, dims_in
from dask_tra.tra.vjp import GradError

RNG = np.random.default_rng(3)
A = RNG.standard_normal((8, 6))
T, REL = split(A, ((4, 4), (3, 3)))


class Twice(Expr):
    """An operator no layer knows: its declared operands only."""

    _parameters = ("child",)

    def __init__(self, child):
        self.children, self.child, self.type = (child,), child, child.type

    def describe(self):
        return "Twice"


class Undeclared(Expr):
    """An operator that declares no operands."""

    def __init__(self, child):
        self.children, self.child, self.type = (child,), child, child.type

    def describe(self):
        return "Undeclared"


class Odd(IANode):
    """An IA operator no layer knows."""

    kind = "odd"
    _parameters = ("child",)

    def __init__(self, child):
        super().__init__()
        self.children, self.child, self.s, self.type = (child,), child, child.s, child.type

    def _compute_copies(self):
        return {k: [(t, self.new_origin(k, t)) for t, _ in cs] for k, cs in self.child.copies.items()}

    def describe(self):
        return "Odd"


def _ops(x, y):
    """One node of each TRA operator over ``x`` (and ``y``)."""
    row0 = KeyPred(Bound(dims_in, (0,), frozenset({0})), "row0", frozenset({0}))
    return [
        x,
        Join(x, y, (0, 1), (0, 1), K.add),
        Aggregate(x, (0,), K.add),
        ReKey(x, KeyMap.selecting((1, 0))),
        Filter(x, row0),
        Transform(x, K.identity),
        Tile(x, 0, 2),
        Concat(x, 1, 1),
    ]


def test_every_operator_rebuilds_and_pickles_from_its_operands():
    x, y, z = Input("a", T), Input("b", T), Input("c", T)
    data = {"a": REL, "b": REL, "c": {k: 2 * v for k, v in REL.items()}}
    for node in _ops(x, y):
        assert node.operands[: len(node.children)] == node.children
        assert node.operands[len(node.children) :] == node.params
        if node.children:
            other = with_children(node, (z,) * len(node.children))
            assert (
                type(other) is type(node)
                and other.params == node.params
                and other.children == (z,) * len(node.children)
            )
            assert other.describe() == node.describe() and other.type.same_as(node.type)
        back = pickle.loads(pickle.dumps(node))
        assert type(back) is type(node) and back.describe() == node.describe() and back.type.same_as(node.type)
        want = evaluate(node, data)
        got = evaluate(back, data)
        assert set(got) == set(want) and all(np.array_equal(got[k], want[k]) for k in want)


def test_a_shared_node_stays_shared_through_pickle():
    x = Input("a", T)
    t = Transform(x, K.identity)
    back = pickle.loads(pickle.dumps(Join(t, t, (0, 1), (0, 1), K.add)))
    assert back.left is back.right
    np.testing.assert_array_equal(assemble(back.type, evaluate(back, {"a": REL})), 2 * A)


def test_a_node_without_declared_operands_still_pickles():
    back = pickle.loads(pickle.dumps(Undeclared(Transform(Input("a", T), K.identity))))
    assert type(back) is Undeclared and back.child.describe() == "Transform(identity)"


def test_ia_nodes_rebuild_over_new_children():
    x = Input("a", T)
    placed, other = Placed(x, part((0,), T.frontier), 2), Placed(x, part((1,), T.frontier), 2)
    moved = Shuffle(placed, part((1,), T.frontier))
    again = rebuild(moved, (other,))
    assert type(again) is Shuffle and again.placement == moved.placement and again.child is other
    mapped = transform(placed, K.identity)
    again = rebuild(mapped, (other,))
    assert isinstance(again, LocalMap) and again.op.kernel is K.identity and again.child is other


def test_registry_finds_a_base_class_entry_and_names_what_is_missing():
    reg = Registry("a layer", "meaning", "@REG.register({})")
    reg.register(TupleMap)(lambda node: "per tuple")
    x = Input("a", T)
    assert reg(Tile(x, 0, 2))(None) == "per tuple"  # a subclass inherits its base's entry
    with pytest.raises(
        TRAError, match=r"a layer: Twice: no meaning for Twice; register one with @REG.register\(Twice\)"
    ):
        reg(Twice(x))
    reg.register(Expr)(lambda node: "any")
    assert reg(Twice(x))(None) == "any" and reg(Tile(x, 0, 2))(None) == "per tuple"


# ---------------------------------------------------------------- an unknown node, layer by layer


def test_reference_executor():
    with pytest.raises(
        TRAError,
        match=r"reference executor: Twice: no reference semantics for Twice; register one with "
        r"register_reference\(Twice, fn\)",
    ):
        evaluate(Twice(Input("a", T)), {"a": REL})


def _odd_plan():
    return Odd(Placed(Input("a", T), part((0,), T.frontier), 2))


def test_ia_executor():
    with pytest.raises(TRAError, match=r"IA executor: Odd: no value for Odd; register one with @VALUE.register\(Odd\)"):
        execute(_odd_plan(), {"a": REL})


def test_emit():
    with pytest.raises(TRAError, match=r"emit: Odd: no task for Odd; register one with @TASK.register\(Odd\)"):
        emit([_odd_plan()], {"a": BlocksSource(REL, T, "a")}, None, "0" * 16, ["out"])


def test_zero_fill():
    present = {(0, 0): REL[(0, 0)], (1, 1): REL[(1, 1)]}
    src = BlocksSource(present, T.with_(keys=frozenset(present)), "s")
    with pytest.raises(
        TRAError,
        match=r"zero-fill: Undeclared: cannot rebuild Undeclared over new inputs; declare its "
        r"operands \(_parameters",
    ):
        densify(Undeclared(src.input), {"s": src})


def test_backward_pass():
    with pytest.raises(
        GradError,
        match=r"backward pass: Twice: no registered RJP for Twice; register one with "
        r"@register_rjp\(Twice\)",
    ):
        rjp(Twice(Input("a", T)), None, set(), None)


def test_plan_cache():
    with pytest.raises(TRAError, match=r"plan cache: Input\[a\]@.*: no structure token for Placed"):
        cache.structure([_odd_plan()])


def test_ia_rules():
    plan = _odd_plan()

    class OddUndeclared(Odd):
        _parameters = None

    with pytest.raises(TRAError, match=r"IA rules: Odd: cannot rebuild OddUndeclared over new inputs"):
        rebuild(OddUndeclared(plan.child), (Placed(Input("a", T), part((1,), T.frontier), 2),))


def test_tra_rewrite():
    with pytest.raises(TRAError, match=r"Undeclared: Undeclared declares no operands \(_parameters"):
        with_children(Undeclared(Input("a", T)), (Input("b", T),))

"""Plan reuse: a plan found once is replayed for every expression of the same structure.

The key is the expressions' *structure* (operators, key dims, kernels' names and algebraic
facts, relation types), not their data or input names; plus the sites and the planning
settings. An SGD loop builds a new expression every step, with new parameter arrays: every
step after the first finds the first step's plan here and skips the search. With the placed
inputs where they were, ``plan_many`` replays the plan's choices onto the new expression's
nodes; with them elsewhere (last step's outputs land where that plan put them, replicas
come and go), it keeps the choices and re-costs them, one candidate per operator, for the
new placements. The IA plan is then built from the new nodes and kernels.

Structure tokens are digests computed node by node, children first (iterative; a shared
node once), so a chain of thousands of operators is hashed in linear time.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np

from ..tra import expr as tra
from ..tra.dag import Registry, walk_many

MAX_PLANS = 256
_plans: OrderedDict = OrderedDict()


def type_token(t) -> bytes:
    """A relation type, exactly, as bytes (chunk sizes and key sets in full); made once per type."""
    token = t._cache.get("token")
    if token is None:
        token = t._cache["token"] = _type_token(t)
    return token


def _type_token(t) -> bytes:
    parts = [repr(t.frontier), t.dtype.str, t.backend]
    for ax in t.axes:
        parts.append(repr(ax.key_dims))
        parts.append(np.ascontiguousarray(ax.sizes).tobytes().hex())
    if t.keys is not None:
        parts.append(repr(sorted(t.keys)))
    return "|".join(parts).encode()


def _kernel_token(k) -> str:
    return repr((type(k).__name__, k.name, k.arity, k.associative, k.commutative, sorted(k.distributes_over)))


# what planning reads of one node of each operator, besides its children and its type
STRUCTURE = Registry("plan cache", "structure token", "@STRUCTURE.register({}) in optimizer/cache.py")


@STRUCTURE.register(tra.Expr)
def _described(node) -> str:
    return node.describe()  # Tile, Concat, new operators: parameters only (see TupleMap)


@STRUCTURE.register(tra.Input)
def _input(node) -> str:
    return "Input" if node.home is None else f"Input@{node.home}"  # a home turns where its work runs


@STRUCTURE.register(tra.Join)
def _join(node) -> str:
    return repr(("Join", node.left_keys, node.right_keys, _kernel_token(node.kernel)))


@STRUCTURE.register(tra.Aggregate)
def _aggregate(node) -> str:
    return repr(("Aggregate", node.group_by, _kernel_token(node.kernel)))


@STRUCTURE.register(tra.Transform)
def _transform(node) -> str:
    return repr(("Transform", _kernel_token(node.kernel)))


@STRUCTURE.register(tra.ReKey)
def _rekey(node) -> str:
    return repr(("ReKey", sorted(node.sources.items())))


@STRUCTURE.register(tra.Filter)
def _filter(node) -> str:
    return "Filter"  # its key set is in its type


def own_token(node) -> bytes:
    """What planning reads of one node, besides its children: operator, parameters, type. Kept
    on the node (it depends on nothing below it; ``Expr.over`` copies it with the type)."""
    token = node.__dict__.get("_own_token")
    if token is None:
        token = node.__dict__["_own_token"] = STRUCTURE(node)(node).encode() + b"#" + type_token(node.type)
    return token


def structure(exprs) -> tuple:
    """(digest of the whole DAG, nodes in walk order, Input nodes in walk order)."""
    order = walk_many(exprs)
    index = {id(n): i for i, n in enumerate(order)}
    digests = []
    for n in order:
        h = hashlib.blake2b(own_token(n), digest_size=16)
        for c in n.children:
            h.update(index[id(c)].to_bytes(4, "little"))
        digests.append(h.digest())
    total = hashlib.blake2b(b"".join(digests) + repr([index[id(e)] for e in exprs]).encode(), digest_size=16)
    return total.digest(), order, [n for n in order if isinstance(n, tra.Input)]


def keys(digest, inputs, placements, settings) -> tuple:
    """(exact key, layout-free key): the exact key adds where placed inputs are; the other only
    which inputs are placed (a plan found under other placements is re-costed, not searched)."""
    placed, where = [], []
    for i, n in enumerate(inputs):
        if placements and n.name in placements:
            placed.append(i)
            where.append((i, repr(sorted((tuple(k), tuple(v)) for k, v in placements[n.name].items()))))
    exact = (digest, hashlib.blake2b(repr(where).encode(), digest_size=16).digest(), settings)
    return exact, (digest, tuple(placed), settings)


def get(k):
    hit = _plans.get(k)
    if hit is not None:
        _plans.move_to_end(k)
    return hit


def put(k, value):
    _plans[k] = value
    while len(_plans) > MAX_PLANS:
        _plans.popitem(last=False)


def clear():
    _plans.clear()

"""Reverse-mode differentiation of a TRA expression (the paper's Algorithm 2, corrected).

Nodes are visited in reverse topological order of the expression DAG. A node's cotangent
is the sum (relational ``add``) of the contributions of all its consumers, i.e. of every
edge (v_i, v_j) in E leaving it (erratum: line 10 tests edges, not vertices), each made by
the consumer's RJP from the consumer's own cotangent ∂Q/∂R_j (erratum: line 15). Since
every consumer comes later in topological order, a node's cotangent is complete when it is
visited.

Only *active* nodes are differentiated: floating-point nodes that depend on a ``wrt``
node. Integer and boolean results (comparisons, argmax, casts to int) are constants, as in
JAX; ``stop_gradient`` cuts a path. Forward nodes are referenced, never copied: the
backward expression shares them with the forward expression, so one plan computes both
and each forward intermediate once.
"""

from __future__ import annotations

from collections import Counter

from ..tra import Transform
from .rjp import rjp
from .terms import GradError, Term, accumulate, same_axes


def is_stop(node) -> bool:
    return isinstance(node, Transform) and getattr(node.kernel, "stops_gradient", False)


def active_nodes(root, wrt_nodes) -> set:
    wrt = {id(w) for w in wrt_nodes}
    active = set()
    for node in root.walk():
        if is_stop(node):
            continue
        if id(node) in wrt or any(id(c) in active for c in node.children):
            kind = node.type.dtype.kind
            if kind == "f":
                active.add(id(node))
            elif kind == "c":
                raise GradError(f"{node.describe()}: complex values on the path from wrt to the loss are not supported")
    return active


def backward(root, seed: Term, wrt_nodes, ctx) -> dict:
    """id(wrt node) -> its cotangent Term (maybe broadcast), or absent where zero."""
    active = active_nodes(root, wrt_nodes)
    wrt = {id(w) for w in wrt_nodes}
    out = {}
    if id(root) not in active:
        return out
    order = root.walk()
    ctx.consumers = Counter(id(c) for n in order for c in n.children)
    ctx.wrt, ctx.active = wrt, active
    cots = {id(root): seed}
    for node in reversed(order):
        cot = cots.pop(id(node), None)
        if cot is None:
            continue
        if len(cot.dims) == node.type.key_arity and sorted(cot.dims) == list(range(node.type.key_arity)):
            t = cot.expr.type
            if list(cot.dims) == sorted(cot.dims) and not same_axes(t, node.type):
                raise GradError(
                    f"internal: the cotangent of {node.describe()} has chunks {t.frontier}/"
                    f"{t.axes} but the node has {node.type.frontier}/{node.type.axes}"
                )
        if id(node) in wrt:
            out[id(node)] = cot
        if not any(id(c) in active for c in node.children):
            continue  # a wrt computed from constants: nothing below needs a gradient
        for child, contrib in rjp(node, cot, active, ctx):
            if contrib is None or id(child) not in active:
                continue
            if contrib.expr.type.dtype != child.type.dtype:
                raise GradError(
                    f"internal: cotangent dtype {contrib.expr.type.dtype} for "
                    f"{child.describe()} of dtype {child.type.dtype}"
                )
            cots[id(child)] = accumulate(cots.get(id(child)), contrib, child.type, ctx)
    return out


__all__ = ["backward", "active_nodes", "is_stop"]

"""Expand a chosen plan into its IA nodes, once (for emission and the reference executor).

The search decides strategies from closed-form costs; here every chosen alternative is
built into IA operators by ``strategies`` (the same strategies, move for move), so its
``copies`` (every tuple with its sites) exist only for the plan that runs.
"""

from __future__ import annotations

from ..ia import Placed, SiteMap, part
from ..tra import expr as tra
from . import operators, twophase_strategy
from . import strategies as S
from .layout import Alt as IAAlt
from .search import chosen, inputs_of, kind_of


def build(roots, s) -> list:
    """IA root per chosen Alt in ``roots``."""
    made = {}
    for alt in chosen(roots):
        node = alt.node
        if isinstance(node, tra.Input):
            if alt.placement is not None:
                made[id(alt)] = IAAlt(Placed(node, SiteMap(alt.placement), s), free=False, strategy="placed")
            else:
                made[id(alt)] = IAAlt(
                    Placed(node, part(range(node.type.key_arity), node.type.frontier), s), free=True, strategy="free"
                )
            continue
        kids = [made[id(a)] for a in alt.inputs]
        made[id(alt)] = IAAlt(_one(node, alt, kids, s), strategy=alt.strategy)
    return [made[id(r)].node for r in roots]


def _one(node, alt, kids, s):
    kind = kind_of(node)
    name = alt.strategy
    if name == twophase_strategy.NAME and kind in ("matmul", "einsum", "contraction"):
        return twophase_strategy.build(node, kids[0], kids[1], s, alt.cand.detail["twophase"])
    if kind in ("matmul", "einsum", "contraction"):
        return S.contraction(node, kids[0], kids[1], s, only=name, bside=alt.cand.detail.get("bside"))[name]
    if isinstance(node, tra.Join):
        return S.join_alone(node, kids[0], kids[1], only=name)[name]
    if isinstance(node, tra.Aggregate):
        return S.aggregate_alone(node, kids[0])[name]
    op = operators.lookup(node)
    if op is not None:
        return op.plans(node, *kids)[name]
    return S.per_tuple(node, kids[0])[name]


__all__ = ["build", "inputs_of"]

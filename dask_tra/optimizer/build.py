"""Expand a chosen plan into its IA nodes, once (for emission and the reference executor).

The search decides strategies from closed-form costs; here every chosen alternative is
built into IA operators by ``strategies`` (the same strategies, move for move; the strategy
object the costing tagged its ``Cand`` with picks the sub-plan), so its
``copies`` (every tuple with its sites) exist only for the plan that runs.
"""

from __future__ import annotations

from ..ia import Placed, SiteMap, part
from ..tra import expr as tra
from . import operators, twophase_strategy
from . import strategies as S
from .layout import Alt as IAAlt
from .operators.registry import OperatorKind, TwoPhase, operator_kind
from .search import chosen, inputs_of


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
    """The IA sub-plan of ``alt``'s strategy (the object its costing was tagged with)."""
    strategy = alt.cand.strategy
    kind = operator_kind(node)
    if isinstance(strategy, TwoPhase):
        return twophase_strategy.build(node, kids[0], kids[1], s, strategy.plan)
    if kind is OperatorKind.CONTRACTION:
        made = S.contraction(node, kids[0], kids[1], s, only=strategy)
    elif kind is OperatorKind.JOIN:
        made = S.join_alone(node, kids[0], kids[1], only=strategy)
    elif kind is OperatorKind.AGGREGATE:
        made = S.aggregate_alone(node, kids[0], only=strategy)
    elif kind is OperatorKind.REGISTERED and (op := operators.lookup(node)) is not None:
        made = op.plans(node, *kids)
    else:
        made = S.per_tuple(node, kids[0], only=strategy)
    return made[strategy]


__all__ = ["build", "inputs_of"]

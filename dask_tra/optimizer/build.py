"""Expand a chosen plan into its IA nodes, once (for emission and the reference executor).

The search decides strategies from closed-form costs; here every chosen alternative is
built into IA operators by ``strategies`` (the same strategies, move for move; the strategy
object the costing tagged its ``Cand`` with picks the sub-plan), so its
``copies`` (every tuple with its sites) exist only for the plan that runs.
"""

from __future__ import annotations

from ..ia import Placed, SiteMap, part_all
from ..tra import expr as tra
from ..tra.errors import TRAError
from . import operators
from . import strategies as S
from .layout import Built
from .operators.registry import OperatorKind, operator_kind
from .search import chosen, inputs_of


def build(roots, s) -> list:
    """IA root per chosen Alt in ``roots``."""
    made = {}
    for alt in chosen(roots):
        node = alt.node
        if isinstance(node, tra.Input):
            if alt.placement is not None:
                made[id(alt)] = Built(Placed(node, SiteMap(alt.placement), s))
            else:
                made[id(alt)] = Built(Placed(node, part_all(node.type.frontier, node.home), s), free=True)
            continue
        kids = [made[id(a)] for a in alt.inputs]
        made[id(alt)] = Built(_one(node, alt, kids, s))
    return [made[id(r)].node for r in roots]


def _one(node, alt, kids, s):
    """The IA sub-plan of ``alt``'s strategy (the object its costing was tagged with), built by
    the strategy's own body (``strategies.PLANS``) or a registered operator's module."""
    strategy = alt.cand.strategy
    kind = operator_kind(node)
    if kind is None:  # the search costs no such operator, so no chosen plan holds one
        raise TRAError(f"plan: {node.describe()}: no strategy plans {type(node).__name__}")
    if kind is OperatorKind.REGISTERED and (op := operators.lookup(node)) is not None:
        return op.plans(node, *kids)[strategy]
    return S.PLANS[kind](node, kids, s, strategy)[strategy]


__all__ = ["build", "inputs_of"]

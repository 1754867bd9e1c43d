"""The strategies, one typed object each, the operator kinds they plan, and ``force=``.

A strategy is a small frozen dataclass (``base.Strategy``): its class says what it does, its
fields are its parameters (``Bmm(side)``, ``EinDecomp(d)``, ``Align(side)``), and its ``body``
says once what it moves, in a mover's words (``optimizer.movers``). The built-in ones are
defined beside the operators they plan, body and all (``join_alone``: ``Bcast``, ``Copart``;
``contraction``: ``Bmm``, ``Cmm``, ``Align``, ``Rmm``, ``EinDecomp``, ``TwoPhase``;
``aggregate_alone``: ``Local``, ``PreAggregate``, ``Repartition``) and re-exported here.
Costing (``candidates``) tags each ``Cand`` with the strategy object it costed, every parameter
it chose filled in (the side ``bmm`` broadcasts, the placement ``two-phase`` found); the final
re-costing and the plan builder (``build``, ``strategies``) take that object back. So cost and
build meet through a typed value, never through a name string.

``Strategy.name`` is the user-facing name (``explain()``'s tables, ``force=``): ``"bmm"``,
``"cmm"``, ``"d=[2, 1, 2]"``, …; ``parse`` is the one way from a name back to a strategy, and
``parse_force`` turns ``force=`` (a name for every contraction, or {kind: name}) into strategy
objects once, with a ``ValueError`` naming the accepted forms.

Every ``Strategy`` subclass is registered as it is defined (``STRATEGIES``); ``variants`` lists
the parameter instances a class offers an operator (``EinDecomp``: every partition vector), so
a test can walk the whole registry. A new strategy with a parameter is one class, in one file
(``tests/test_strategy_registry.py`` defines one in the test file alone).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ...tra import expr as tra
from ..aggregate_alone import Local, PreAggregate, Repartition
from ..contraction import Align, Bmm, Cmm, EinDecomp, Rmm, TwoPhase
from ..join_alone import Bcast, Copart
from .base import PREFERENCE, SIDES, STRATEGIES, OperatorKind, Strategy, partition_vectors, planning, run

# ``search.kind_of``'s words for a contraction (explain() shows them; ``force={kind: ...}`` keys)
CONTRACTION_KINDS = frozenset({"matmul", "einsum", "contraction"})


def is_contraction(node) -> bool:
    """Σ over ⋈ whose join kernel distributes over an associative, commutative aggregation."""
    if not isinstance(node, tra.Aggregate) or not isinstance(node.child, tra.Join):
        return False
    k = node.kernel
    return k.associative and k.commutative and node.child.kernel.distributes(k)


def operator_kind(node) -> OperatorKind | None:
    """The family of strategies that plans ``node`` (None: no strategy plans it)."""
    from . import lookup

    if is_contraction(node):
        return OperatorKind.CONTRACTION
    if isinstance(node, tra.Join):
        return OperatorKind.JOIN
    if isinstance(node, tra.Aggregate):
        return OperatorKind.AGGREGATE
    if lookup(node) is not None:
        return OperatorKind.REGISTERED
    if isinstance(node, tra.TupleMap):
        return OperatorKind.PER_TUPLE
    return None


def kinds_named(kind: str) -> frozenset[OperatorKind]:
    """The families an operator of ``search.kind_of``'s word ``kind`` may belong to."""
    if kind in CONTRACTION_KINDS:
        return frozenset({OperatorKind.CONTRACTION})
    if kind in ("join", "aggregate"):
        return frozenset({OperatorKind(kind)})
    return frozenset({OperatorKind.REGISTERED, OperatorKind.PER_TUPLE})


# ------------------------------------------------------------------ names and force=

_EINDECOMP = re.compile(r"d=\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")


def _named(kinds: frozenset[OperatorKind]) -> dict[str, Strategy]:
    """name -> strategy, for the strategies of ``kinds`` found by name (``Strategy.named``)."""
    out: dict[str, Strategy] = {}
    for cls in STRATEGIES:
        if cls.kinds & kinds:
            for st in cls.named():
                out.setdefault(st.name, st)
    return out


ALL_KINDS = frozenset(OperatorKind)


def accepted(kinds: frozenset[OperatorKind] = ALL_KINDS) -> list[str]:
    """The names ``parse`` accepts for operators of ``kinds``."""
    forms = [repr(name) for name in sorted(_named(kinds))]
    if OperatorKind.CONTRACTION in kinds:
        forms.append("'d=[...]' (an EinDecomp partition vector, e.g. 'd=[2, 1, 2]')")
    return forms


def parse(name: str | Strategy, kinds: frozenset[OperatorKind] = ALL_KINDS) -> Strategy:
    """The strategy named ``name`` for an operator of ``kinds`` (a strategy passes through)."""
    if isinstance(name, Strategy):
        return name
    if isinstance(name, str):
        text = name.strip()
        match = _EINDECOMP.fullmatch(text)
        if match and OperatorKind.CONTRACTION in kinds:
            return EinDecomp(tuple(int(x) for x in match.group(1).split(",")))
        found = _named(kinds).get(text)
        if found is not None:
            return found
    raise ValueError(f"unknown strategy {name!r}; accepted: {', '.join(accepted(kinds))}")


Force = str | Strategy | Mapping[str, str | Strategy]


@dataclass(frozen=True)
class Forced:
    """``force=`` parsed: a strategy for every contraction, or one per operator kind."""

    every_contraction: Strategy | None = None
    by_kind: Mapping[str, Strategy] = field(default_factory=dict)

    def get(self, kind: str) -> Strategy | None:
        """The strategy an operator of ``search.kind_of``'s word ``kind`` must use, or None."""
        if self.every_contraction is not None:
            return self.every_contraction if kind in CONTRACTION_KINDS else None
        return self.by_kind.get(kind)


def parse_force(force: Force | Forced | None) -> Forced | None:
    """``force=`` as strategy objects, checked once: a name (or strategy) for every contraction,
    or {kind: name}; a ``ValueError`` names the accepted forms."""
    if force is None or isinstance(force, Forced):
        return force
    contraction = frozenset({OperatorKind.CONTRACTION})
    if isinstance(force, (str, Strategy)):
        try:
            return Forced(every_contraction=parse(force, contraction))
        except ValueError as e:
            raise ValueError(
                f"force={force!r}: {e}; or a {{kind: strategy}} mapping (e.g. {{'join': 'copart'}})"
            ) from None
    if isinstance(force, Mapping):
        by_kind = {}
        for kind, name in force.items():
            try:
                by_kind[kind] = parse(name, kinds_named(kind))
            except ValueError as e:
                raise ValueError(f"force={{{kind!r}: {name!r}}}: {e}") from None
        return Forced(by_kind=by_kind)
    raise ValueError(f"force={force!r}: expected a strategy name (e.g. 'cmm') or a {{kind: strategy}} mapping")


def variants(node, s: int) -> Iterator[Strategy]:
    """Every registered strategy, with every parameter, that could plan ``node`` on ``s`` sites
    (whether it applies is the costing's to say)."""
    kind = operator_kind(node)
    for cls in STRATEGIES:
        if kind in cls.kinds:
            yield from cls.variants(node, s)


__all__ = [
    "SIDES",
    "OperatorKind",
    "CONTRACTION_KINDS",
    "ALL_KINDS",
    "kinds_named",
    "is_contraction",
    "operator_kind",
    "partition_vectors",
    "PREFERENCE",
    "STRATEGIES",
    "Strategy",
    "Bmm",
    "Cmm",
    "Rmm",
    "EinDecomp",
    "TwoPhase",
    "Align",
    "Bcast",
    "Copart",
    "Local",
    "PreAggregate",
    "Repartition",
    "Force",
    "accepted",
    "parse",
    "parse_force",
    "Forced",
    "variants",
    "planning",
    "run",
]

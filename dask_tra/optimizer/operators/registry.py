"""The strategies, one typed object each, and the operator kinds they plan.

A strategy is a small frozen dataclass: its class says what it does, its fields are its
parameters (``Bmm(side)``, ``EinDecomp(d)``, ``Align(side)``). Costing (``candidates``) tags
each ``Cand`` with the strategy object it costed, every parameter it chose filled in (the side
``bmm`` broadcasts, the placement ``two-phase`` found); the final re-costing and the plan
builder (``build``, ``strategies``) take that object back. So cost and build meet through a
typed value, never through a name string.

``Strategy.name`` is the user-facing name (``explain()``'s tables, ``force=``): ``"bmm"``,
``"cmm"``, ``"d=[2, 1, 2]"``, …; ``parse`` is the one way from a name back to a strategy, and
``parse_force`` turns ``force=`` (a name for every contraction, or {kind: name}) into strategy
objects once, with a ``ValueError`` naming the accepted forms.

Every ``Strategy`` subclass is registered as it is defined (``STRATEGIES``); ``variants`` lists
the parameter instances a class offers an operator (``EinDecomp``: every partition vector), so
a test can walk the whole registry. A new strategy with a parameter is one class here (or in
the module of the operator it plans) plus its cost and its build.
"""

from __future__ import annotations

import enum
import itertools
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from ...tra import expr as tra

SIDES = ("left", "right")  # a ``side`` parameter: which input of a join


def _check_side(strategy, side) -> None:
    if side not in SIDES:
        raise ValueError(f"{type(strategy).__name__}(side={side!r}): side is 'left' or 'right'")


class OperatorKind(enum.Enum):
    """Which family of strategies plans an operator (``operator_kind``)."""

    CONTRACTION = "contraction"  # Σ over ⋈ whose join kernel distributes over the aggregation
    JOIN = "join"  # a join alone
    AGGREGATE = "aggregate"  # an aggregation alone
    REGISTERED = "registered"  # an operator with a module in ``optimizer/operators`` (Concat)
    PER_TUPLE = "per-tuple"  # a tuple map (ReKey, Filter, Transform, Tile, ...): runs in place


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


def partition_vectors(frontier, p):
    """Every d with prod(d) == p and 1 <= d[l] <= frontier[l] (EinDecomp's viable(), any p)."""
    divisors = [[x for x in range(1, min(f, p) + 1) if p % x == 0] for f in frontier]
    return [d for d in itertools.product(*divisors) if math.prod(d) == p]


# Tie-breaking order when candidates cost the same (by name); a new strategy is listed here.
PREFERENCE = (
    "local",
    "bmm",
    "cmm",
    "rmm",
    "copart",
    "align-left",
    "align-right",
    "bcast-left",
    "bcast-right",
    "two-phase",
    "shuffle",
)

STRATEGIES: list[type[Strategy]] = []  # every strategy class, in definition order


@dataclass(frozen=True)
class Strategy:
    """One way to plan an operator. ``kinds``: the families it plans; its fields: parameters
    (a field that is None is left to costing: ``Bmm()`` is the cheaper side)."""

    kinds: ClassVar[frozenset[OperatorKind]] = frozenset()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):  # a shared base (``_Sided``) plans nothing itself
            STRATEGIES.append(cls)

    @property
    def name(self) -> str:
        raise NotImplementedError

    @property
    def preference(self) -> int:
        """Rank among equally costed candidates (``PREFERENCE``; unlisted ones last)."""
        return PREFERENCE.index(self.name) if self.name in PREFERENCE else len(PREFERENCE)

    def admits(self, other: Strategy) -> bool:
        """Whether ``other`` (a costed candidate's strategy) is this one, its open (None)
        parameters filled in any way."""
        if type(other) is not type(self):
            return False
        return all(
            getattr(self, f.name) is None or getattr(self, f.name) == getattr(other, f.name)
            for f in fields(self)
            if f.compare
        )

    @classmethod
    def variants(cls, node, s: int) -> tuple[Strategy, ...]:
        """Every parameter instance of this strategy for ``node`` on ``s`` sites."""
        return (cls(),)

    @classmethod
    def named(cls) -> tuple[Strategy, ...]:
        """The instances ``parse`` finds by their ``name`` (``force=``): the parameterless one."""
        return (cls(),)

    def __str__(self) -> str:
        return self.name


# ------------------------------------------------------------------ contractions


@dataclass(frozen=True)
class Bmm(Strategy):
    """Broadcast one input (``side``; None: the side that moves fewer bytes), the other
    partitioned by its output dims."""

    kinds = frozenset({OperatorKind.CONTRACTION})
    side: str | None = None

    def __post_init__(self):
        if self.side is not None:
            _check_side(self, self.side)

    @property
    def name(self) -> str:
        return "bmm"

    @classmethod
    def variants(cls, node, s):
        return tuple(cls(side) for side in SIDES)

    @classmethod
    def named(cls):
        return (cls(),)  # "bmm": the cheaper side


@dataclass(frozen=True)
class Cmm(Strategy):
    """Co-partition both inputs on the join keys, pre-aggregate locally, shuffle partials."""

    kinds = frozenset({OperatorKind.CONTRACTION})

    @property
    def name(self) -> str:
        return "cmm"


@dataclass(frozen=True)
class Rmm(Strategy):
    """Replicate both inputs onto the grid of output blocks; the aggregation is local (3-D)."""

    kinds = frozenset({OperatorKind.CONTRACTION})

    @property
    def name(self) -> str:
        return "rmm"


@dataclass(frozen=True)
class EinDecomp(Strategy):
    """Cut join-output key dim l into ``d[l]`` groups, one group-cell per site."""

    kinds = frozenset({OperatorKind.CONTRACTION})
    d: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return f"d={list(self.d)}"

    @classmethod
    def variants(cls, node, s):
        return tuple(cls(tuple(d)) for d in partition_vectors(node.child.type.frontier, s))

    @classmethod
    def named(cls):
        return ()  # "d=[...]": any vector, parsed by ``parse``


@dataclass(frozen=True)
class TwoPhase(Strategy):
    """Lineage-planned placement of every block product (``twophase_strategy``); ``plan``: the
    placement costing chose (a ``twophase.TwoPhasePlan``; not part of the strategy's identity)."""

    kinds = frozenset({OperatorKind.CONTRACTION})
    plan: Any = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return "two-phase"


# ------------------------------------------------------------------ joins (and contractions)


@dataclass(frozen=True)
class _Sided(Strategy):
    """A strategy whose parameter is one input of a join, ``side``; named ``<prefix>-<side>``."""

    prefix: ClassVar[str] = ""
    side: str = "left"

    def __post_init__(self):
        _check_side(self, self.side)

    @property
    def name(self) -> str:
        return f"{self.prefix}-{self.side}"

    @classmethod
    def variants(cls, node, s):
        return tuple(cls(side) for side in SIDES)

    @classmethod
    def named(cls):
        return tuple(cls(side) for side in SIDES)


@dataclass(frozen=True)
class Align(_Sided):
    """Keep the placed side where it is, send the ``side`` input to its partners' sites."""

    kinds = frozenset({OperatorKind.CONTRACTION, OperatorKind.JOIN})
    prefix = "align"
    side: str = "right"


@dataclass(frozen=True)
class Bcast(_Sided):
    """A join alone: the ``side`` input to every site holding a partner of the other's."""

    kinds = frozenset({OperatorKind.JOIN})
    prefix = "bcast"


@dataclass(frozen=True)
class Copart(Strategy):
    """A join alone: both inputs co-partitioned on the join keys."""

    kinds = frozenset({OperatorKind.JOIN})

    @property
    def name(self) -> str:
        return "copart"


# ------------------------------------------------------------------ aggregations, tuple maps, registered


@dataclass(frozen=True)
class Local(Strategy):
    """Run where the tuples are (an aggregation whose groups sit together, or a free input
    made by its groups; a tuple map; a Concat whose groups sit together)."""

    kinds = frozenset({OperatorKind.AGGREGATE, OperatorKind.PER_TUPLE, OperatorKind.REGISTERED})

    @property
    def name(self) -> str:
        return "local"


@dataclass(frozen=True)
class PreAggregate(Strategy):
    """An aggregation alone: combine on each site, then shuffle the partials (R2-5)."""

    kinds = frozenset({OperatorKind.AGGREGATE})

    @property
    def name(self) -> str:
        return "two-phase"


@dataclass(frozen=True)
class Repartition(Strategy):
    """Shuffle by the groups first, then combine each group where it lands."""

    kinds = frozenset({OperatorKind.AGGREGATE, OperatorKind.REGISTERED})

    @property
    def name(self) -> str:
        return "shuffle"


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
]

"""What a strategy is: a typed object with a body written once against a mover.

A strategy is a small frozen dataclass (``Strategy``): its class says what it does, its fields
are its parameters (``Bmm(side)``, ``EinDecomp(d)``), and its ``body`` says, once, what it moves
and how the result is made, in the words of a mover (``optimizer.movers``). The costing runs the
body with a symbolic mover (layouts: the closed-form ``Cand`` the search compares), the plan
builder with an IA mover (the IA nodes that run), so the two cannot drift apart.

A class registers itself as it is defined (``STRATEGIES``, in definition order; a class whose
name starts with ``_`` is a shared base). ``run`` is the one loop both interpretations use: per
registered class that plans the operator's kind, the instances wanted (``Strategy.instances``:
its parameter variants ``only`` admits), each body with a fresh mover, then the class's
``pick`` among what its instances made. So a new strategy with a parameter is one class, in any
module (a test's too): its fields, ``kinds``, ``variants`` and ``body``.

This module imports nothing of the optimizer: the modules that define the built-in strategies
(``join_alone``, ``contraction``, ``aggregate_alone``) import it, and ``registry`` re-exports them.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol

from ...ia.partitioning import Grid

SIDES = ("left", "right")  # a ``side`` parameter: which input of a join


def check_side(strategy, side) -> None:
    if side not in SIDES:
        raise ValueError(f"{type(strategy).__name__}(side={side!r}): side is 'left' or 'right'")


class OperatorKind(enum.Enum):
    """Which family of strategies plans an operator (``registry.operator_kind``)."""

    CONTRACTION = "contraction"  # Σ over ⋈ whose join kernel distributes over the aggregation
    JOIN = "join"  # a join alone
    AGGREGATE = "aggregate"  # an aggregation alone
    REGISTERED = "registered"  # an operator with a module in ``optimizer/operators`` (Concat)
    PER_TUPLE = "per-tuple"  # a tuple map (ReKey, Filter, Transform, Tile, ...): runs in place


def partition_vectors(frontier, p):
    """Every d with prod(d) == p and 1 <= d[l] <= frontier[l] (EinDecomp's viable(), any p)."""
    divisors = [[x for x in range(1, min(f, p) + 1) if p % x == 0] for f in frontier]
    return [d for d in itertools.product(*divisors) if math.prod(d) == p]


# Tie-breaking order when candidates cost the same (by name); unlisted strategies rank last.
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
        if self == other:
            return True
        for name in _parameters(type(self)):
            mine = getattr(self, name)
            if mine is not None and mine != getattr(other, name):
                return False
        return True

    def body(self, node, m) -> Any:
        """This strategy for ``node``, written once in the words of the mover ``m``
        (``movers``): what it made (a ``Cand`` under a symbolic mover, an IA node under an IA
        one), or None where it does not apply. Operators planned outside ``run`` (tuple maps, a
        module of ``operators``) need none."""
        raise NotImplementedError(f"{type(self).__name__} has no body (Strategy.body)")

    @classmethod
    def variants(cls, node, s: int) -> tuple[Strategy, ...]:
        """Every parameter instance of this strategy for ``node`` on ``s`` sites."""
        return (cls(),)

    @classmethod
    def instances(cls, node, s: int, only: Strategy | None) -> tuple[Strategy, ...]:
        """The instances ``run`` makes: the variants ``only`` admits (all when None)."""
        if only is None:
            return cls.variants(node, s)
        return tuple([st for st in cls.variants(node, s) if only.admits(st)])

    @classmethod
    def pick(cls, made: dict, nbytes: Callable[[Any], int]) -> dict:
        """Which of the instances made (``{strategy: made}``) are candidates (``nbytes``: the
        bytes one moves): all of them, unless a class keeps one (``Bmm``: the cheaper side)."""
        return made

    @classmethod
    def named(cls) -> tuple[Strategy, ...]:
        """The instances ``registry.parse`` finds by their ``name`` (``force=``)."""
        return (cls(),)

    def __str__(self) -> str:
        return self.name


# ---------------------------------------------------------------- the movers' words (``optimizer.movers``)


class Mover(Protocol):
    """What a strategy body may do with the two inputs of a join (0: left, 1: right)."""

    def free(self, i: int) -> bool:
        """Whether input ``i`` is not placed yet (laid out as a strategy likes, at no cost)."""
        ...

    def frontier(self, i: int) -> tuple[int, ...]:
        """Input ``i``'s key frontier."""
        ...

    def home(self, i: int) -> tuple[int, int] | None:
        """A free input's ``tra.Input.home`` (where it starts in the array it was cut from);
        None for a placed one."""
        ...

    def output_dims(self, i: int) -> list[int]:
        """The join's output key dim of each key dim of input ``i``."""
        ...

    def partitioned(self, i: int, grid: Grid) -> Any:
        """A target: input ``i`` laid out by ``grid`` over its key dims (nothing moves yet)."""
        ...

    def place(self, i: int, target: Any, what: str) -> Any:
        """Input ``i`` moved to ``target`` (``what``: the step's words in ``explain()``)."""
        ...

    def broadcast(self, i: int, partners: tuple) -> Any:
        """Input ``i`` to the sites where the other input, laid out as ``partners = (its target,
        its join dims, ours)``, holds a tuple it joins with."""
        ...

    def keep(self, i: int) -> Any | None:
        """Placed input ``i`` where it is (None: it has replicas, no single site per tuple)."""
        ...

    def align(self, i: int, partners: tuple) -> Any:
        """Input ``i`` to every site where ``partners = (a kept input, its join dims, ours)``
        holds a tuple it joins with."""
        ...

    def replicate(self, i: int, grid: Grid) -> Any:
        """Input ``i`` copied to every cell of ``grid`` (over the join's output key space) it
        belongs to (a free input made first at one of those cells)."""
        ...

    def join(self, left: Any, right: Any, at: Any, strategy) -> Any:
        """The join of the two moved inputs, each product made where its tuples meet; ``at``:
        where the result sits (the input whose tuples place it, a grid over the output, or a
        contraction's two-phase plan)."""
        ...


class TwoPhaseMover(Protocol):
    """The words of ``TwoPhase``'s body: a placement of every block product, each input sent
    to its join groups, the products joined and summed where the plan says."""

    def placement(self, strategy) -> Any:
        """The plan ``strategy`` carries (re-costed for where the inputs are), or the best
        greedy placement; None where two-phase is not considered (``twophase_strategy``)."""
        ...

    def to_join_groups(self, i: int, plan: Any) -> Any:
        """Input ``i`` with each tuple at the sites of its join groups."""
        ...

    def join(self, left: Any, right: Any, at: Any, strategy) -> Any: ...


class ContractionMover(Mover, TwoPhaseMover, Protocol):
    """A contraction's mover: its ``join`` also sums the products of each output key (at an
    input's tuples, on a grid's cells, or where a two-phase plan says)."""


class AggregateMover(Protocol):
    """What a strategy body may do with the one input (0) of an aggregation alone."""

    def free(self, i: int) -> bool: ...

    def frontier(self, i: int) -> tuple[int, ...]: ...

    def partitioned(self, i: int, grid: Grid) -> Any: ...

    def place(self, i: int, target: Any, what: str) -> Any: ...

    def home(self, i: int) -> tuple[int, int] | None:
        """``Grid.home`` of input ``i``: a free input's own (``tra.Input.home``), a placed one's
        first tuple's lowest site; so groups are combined where the data starts."""
        ...

    def held(self, i: int) -> Any:
        """Input ``i`` where it is (a free one made by PART(all its dims), turned by its home, first)."""
        ...

    def grouped(self, x: Any) -> bool:
        """Whether every group of ``x`` sits on one site, each tuple once."""
        ...

    def single(self, x: Any) -> bool:
        """Whether each tuple of ``x`` sits on one site."""
        ...

    def aggregate(self, x: Any, strategy, at: Grid | None = None) -> Any:
        """Each group combined where its tuples are (``at``: the grid over the output keys that
        places them, when known)."""
        ...

    def pre_aggregate(self, x: Any, strategy) -> Any:
        """Each site's tuples combined per group, the partials shuffled to their group's home
        and combined there."""
        ...


_PARAMETERS: dict[type, tuple[str, ...]] = {}


def _parameters(cls: type) -> tuple[str, ...]:
    """The names of a strategy class's parameters (its compared fields)."""
    names = _PARAMETERS.get(cls)
    if names is None:
        names = _PARAMETERS[cls] = tuple([f.name for f in fields(cls) if f.compare])
    return names


_PLANNING: dict[tuple, list] = {}  # (kind, only's class, the registry as it is) -> classes


def planning(kind: OperatorKind, only: Strategy | None = None) -> list[type[Strategy]]:
    """The registered classes that plan operators of ``kind`` (``only``: its class alone)."""
    at = (kind._value_, None if only is None else type(only), tuple(STRATEGIES))
    found = _PLANNING.get(at)
    if found is None:
        found = [cls for cls in STRATEGIES if kind in cls.kinds and (only is None or type(only) is cls)]
        if len(_PLANNING) > 256:
            _PLANNING.clear()
        _PLANNING[at] = found
    return found


def run(node, kind: OperatorKind, s: int, mover: Callable[[], Any], nbytes, only: Strategy | None = None) -> dict:
    """{strategy: what its body made} for every registered strategy of ``kind`` that applies
    (``only``: the instances it admits), each body run with a fresh ``mover()``; ``nbytes``:
    the bytes a made thing moves (``Strategy.pick``)."""
    out: dict = {}
    for cls in planning(kind, only):
        made = {}
        for st in cls.instances(node, s, only):
            result = st.body(node, mover())
            if result is not None:
                made[st] = result
        if made:
            out.update(cls.pick(made, nbytes))
    return out


__all__ = [
    "SIDES",
    "check_side",
    "OperatorKind",
    "partition_vectors",
    "PREFERENCE",
    "STRATEGIES",
    "Strategy",
    "Mover",
    "TwoPhaseMover",
    "ContractionMover",
    "AggregateMover",
    "planning",
    "run",
]

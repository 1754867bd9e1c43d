"""The join-alone strategies, each one class with its body written once against a mover.

A join that no aggregation consumes (an elementwise sum or product of two arrays, a cross
product) is planned by the strategies registered for ``OperatorKind.JOIN``: each class below
(and ``contraction.Align``, which plans both a join and a contraction) carries its parameters
and its ``body``, what it moves in the mover's words (``movers.Mover``). The costing
(``candidates.join_alone``) runs each body with a ``SymbolicMover`` and gets the ``Cand`` the
search compares; the plan builder (``strategies.join_alone``) runs the same body with an
``IAMover`` and gets the ``LocalJoin`` that runs. A body returns None where its strategy does
not apply (no join keys to co-partition on; no placed side to keep).

- ``Bcast(side)``: the other input partitioned by all its key dims, ``side`` sent to every site
  holding a partner of its tuples;
- ``Copart()``: both inputs partitioned by the join keys;
- ``Align(side)`` (``contraction``): the other input kept where it is (one site per tuple),
  ``side`` sent to its partners' sites.

A new join strategy with a parameter is one ``Strategy`` subclass, anywhere, with
``kinds = {OperatorKind.JOIN}``, its fields, ``variants`` and ``body``: it registers itself
(``operators.base``), and the costing, the plan builder, ``force=`` and the registry-wide cost =
build test find it (``tests/test_strategy_registry.py`` defines one in the test file alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..ia import part, part_all
from .operators.base import SIDES, Mover, OperatorKind, Strategy, check_side


def output_dims(join, i: int) -> list[int]:
    """The join's output key dim of each key dim of input ``i``."""
    if i == 0:
        return list(range(join.left.type.key_arity))
    return [join.right_out[d] for d in range(join.right.type.key_arity)]


def broadcast_to_partners(join, m: Mover, b: int, grid, st: Strategy) -> Any:
    """Input ``b`` sent to every site holding a partner of its tuples; the other input laid out
    by ``grid`` over its key dims, its tuples placing the products (``Bcast``, and a
    contraction's ``Bmm``)."""
    o = 1 - b
    keys = (join.left_keys, join.right_keys)
    target = m.partitioned(o, grid)
    sent = m.broadcast(b, (target, keys[o], keys[b]))
    kept = m.place(o, target, f"shuffle by {grid}")
    left, right = (sent, kept) if b == 0 else (kept, sent)
    return m.join(left, right, o, st)


def copart(join, m: Mover, st: Strategy) -> Any:
    """Both inputs partitioned by the join keys (``Copart``, and a contraction's ``Cmm``)."""
    lk, rk = join.left_keys, join.right_keys
    if not lk:
        return None
    home = m.home(0) or m.home(1)  # free inputs cut from a larger array: where the first starts
    left = m.place(0, m.partitioned(0, part(lk, m.frontier(0), home)), f"shuffle by PART{list(lk)}")
    right = m.place(1, m.partitioned(1, part(rk, m.frontier(1), home)), f"shuffle by PART{list(rk)}")
    return m.join(left, right, part(lk, join.type.frontier, home), st)


def align_side(join, m: Mover, st) -> Any:
    """Input ``st.side`` sent to its partners' sites, the other kept where it is (``Align``)."""
    i = SIDES.index(st.side)  # the input sent
    f = 1 - i  # the one kept where it is
    keys = (join.left_keys, join.right_keys)
    if m.free(f):
        return None
    kept = m.keep(f)
    if kept is None:
        return None
    moved = m.align(i, (kept, keys[f], keys[i]))
    left, right = (kept, moved) if f == 0 else (moved, kept)
    return m.join(left, right, f, st)


@dataclass(frozen=True)
class _Sided(Strategy):
    """A strategy whose parameter is one input of a join, ``side``; named ``<prefix>-<side>``."""

    prefix: ClassVar[str] = ""
    side: str = "left"

    def __post_init__(self):
        check_side(self, self.side)

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
class Bcast(_Sided):
    """A join alone: the ``side`` input to every site holding a partner of the other's."""

    kinds = frozenset({OperatorKind.JOIN})
    prefix = "bcast"

    def body(self, join, m: Mover) -> Any:
        b = SIDES.index(self.side)
        o = 1 - b  # the input partitioned, by all its key dims
        return broadcast_to_partners(join, m, b, part_all(m.frontier(o), m.home(o)), self)


@dataclass(frozen=True)
class Copart(Strategy):
    """A join alone: both inputs co-partitioned on the join keys."""

    kinds = frozenset({OperatorKind.JOIN})

    @property
    def name(self) -> str:
        return "copart"

    def body(self, join, m: Mover) -> Any:
        return copart(join, m, self)


__all__ = ["output_dims", "broadcast_to_partners", "copart", "align_side", "Bcast", "Copart"]

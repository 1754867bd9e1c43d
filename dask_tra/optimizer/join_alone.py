"""The join-alone strategies, each written once against a ``movers.Mover``.

A join that no aggregation consumes (an elementwise sum or product of two arrays, a cross
product) has three strategies, one body each below: what it moves, in the mover's words. The
costing (``candidates.join_alone``) runs a body with a ``SymbolicMover`` and gets the ``Cand``
the search compares; the plan builder (``strategies.join_alone``) runs the same body with an
``IAMover`` and gets the ``LocalJoin`` that runs. A body returns None where its strategy does
not apply (no join keys to co-partition on; no placed side to keep).

- ``Bcast(side)``: the other input partitioned by all its key dims, ``side`` sent to every site
  holding a partner of its tuples;
- ``Copart()``: both inputs partitioned by the join keys;
- ``Align(side)``: the other input kept where it is (one site per tuple), ``side`` sent to its
  partners' sites.

A new join strategy with a parameter: its ``Strategy`` class in ``operators/registry.py``, its
body here, and its place in ``ORDER``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ia import part
from .movers import Mover
from .operators.registry import SIDES, Align, Bcast, Copart, Strategy


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


def bcast(join, m: Mover, st: Bcast) -> Any:
    o = 1 - SIDES.index(st.side)  # the input partitioned, by all its key dims
    return broadcast_to_partners(join, m, SIDES.index(st.side), part(range(len(m.frontier(o))), m.frontier(o)), st)


def copart(join, m: Mover, st: Strategy) -> Any:
    lk, rk = join.left_keys, join.right_keys
    if not lk:
        return None
    left = m.place(0, m.partitioned(0, part(lk, m.frontier(0))), f"shuffle by PART{list(lk)}")
    right = m.place(1, m.partitioned(1, part(rk, m.frontier(1))), f"shuffle by PART{list(rk)}")
    return m.join(left, right, part(lk, join.type.frontier), st)


def align_side(join, m: Mover, st: Align) -> Any:
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


def align_joined(join, m: Mover, st: Align) -> Any:
    """A join alone aligns on its join keys only (a cross product has none to align on)."""
    return align_side(join, m, st) if join.left_keys else None


BODIES: dict[type[Strategy], Callable[..., Any]] = {Bcast: bcast, Copart: copart, Align: align_joined}
ORDER: tuple[Strategy, ...] = (Bcast("left"), Bcast("right"), Copart(), Align("right"), Align("left"))


def run(join, mover: Callable[[], Mover], only: Strategy | None = None) -> dict:
    """{strategy: what the body made} for each strategy ``only`` admits (every one if None) that
    applies, a fresh mover from ``mover()`` per strategy."""
    out = {}
    for st in ORDER:
        if only is None or only.admits(st):
            made = BODIES[type(st)](join, mover(), st)
            if made is not None:
                out[st] = made
    return out


__all__ = ["output_dims", "broadcast_to_partners", "bcast", "copart", "align_side", "BODIES", "ORDER", "run"]

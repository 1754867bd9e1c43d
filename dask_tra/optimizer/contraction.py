"""The contraction strategies ``bmm``, ``cmm`` and ``align``, each written once against a mover.

A contraction Σ_g(L ⋈ R) moves its inputs as a join does (``join_alone``'s bodies), then sums
the products of each output key. The mover's ``join`` makes the products and finishes the
aggregation: ``candidates.contraction`` runs a body with a ``SymbolicMover`` whose ``join``
costs the partial sums in closed form, ``strategies.contraction`` with an ``IAMover`` whose
``join`` builds ``layout.finish_aggregate``'s ``LocalAggregate``s.

- ``Bmm(side)``: ``side`` broadcast to its partners' sites, the other input partitioned by its
  output (group-by) dims;
- ``Cmm()``: both inputs co-partitioned on the join keys;
- ``Align(side)``: the other input kept where it is, ``side`` sent to its partners' sites.

``rmm``, EinDecomp's vectors (grid joins in the join's full key space) and ``two-phase``
(``twophase_strategy``) still have a cost (``candidates``) and a build (``strategies``) each.
"""

from __future__ import annotations

from typing import Any

from ..ia import part
from .join_alone import align_side, broadcast_to_partners, copart, output_dims
from .movers import Mover
from .operators.registry import SIDES, Align, Bmm, Cmm


def bmm(agg, m: Mover, st: Bmm) -> Any:
    join, g = agg.child, agg.group_by
    b = SIDES.index(st.side)  # the input broadcast
    o = 1 - b
    pos = output_dims(join, o)
    keep = [i for i, d in enumerate(pos) if d in g] or list(range(len(pos)))
    return broadcast_to_partners(join, m, b, part(keep, m.frontier(o)), st)


def cmm(agg, m: Mover, st: Cmm) -> Any:
    return copart(agg.child, m, st)


def align(agg, m: Mover, st: Align) -> Any:
    return align_side(agg.child, m, st)


__all__ = ["bmm", "cmm", "align"]

"""Movers: one strategy body, two interpretations (its closed-form cost and its IA plan).

A strategy body (``join_alone``) says which input goes where and how the result is made, in
the mover's words: ``partitioned`` (a target layout by a grid over an input's key dims),
``place`` (an input laid out as a target), ``broadcast`` (an input to every site holding a
partner tuple), ``keep`` (a placed input where it is) and ``align`` (an input to its partners'
sites), then ``join``. Two movers interpret it:

- ``SymbolicMover`` costs it in closed form: handles are layouts (``symbolic``), every move
  is counted by ``symbolic.Moves``, and ``join`` returns the ``Cand`` the search compares;
- ``IAMover`` builds it: handles are IA nodes (``layout.place``/``broadcast``/``align``), and
  ``join`` returns the ``LocalJoin`` that runs.

So the two cannot drift apart: a strategy is written once, and ``tests/test_symbolic.py``
checks that the costing of every registered strategy equals its expanded plan's bytes.
A mover answers None where a move does not apply (``keep`` of a replicated input).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..ia import LocalJoin
from ..ia.partitioning import Grid
from .layout import Alt, align, broadcast, place
from .symbolic import (
    Cand,
    Moves,
    View,
    cell_flops,
    gather,
    grid_layout,
    key_bytes,
    placing_sites,
    reduce_to,
    single,
    site_sum,
    wsum,
)


class Mover(Protocol):
    """What a strategy body may do with the two inputs of a join (0: left, 1: right)."""

    def free(self, i: int) -> bool:
        """Whether input ``i`` is not placed yet (laid out as a strategy likes, at no cost)."""
        ...

    def frontier(self, i: int) -> tuple[int, ...]:
        """Input ``i``'s key frontier."""
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

    def join(self, left: Any, right: Any, at: int | Grid, strategy) -> Any:
        """The join of the two moved inputs, each product made where its tuples meet; ``at``:
        where the result sits (the input whose tuples place it, or a grid over the output)."""
        ...


class SymbolicMover:
    """A strategy body costed in closed form: handles are layouts (keys × sites)."""

    def __init__(self, join, views: tuple[View, ...], s: int):
        self.j, self.views, self.s = join, tuple(views), s
        self.mv = Moves(self.views, s)
        kl, kr = views[0].type.key_arity, views[1].type.key_arity
        self.pos = (list(range(kl)), [join.right_out[d] for d in range(kr)])

    def free(self, i: int) -> bool:
        return self.views[i].free

    def frontier(self, i: int) -> tuple[int, ...]:
        return tuple(self.views[i].type.frontier)

    def partitioned(self, i: int, grid: Grid) -> np.ndarray:
        f = self.views[i].type.frontier
        return grid_layout(grid, f, self.s)

    def place(self, i: int, target: np.ndarray, what: str) -> np.ndarray:
        return self.mv.place(i, target, what)

    def broadcast(self, i: int, partners: tuple) -> np.ndarray:
        target, theirs, ours = partners
        return self.mv.broadcast(i, (target, self.views[1 - i].type, theirs, ours))

    def keep(self, i: int) -> np.ndarray | None:
        v = self.views[i]
        if not single(v.layout):
            return None
        return self.mv.place(i, v.layout, "")

    def align(self, i: int, partners: tuple) -> np.ndarray:
        kept, theirs, ours = partners
        v, other = self.views[i], self.views[1 - i]
        need = reduce_to(kept, other.type.frontier, list(theirs), v.type.frontier, list(ours))
        empty = ~need.any(axis=1)
        need = need.copy()
        need[empty, 0] = True
        return self.mv.place(i, need, "send to partners")

    def join(self, left, right, at: int | Grid, strategy) -> Cand:
        j, mv, s = self.j, self.mv, self.s
        outf = j.type.frontier
        if isinstance(at, Grid):
            layout = grid_layout(at, outf, s)
        else:
            layout = gather((left, right)[at], self.views[at].type.frontier, self.pos[at], outf)
        flops = np.zeros(s)
        if single(layout):  # each product made where its result tuple sits
            sites = placing_sites(layout)
            ok = sites >= 0
            flops = site_sum(cell_flops(j, list(range(len(outf))), outf)[ok], sites[ok], s)
        nb = key_bytes(j.type)
        return Cand(
            layout,
            mv.moved,
            mv.paper,
            mv.site_in + wsum(nb, layout),
            flops,
            int(layout.sum()),
            mv.present,
            {"steps": mv.steps},
            mv.site_moved,
            mv.site_sent,
            strategy=strategy,
        )


class IAMover:
    """A strategy body built: handles are IA nodes, over the inputs' ``layout.Alt``s."""

    def __init__(self, join, alts: tuple[Alt, ...]):
        self.j, self.alts = join, tuple(alts)

    def _same(self) -> bool:
        """One placed relation on both sides (its copies serve both; ``Moves._slot``)."""
        left, right = self.alts
        return left.node is right.node and not left.free

    def free(self, i: int) -> bool:
        return self.alts[i].free

    def frontier(self, i: int) -> tuple[int, ...]:
        return tuple(self.alts[i].node.type.frontier)

    def partitioned(self, i: int, grid: Grid):
        return place(self.alts[i], grid)

    def place(self, i: int, target, what: str):
        return target  # ``partitioned`` made it, placed (``layout.place``)

    def broadcast(self, i: int, partners: tuple):
        return broadcast(self.alts[i], None if self._same() else partners)

    def keep(self, i: int):
        return self.alts[i].node

    def align(self, i: int, partners: tuple):
        kept, theirs, ours = partners
        return align(self.alts[i], kept, theirs, ours)

    def join(self, left, right, at: int | Grid, strategy) -> LocalJoin:
        return LocalJoin(left, right, self.j.left_keys, self.j.right_keys, self.j.kernel)


__all__ = ["Mover", "SymbolicMover", "IAMover"]

"""Concat(keyDim, arrayDim): ``local`` (``Local()``) when every group of tuples already sits on
one site (one LocalAggregate concatenating them), else ``shuffle`` (``Repartition()``) by the
other key dims first."""

from __future__ import annotations

import numpy as np

from ...ia import LocalAggregate, part
from ...tra.expr import Concat
from ..layout import Built, partitioned_by, place, start
from ..symbolic import Cand, Detail, Moves, grid_layout, key_bytes, reduce_to, single
from ..symbolic import start as symbolic_start
from . import register
from .registry import Local, Repartition


def plans(node: Concat, child: Built) -> dict:
    kd = node.key_dim
    others = tuple(d for d in range(child.node.type.key_arity) if d != kd)
    if not child.free and partitioned_by(child.node, others):
        return {Local(): LocalAggregate(child.node, concat=(kd, node.array_dim))}
    moved = place(child, part(others, child.node.type.frontier, start(child)))  # made where it starts
    return {Repartition(): LocalAggregate(moved, concat=(kd, node.array_dim))}


def costs(node: Concat, child, s: int, only=None) -> dict:
    kd = node.key_dim
    f = child.type.frontier
    outf = node.type.frontier
    others = [d for d in range(len(f)) if d != kd]
    nb = key_bytes(node.type)
    if not child.free and single(child.layout):
        red = reduce_to(child.layout, f, others, outf, list(range(len(others))))
        if single(red):
            mv = Moves((child,), s)
            mv.site_in += key_bytes(child.type) @ child.layout
            peak = mv.site_in + nb @ red
            return {Local(): Cand(red, 0, 0, peak, np.zeros(s), int(red.sum()), mv.present, Detail(), strategy=Local())}
    mv = Moves((child,), s)
    home = symbolic_start(child)
    mv.place(0, grid_layout(part(others, f, home), f, s), f"shuffle by PART{others}")
    out = grid_layout(part(range(len(outf)), outf, home), outf, s)
    return {
        Repartition(): Cand(
            out,
            mv.moved,
            mv.paper,
            mv.site_in + nb @ out,
            np.zeros(s),
            int(out.sum()),
            mv.present,
            Detail(mv.steps),
            strategy=Repartition(),
        )
    }


def local(node: Concat, child_free: bool):
    """On one site every group sits on one site: ``local`` unless the input is free."""
    return Repartition() if child_free else Local()


register(Concat, plans, costs, local)

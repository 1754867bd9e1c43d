"""Which worker holds or computes each block: the data of ``explain()``'s picture.

For each input, the worker(s) its blocks are made on or already held by (the IA plan's
``Placed`` nodes); for each contraction (matmul, einsum), the workers each operand's blocks
are on once the contraction's moves are done, that is where they are sent; for each output,
the worker computing each block (the plan's result layout). Read from the chosen plan on
request (``Explain.block_grids``), for at most ``limit`` blocks along each axis. The IA plan
is built for it (emission builds the same) only up to ``EXPAND`` tuples over the plan's
nodes: past that, an input not yet on the cluster is drawn where its readers have it, from
the costing (exact where that is one worker a block; the caption says when it is not). No
Dask here: ``dask_tra.array.planview`` draws it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from ..ia.nodes import Placed
from ..tra import expr as tra
from ..tra.dag import walk_many
from .explain import _CONTRACTIONS, input_name, operand, operation
from .search import chosen, kind_of

LIMIT = 16  # blocks shown along each axis (dask.array.svg draws every grid line up to 19)
SENT = 8  # contraction operands drawn at most
EXPAND = 50_000  # tuples over a plan's nodes up to which its IA plan is built for the picture


@dataclass(frozen=True)
class BlockGrid:
    """One relation's block grid and where each block is.

    ``role``: ``"input"`` (held or made there), ``"sent"`` (where a contraction has the operand's
    blocks), ``"output"`` (computed there). ``numblocks``: the whole grid; ``chunks``: the
    extent of each shown block along each shown axis (at most two: a grid of more axes shows
    its last two at index 0 of the others, ``note`` says so); ``sites``: per shown block, in
    row-major order, the sorted workers holding it (empty: no such block, a block-sparse
    relation's hole); ``shape``: the relation's extent along the shown axes (None: unknown)."""

    label: str
    role: str
    numblocks: tuple
    chunks: tuple
    sites: tuple
    shape: tuple | None = None
    note: str = ""
    caption: str = ""

    @property
    def shown(self) -> tuple:
        return tuple(len(c) for c in self.chunks)

    @property
    def nblocks(self) -> int:
        """Blocks held among those shown."""
        return sum(1 for s in self.sites if s)


def block_grids(plan, limit: int = LIMIT) -> tuple:
    """The picture's grids for ``plan`` (an ``optimizer.Plan``): inputs, contraction operands
    as sent, outputs; each at most ``limit`` blocks along each axis."""
    grids: list[BlockGrid] = []
    used = {id(a.node): a for a in chosen(plan.alts) if isinstance(a.node, tra.Input)}
    inputs = [n for n in walk_many(plan.exprs) if id(n) in used]
    labels = _labels(inputs)
    inexact: set[int] = set()  # input grids drawn where the input is read, not where it is made
    made = _made(plan) if "roots" in plan.__dict__ or _tuples(plan) <= EXPAND else None
    for node in inputs:
        caption = ""
        if made is not None:
            where, f, s = made.get(node.name, ()), node.type.frontier, plan.sites

            def sites_of(key, f=f, where=where, s=s):
                return tuple(sorted({t for p in where for t in p.sites(key, f, s)}))

        else:  # where its readers have it: where it is made if that is one worker a block
            layout, exact = _read_at(plan, used[id(node)])
            sites_of = _rows(layout, node.type)
            if not exact:
                caption = f"input {labels[node.name]}: where it is read (made on one of these workers)"
                inexact.add(len(grids))
        grids.append(_grid(labels[node.name], "input", node.type, sites_of, limit, caption))
    sent, more = 0, 0
    for alt in chosen(plan.alts):
        cand = plan.cands.get(id(alt))
        if cand is None or kind_of(alt.node) not in _CONTRACTIONS:
            continue
        verb = operation(alt.node)
        names = [
            (labels.get(c.node.name, "") if isinstance(c.node, tra.Input) else "") or operand(c.node)
            for c in alt.inputs
        ]
        for i, (child, present, name) in enumerate(zip(alt.inputs, cand.present, names)):
            side = f" (as its {'left' if i == 0 else 'right'} operand)" if names.count(name) > 1 else ""
            g = _grid(name, "sent", child.node.type, _rows(present, child.node.type), limit)
            same = next((j for j, h in enumerate(grids) if j not in inexact and _same(h, g)), None)
            if same is not None:  # drawn already: an input read where it is, or x @ x's one copy
                if grids[same].role == "input":
                    grids[same] = replace(grids[same], caption=f"input {name}: {verb} reads it where it is")
            elif sent == SENT:
                more += 1
            else:
                grids.append(replace(g, caption=f"{verb}: where {name}'s blocks go{side}"))
                sent += 1
    if more:
        last = max(j for j, g in enumerate(grids) if g.role == "sent")
        extra = f"{more} more contraction operand{'s' if more > 1 else ''} not drawn"
        grids[last] = replace(grids[last], note="; ".join(filter(None, (grids[last].note, extra))))
    roots = plan.alts
    for i, alt in enumerate(roots):
        label = "result" if len(roots) == 1 else f"result {i}"
        grids.append(_grid(label, "output", alt.node.type, _rows(alt.layout, alt.node.type), limit))
    return tuple(grids)


def _tuples(plan) -> int:
    """Tuples over the plan's TRA nodes (a contraction's join counts its block products): what
    building its IA plan expands."""
    return sum(math.prod(n.type.frontier) for n in walk_many(plan.exprs))


def _made(plan) -> dict:
    """input name -> the placements of its blocks in the IA plan (``Placed``; one per read of a
    free input)."""
    made: dict[str, list] = {}
    for root in plan.roots:
        for node in root.walk():
            if isinstance(node, Placed):
                made.setdefault(node.input.name, []).append(node.placement)
    return made


def _read_at(plan, alt) -> tuple:
    """(where input ``alt``'s blocks are, from the costing alone: an input on the cluster where
    it is, a free one where its readers have it; whether that is exact: one worker a block,
    each read making it where it reads it)."""
    if alt.placement is not None or not alt.free:
        return alt.layout, True
    reads = [
        cand.present[i]
        for a in chosen(plan.alts)
        if (cand := plan.cands.get(id(a))) is not None
        for i, c in enumerate(a.inputs)
        if c is alt
    ]
    if not reads:
        return alt.layout, True
    return np.logical_or.reduce(reads), all((r.sum(axis=1) <= 1).all() for r in reads)


def _labels(inputs) -> dict:
    """input name -> its label: its name as its tasks are named on the dashboard, numbered where
    two inputs would read the same (``random_uniform (1)``, ``random_uniform (2)``)."""
    short = [input_name(n.name) for n in inputs]
    seen: dict[str, int] = {}
    out = {}
    for n, label in zip(inputs, short):
        if short.count(label) > 1:
            seen[label] = seen.get(label, 0) + 1
            label = f"{label} ({seen[label]})"
        out[n.name] = label
    return out


def _same(a: BlockGrid, b: BlockGrid) -> bool:
    return (a.label, a.numblocks, a.sites) == (b.label, b.numblocks, b.sites)


def _rows(layout: np.ndarray, t):
    """key -> the sites holding it, from a layout (one row per key below the frontier)."""
    f = tuple(t.frontier)

    def sites_of(key):
        row = int(np.ravel_multi_index(key, f)) if f else 0
        return tuple(int(x) for x in np.flatnonzero(layout[row]))

    return sites_of


def _grid(label, role, t, sites_of, limit, caption="") -> BlockGrid:
    f = tuple(t.frontier)
    nd = len(f)
    shown_dims = tuple(range(max(0, nd - 2), nd))  # the last two axes
    lead = (0,) * (nd - len(shown_dims))
    counts = [min(f[d], limit) for d in shown_dims]
    notes = []
    if lead:
        notes.append(f"blocks [{', '.join(['0'] * len(lead))}, :, :] of a {'×'.join(map(str, f))} grid")
    if any(f[d] > limit for d in shown_dims):
        notes.append(f"the first {'×'.join(map(str, counts))} of {'×'.join(str(f[d]) for d in shown_dims)} blocks")
    extents = [_extents(t, d, limit) for d in shown_dims]
    chunks = tuple(e[0][:n] if e is not None else (1,) * n for e, n in zip(extents, counts))
    shape = None if any(e is None for e in extents) else tuple(e[1] for e in extents if e is not None)
    keys = t.keys
    sites = []
    for idx in itertools.product(*(range(n) for n in counts)):
        key = lead + tuple(idx)
        sites.append(() if keys is not None and key not in keys else sites_of(key))
    return BlockGrid(label, role, f, chunks, tuple(sites), shape, "; ".join(notes), caption)


def _extents(t, d, limit):
    """(the chunk extents along key dim ``d`` as far as ``limit`` blocks, the relation's extent
    along it), or None unless chunk axis ``d`` follows key dim ``d`` alone (an array's grid)."""
    if t.rank != t.key_arity:
        return None
    ax, n = t.axes[d], t.frontier[d]
    if ax.key_dims == (d,):
        return tuple(int(x) for x in ax.sizes[:limit]), int(ax.sizes.sum())
    if not ax.key_dims:
        return (int(ax.sizes),) * min(n, limit), int(ax.sizes) * n
    return None

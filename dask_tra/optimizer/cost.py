"""One cost model: what an IA plan moves between sites, and how much memory each site needs.

``bytes_moved``: for every copy a Broadcast or Shuffle sends to a site where that chunk
(its origin) is not yet present, the chunk's bytes, exact from metadata. This is the
number the reference IA executor counts and what dask.distributed transfers (one copy
per distinct key and worker).

``paper_floats``: the TRA paper's accounting (Sec. 5.3): a broadcast of a relation of f
floats costs s·f and a shuffle costs f, whether or not tuples were already in place.
Its closed forms (BMM = s·|broadcast operand|, CMM = s·I·J) are this model on the
strategies' plans; tests reproduce the paper's Table 4 with it.

``peak_memory``: per site, the largest over operators of (bytes of the operator's inputs
at that site + bytes of its output there). Inputs placed on a site count while their
first consumer runs. It is an estimate: Dask may hold data longer (or spill).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from ..ia.nodes import Broadcast, Placed, Shuffle


@dataclass(frozen=True)
class Cost:
    bytes_moved: int
    peak_memory: dict  # site -> bytes
    paper_floats: int

    @property
    def max_peak(self) -> int:
        return max(self.peak_memory.values(), default=0)


class _NodeFacts:
    """What costing needs of one IA node, computed once per node (plans share nodes)."""

    __slots__ = ("copies", "site_bytes", "paper")

    def __init__(self, node):
        itemsize = node.type.dtype.itemsize
        self.copies = []  # (nbytes, ((site, origin), ...)) per key
        self.site_bytes = defaultdict(int)
        for key, cs in node.copies.items():
            nb = itemsize * math.prod(node.type.chunk_shape(key))
            self.copies.append((nb, cs))
            for site, _ in cs:
                self.site_bytes[site] += nb
        self.paper = 0
        if isinstance(node, (Broadcast, Shuffle)):
            child, per = node.child, 0
            for key, cs in child.copies.items():
                per += math.prod(child.type.chunk_shape(key)) * len({o for _, o in cs})
            self.paper = per * (node.s if isinstance(node, Broadcast) else 1)


def _facts(node) -> _NodeFacts:
    facts = node.__dict__.get("_cost_facts")
    if facts is None:
        facts = node._cost_facts = _NodeFacts(node)
    return facts


def evaluate_cost(plan) -> Cost:
    present = set()
    moved = paper = 0
    nodes = plan.walk()
    for node in nodes:
        facts = _facts(node)
        is_move = isinstance(node, (Broadcast, Shuffle))
        for nb, copies in facts.copies:
            for pair in copies:
                if (pair[1], pair[0]) not in present:
                    present.add((pair[1], pair[0]))
                    if is_move:
                        moved += nb
        paper += facts.paper
    peak = defaultdict(int)
    for node in nodes:
        if isinstance(node, Placed):
            continue
        own = _facts(node).site_bytes
        kids = [_facts(c).site_bytes for c in node.children]
        for site in set(own).union(*kids):
            need = own.get(site, 0) + sum(k.get(site, 0) for k in kids)
            if need > peak[site]:
                peak[site] = need
    if not peak:  # a plan that is just placed inputs
        peak.update(_facts(plan).site_bytes)
    return Cost(moved, dict(peak), paper)

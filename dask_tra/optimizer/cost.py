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


def _tuple_bytes(node, key) -> int:
    t = node.type
    n = 1
    for d in t.chunk_shape(key):
        n *= d
    return n * t.dtype.itemsize


def _tuple_elems(node, key) -> int:
    return _tuple_bytes(node, key) // node.type.dtype.itemsize


def evaluate_cost(plan) -> Cost:
    present = set()
    moved = 0
    paper = 0
    site_bytes = {}
    for node in plan.walk():
        per_site = defaultdict(int)
        for key, copies in node.copies.items():
            nb = _tuple_bytes(node, key)
            for site, origin in copies:
                per_site[site] += nb
                if (origin, site) not in present:
                    if isinstance(node, (Broadcast, Shuffle)):
                        moved += nb
                    present.add((origin, site))
        site_bytes[node.uid] = per_site
        if isinstance(node, (Broadcast, Shuffle)):
            f = sum(_tuple_elems(node.child, k) * len({o for _, o in cs})
                    for k, cs in node.child.copies.items())
            paper += f * (node.s if isinstance(node, Broadcast) else 1)
    peak = defaultdict(int)
    for node in plan.walk():
        if isinstance(node, Placed):
            continue
        sites = set(site_bytes[node.uid])
        for c in node.children:
            sites |= set(site_bytes[c.uid])
        for site in sites:
            need = site_bytes[node.uid].get(site, 0) + sum(site_bytes[c.uid].get(site, 0) for c in node.children)
            peak[site] = max(peak[site], need)
    if not peak:  # a plan that is just placed inputs
        for site, nb in site_bytes[plan.uid].items():
            peak[site] = nb
    return Cost(moved, dict(peak), paper)

"""The optimizer: compile TRA expressions into IA plans by cost-based search, and explain them.

No Dask here. Entry point: ``plan(expr, sites)``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ia.nodes import IANode
from .cost import Cost, evaluate_cost
from .explain import Explain, OperatorReport, ia_tree
from .search import MemoryLimitError, kind_of, search


@dataclass
class Plan:
    root: IANode
    cost: Cost
    explain: Explain


def plan(expr, sites: int, placements=None, memory_limit=None, force=None, keep=6) -> Plan:
    """Choose an IA plan for ``expr`` on ``sites`` sites.

    placements: input name -> {key: (site, ...)} for inputs already placed (costed where they are);
        other inputs are laid out freely.
    memory_limit: bytes per site; plans whose peak estimate exceeds it are not chosen.
    force: a strategy name for every contraction (e.g. ``"cmm"``), or {kind: strategy}.
    """
    if sites < 1:
        raise ValueError(f"sites must be >= 1, got {sites}")
    best = search(expr, sites, placements, memory_limit, force, keep)
    cost = best.cost if best.cost is not None else evaluate_cost(best.node)
    ops = [OperatorReport(kind, strategy, table, _describe(node, kind), c.bytes_moved, c.max_peak)
           for node, kind, strategy, table, c in best.notes.values()]
    report = Explain(repr(expr), sites, ops, cost.bytes_moved, cost.peak_memory,
                     gather_bytes=gather_bytes(best.node), ia_plan=ia_tree(best.node))
    return Plan(best.node, cost, report)


def gather_bytes(root) -> int:
    """Bytes to bring every result tuple to one site (the one already holding the most)."""
    per_site = {}
    for key, copies in root.copies.items():
        n = root.type.dtype.itemsize
        for d in root.type.chunk_shape(key):
            n *= d
        site = copies[0][0]
        per_site[site] = per_site.get(site, 0) + n
    return sum(per_site.values()) - max(per_site.values(), default=0)


def _describe(node, kind):
    if kind in ("matmul", "einsum", "contraction"):
        return f"{node.describe()} ∘ {node.child.describe()}"
    return node.describe()


__all__ = ["plan", "Plan", "Explain", "OperatorReport", "MemoryLimitError", "evaluate_cost", "kind_of"]

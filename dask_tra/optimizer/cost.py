"""One cost model: what an IA plan moves between sites, and how much memory each site needs.

``bytes_moved``: for every copy a Broadcast or Shuffle sends to a site where that chunk
(its origin) is not yet present, the chunk's bytes, exact from metadata. This is the
number the reference IA executor counts and what dask.distributed transfers (one copy
per distinct key and worker).

``paper_floats``: the TRA paper's accounting (Sec. 5.3): a broadcast of a relation of f
floats costs s·f and a shuffle costs f, whether or not tuples were already in place.
Its closed forms (BMM = s·|broadcast operand|, CMM = s·I·J) are this model on the
strategies' plans; tests reproduce the paper's Table 4 with it.

``peak_memory``: per site, the largest over operators of what the site holds while the
operator runs: with ``Rates.threads`` known, the blocks of the tasks running at once plus the
copies sent to it and a contraction's running sums (``memory.working_set``: blocks stream);
otherwise the bytes of the operator's inputs at that site + its output there. Inputs placed
on a site count while their first consumer runs. It is an estimate: Dask may hold data
longer (or spill).

Further terms of the time objective are ``CostTerm``s registered here (``TERMS``): each is
measured for every candidate from its closed-form costing, folded over the plan (a sum or a
max), added to the predicted time and shown by ``explain()``; the search, the final costing
and the report handle them without naming them.
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ia.nodes import Broadcast, IANode, Placed, Shuffle


@dataclass(frozen=True)
class Rates:
    """The time objective's constants: link bandwidth (bytes/s, each worker's own link, each
    direction), scheduler overhead per task (s) and one site's compute rate (flops/s). Predicted
    time = the bytes of the busiest link direction / bandwidth (sites send and receive in
    parallel, each over its own full-duplex link: the most any site takes in or sends out; all
    bytes / bandwidth when not known per site) + tasks × overhead + the busiest site's flops /
    rate. Defaults suit a 1 Gbit/s cluster of CPU workers; ``dask_tra.config`` sets them, or
    ``cluster_rates`` measures them."""

    bandwidth: float = 1.25e8
    task_overhead: float = 1e-3
    flop_rate: float = 1e10
    threads: float = 0  # tasks a site runs at once (``memory.working_set``); 0: unknown

    def seconds(self, nbytes, tasks, flops, site_moved=None, terms=None, site_sent=None) -> float:
        """``breakdown(...)["total_s"]``, without the report (the search calls it per candidate)."""
        total = sum(self._parts(nbytes, tasks, flops, site_moved, site_sent)[3:])
        for name, value in (terms or {}).items():
            total += TERMS[name].seconds(value, self)
        return total

    def _parts(self, nbytes, tasks, flops, site_moved, site_sent) -> tuple:
        """(busiest receiver's bytes, busiest sender's, busiest site's flops, transfer, scheduling
        and compute seconds)."""
        busiest = _peak(flops, 0.0)
        received = _peak(site_moved, nbytes)
        sends = _peak(site_sent, 0.0)
        return (
            received,
            sends,
            busiest,
            max(received, sends) / self.bandwidth,
            tasks * self.task_overhead,
            busiest / self.flop_rate,
        )

    def breakdown(
        self, nbytes, tasks, flops, site_moved=None, terms: Mapping[str, float] | None = None, site_sent=None
    ) -> dict:
        received, sends, busiest, transfer, scheduling, compute = self._parts(
            nbytes, tasks, flops, site_moved, site_sent
        )
        out = {
            "transfer_s": transfer,
            "busiest_site_bytes": received,
            "busiest_sender_bytes": sends,
            "tasks": int(tasks),
            "scheduling_s": scheduling,
            "busiest_site_flops": busiest,
            "compute_s": compute,
            "total_s": transfer + scheduling + compute,
            "terms": {},
        }
        for name, value in (terms or {}).items():
            secs = TERMS[name].seconds(value, self)
            out["terms"][name] = (value, secs)
            out["total_s"] += secs
        return out


SMALL = 64  # per-site arrays up to this many sites are reduced in Python (``_peak``)


def _peak(values, default) -> float:
    """The largest of per-site ``values`` (an array, a sequence or a number); ``default`` when
    they are not given (None) or empty."""
    if values is None:
        return float(default)
    if isinstance(values, np.ndarray):
        if values.ndim == 1 and values.size <= SMALL:  # asked per candidate: a NumPy call costs more
            return float(max(values.tolist(), default=default))
        return float(values.max())
    if isinstance(values, (int, float, np.number)):
        return float(values)
    return float(max(values)) if len(values) else float(default)


@dataclass(frozen=True)
class CostTerm:
    """A term of the time objective beyond bytes, tasks and flops.

    ``measure(node, cand, views)``: its value for one operator's candidate (a number), from the
    candidate's closed-form costing (``symbolic.Cand``) and its input ``View``s; ``combine``
    folds the values of a plan's operators (a sum, or ``max`` for a peak). ``seconds(value,
    rates)``: the predicted time the plan's value adds. ``words``: how ``explain()`` says it,
    formatted with the plan's value (``"{:.0f} B spilled"``)."""

    name: str
    measure: Callable[[Any, Any, Sequence[Any]], float]
    seconds: Callable[[float, Rates], float]
    words: str
    combine: Callable[[float, float], float] = operator.add


TERMS: dict[str, CostTerm] = {}


def register_term(term: CostTerm) -> CostTerm:
    TERMS[term.name] = term
    return term


def measure_terms(node: Any, cand: Any, views: Sequence[Any]) -> dict[str, float]:
    """Every registered term's value for one candidate."""
    return {name: float(t.measure(node, cand, views)) for name, t in TERMS.items()}


def combine_terms(terms: Mapping[str, float], more: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """``terms`` folded with the values of other operators (each term by its ``combine``)."""
    out = dict(terms)
    for other in more:
        for name, v in other.items():
            out[name] = TERMS[name].combine(out[name], v) if name in out else v
    return out


@dataclass(frozen=True)
class Cost:
    bytes_moved: int
    peak_memory: dict  # site -> bytes
    paper_floats: int
    tasks: int = 0
    site_flops: tuple = ()  # per site
    seconds: float = 0.0
    site_moved: tuple = ()  # bytes each site receives
    site_sent: tuple = ()  # bytes each site sends
    terms: dict = field(default_factory=dict)  # registered CostTerms: name -> total

    @property
    def max_peak(self) -> int:
        return max(self.peak_memory.values(), default=0)


class _NodeFacts:
    """What costing needs of one IA node, computed once per node (plans share nodes)."""

    __slots__ = ("copies", "site_bytes", "paper")

    def __init__(self, node: IANode):
        itemsize = node.type.dtype.itemsize
        self.copies: list[tuple[int, tuple]] = []  # (nbytes, ((site, origin), ...)) per key
        self.site_bytes: defaultdict[int, int] = defaultdict(int)
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


def evaluate_cost(plan: IANode) -> Cost:
    present = set()
    moved = paper = 0
    nodes = plan.walk()
    facts = {id(n): _NodeFacts(n) for n in nodes}
    for node in nodes:
        f = facts[id(node)]
        is_move = isinstance(node, (Broadcast, Shuffle))
        for nb, copies in f.copies:
            for pair in copies:
                if (pair[1], pair[0]) not in present:
                    present.add((pair[1], pair[0]))
                    if is_move:
                        moved += nb
        paper += f.paper
    peak: defaultdict[int, int] = defaultdict(int)
    for node in nodes:
        if isinstance(node, Placed):
            continue
        own = facts[id(node)].site_bytes
        kids = [facts[id(c)].site_bytes for c in node.children]
        for site in set(own).union(*kids):
            need = own.get(site, 0) + sum(k.get(site, 0) for k in kids)
            if need > peak[site]:
                peak[site] = need
    if not peak:  # a plan that is just placed inputs
        peak.update(facts[id(plan)].site_bytes)
    return Cost(moved, dict(peak), paper)

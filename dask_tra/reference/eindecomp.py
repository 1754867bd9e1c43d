"""EinDecomp: choose a partition vector for every EinSum in a graph (Bourgeois et al., PVLDB 2025).

Each EinSum vertex runs as a TRA join + aggregation split into exactly ``p`` kernel
calls by a partition vector ``d`` (one power of two per unique label, ``∏ d == p``; see
``eindecomp_spec``). A plan is a ``d`` per vertex; its cost is the floats moved by the
joins, the aggregations, and the repartitions between producers and consumers
(``eindecomp_cost``, judged by ``eindecomp_graph.evaluate``). Everything here is
metadata: no array is touched.

Search algorithms, with ``V_v = viable(v, p)`` (at most ``C(N+D-1, D-1)`` vectors for
``p = 2**N`` and ``D`` labels) and ``Z_u`` the distinct output partitionings of ``u``:

``plan`` (EinDecomp dynamic programme)
    Use by default. ``M[v, d_Z]`` = cheapest cost of the subgraph up to ``v`` given
    ``v`` outputs ``d_Z``, filled in topological order, then backtracked from the sinks.
    Exact when no EinSum vertex feeds two distinct vertices (trees and forests; inputs
    may be shared). Cost ``O(Σ_v |V_v| · Σ_{u ∈ in(v)} |Z_u|)`` repartition terms.
    Other DAGs are linearized (sec. 8.4): repeatedly take the longest path of EinSum
    vertices not yet planned and run the same DP along it only, which adds
    ``O(V + E)`` per path. Then the result is approximate.
``brute_force``
    Test oracle only: tries all ``∏_v |V_v|`` combinations, each costed in
    ``O(V + E)``. Exponential; a handful of small vertices at most.
``greedy``
    Baseline: in topological order each vertex takes the ``d`` that is cheapest given
    its already-planned inputs (join + aggregation + repartition into it), blind to
    what its consumers will want. ``O(Σ_v |V_v| · indeg(v))``.
``sqrt_plan``
    The paper's "SQRT" baseline: split every label as evenly as possible (the viable
    ``d`` minimizing ``Σ log2(d_i)²``), regardless of shapes. For a matrix multiply at
    ``p = 8`` this is ``(2, 2, 2)``: each matrix cut 2 x 2, the 3-D algorithm.
    ``O(Σ_v |V_v|)``; does not adapt to skewed shapes.

All four return a ``Plan`` costed by the same ``evaluate``, so their totals compare.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product
from typing import cast

import numpy as np

from .eindecomp_cost import cost_agg, cost_join, cost_repart, repart_costs
from .eindecomp_graph import (
    EinGraph,
    EinsumVertex,
    InputVertex,
    Plan,
    VertexCost,
    edge_cost,
    evaluate,
    output_partitioning,
    vertex_cost,
)
from .eindecomp_spec import EinSum, count_viable, expand, viable

__all__ = [
    "EinGraph",
    "EinSum",
    "EinsumVertex",
    "InputVertex",
    "Plan",
    "VertexCost",
    "brute_force",
    "cost_agg",
    "cost_join",
    "cost_repart",
    "count_viable",
    "evaluate",
    "expand",
    "greedy",
    "plan",
    "sqrt_plan",
    "viable",
]

Partitioning = dict[str, tuple[int, ...]]


def plan(graph: EinGraph, p: int) -> Plan:
    """EinDecomp: exact DP on forests, path-by-path DP on other DAGs."""
    consumers = graph.consumers()
    ops = graph.operators
    if graph.is_forest():
        links = {v.name: {u for u in v.inputs if isinstance(graph[u], EinsumVertex)} for v in ops}
        return evaluate(graph, _optimize(graph, p, ops, links, {}, consumers), "eindecomp")
    known: Partitioning = {}
    while len(known) < len(ops):
        path = _longest_path(graph, [v for v in ops if v.name not in known])
        links = {b.name: {a.name} for a, b in zip(path, path[1:])}
        known.update(_optimize(graph, p, path, links, known, consumers))
    return evaluate(graph, known, "eindecomp-linearized")


def brute_force(graph: EinGraph, p: int) -> Plan:
    """Exhaustive search over every combination of viable vectors."""
    ops = graph.operators
    best, best_cost = None, float("inf")
    for combo in product(*(viable(v.einsum, p) for v in ops)):
        chosen = {v.name: d for v, d in zip(ops, combo)}
        cost = sum(vertex_cost(graph, v, chosen).total for v in ops)
        if cost < best_cost:
            best, best_cost = chosen, cost
    if best is None:
        raise ValueError(f"some vertex has no viable partitioning at p={p}")
    return evaluate(graph, best, "brute-force")


def greedy(graph: EinGraph, p: int) -> Plan:
    """Each vertex, in topological order, takes its locally cheapest ``d``."""
    consumers = graph.consumers()
    known: Partitioning = {}
    for v in graph.operators:
        known.update(_optimize(graph, p, [v], {}, known, consumers))
    return evaluate(graph, known, "greedy")


def sqrt_plan(graph: EinGraph, p: int) -> Plan:
    """SQRT baseline: every vertex splits its labels as evenly as the bounds allow."""
    return evaluate(graph, {v.name: _most_even(v.einsum, p) for v in graph.operators}, "sqrt")


def _most_even(einsum: EinSum, p: int) -> tuple[int, ...]:
    options = viable(einsum, p)
    if not options:
        raise ValueError(f"{einsum} has no viable partitioning at p={p}")
    return min(options, key=lambda d: sum((k.bit_length() - 1) ** 2 for k in d))


def _optimize(
    graph: EinGraph,
    p: int,
    scope: Sequence[EinsumVertex],
    links: Mapping[str, set[str]],
    known: Mapping[str, tuple[int, ...]],
    consumers: Mapping[str, tuple[tuple[str, int], ...]],
) -> Partitioning:
    """DP table ``M[v, d_Z]`` over ``scope`` (topologically ordered) and its backtracked argmin.

    ``links[v]`` are the inputs of ``v`` optimized jointly with it; each vertex is linked
    into at most one other. Any other input costs its repartition from a known layout
    (free inputs: nothing), and an input not yet planned costs nothing, as in the paper's
    linearization. Edges to consumers already planned (``known``) are charged too: a
    known cost, which the paper's ignore-the-rest rule would needlessly drop.
    """
    table: dict[str, dict[tuple, tuple[float, tuple, tuple]]] = {}
    for v in scope:
        options = viable(v.einsum, p)
        if not options:
            raise ValueError(f"vertex {v.name!r} has no viable partitioning at p={p}")
        feeds = {
            source: _cheapest_feeds(graph, source, table[source], {_required(v, source, d) for d in options})
            for source in links.get(v.name, ())
        }
        best: dict[tuple, tuple[float, tuple, tuple]] = {}
        for d in options:
            cost = cost_join(v.einsum, d) + cost_agg(v.einsum, d)
            picks = []
            for source in dict.fromkeys(v.inputs):
                required = _required(v, source, d)
                if source in feeds:
                    c, z = feeds[source][required]
                    picks.append((source, z))
                else:
                    produced = _known_output(graph, source, known)
                    c = sum(edge_cost(graph, source, produced, r) for r in required)
                cost += c
            z = v.produced(d)
            cost += sum(
                # a consumer reads its inputs: it is an einsum vertex
                cost_repart(z, cast(EinsumVertex, graph[consumer]).required(known[consumer], slot), v.shape)
                for consumer, slot in consumers[v.name]
                if consumer in known
            )
            if z not in best or cost < best[z][0]:
                best[z] = (cost, d, tuple(picks))
        table[v.name] = best

    chosen: Partitioning = {}

    def take(name: str, z: tuple) -> None:
        _, d, picks = table[name][z]
        chosen[name] = d
        for source, zs in picks:
            take(source, zs)

    linked = set().union(*links.values()) if links else set()
    for v in scope:
        if v.name not in linked:
            take(v.name, min(table[v.name], key=lambda z: table[v.name][z][0]))
    return chosen


def _required(v: EinsumVertex, source: str, d: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The layouts ``v`` run with ``d`` needs of ``source``: one per input slot it fills."""
    return tuple(v.required(d, slot) for slot, u in enumerate(v.inputs) if u == source)


def _cheapest_feeds(graph: EinGraph, source: str, entries: Mapping, requireds: set) -> dict:
    """For each layout tuple: ``min over d_Z of M[source, d_Z] + repartitions into it``, and the argmin."""
    shape = graph[source].shape
    zs = list(entries)
    rows = list(requireds)
    total = np.array([entries[z][0] for z in zs])[None, :]
    for slot in range(len(rows[0])):
        total = total + repart_costs(zs, [r[slot] for r in rows], shape)
    picks = total.argmin(axis=1)  # first minimum, as min() would pick
    return {r: (float(total[i, k]), zs[k]) for i, (r, k) in enumerate(zip(rows, picks))}


def _known_output(graph: EinGraph, source: str, known: Mapping[str, tuple[int, ...]]):
    """The source's output partitioning if decided (fixed input or planned), else None."""
    if isinstance(graph[source], InputVertex) or source in known:
        return output_partitioning(graph, source, known)
    return None


def _longest_path(graph: EinGraph, remaining: Sequence[EinsumVertex]) -> list[EinsumVertex]:
    """Longest chain ``a -> b -> ...`` of remaining vertices; ties go to the earliest vertex."""
    names = {v.name for v in remaining}
    length: dict[str, int] = {}
    prev: dict[str, str | None] = {}
    for v in remaining:
        before = [u for u in v.inputs if u in names]
        best = max(before, key=lambda u: length[u], default=None)
        prev[v.name] = best
        length[v.name] = 1 + (length[best] if best is not None else 0)
    end: str | None = max(remaining, key=lambda v: length[v.name]).name
    path: list[EinsumVertex] = []
    while end is not None:
        path.append(cast(EinsumVertex, graph[end]))  # ``end`` is one of ``remaining``
        end = prev[end]
    return path[::-1]

"""EinGraphs (paper section 5) and the cost of one partitioning of a whole graph.

``evaluate`` is the single cost function every search algorithm is judged by: the
join and aggregation cost of each EinSum vertex, plus the repartition cost on each
edge whose producer's output partitioning differs from the consumer's requirement.
An input vertex is *free* (pre-computed offline, placed however its consumers want,
at no cost: sec. 8.2 sets ``M[v, d] = 0``) or *fixed* to a given partitioning, which
each consumer then pays to repartition from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .eindecomp_cost import cost_agg, cost_join, cost_repart
from .eindecomp_spec import EinSum


@dataclass(frozen=True)
class InputVertex:
    """A graph input of shape ``shape``; ``fixed`` is its current partitioning, None if free."""

    name: str
    shape: tuple[int, ...]
    fixed: tuple[int, ...] | None = None


@dataclass(frozen=True)
class EinsumVertex:
    """An EinSum applied to the vertices named in ``inputs`` (in the EinSum's input order)."""

    name: str
    einsum: EinSum
    inputs: tuple[str, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.einsum.shape(self.einsum.output)

    def required(self, d: tuple[int, ...], slot: int) -> tuple[int, ...]:
        """Partitioning ``d[ℓ_X; ℓ_XY]`` this vertex needs on input ``slot`` when run with ``d``."""
        return self.einsum.project(d, self.einsum.inputs[slot])

    def produced(self, d: tuple[int, ...]) -> tuple[int, ...]:
        """Output partitioning ``d[ℓ_Z; ℓ_XY]`` when run with ``d``."""
        return self.einsum.project(d, self.einsum.output)


Vertex = InputVertex | EinsumVertex


class EinGraph:
    """A DAG of input and EinSum vertices, built in topological order by name."""

    def __init__(self):
        self._vertices: dict[str, Vertex] = {}

    def input(self, name: str, shape: tuple[int, ...], fixed: tuple[int, ...] | None = None) -> str:
        shape = tuple(int(n) for n in shape)
        if fixed is not None:
            fixed = tuple(int(k) for k in fixed)
            if len(fixed) != len(shape) or not all(1 <= k <= n for k, n in zip(fixed, shape)):
                raise ValueError(f"fixed partitioning {fixed} does not fit shape {shape}")
        return self._add(InputVertex(name, shape, fixed))

    def einsum(self, name: str, spec: str, *inputs: str, **kwargs) -> str:
        """Add ``spec`` (``"ij,jk->ik"``) over ``inputs``; label bounds come from their shapes."""
        labels = spec.replace(" ", "").partition("->")[0].split(",")
        if len(labels) != len(inputs):
            raise ValueError(f"{spec!r} takes {len(labels)} inputs, got {len(inputs)}")
        bounds: dict[str, int] = {}
        for names, source in zip(labels, inputs):
            shape = self[source].shape
            if len(names) != len(shape):
                raise ValueError(f"{source!r} has rank {len(shape)}, {spec!r} indexes it with {names!r}")
            for label, extent in zip(names, shape):
                if bounds.setdefault(label, extent) != extent:
                    raise ValueError(f"label {label!r} bound to both {bounds[label]} and {extent}")
        return self._add(EinsumVertex(name, EinSum.parse(spec, bounds, **kwargs), tuple(inputs)))

    def _add(self, vertex: Vertex) -> str:
        if vertex.name in self._vertices:
            raise ValueError(f"duplicate vertex name {vertex.name!r}")
        self._vertices[vertex.name] = vertex
        return vertex.name

    def __getitem__(self, name: str) -> Vertex:
        if name not in self._vertices:
            raise KeyError(f"no vertex named {name!r}")
        return self._vertices[name]

    @property
    def operators(self) -> tuple[EinsumVertex, ...]:
        """The EinSum vertices, in topological (insertion) order."""
        return tuple(v for v in self._vertices.values() if isinstance(v, EinsumVertex))

    def consumers(self) -> dict[str, tuple[tuple[str, int], ...]]:
        """For every vertex, the ``(consumer, input slot)`` edges leaving it."""
        out: dict[str, list[tuple[str, int]]] = {name: [] for name in self._vertices}
        for v in self.operators:
            for slot, source in enumerate(v.inputs):
                out[source].append((v.name, slot))
        return {name: tuple(edges) for name, edges in out.items()}

    def is_forest(self) -> bool:
        """Whether no EinSum vertex feeds two distinct vertices (the exact DP's precondition)."""
        return all(
            len({c for c, _ in edges}) <= 1
            for name, edges in self.consumers().items()
            if isinstance(self[name], EinsumVertex)
        )


@dataclass(frozen=True)
class VertexCost:
    """Floats moved for one EinSum vertex; ``repart`` covers the edges into it."""

    join: float
    agg: float
    repart: float

    @property
    def total(self) -> float:
        return self.join + self.agg + self.repart


@dataclass(frozen=True)
class Plan:
    """A partition vector per EinSum vertex (``EinSum.labels`` order) and its predicted cost."""

    method: str
    partitioning: Mapping[str, tuple[int, ...]]
    costs: Mapping[str, VertexCost]

    @property
    def total(self) -> float:
        return sum(c.total for c in self.costs.values())


def output_partitioning(graph: EinGraph, name: str, partitioning: Mapping[str, tuple[int, ...]]):
    """How vertex ``name``'s output is partitioned, or None for a free input."""
    v = graph[name]
    if isinstance(v, InputVertex):
        return v.fixed
    return v.produced(partitioning[name])


def edge_cost(graph: EinGraph, source: str, produced, required: tuple[int, ...]) -> float:
    """Repartition cost of feeding ``source`` (partitioned ``produced``) into ``required``."""
    if produced is None:
        return 0.0
    return cost_repart(produced, required, graph[source].shape)


def vertex_cost(graph: EinGraph, v: EinsumVertex, partitioning: Mapping[str, tuple[int, ...]]) -> VertexCost:
    d = partitioning[v.name]
    repart = sum(
        edge_cost(graph, source, output_partitioning(graph, source, partitioning), v.required(d, slot))
        for slot, source in enumerate(v.inputs)
    )
    return VertexCost(cost_join(v.einsum, d), cost_agg(v.einsum, d), repart)


def evaluate(graph: EinGraph, partitioning: Mapping[str, tuple[int, ...]], method: str = "given") -> Plan:
    """Cost ``partitioning`` (a ``d`` for every EinSum vertex) on ``graph``."""
    chosen = {v.name: tuple(partitioning[v.name]) for v in graph.operators}
    for v in graph.operators:
        if len(chosen[v.name]) != len(v.einsum.labels):
            raise ValueError(f"{v.name!r}: d={chosen[v.name]} needs one entry per label of {v.einsum.labels!r}")
    costs = {v.name: vertex_cost(graph, v, chosen) for v in graph.operators}
    return Plan(method, chosen, costs)

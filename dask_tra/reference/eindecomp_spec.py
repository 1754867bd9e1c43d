"""EinSum specs and their viable partition vectors (EinDecomp paper, sections 3-6, 8.1).

A partition vector ``d`` has one entry per *unique* label of the joined einsum, in the
order of ``EinSum.labels``: first appearance in the inputs read left to right (the
paper's ``ℓ_X ⊙ ℓ_Y``). For ``"ij,jk->ik"`` that is ``(i, j, k)``, so the paper's
``[2, 4, 4, 1]`` (written over ``ℓ_XY = [i, j, j, k]``) is ``(2, 4, 1)`` here;
``expand`` converts to the paper's form. ``d[i]`` is the number of blocks along label i.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache


@dataclass(frozen=True)
class EinSum:
    """``Z[output] = aggregate over ℓ_agg of combine(X[inputs[0]], Y[inputs[1]])``.

    ``bounds`` maps every label to its extent (a mapping is accepted and normalised to
    ``(label, extent)`` pairs in ``labels`` order). ``combine``/``aggregate`` are names
    only: the planner never touches data. An einsum with no aggregated labels (such as
    ``"ij,ij->ij"``, matrix addition) is element-wise.
    """

    inputs: tuple[str, ...]
    output: str
    bounds: tuple[tuple[str, int], ...]
    combine: str = "multiply"
    aggregate: str = "sum"

    def __post_init__(self):
        inputs = tuple(self.inputs)
        object.__setattr__(self, "inputs", inputs)
        if not 1 <= len(inputs) <= 2:
            raise ValueError(f"an EinSum has 1 or 2 inputs, got {len(inputs)}")
        for labels in inputs:
            if len(set(labels)) != len(labels):
                raise ValueError(f"repeated label within input {labels!r}")
        if len(set(self.output)) != len(self.output):
            raise ValueError(f"repeated label in output {self.output!r}")
        if not set(self.output) <= set(self.labels):
            raise ValueError(f"output {self.output!r} uses labels no input has (broadcast)")
        bounds = dict(self.bounds)
        if set(bounds) != set(self.labels):
            raise ValueError(f"bounds must give exactly the labels {self.labels}, got {sorted(bounds)}")
        if any(int(bounds[label]) < 1 for label in self.labels):
            raise ValueError(f"bounds must be positive: {bounds}")
        object.__setattr__(self, "bounds", tuple((label, int(bounds[label])) for label in self.labels))

    @classmethod
    def parse(cls, spec: str, bounds: Mapping[str, int], **kwargs) -> EinSum:
        """Build from numpy-style ``"ij,jk->ik"``."""
        lhs, arrow, output = spec.replace(" ", "").partition("->")
        if not arrow:
            raise ValueError(f"spec needs an explicit output: {spec!r}")
        return cls(tuple(lhs.split(",")), output, tuple(bounds.items()), **kwargs)

    @cached_property
    def labels(self) -> str:
        """Unique labels in first-appearance order: the index order of every ``d``."""
        return "".join(dict.fromkeys("".join(self.inputs)))

    @cached_property
    def agg_labels(self) -> str:
        return "".join(label for label in self.labels if label not in self.output)

    @cached_property
    def _position(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self.labels)}

    def extents(self) -> tuple[int, ...]:
        """The bound of each label, in ``labels`` order."""
        return tuple(extent for _, extent in self.bounds)

    def project(self, vector: tuple, labels: str) -> tuple:
        """``vector[labels; self.labels]``: pick the entries of ``labels`` from a per-label vector."""
        return tuple(vector[self._position[label]] for label in labels)

    def shape(self, labels: str) -> tuple[int, ...]:
        """Bound vector of the tensor indexed by ``labels`` (an input's or the output's)."""
        return self.project(self.extents(), labels)


def expand(einsum: EinSum, d: tuple[int, ...]) -> tuple[int, ...]:
    """``d`` over the concatenated input labels ``ℓ_XY`` (the paper's printed form)."""
    return einsum.project(d, "".join(einsum.inputs))


def log2_exact(p: int) -> int:
    """``N`` with ``p == 2**N``; EinDecomp (sec. 8.1) assumes p is a power of two."""
    if p < 1 or p & (p - 1):
        raise ValueError(f"p must be a power of two, got {p}")
    return p.bit_length() - 1


@lru_cache(maxsize=None)
def viable(einsum: EinSum, p: int) -> tuple[tuple[int, ...], ...]:
    """All ``d`` with every entry a power of two, ``d[i] <= bound[i]``, and ``∏ d == p``.

    ``∏ d`` over unique labels is the number of join results (kernel calls), so each
    vector gives exactly p pieces of parallel work. Ordered by exponent tuple, ascending.
    """
    n = log2_exact(p)
    caps = [min(n, extent.bit_length() - 1) for extent in einsum.extents()]

    def spread(i: int, left: int):
        if i == len(caps) - 1:
            if left <= caps[i]:
                yield (left,)
            return
        for e in range(min(left, caps[i]) + 1):
            for rest in spread(i + 1, left - e):
                yield (e, *rest)

    return tuple(tuple(1 << e for e in exps) for exps in spread(0, n))


def count_viable(n: int, labels: int) -> int:
    """``(N+D-1)! / (N! (D-1)!)``: size of ``viable`` at p = 2**n when no bound binds."""
    return math.comb(n + labels - 1, labels - 1)

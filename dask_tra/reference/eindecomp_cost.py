"""EinDecomp's communication cost model (paper section 7, with the errata's corrections).

Every cost is a number of floats moved, assuming the worst case that each input of
every kernel call must be shipped to the processor that runs it. Block extents are
``b / d`` as real numbers, exact when ``d`` divides ``b``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from math import prod

import numpy as np

from .eindecomp_spec import EinSum


def _block(einsum: EinSum, d: tuple[int, ...], labels: str) -> float:
    """Floats in one block of the tensor indexed by ``labels`` under ``d``."""
    return prod(b / k for b, k in zip(einsum.shape(labels), einsum.project(d, labels)))


@lru_cache(maxsize=None)
def cost_join(einsum: EinSum, d: tuple[int, ...]) -> float:
    """``p × (n_X + n_Y)``: each of the ``p = ∏ d`` kernel calls receives one block per input."""
    return prod(d) * sum(_block(einsum, d, labels) for labels in einsum.inputs)


@lru_cache(maxsize=None)
def cost_agg(einsum: EinSum, d: tuple[int, ...]) -> float:
    """``(p / n_agg) × (n_agg − 1) × n_Z``: each of ``p / n_agg`` groups gathers onto one member."""
    n_agg = prod(einsum.project(d, einsum.agg_labels))
    return prod(d) / n_agg * (n_agg - 1) * _block(einsum, d, einsum.output)


@lru_cache(maxsize=None)
def cost_repart(producer: tuple[int, ...], consumer: tuple[int, ...], bounds: tuple[int, ...]) -> float:
    """Floats moved to turn a tensor of shape ``bounds`` partitioned by ``producer`` into ``consumer``.

    ``(n_c/n_int − 1)(n/n_c)(n_c + n_p)``, plus ``n_p · n/n_c`` when producer blocks must be
    cut (``n_p ≠ n_int``), with ``n = ∏ bounds`` (the printed ``∏ d_Z`` is an erratum).
    Zero when the two partitionings agree.
    """
    if not len(producer) == len(consumer) == len(bounds):
        raise ValueError(f"rank mismatch: {producer}, {consumer}, {bounds}")
    return float(repart_costs([producer], [consumer], bounds)[0, 0])


def repart_costs(
    producers: Sequence[tuple[int, ...]], consumers: Sequence[tuple[int, ...]], bounds: tuple[int, ...]
) -> np.ndarray:
    """``cost_repart`` for every pair at once: entry ``[c, p]`` is producers[p] -> consumers[c]."""
    b = np.asarray(bounds, dtype=float)
    block_p = b / np.asarray(producers, dtype=float).reshape(len(producers), len(bounds))
    block_c = b / np.asarray(consumers, dtype=float).reshape(len(consumers), len(bounds))
    n = float(prod(bounds))
    n_p = block_p.prod(axis=1)[None, :]
    n_c = block_c.prod(axis=1)[:, None]
    n_int = np.ones((len(consumers), len(producers)))
    for axis in range(len(bounds)):
        n_int *= np.minimum(block_p[None, :, axis], block_c[:, None, axis])
    cost = (n_c / n_int - 1) * (n / n_c) * (n_c + n_p)
    return cost + np.where(n_p != n_int, n_p * n / n_c, 0.0)

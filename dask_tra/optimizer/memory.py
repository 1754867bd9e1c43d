"""The streaming memory model: what a site holds while one operator runs.

Dask runs a worker's ready tasks in priority order (``dask.order``: a block's reader runs soon
after the block is made), ``Rates.threads`` at a time, and frees a block once its last reader
ran. So while an operator streams, a site holds the blocks of the tasks running at once, the
copies other sites sent it (kept until their readers ran) and, for a contraction, its running
sums: not every block it reads or makes there (``Cand.peak``, the resident estimate, still
bounds it). Per-tuple maps, joins and contractions stream; other operators (an aggregation
folding a group in one task, a concatenation, a tile) are counted resident. With
``Rates.threads`` 0 (unknown) every operator is counted resident.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tra import expr as tra
from .cost import Rates
from .strategies import is_contraction
from .symbolic import key_bytes


def largest_block(t: Any) -> int:
    """Bytes of the relation's largest chunk."""
    b = key_bytes(t)
    return int(b.max()) if b.size else 0


def task_bytes(node: Any) -> int:
    """Bytes one task holds of ``node``'s result: its largest chunk; none for a constant input
    (each chunk a read-only view of one value)."""
    return 0 if getattr(node, "constant", False) else largest_block(node.type)


def working_set(node: Any, cand: Any, inputs: Sequence[Any], rates: Rates, s: int) -> np.ndarray:
    """Per site, the bytes held at once while ``node`` runs by ``cand`` over the relations
    ``inputs`` (TRA nodes; for a contraction: its join's two operands)."""
    resident = np.asarray(cand.peak, np.int64)
    threads = int(rates.threads)
    contraction = is_contraction(node)
    if threads <= 0 or not (contraction or isinstance(node, (tra.TupleMap, tra.Join))):
        return resident
    made = node.child.type if contraction else node.type
    task = sum(task_bytes(i) for i in inputs) + largest_block(made)
    held = np.full(s, cand.moved / s) if cand.site_moved is None else np.asarray(cand.site_moved, np.float64)
    if contraction:
        held = held + key_bytes(node.type) @ np.asarray(cand.layout, np.int64)
    return np.minimum(resident, (threads * task + held).astype(np.int64))

"""The streaming memory model: what a site holds while one operator runs.

Dask runs a worker's ready tasks in priority order (``dask.order``: a block's reader runs soon
after the block is made), ``Rates.threads`` at a time, and frees a block once its last reader
ran. So while an operator streams, a site holds the blocks of the tasks running at once and the
copies other sites sent it (kept until their readers ran): not every block it reads or makes
there (``Cand.peak``, the resident estimate, still bounds it). A contraction's task folds the
products of one output block as it makes them (``dask/emit.py``): it holds the operands of its
whole group, and the site its running sums. Per-tuple maps, joins and contractions stream;
other operators (an aggregation folding a group in one task, a concatenation, a tile) are
counted resident. With ``Rates.threads`` 0 (unknown) every operator is counted resident.
"""

from __future__ import annotations

import math
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
    """Per site, the bytes held at once while ``node`` runs by ``cand`` over ``inputs`` (the
    alternatives of its operands; for a contraction: its join's two). An operand already placed
    on the cluster (persisted) is held whole: its blocks are in memory before the plan runs."""
    resident = np.asarray(cand.peak, np.int64)
    threads = int(rates.threads)
    contraction = is_contraction(node)
    if threads <= 0 or not (contraction or isinstance(node, (tra.TupleMap, tra.Join))):
        return resident
    operands, out = sum(task_bytes(i.node) for i in inputs), largest_block(node.type)
    task = operands + out
    if contraction:  # one task folds a group's products as it makes them: it holds all its operands
        group = max(1, math.prod(node.child.type.frontier) // max(1, math.prod(node.type.frontier)))
        task = group * operands + largest_block(node.child.type) + out
    held = np.full(s, cand.moved / s) if cand.site_moved is None else np.asarray(cand.site_moved, np.float64)
    if contraction:
        held = held + key_bytes(node.type) @ np.asarray(cand.layout, np.int64)
    for i in inputs:
        if i.placement is not None:
            held = held + key_bytes(i.node.type) @ np.asarray(i.layout, np.int64)
    return np.minimum(resident, (threads * task + held).astype(np.int64))


def held_for_readers(alts: Sequence[Any], s: int) -> tuple[np.ndarray, Any]:
    """Per site, the bytes of results read by several operators (``alts``: a plan's chosen
    alternatives): dask keeps such a block until its last reader ran, and a streamed plan
    reads them at different times (``x - x.mean(0)`` holds ``x`` while its mean is made).
    Also the alternative holding the most, or None."""
    readers: dict[int, int] = {}
    for a in alts:
        for c in a.inputs:
            readers[id(c)] = readers.get(id(c), 0) + 1
    held, most, top = np.zeros(s, np.int64), None, 0
    for a in alts:
        if readers.get(id(a), 0) > 1 and not getattr(a.node, "constant", False):
            mine = (key_bytes(a.node.type) @ np.asarray(a.layout, np.int64)).astype(np.int64)
            held += mine
            if mine.max(initial=0) > top:
                most, top = a, int(mine.max())
    return held, most

"""The streaming memory model: what a site holds while one operator runs.

Dask runs a worker's ready tasks in priority order (``dask.order``: a block's reader runs soon
after the block is made), ``Rates.threads`` at a time, and frees a block once its last reader
ran. So while an operator streams, a site holds the blocks of the tasks running at once and the
copies other sites sent it (kept until their readers ran): not every block it reads or makes
there (``Cand.peak``, the resident estimate, still bounds it). A contraction's task folds the
products of one output block as it makes them (``runtime/emit.py``), in bounded groups: a task
reads at most ``fold_pairs`` pairs of operands (``FOLD_BYTES`` of them, at least one pair), and
a group larger than that is folded as a tree (leaf tasks of ``fold_pairs`` pairs, then their
partial sums, ``fold_width`` at a time, as dask's ``split_every``). So a contraction's task
holds the operands of its bounded group, and the site its running sums and the partial sums
waiting for their fold. Per-tuple maps, joins and contractions stream; other operators (an
aggregation, a concatenation, a tile) are counted resident (their members are made by the
operator below, which streams; ``emit`` folds them in tasks that read at most ``FOLD_BYTES`` of
members and of what they are made from, or two members). An operand already on the cluster
(persisted) is not held by the plan: its blocks are read by the tasks running at once, and dask
spills the rest as it does without dask_tra. With ``Rates.threads`` 0 (unknown) every operator
is counted resident.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tra import expr as tra
from .cost import Rates
from .strategies import is_contraction
from .symbolic import key_bytes, wsum

FOLD_BYTES = 32 * 2**20  # the operand bytes one fold task reads at once (unless one member needs more)


def fold_pairs(pair_bytes: int) -> int:
    """Operand pairs one contraction task folds: as many as fit ``FOLD_BYTES``, at least one."""
    return max(1, FOLD_BYTES // max(1, int(pair_bytes)))


def fold_width(member_bytes: int) -> int:
    """Members one fold task reads (a tree's fan-in, dask's ``split_every``): as many as fit
    ``FOLD_BYTES``, at least two."""
    return max(2, FOLD_BYTES // max(1, int(member_bytes)))


def largest_block(t: Any) -> int:
    """Bytes of the relation's largest chunk (kept with the type's facts: the search asks for
    it several times per candidate)."""
    out = t._cache.get("largest_block")
    if out is None:
        b = key_bytes(t)
        out = t._cache["largest_block"] = int(b.max()) if b.size else 0
    return out


def task_bytes(node: Any) -> int:
    """Bytes one task holds of ``node``'s result: its largest chunk; none for a constant input
    (each chunk a read-only view of one value)."""
    return 0 if getattr(node, "constant", False) else largest_block(node.type)


def working_set(node: Any, cand: Any, inputs: Sequence[Any], rates: Rates, s: int) -> np.ndarray:
    """Per site, the bytes held at once while ``node`` runs by ``cand`` over ``inputs`` (the
    alternatives of its operands; for a contraction: its join's two). Read-only: kept with the
    candidate (the search and the final costing both ask; a candidate is read-only once made,
    and what else it depends on is in the key)."""
    threads = int(rates.threads)
    operands = sum(task_bytes(i.node) for i in inputs)
    kept = cand.__dict__.setdefault("_working_sets", {})
    key = (threads, operands, s)
    out = kept.get(key)
    if out is None:
        out = kept[key] = _working_set(node, cand, operands, threads, s)
        out.setflags(write=False)
    return out


def _working_set(node: Any, cand: Any, operands: int, threads: int, s: int) -> np.ndarray:
    resident = np.array(cand.peak, np.int64)  # a copy: the candidate's own is never handed out
    contraction = is_contraction(node)
    if threads <= 0 or not (contraction or isinstance(node, (tra.TupleMap, tra.Join))):
        return resident
    out = largest_block(node.type)
    task = operands + out
    held = np.full(s, cand.moved / s) if cand.site_moved is None else np.asarray(cand.site_moved, np.float64)
    if contraction:  # a task folds a bounded group's products as it makes them (``fold_pairs``)
        group = max(1, math.prod(node.child.type.frontier) // max(1, math.prod(node.type.frontier)))
        task = min(group, fold_pairs(operands)) * operands + largest_block(node.child.type) + out
        # the running sums of the site's output blocks, and a tree's partial sums waiting for their fold
        held = held + wsum(key_bytes(node.type), np.asarray(cand.layout, bool)) + threads * out
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
            mine = wsum(key_bytes(a.node.type), np.asarray(a.layout, bool)).astype(np.int64)
            held += mine
            if mine.max(initial=0) > top:
                most, top = a, int(mine.max())
    return held, most

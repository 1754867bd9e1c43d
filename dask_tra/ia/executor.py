"""Reference IA executor: simulates s sites over real chunks and counts the bytes that cross.

Each copy's value is computed from the copies named by the plan's metadata, at the site
the plan names. A copy moved to a site where its origin is not yet present counts its
chunk's real ``nbytes`` as crossing; the cost model predicts the same number from metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..tra.dag import Registry
from ..tra.errors import fmt_key
from ..tra.executor import apply_kernel, apply_map, check_relation
from ..tra.expr import Concat
from ..tra.kernels import concat_chunks
from .nodes import (
    Broadcast,
    IANode,
    LocalAggregate,
    LocalFilter,
    LocalJoin,
    LocalMap,
    Placed,
    PlanError,
    Shuffle,
)

# each IA operator's value of one copy: (node, key, site, origin, Result, inputs) -> chunk
VALUE = Registry("IA executor", "value", "@VALUE.register({}) in ia/executor.py")


class Result:
    """Per-node values (``values[node.uid][(key, site, origin)]``) and the bytes that crossed sites."""

    def __init__(self) -> None:
        self.values: dict[int, dict[tuple[Any, int, Any], Any]] = {}
        self.bytes_moved = 0
        self.present: set[tuple[Any, int]] = set()  # (origin, site)


def execute(plan: IANode, inputs: Mapping[str, Mapping[Any, Any]]) -> Result:
    res = Result()
    for node in plan.walk():
        value = VALUE(node)
        vals: dict[tuple[Any, int, Any], Any] = {}
        for key, copies in node.copies.items():
            for site, origin in copies:
                v = vals[(key, site, origin)] = value(node, key, site, origin, res, inputs)
                if (origin, site) not in res.present:
                    if isinstance(node, (Broadcast, Shuffle)):
                        res.bytes_moved += int(v.nbytes)
                    res.present.add((origin, site))
        res.values[node.uid] = vals
    return res


def project(plan: IANode, res: Result) -> dict[Any, Any]:
    """The plan's output with sites projected away: {key: chunk}.

    A key may sit on several sites (copies, or the same chunk computed on each); copies
    that differ (unfinished partial aggregates) mean the plan is not a complete result.
    """
    out: dict[Any, Any] = {}
    for (key, _site, _origin), v in res.values[plan.uid].items():
        first = out.setdefault(key, v)
        if first is not v and not np.array_equal(np.asarray(first), np.asarray(v), equal_nan=True):
            raise PlanError(
                f"{plan.describe()}: key {fmt_key(key)} has several different chunks "
                f"(partial results on different sites)"
            )
    return out


def _at(node: IANode, key: Any, site: int, res: Result) -> Any:
    """The value of the (unique) copy of ``key`` at ``site``."""
    for s, o in node.copies[key]:
        if s == site:
            return res.values[node.uid][(key, site, o)]
    raise KeyError((key, site))


def _from_child(node: Any, key: Any, origin: Any, res: Result) -> Any:
    for site, o in node.child.copies[key]:
        if o == origin:
            return res.values[node.child.uid][(key, site, o)]
    raise KeyError(key)


Inputs = Mapping[str, Mapping[Any, Any]]


@VALUE.register(Placed)
def _placed(node: Placed, key: Any, site: int, origin: Any, res: Result, inputs: Inputs) -> Any:
    rel = inputs[node.input.name]
    if key not in rel:
        check_relation(rel, node.type, node.describe())
    chunk = rel[key]
    if tuple(chunk.shape) != node.type.chunk_shape(key):
        check_relation(rel, node.type, node.describe())
    return chunk


@VALUE.register(Broadcast, Shuffle, LocalFilter)
def _moved(node: IANode, key: Any, site: int, origin: Any, res: Result, inputs: Inputs) -> Any:
    return _from_child(node, key, origin, res)


@VALUE.register(LocalJoin)
def _local_join(node: LocalJoin, key: Any, site: int, origin: Any, res: Result, inputs: Inputs) -> Any:
    lk, rk = node.sources(key, site)
    l, r = _at(node.left, lk, site, res), _at(node.right, rk, site, res)
    return apply_kernel(node.op, node.kernel, (l, r), key)


@VALUE.register(LocalAggregate)
def _local_aggregate(node: LocalAggregate, key: Any, site: int, origin: Any, res: Result, inputs: Inputs) -> Any:
    members = node.members[(key, site)]
    chunks = [res.values[node.child.uid][(k, site, o)] for k, o in members]
    if isinstance(node.op, Concat):
        kd = node.op.key_dim
        order = sorted(range(len(members)), key=lambda i: members[i][0][kd])
        return concat_chunks([chunks[i] for i in order], node.op.array_dim)
    acc = chunks[0]
    for c in chunks[1:]:
        acc = apply_kernel(node.op, node.op.kernel, (acc, c), key)
    return acc


@VALUE.register(LocalMap)
def _local_map(node: LocalMap, key: Any, site: int, origin: Any, res: Result, inputs: Inputs) -> Any:
    return apply_map(node.op, node.op, _at(node.child, node.source(key), site, res), key)

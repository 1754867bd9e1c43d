"""Reference executor: evaluates a TRA expression over plain dicts ``{key tuple: chunk}``.

It is the test oracle for every layer above: simple, direct, and strict. It checks
every input chunk against its metadata and every kernel output against the shape
the type predicts, and wraps kernel failures with the operator and key.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import ChunkShapeError, KernelError, TRAError, fmt_key
from .expr import Aggregate, Concat, Expr, Filter, Input, Join, ReKey, Tile, Transform
from .kernels import Kernel, namespace
from .relation import RelationType

Rel = dict[tuple[int, ...], Any]  # {key: chunk}


def evaluate(expr: Expr, inputs: Mapping[str, Mapping[Any, Any]]) -> Rel:
    """Value of ``expr`` given ``inputs``: input name -> {key: chunk}."""
    memo: dict[int, Rel] = {}
    for node in expr.walk():
        memo[id(node)] = _eval_node(node, [memo[id(c)] for c in node.children], inputs)
    return memo[id(expr)]


def check_relation(rel: Mapping[tuple[int, ...], Any], type_: RelationType, who: str) -> None:
    """Keys and chunk shapes of ``rel`` must match ``type_`` exactly."""
    expected = set(type_.iter_keys())
    got = set(rel)
    if got != expected:
        extra, missing = sorted(got - expected)[:3], sorted(expected - got)[:3]
        raise ChunkShapeError(
            f"{who}: keys do not match the metadata (unexpected "
            f"{[fmt_key(k) for k in extra]}, missing {[fmt_key(k) for k in missing]})"
        )
    for k, chunk in rel.items():
        want = type_.chunk_shape(k)
        if tuple(chunk.shape) != want:
            raise ChunkShapeError(
                f"{who}: chunk at key {fmt_key(k)} has shape {tuple(chunk.shape)}, metadata says {want}"
            )


def apply_kernel(node: Any, kernel: Kernel, chunks: Sequence[Any], key: tuple[int, ...]) -> Any:
    """Run a kernel, naming the operator and key if it raises or returns a wrong shape."""
    try:
        out = kernel(*chunks)
    except Exception as e:
        raise KernelError(
            f"{node.describe()}: kernel {kernel.name} raised {type(e).__name__}: {e} at key {fmt_key(key)}"
        ) from e
    want = node.type.chunk_shape(key)
    if tuple(out.shape) != want:
        raise ChunkShapeError(
            f"{node.describe()}: kernel {kernel.name} returned shape "
            f"{tuple(out.shape)} at key {fmt_key(key)}, metadata says {want}"
        )
    return out


def _eval_node(node: Expr, args: list[Rel], inputs: Mapping[str, Mapping[Any, Any]]) -> Rel:
    if isinstance(node, Input):
        if node.name not in inputs:
            raise TRAError(f"{node.describe()}: no data supplied")
        rel = {tuple(int(i) for i in k): v for k, v in inputs[node.name].items()}
        check_relation(rel, node.type, node.describe())
        return rel
    return _EVAL[type(node)](node, *args)


def _join(node: Join, left: Rel, right: Rel) -> Rel:
    index = defaultdict(list)
    for rk, rc in right.items():
        index[tuple(rk[d] for d in node.right_keys)].append((rk, rc))
    out: Rel = {}
    for lk, lc in left.items():
        for rk, rc in index.get(tuple(lk[d] for d in node.left_keys), ()):
            key = node.out_key(lk, rk)
            out[key] = apply_kernel(node, node.kernel, (lc, rc), key)
    return out


def _aggregate(node: Aggregate, rel: Rel) -> Rel:
    out: Rel = {}
    for k in sorted(rel):
        g = tuple(k[d] for d in node.group_by)
        out[g] = rel[k] if g not in out else apply_kernel(node, node.kernel, (out[g], rel[k]), g)
    return out


def _rekey(node: ReKey, rel: Rel) -> Rel:
    return {nk: rel[k] for nk, k in node.source.items()}


def _filter(node: Filter, rel: Rel) -> Rel:
    return {k: v for k, v in rel.items() if node.predicate(k)}


def _transform(node: Transform, rel: Rel) -> Rel:
    return {k: apply_kernel(node, node.kernel, (v,), k) for k, v in rel.items()}


def _tile(node: Tile, rel: Rel) -> Rel:
    out: Rel = {}
    n, size, dim = node.type.frontier[-1], node.tile_size, node.tile_dim
    for k, v in rel.items():
        for t in range(n):
            index = [slice(None)] * v.ndim
            index[dim] = slice(t * size, (t + 1) * size)
            out[k + (t,)] = v[tuple(index)]
    return out


def _concat(node: Concat, rel: Rel) -> Rel:
    groups = defaultdict(list)
    for k in sorted(rel, key=lambda k: k[node.key_dim]):
        groups[k[: node.key_dim] + k[node.key_dim + 1 :]].append(rel[k])
    return {g: namespace(*cs).concat(cs, axis=node.array_dim) for g, cs in groups.items()}


# the apply function of each operator: (node, *child relations) -> relation
_EVAL: dict[type, Callable[..., Rel]] = {
    Join: _join,
    Aggregate: _aggregate,
    ReKey: _rekey,
    Filter: _filter,
    Transform: _transform,
    Tile: _tile,
    Concat: _concat,
}

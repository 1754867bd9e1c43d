"""Reference executor: evaluates a TRA expression over plain dicts ``{key tuple: chunk}``.

It is the test oracle for every layer above: simple, direct, and strict. It checks
every input chunk against its metadata and every kernel output against the shape
the type predicts, and wraps kernel failures with the operator and key.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .dag import Registry
from .errors import ChunkShapeError, KernelError, TRAError, fmt_key
from .expr import Aggregate, Concat, Expr, Input, Join, TupleMap
from .kernels import concat_chunks
from .relation import RelationType

Rel = dict[tuple[int, ...], Any]  # {key: chunk}

# each operator's semantics: (node, *child relations) -> relation
REFERENCE = Registry("reference executor", "reference semantics", "register_reference({}, fn)")


def evaluate(expr: Expr, inputs: Mapping[str, Mapping[Any, Any]]) -> Rel:
    """Value of ``expr`` given ``inputs``: input name -> {key: chunk}."""
    memo: dict[int, Rel] = {}
    for node in expr.walk():
        if isinstance(node, Input):  # a leaf: the data supplied
            memo[id(node)] = _input(node, inputs)
        else:
            memo[id(node)] = REFERENCE(node)(node, *[memo[id(c)] for c in node.children])
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


def apply_kernel(node: Any, kernel: Callable[..., Any], chunks: Sequence[Any], key: tuple[int, ...]) -> Any:
    """Run a kernel (or a tuple map's chunk function), naming the operator and key if it raises
    or returns a wrong shape."""
    name = getattr(kernel, "name", None) or getattr(kernel, "__name__", repr(kernel))
    try:
        out = kernel(*chunks)
    except Exception as e:
        where = f"at key {fmt_key(key)}"
        raise KernelError(f"{node.describe()}: kernel {name} raised {type(e).__name__}: {e} {where}") from e
    want = node.type.chunk_shape(key)
    if tuple(out.shape) != want:
        raise ChunkShapeError(
            f"{node.describe()}: kernel {name} returned shape "
            f"{tuple(out.shape)} at key {fmt_key(key)}, metadata says {want}"
        )
    return out


def apply_map(node: Any, op: Any, chunk: Any, key: tuple[int, ...]) -> Any:
    """The output chunk at ``key`` of the tuple map ``op`` (a ``TupleMap``, or the IA's ``Expand``;
    run by ``node``) from its source chunk."""
    spec = op.chunk_task(key)
    if spec is None:
        return chunk
    fn, *args = spec
    return apply_kernel(node, fn, (chunk, *args), key)


def register_reference(op: type, fn: Callable[..., Rel]) -> None:
    """The reference semantics of a TRA operator class that is not a ``TupleMap``:
    ``fn(node, *child relations) -> relation`` over ``{key: chunk}`` dicts."""
    REFERENCE.register(op)(fn)


def _input(node: Input, inputs: Mapping[str, Mapping[Any, Any]]) -> Rel:
    if node.name not in inputs:
        raise TRAError(f"{node.describe()}: no data supplied")
    rel = {tuple(int(i) for i in k): v for k, v in inputs[node.name].items()}
    check_relation(rel, node.whole or node.type, node.describe())
    return rel if node.whole is None else {k: rel[k] for k in node.type.iter_keys()}


@REFERENCE.register(TupleMap)
def _tuple_map(node: TupleMap, rel: Rel) -> Rel:
    return {nk: apply_map(node, node, chunk, nk) for k, chunk in rel.items() for nk in node.out_keys(k)}


@REFERENCE.register(Join)
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


@REFERENCE.register(Aggregate)
def _aggregate(node: Aggregate, rel: Rel) -> Rel:
    out: Rel = {}
    for k in sorted(rel):
        g = tuple(k[d] for d in node.group_by)
        out[g] = rel[k] if g not in out else apply_kernel(node, node.kernel, (out[g], rel[k]), g)
    return out


@REFERENCE.register(Concat)
def _concat(node: Concat, rel: Rel) -> Rel:
    groups = defaultdict(list)
    for k in sorted(rel, key=lambda k: k[node.key_dim]):
        groups[k[: node.key_dim] + k[node.key_dim + 1 :]].append(rel[k])
    return {g: concat_chunks(cs, node.array_dim) for g, cs in groups.items()}

"""Block-sparse relations: sources holding some blocks only, and their zero-filled views.

A block-sparse RelArray's expression reads inputs with an explicit key set (a missing block
is all zeros). Operations that may skip missing blocks (a Join whose kernel annihilates
zeros, an Aggregate by add; see ``tra/expr.py``) build on that expression; every other
operation reads ``RelArray.expr``, the *dense view*: the same expression over zero-filled
inputs (each missing block made as zeros where the plan needs it), which is exact for any
operation. An operator is rebuilt over zero-filled inputs from its declared operands
(``Expr.over``), so every operator, a new one too, has a dense view. ``fill_missing`` adds the
missing output blocks, as zeros, to a computed graph.
"""

from __future__ import annotations

import weakref

import numpy as np
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.task_spec import Task

from ..runtime.ownership import Pins
from ..runtime.sources import Source, full_chunk
from ..tra import Input
from ..tra.dag import fill, rebuilt
from ..tra.expr import Expr
from ..tra.tasks import Data


class SparseSource(Source):
    """The blocks of ``inner`` at ``keys`` only (every other block is zeros)."""

    def __init__(self, inner: Source, keys, name: str):
        self.inner = inner
        self.graph = inner.graph
        self.input = Input(name, inner.type.with_(keys=frozenset(tuple(int(i) for i in k) for k in keys)))

    def task(self, key):
        return self.inner.task(key)

    def chunk(self, key):
        return self.inner.chunk(key)


class BlocksSource(Source):
    """Blocks given as data: ``{key: chunk}`` over the key grid of ``type_`` (its key set)."""

    def __init__(self, blocks: dict, type_, name: str):
        self.blocks = blocks
        self.input = Input(name, type_)

    def task(self, key):
        return Data(self.blocks[tuple(key)])

    def chunk(self, key):
        return self.blocks[tuple(key)]


class ZeroFilled(Source):
    """A block-sparse source with its missing blocks made as zeros (a dense relation)."""

    def __init__(self, inner: Source):
        self.inner = inner
        self.graph = inner.graph
        t = inner.type
        self.present = t.keys
        self.input = Input(inner.input.name + "-zero-filled", t.with_(keys=None))

    def task(self, key):
        key = tuple(key)
        if key in self.present:
            return self.inner.task(key)
        return zero_task(self.type, key)

    def chunk(self, key):
        key = tuple(key)
        if key in self.present:
            return self.inner.chunk(key)
        fn, *args = zero_task(self.type, key)
        return fn(*args)


def zero_task(type_, key) -> tuple:
    """``(fn, *args)`` making the all-zero chunk of ``type_`` at ``key``."""
    return (full_chunk, type_.chunk_shape(key), 0, type_.dtype.str, type_.backend)


# raw node -> its dense view; a shared node keeps one view (nodes compare by identity)
_DENSE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def has_holes(expr: Expr) -> bool:
    """True when ``expr`` reads a block-sparse input (kept on the node: ``Expr.holes``)."""
    return expr.holes


def densify(expr: Expr, sources: dict) -> tuple[Expr, dict]:
    """(the dense view of ``expr``, the zero-filled sources it reads): every block-sparse input
    replaced by its zero-filled version, the operators above rebuilt over them. A node without
    holes is its own view and a node seen before keeps its view, so only the new nodes are
    visited (children first, iteratively): an operation costs its own node, however deep."""
    if not expr.holes:
        return expr, {}

    def view(node: Expr) -> None:
        if isinstance(node, Input):
            _DENSE[node] = _zero_filled(sources[node.name]).input
            return
        # a child with holes has a view of its own, so the node is rebuilt
        _DENSE[node] = rebuilt(node, (_DENSE[c] if c.holes else c for c in node.children), "zero-fill")

    fill(expr, lambda node: not node.holes or node in _DENSE, view)
    filled = [_zero_filled(sources[leaf.name]) for leaf in expr.sparse_inputs]
    return _DENSE[expr], {z.input.name: z for z in filled}


def _zero_filled(src: Source) -> ZeroFilled:
    made = getattr(src, "_zero_filled", None)
    if made is None:
        made = src._zero_filled = ZeroFilled(src)
    return made


def fill_missing(graph: HighLevelGraph, name: str, type_) -> HighLevelGraph:
    """``graph`` with the output blocks missing from ``type_``'s key set made as zeros (in the
    output layer ``name``, pinned round-robin to the workers the layer is pinned to)."""
    missing = [k for k in type_.with_(keys=None).iter_keys() if k not in type_.keys]
    if not missing:
        return graph
    layers, deps = dict(graph.layers), dict(graph.dependencies)
    old = layers.get(name)
    tasks = dict(old.mapping) if old is not None else {}
    annotations = dict(old.annotations or {}) if old is not None else {}
    pins = annotations.get("workers")
    workers = sorted({w for ws in pins.mapping.values() for w in ws}) if isinstance(pins, Pins) else []
    new_pins = dict(pins.mapping) if isinstance(pins, Pins) else {}
    for i, k in enumerate(missing):
        dk = (name,) + k
        fn, *args = zero_task(type_, k)
        tasks[dk] = Task(dk, fn, *args)
        if workers:
            new_pins[dk] = [workers[i % len(workers)]]
    if workers:
        annotations["workers"] = Pins(new_pins)
    layers[name] = MaterializedLayer(tasks, annotations=annotations or None)
    deps.setdefault(name, set())
    return HighLevelGraph(layers, deps)


def assemble_held(blocks, keys, chunks, dtype, backend):
    """The array of a block-sparse result: ``blocks[i]`` at block ``keys[i]``, zeros elsewhere."""
    from .. import backends

    out = np.zeros(tuple(sum(c) for c in chunks), dtype)
    starts = [np.concatenate([[0], np.cumsum(c)]).astype(int) for c in chunks]
    for k, b in zip(keys, blocks):
        out[tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, k))] = backends.to_numpy(b)
    if not out.ndim:
        out = out[()]
    return out if backend == "numpy" else backends.get(backend).from_numpy(out)


__all__ = ["assemble_held", "SparseSource", "BlocksSource", "ZeroFilled", "densify", "has_holes", "fill_missing"]

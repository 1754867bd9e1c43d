"""Building blocks of the backward pass: terms (expressions placed in a key universe),
cotangents, and small constant relations.

A *term* is a TRA expression whose key dims are named by dims of a common key space (the
"universe" of one RJP: a Join's output key, a Transform's key, an Aggregate's input key).
Joining two terms joins them on the universe dims they share, exactly like a natural join,
so an RJP can be written as "multiply the upstream gradient by the derivative" without
counting key positions by hand. Terms (``Term``, ``zip_terms``, ``map_term``, ``reorder``)
and the backward kernels (``GradKernel``, ``Reduction``, ``cast``, ``xp_of``) are defined
below this package, in ``dask_tra/tra/terms.py`` and ``dask_tra/tra/kernels.py``, because the
kernels' own modules build their VJPs with them; they are re-exported here.

A *cotangent* (``Cot``) is a term in the universe of the node it belongs to. It may leave
out some of the node's key dims: it is then constant (broadcast) along them. That is how
the RJP of an aggregation with ``add`` costs nothing (the paper's "join with the input,
projecting the group key" is deferred) and how a join-aggregation tree (a matmul) is
differentiated as one join-aggregation tree per input (gL = G·Rᵀ, gR = Lᵀ·G), never
materialising the join's output.

No Dask here: constant relations are described by ``ConstRelation`` (chunks in a dict),
turned into sources by the RelArray layer (``api.py``).
"""

from __future__ import annotations

import itertools
import uuid

import numpy as np

from ..tra import Aggregate, Input, Join, RelationType
from ..tra import kernels as K
from ..tra.kernels import Bound, GradKernel, Reduction, cast, first_axes, xp_of
from ..tra.relation import infer_axis
from ..tra.terms import Term, map_term, reorder, zip_terms
from ..tra.vjp import GradError


def group(t: Term, keep) -> Term:
    """Sum ``t`` over the universe dims not in ``keep`` (Aggregate with add), dims in ``keep``'s order."""
    keep = tuple(d for d in keep if d in t.dims)
    if set(keep) == set(t.dims):
        return reorder(t, keep)
    return Term(Aggregate(t.expr, [t.dims.index(d) for d in keep], K.add), keep)


def add_terms(t1: Term, t2: Term) -> Term:
    """Elementwise sum of two terms over the same dims (the paper's relational ``add``)."""
    t2 = reorder(t2, t1.dims)
    n = len(t1.dims)
    return Term(Join(t1.expr, t2.expr, range(n), range(n), K.add), t1.dims)


# ---------------------------------------------------------------- constant relations


class ConstRelation:
    """A small relation of constant chunks made by the backward pass (seeds, carriers,
    offsets). ``input`` is its TRA leaf; ``chunks`` maps keys to NumPy arrays."""

    def __init__(self, chunks: dict, frontier, dtype, what: str, rank=None):
        self.chunks = {tuple(int(i) for i in k): np.asarray(v, dtype=dtype) for k, v in chunks.items()}
        frontier = tuple(int(f) for f in frontier)
        if rank is None:
            rank = np.ndim(next(iter(self.chunks.values()))) if self.chunks else 0
        axes = tuple(infer_axis({k: c.shape[i] for k, c in self.chunks.items()}, frontier) for i in range(rank))
        self.input = Input(f"{what}-{uuid.uuid4().hex[:12]}", RelationType(frontier, axes, np.dtype(dtype)))


class Context:
    """State of one backward-pass construction: the constant relations it made."""

    def __init__(self):
        self.consts: dict = {}
        self._carriers: dict = {}
        self.consumers: dict = {}  # id(node) -> number of consumers in the forward DAG
        self.wrt: set = set()
        self.active: set = set()

    def const(self, chunks, frontier, dtype, what, rank=None) -> Input:
        c = ConstRelation(chunks, frontier, dtype, what, rank)
        self.consts[c.input.name] = c
        return c.input

    def carrier(self, frontier) -> Input:
        """A relation with one empty tuple per key below ``frontier``: joined without join keys,
        it copies a relation along new key dims (materialising a broadcast cotangent)."""
        frontier = tuple(frontier)
        if frontier not in self._carriers:
            chunks = {k: np.zeros((), np.int8) for k in itertools.product(*(range(f) for f in frontier))}
            self._carriers[frontier] = self.const(chunks, frontier, np.int8, "grad-carrier", rank=0)
        return self._carriers[frontier]


def _first(g, _):
    return g


EXPAND = GradKernel("expandKeys", _first, 2, axes=first_axes)


def materialize(cot: Term, type_: RelationType, ctx: Context) -> Term:
    """The cotangent as a relation over all of the node's key dims, in key order."""
    arity = type_.key_arity
    missing = tuple(d for d in range(arity) if d not in cot.dims)
    if missing:
        for i, ax in enumerate(type_.axes):
            if set(ax.simplified().key_dims) & set(missing):
                raise GradError(
                    f"internal: a broadcast cotangent misses key dims {missing} along which chunk axis {i} varies"
                )
        carrier = ctx.carrier(tuple(type_.frontier[d] for d in missing))
        cot = zip_terms(cot, Term(carrier, missing), EXPAND)
    return reorder(cot, tuple(range(arity)))


def accumulate(a: Term | None, b: Term | None, type_: RelationType, ctx: Context) -> Term | None:
    """Sum of two cotangents of one node (total derivative: a relation used twice)."""
    if a is None:
        return b
    if b is None:
        return a
    if set(a.dims) != set(b.dims):
        a, b = materialize(a, type_, ctx), materialize(b, type_, ctx)
    if not type_.dense:
        raise GradError(
            "cannot add two cotangents of a relation with holes (a Filter result "
            "used twice); its consumers must be fed from a dense relation"
        )
    return add_terms(a, b)


def cast_term(t: Term, dtype) -> Term:
    dtype = np.dtype(dtype)
    if t.dtype == dtype:
        return t
    return map_term(t, GradKernel(f"astype[{dtype}]", Bound(_cast_chunk, dtype), 1, axes=first_axes, dtype=dtype))


def _cast_chunk(dtype, v):
    return cast(xp_of(v), v, dtype)


def same_axes(t1: RelationType, t2: RelationType) -> bool:
    """Same keys and the same chunk shape at every key."""
    if t1.frontier != t2.frontier or t1.rank != t2.rank or t1.keys != t2.keys:
        return False
    if t1.keys is not None:
        return all(t1.chunk_shape(k) == t2.chunk_shape(k) for k in t1.keys)
    return all(np.array_equal(a.dense(t1.frontier), b.dense(t2.frontier)) for a, b in zip(t1.axes, t2.axes))


__all__ = [
    "GradError",
    "GradKernel",
    "Reduction",
    "Term",
    "zip_terms",
    "map_term",
    "reorder",
    "group",
    "add_terms",
    "ConstRelation",
    "Context",
    "materialize",
    "accumulate",
    "cast_term",
    "cast",
    "xp_of",
    "same_axes",
]

"""Building blocks of the backward pass: its chunk kernels, terms (expressions placed in a key
universe), cotangents, and small constant relations.

A *term* is a TRA expression whose key dims are named by dims of a common key space (the
"universe" of one RJP: a Join's output key, a Transform's key, an Aggregate's input key).
Joining two terms joins them on the universe dims they share, exactly like a natural join,
so an RJP can be written as "multiply the upstream gradient by the derivative" without
counting key positions by hand.

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
from dataclasses import dataclass

import numpy as np

from .. import backends
from ..tra import Aggregate, Input, Join, ReKey, RelationType, Transform
from ..tra import kernels as K
from ..tra.errors import TRAError
from ..tra.keyfuncs import KeyMap
from ..tra.kernels import Bound, Kernel, broadcast_axes, first_axes, frozen, namespace
from ..tra.relation import ChunkAxis, infer_axis


class GradError(TRAError):
    """The gradient cannot be built (a non-differentiable or unsupported operation)."""


# ---------------------------------------------------------------- kernels


class GradKernel(Kernel):
    """A chunk function of the backward pass with declared output axes and dtype.

    ``axes(frontier, *in_axes)`` gives the output chunk axes (default: NumPy broadcasting of
    the inputs); ``dtype`` the output dtype (default: that of the first input). ``fn`` and
    ``axes`` are module-level functions (constants bound with ``Bound``), so gradients pickle.
    """

    def __init__(self, name, fn, arity, axes=None, dtype=None):
        self.name, self.fn, self.arity = name, fn, arity
        self._axes = axes
        self._dtype = None if dtype is None else np.dtype(dtype)

    def __call__(self, *chunks):
        # NumPy chunks join the other operands' library and device, but for integer ones: the
        # backward pass's parameter chunks (offsets, extents), read on the host as integers
        keep = tuple(i for i, c in enumerate(chunks) if isinstance(c, np.ndarray) and c.dtype.kind in "iu")
        _, chunks = backends.align(*chunks, keep=keep)
        return self.fn(*chunks)

    def out_axes(self, frontier, *in_axes):
        if self._axes is not None:
            return tuple(self._axes(frontier, *in_axes))
        return broadcast_axes(frontier, in_axes, self.name)

    def out_dtype(self, *dtypes):
        return self._dtype if self._dtype is not None else np.dtype(dtypes[0])


def cast(xp, v, dtype):
    """``v`` as an array of NumPy dtype ``dtype`` in its own library: the backend of ``v`` maps
    the dtype, never ``xp`` (the namespace of ``v``, kept for the callers); a Python scalar
    becomes a NumPy 0-d array."""
    if not hasattr(v, "dtype") or not hasattr(v, "shape"):
        return np.asarray(v, dtype=dtype)
    return backends.backend_of(v).coerce(v, dtype)


def xp_of(*chunks):
    arrays = [c for c in chunks if hasattr(c, "shape") and hasattr(c, "dtype")]
    return namespace(*arrays) if arrays else namespace(np.zeros(()))


class Reduction:
    """How a contribution chunk (broadcast shape) folds back to an operand's chunk shape:
    sum the leading axes the operand lacks, and (keeping them) the axes where the operand
    has a constant extent 1 that was stretched. Static: read from the chunk-axis metadata."""

    def __init__(self, operand_axes, out_rank):
        self.lead = out_rank - len(operand_axes)
        if self.lead < 0:
            raise GradError("operand has a higher chunk rank than the result it broadcasts to")
        self.operand_axes = tuple(operand_axes)
        self.keep = tuple(i for i, ax in enumerate(operand_axes) if ax.constant == 1)

    def axes(self, axes):
        """Output axes from the contribution's axes."""
        axes = tuple(axes)[self.lead :]
        return tuple(ChunkAxis.const(1) if i in self.keep else ax for i, ax in enumerate(axes))

    def __call__(self, xp, v):
        if self.lead:
            v = xp.sum(v, axis=tuple(range(self.lead)))
        shrink = tuple(i for i in self.keep if v.shape[i] != 1)
        if shrink:
            v = xp.sum(v, axis=shrink, keepdims=True)
        return v

    @property
    def trivial(self):
        return self.lead == 0 and not self.keep

    def __eq__(self, other):
        return isinstance(other, Reduction) and frozen(vars(self)) == frozen(vars(other))

    def __hash__(self):
        return hash(frozen(vars(self)))


# ---------------------------------------------------------------- terms


@dataclass(frozen=True)
class Term:
    """``expr`` with key dim i standing for universe dim ``dims[i]``."""

    expr: object
    dims: tuple

    @property
    def dtype(self):
        return self.expr.type.dtype


def zip_terms(t1: Term, t2: Term, kernel) -> Term:
    """Join two terms on the universe dims they share (a natural join).

    Joins need dense relations; two terms over the same sparse key set (a Filter result and
    its cotangent) are joined through a dense numbering of their keys and mapped back."""
    ty1, ty2 = t1.expr.type, t2.expr.type
    if (not ty1.dense or not ty2.dense) and sorted(t1.dims) == sorted(t2.dims):
        t2 = reorder(t2, t1.dims)
        keys = sorted(ty1.iter_keys())
        if set(keys) == set(t2.expr.type.iter_keys()):
            rank = {k: (r,) for r, k in enumerate(keys)}
            back = {(r,): k for k, (r,) in rank.items()}
            num = KeyMap.table(rank, "numberKeys")
            j = Join(ReKey(t1.expr, num), ReKey(t2.expr, num), [0], [0], kernel)
            return Term(ReKey(j, KeyMap.table(back, "unnumberKeys")), t1.dims)
    common = [d for d in t1.dims if d in t2.dims]
    expr = Join(t1.expr, t2.expr, [t1.dims.index(d) for d in common], [t2.dims.index(d) for d in common], kernel)
    return Term(expr, t1.dims + tuple(d for d in t2.dims if d not in t1.dims))


def map_term(t: Term, kernel) -> Term:
    return Term(Transform(t.expr, kernel), t.dims)


def reorder(t: Term, order) -> Term:
    """The same relation with its key dims in universe order ``order`` (a ReKey, if needed)."""
    order = tuple(order)
    if order == t.dims:
        return t
    if sorted(order) != sorted(t.dims):
        raise GradError(f"internal: cannot reorder dims {t.dims} as {order}")
    return Term(ReKey(t.expr, KeyMap.selecting([t.dims.index(d) for d in order])), order)


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

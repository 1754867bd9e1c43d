"""Relation-Jacobian products of the seven TRA operators.

``rjp(node, cot, active, ctx)`` takes the cotangent of a node (∂loss/∂node, a ``Term`` in
the node's key numbering, possibly broadcast along some key dims) and returns the
contribution to each active child's cotangent. The rules (paper §4, with the errata):

- **Transform(f)** (the paper's σ with a kernel): the kernel's VJP (``vjp.py``), keys
  unchanged; a Join of g with the forward input/output when the derivative needs them.
- **Join(l, r, f)**: for each active side, the kernel's VJP joined with the other side
  (and the output, if needed), then Σ(add) over the key dims that side lacks: the
  paper's Σ(⋈(G, ⋈const(side, other))) with its two optimisations applied (the inner
  ⋈const becomes the other relation itself; Σ is dropped for a one-to-one join).
- **Aggregate(add)**: g broadcast back over the grouped-away dims (joined with the
  input's key set). Nothing is built: the cotangent is marked broadcast and consumers
  join with it directly (for a join-aggregation tree this is the paper's "differentiating
  the aggregation is unnecessary"). With a constant grouping the single tuple of g is
  what multiplies every input tuple (erratum: not the constant 1).
  **Aggregate(max/min)**: g to the tuples equal to the group's result, split evenly among ties.
- **ReKey(f)**: the inverse key map (ReKey is a bijection on keys); structural re-keyings
  (dim permutations, dropping or adding extent-1 dims) just rename the cotangent's dims.
- **Filter(p)**: g on the kept keys, zero on the others (the paper: a filtered key's
  gradient is implicitly zero). The TRA needs dense relations for joins, so the zeros
  are made explicit by a join with a small constant relation (``densify``).
- **Tile(d, s)**: Concat the gradient's tiles back along chunk axis d.
- **Concat(k, d)**: cut the gradient's chunks back into the pieces that were concatenated
  (Tile when they are equal, else a join with a relation of offsets).

Each rule is registered for its operator class in ``RULES``; any other operator (a new
per-tuple one) uses the rule ``register_rjp`` (``tra/vjp.py``) gave it, next to its class.
"""

from __future__ import annotations

import numpy as np

from .. import backends
from ..tra import Aggregate, Concat, Expr, Filter, Join, ReKey, Tile, Transform
from ..tra import kernels as K
from ..tra.dag import Registry
from ..tra.kernels import Bound, first_axes, with_axis
from ..tra.keyfuncs import KeyMap, KeyPred, dims_in
from ..tra.relation import ChunkAxis
from ..tra.vjp import rjp_for
from .terms import GradError, GradKernel, Term, cast, cast_term, group, materialize, reorder, xp_of, zip_terms
from .vjp import join_vjp, transform_vjp

# each operator's rule: (node, cot, active, ctx) -> [(child, contribution)]
RULES = Registry("backward pass", "registered RJP", "@register_rjp({}) (dask_tra.tra.vjp)", GradError)


def rjp(node, cot: Term, active, ctx):
    """[(child, contribution Term in the child's key numbering)] for the active children."""
    if not node.children:
        return []
    return RULES(node)(node, cot, active, ctx)


@RULES.register(Expr)
def _registered(node, cot, active, ctx):
    """An operator of one input with a rule from ``register_rjp``."""
    rule = rjp_for(type(node))
    if rule is None or len(node.children) != 1:
        raise RULES.missing(node)
    g = rule(node, materialize(cot, node.type, ctx).expr)
    return [(node.child, None if g is None else Term(g, _full(node.child)))]


def _one(rule):
    """A rule of a one-input operator, giving its child's contribution."""
    return lambda node, cot, active, ctx: [(node.child, rule(node, cot, ctx))]


def _full(node):
    return tuple(range(node.type.key_arity))


# ---------------------------------------------------------------- Transform


@RULES.register(Transform)
@_one
def _transform(node, cot, ctx):
    dims = _full(node)
    x, y = Term(node.child, dims), Term(node, dims)
    t = transform_vjp(node, cot, x, y, ctx)
    return None if t is None else cast_term(t, node.child.type.dtype)


# ---------------------------------------------------------------- Join


@RULES.register(Join)
def _join(node, cot, active, ctx):
    kl = node.left.type.key_arity
    rdims = tuple(node.right_out[d] for d in range(node.right.type.key_arity))
    terms = (Term(node.left, tuple(range(kl))), Term(node.right, rdims))
    y = Term(node, _full(node))
    out = []
    for side, child in enumerate(node.children):
        if id(child) not in active:
            continue
        t = join_vjp(node, cot, side, terms, y, ctx)
        if t is None:
            continue
        opdims = terms[side].dims
        t = group(t, opdims)  # Σ(add) over the key dims this side lacks (none: 1-1 join)
        t = Term(t.expr, tuple(opdims.index(d) for d in t.dims))
        out.append((child, cast_term(t, child.type.dtype)))
    return out


# ---------------------------------------------------------------- Aggregate

EXTREMA = (K.maximum, K.minimum, K.fmax, K.fmin)


@RULES.register(Aggregate)
def _aggregate_rule(node, cot, active, ctx):
    t = _aggregate(node, cot, ctx)
    return [t] if isinstance(t, tuple) else [(node.child, t)]  # a tuple: fused with the reduction below


def _aggregate(node, cot, ctx):
    g_by = node.group_by
    name = node.kernel.name
    if node.kernel == K.add:
        return Term(cot.expr, tuple(g_by[d] for d in cot.dims))
    if node.kernel in EXTREMA:
        fused = _reduction_max(node, cot, ctx)
        if fused is not None:
            return fused
        child = node.child
        dtype = child.type.dtype
        m = _argmask(Term(child, _full(child)), Term(node, g_by), dtype, f"argmask[{name}]")
        return reorder(_shared(m, group(m, g_by), cot, g_by, dtype, f"d{name}"), _full(child))
    raise GradError(
        f"{node.describe()}: aggregation with {name!r} is not differentiable (add, maximum and minimum are)"
    )


def _shared(mask, count, cot, g_by, dtype, name):
    """g shared evenly among the ``count`` tuples of a group where ``mask`` is 1."""
    g = Term(cot.expr, tuple(g_by[d] for d in cot.dims))
    gs = zip_terms(g, count, GradKernel("shareTies", Bound(_divided, dtype), 2, dtype=dtype))
    return zip_terms(mask, gs, GradKernel(name, Bound(_product, dtype), 2, axes=first_axes, dtype=dtype))


def _divided(dtype, gc, n):
    return cast(xp_of(gc, n), gc / n, dtype)


def _product(dtype, mc, gc):
    return cast(xp_of(mc, gc), mc * gc, dtype)


def _equal_mask(dtype, vc, ec):
    return cast(xp_of(vc, ec), xp_of(vc, ec).where(vc == ec, 1.0, 0.0), dtype)


def _argmask(values, extremum, dtype, name):
    """1.0 where ``values`` equal their group's ``extremum`` (the max/min that reached the output)."""
    return zip_terms(values, extremum, GradKernel(name, Bound(_equal_mask, dtype), 2, axes=first_axes, dtype=dtype))


def _count_ties(axes, dtype, c):
    return cast(xp_of(c), xp_of(c).sum(c, axis=axes, keepdims=True), dtype)


def _reduction_max(node, cot, ctx):
    """The frontend's max/min reduction, Aggregate(max)(Transform(chunk max)(X)), differentiated
    as one operation: g to the entries of X equal to the result, shared evenly among all the
    ties of a group (across chunks), like ``torch.amax`` and ``jax.numpy.max``. Returns
    (X, its contribution), or None when the pattern does not apply."""
    red = node.child
    k = getattr(red, "kernel", None)
    if not (
        isinstance(red, Transform)
        and isinstance(k, K.Reduce)
        and getattr(k, "op", None) in ("max", "min", "amax", "amin", "nanmax", "nanmin")
        and getattr(k, "keepdims", True)
        and ctx.consumers.get(id(red)) == 1
        and id(red) not in ctx.wrt
        and id(red.child) in ctx.active
    ):
        return None
    x = red.child
    axes = tuple(k.axes)
    g_by = node.group_by
    dtype = x.type.dtype
    m = _argmask(Term(x, _full(x)), Term(node, g_by), dtype, "argmask")
    ties = K.Reduce("sum", axes, keepdims=True, dtype=dtype)  # for its output axes: the reduced ones of extent 1
    local = Term(
        Transform(
            m.expr,
            GradKernel("countTies", Bound(_count_ties, axes, dtype), 1, axes=Bound(K.kernel_axes, ties), dtype=dtype),
        ),
        m.dims,
    )
    out = _shared(m, group(local, g_by), cot, g_by, dtype, f"d{k.op}")
    return x, reorder(out, _full(x))


# ---------------------------------------------------------------- ReKey


def rekey_structure(node):
    """For a ReKey that only permutes, drops or adds extent-1 key dims: per output dim, the
    input dim it copies (or None for a constant 0). None if the key map is anything else."""
    src = node.sources  # output key -> input key
    fin = node.child.type.frontier
    kin, kout = len(fin), node.type.key_arity
    pairs = list(src.items())
    if not pairs:
        return None
    mapping, used = [], set()
    for j in range(kout):
        cands = [d for d in range(kin) if all(o[j] == i[d] for o, i in pairs)]
        cands.sort(key=lambda d: (d in used, fin[d] == 1))
        if cands and (cands[0] not in used or fin[cands[0]] > 1):
            mapping.append(cands[0])
            used.add(cands[0])
        elif all(o[j] == 0 for o, _ in pairs):
            mapping.append(None)
        else:
            return None
    if any(fin[d] > 1 and mapping.count(d) != 1 for d in range(kin)):
        return None
    if any(m is not None and mapping.count(m) > 1 for m in mapping):
        return None
    return mapping


@RULES.register(ReKey)
@_one
def _rekey(node, cot, ctx):
    mapping = rekey_structure(node)
    if mapping is not None:
        keep = [i for i, d in enumerate(cot.dims) if mapping[d] is not None]
        expr = cot.expr
        if len(keep) < len(cot.dims):  # drop added extent-1 dims
            expr = ReKey(expr, KeyMap.selecting(keep))
        return Term(expr, tuple(mapping[cot.dims[i]] for i in keep))
    g = materialize(cot, node.type, ctx)
    src = node.sources
    inverse = KeyMap.table(src, f"inverse({node.key_fn})")
    return Term(ReKey(g.expr, inverse), _full(node.child))


# ---------------------------------------------------------------- Filter


@RULES.register(Filter)
@_one
def _filter(node, cot, ctx):
    g = materialize(cot, node.type, ctx)
    return densify(g, node.type, node.child.type, ctx)


def densify(g: Term, have, want, ctx):
    """A relation over ``want``'s keys equal to ``g`` on ``have``'s keys and zero elsewhere.

    The TRA has no union, so: number g's tuples 0..n-1 (ReKey, dense), join with a small
    constant relation keyed (tuple, slot) whose slot 0 passes the tuple through and whose
    other slots make zero chunks for the missing keys (spread over the tuples), drop the
    spare slots (Filter) and place every slot at its key (ReKey)."""
    kept = list(have.iter_keys())
    wanted = list(want.iter_keys())
    if set(kept) == set(wanted) and have.frontier == want.frontier:
        return g
    if not kept:
        return None
    n = len(kept)
    rank = {k: r for r, k in enumerate(kept)}
    zeros = [k for k in wanted if k not in rank]
    slots = {r: [kept[r]] for r in range(n)}
    for i, k in enumerate(zeros):
        slots[i % n].append(k)
    q = max(len(v) for v in slots.values())
    chunks, place = {}, {}
    sizes = np.zeros((n, q, want.rank), dtype=np.int64)
    for r in range(n):
        for s in range(q):
            if s < len(slots[r]):
                k = slots[r][s]
                shape = want.chunk_shape(k)
                chunks[(r, s)] = [1 if s == 0 else 0, *shape]
                sizes[r, s] = shape
                place[(r, s)] = k
            else:
                chunks[(r, s)] = [-1] + [0] * want.rank
    P = ctx.const(chunks, (n, q), np.int64, "grad-zeros")
    g1 = ReKey(g.expr, KeyMap.table({k: (r,) for k, r in rank.items()}, "rankKeys"))
    dtype = want.dtype
    axes = tuple(ChunkAxis((0, 1), sizes[:, :, a]) for a in range(want.rank))
    expr = Join(
        g1, P, [0], [0], GradKernel("zeroFill", Bound(_zero_fill, dtype), 2, axes=Bound(_fixed_axes, axes), dtype=dtype)
    )
    if len(place) < n * q:
        expr = Filter(expr, KeyPred(Bound(dims_in, (0, 1), frozenset(place)), "placedSlots", frozenset({0, 1})))
    expr = ReKey(expr, KeyMap.table(place, "placeSlots"))
    return Term(expr, tuple(range(want.key_arity)))


# ---------------------------------------------------------------- Tile and Concat


def _zero_fill(dtype, gc, p):
    """Slot 0 passes the gradient chunk through; the others make a zero chunk of their shape."""
    p = np.asarray(p)
    if p[0] == 1:
        return gc
    b = backends.backend_of(gc)
    return b.zeros(tuple(int(v) for v in p[1:]), dtype, b.device_of(gc))


def _fixed_axes(axes, frontier, *in_axes):
    return axes


@RULES.register(Tile)
@_one
def _tile(node, cot, ctx):
    g = materialize(cot, node.type, ctx)
    return Term(Concat(g.expr, node.type.key_arity - 1, node.tile_dim), _full(node.child))


@RULES.register(Concat)
@_one
def _concat(node, cot, ctx):
    g = materialize(cot, node.type, ctx)
    child = node.child.type
    kd, ad = node.key_dim, node.array_dim
    n = child.key_arity
    order = tuple(d for d in range(n) if d != kd) + (kd,)  # child dim of each key dim below
    ax = child.axes[ad].simplified()
    size = ax.constant
    if size is not None and size > 0 and not ax.key_dims:
        expr = Tile(g.expr, ad, size)
    else:  # ragged pieces: a join with each piece's (start, length)
        ext = child.axes[ad].dense(child.frontier)
        starts = np.cumsum(ext, axis=kd) - ext
        chunks = {k: [int(starts[k]), int(ext[k])] for k in child.iter_keys()}
        P = ctx.const(chunks, child.frontier, np.int64, "grad-pieces")
        lens = np.transpose(ext, order)
        piece_axis = ChunkAxis(tuple(range(n)), lens).simplified()
        others = [d for d in range(n) if d != kd]
        expr = Join(
            g.expr,
            P,
            range(n - 1),
            others,
            GradKernel(f"cut[{ad}]", Bound(_cut, ad), 2, axes=Bound(with_axis, ad, piece_axis), dtype=child.dtype),
        )
    return reorder(Term(expr, order), tuple(range(n)))


def _cut(axis, gc, p):
    """The piece ``[p[0], p[0] + p[1])`` of a chunk along ``axis``."""
    index = [slice(None)] * gc.ndim
    index[axis] = slice(int(p[0]), int(p[0]) + int(p[1]))
    return gc[tuple(index)]


__all__ = ["rjp", "densify", "rekey_structure"]

"""Vector-Jacobian products of the chunk kernels (the tensor extension of the paper, app. A).

Every TRA operator applies a kernel to chunks; its relation-Jacobian product (``rjp.py``)
needs the kernel's vector-Jacobian product, expressed again as TRA over the upstream
gradient ``g`` and the forward relations (the SAME node objects: forward intermediates are
reused, not recomputed). Rules are looked up by kernel type (``register_vjp``), then, for
elementwise kernels, by their operation (``register_partials``); nothing reads a kernel's
display name:

- **elementwise** kernels (the frontend's ``ElementwiseOp``: ufuncs, ``Transform(exp)``,
  ``Transform(multiply[·,2])`` with a baked scalar, ...; the TRA's ``Elementwise`` kernels
  ``Join(multiply)``, ...): the chain rule
  ``g · ∂f/∂argᵢ``. The partial derivative is a constant (linear ops: no forward data is
  read), or a function of at most two of the operands and the output ``y``; it is joined
  with ``g`` and, where the operand was broadcast, summed back to the operand's shape.
  Table ``PARTIALS``, keyed by operation (a ufunc, a module-level function, or a TRA
  ``Elementwise`` kernel); extend with ``register_partials``.
- **einsum / matmul** Join kernels: ``gA = einsum(o,b->a)(g, B)`` as a Join of the gradient
  with the other operand plus an Aggregate(add): itself a contraction the optimizer plans
  (for matmul: gL = G·Rᵀ, gR = Lᵀ·G).
- **reductions** (``sum``/``max``/``min`` over chunk axes), transpose, reshape, unary einsum
  (chunk diagonals), the frontend's gather (``take``), ``concatenate``, ``tril``/``triu``.

``register_vjp`` adds rules for other kernel classes or kernels (e.g. a ``Custom`` kernel).
Everything a rule puts in a kernel is a module-level function with its constants bound by
``Bound``, so gradients pickle like any other expression.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import backends
from ..array.elementwise import astype_values, clip_values, real_values, round_values, where_values
from ..array.kernels import ARRAY, Concatenate, ElementwiseOp, Pack, Permute, ReduceChunk, Reshape, Take, Triangle
from ..array.manipulation import broadcast_like
from ..array.reductions import quiet_divide
from ..tra import Join
from ..tra import kernels as K
from ..tra.kernels import Bound, first_axes, kernel_axes, second_axes, with_axis
from ..tra.relation import ChunkAxis
from .terms import GradError, GradKernel, Reduction, Term, cast, map_term, xp_of, zip_terms

Y = -1  # "the operation's output" in a partial's needs


# ---------------------------------------------------------------- elementwise partials


@dataclass(frozen=True)
class Partial:
    """∂f/∂argᵢ as ``fn(xp, *values)`` of the args (by position) and output (``Y``) it needs.
    ``fn`` is module-level (it goes into the gradient's kernels)."""

    needs: tuple
    fn: Callable


def P(needs, fn):
    return Partial(tuple(needs), fn)


def _ones_where(xp, cond):
    return xp.where(cond, 1.0, 0.0)


def _tie_share(win, a, b, xp):
    return xp.where(win, 1.0, xp.where(a == b, 0.5, 0.0))  # ties split evenly (JAX, PyTorch)


def _d_max_first(xp, a, b):
    return _tie_share(a > b, a, b, xp)


def _d_max_second(xp, a, b):
    return _tie_share(b > a, a, b, xp)


def _d_min_first(xp, a, b):
    return _tie_share(a < b, a, b, xp)


def _d_min_second(xp, a, b):
    return _tie_share(b < a, a, b, xp)


def _clip_partial(xp, v, lo, hi):
    m = v == v
    if lo is not None:
        m = m & (v >= lo)
    if hi is not None:
        m = m & (v <= hi)
    return _ones_where(xp, m)


def _where_first(xp, c):
    return _ones_where(xp, c != 0)


def _where_second(xp, c):
    return _ones_where(xp, c == 0)


_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _d_y(xp, y):
    return y  # noqa: E704


def _d_other(xp, b):
    return b  # noqa: E704


def _d_reciprocal_of(xp, b):
    return 1 / b  # noqa: E704


def _d_divide_right(xp, y, b):
    return -y / b  # noqa: E704


def _d_power_base(xp, a, b):
    return b * a ** (b - 1)  # noqa: E704


def _d_power_exponent(xp, y, a):
    return y * xp.log(a)  # noqa: E704


def _d_square(xp, a):
    return 2 * a  # noqa: E704


def _d_reciprocal(xp, y):
    return -y * y  # noqa: E704


def _d_sqrt(xp, y):
    return 0.5 / y  # noqa: E704


def _d_cbrt(xp, y):
    return 1 / (3 * y * y)  # noqa: E704


def _d_abs(xp, a):
    return xp.sign(a)  # noqa: E704


def _d_exp2(xp, y):
    return y * _LN2  # noqa: E704


def _d_expm1(xp, y):
    return y + 1  # noqa: E704


def _d_log(xp, a):
    return 1 / a  # noqa: E704


def _d_log2(xp, a):
    return 1 / (a * _LN2)  # noqa: E704


def _d_log10(xp, a):
    return 1 / (a * _LN10)  # noqa: E704


def _d_log1p(xp, a):
    return 1 / (1 + a)  # noqa: E704


def _d_logaddexp(xp, a, y):
    return xp.exp(a - y)  # noqa: E704


def _d_logaddexp2(xp, a, y):
    return 2.0 ** (a - y)  # noqa: E704


def _d_sin(xp, a):
    return xp.cos(a)  # noqa: E704


def _d_cos(xp, a):
    return -xp.sin(a)  # noqa: E704


def _d_tan(xp, y):
    return 1 + y * y  # noqa: E704


def _d_arcsin(xp, a):
    return 1 / xp.sqrt(1 - a * a)  # noqa: E704


def _d_arccos(xp, a):
    return -1 / xp.sqrt(1 - a * a)  # noqa: E704


def _d_arctan(xp, a):
    return 1 / (1 + a * a)  # noqa: E704


def _d_sinh(xp, a):
    return xp.cosh(a)  # noqa: E704


def _d_cosh(xp, a):
    return xp.sinh(a)  # noqa: E704


def _d_tanh(xp, y):
    return 1 - y * y  # noqa: E704


def _d_arcsinh(xp, a):
    return 1 / xp.sqrt(a * a + 1)  # noqa: E704


def _d_arccosh(xp, a):
    return 1 / xp.sqrt(a * a - 1)  # noqa: E704


def _d_arctanh(xp, a):
    return 1 / (1 - a * a)  # noqa: E704


def _d_arctan2_first(xp, a, b):
    return b / (a * a + b * b)  # noqa: E704


def _d_arctan2_second(xp, a, b):
    return -a / (a * a + b * b)  # noqa: E704


def _d_hypot(xp, a, y):
    return a / y  # noqa: E704


_DIVIDE = (P([1], _d_reciprocal_of), P([Y, 1], _d_divide_right))
_MAX = (P([0, 1], _d_max_first), P([0, 1], _d_max_second))
_MIN = (P([0, 1], _d_min_first), P([0, 1], _d_min_second))

# keyed by operation: a NumPy ufunc (the frontend's ufuncs), a module-level function (the
# frontend's other elementwise operations), or a TRA Elementwise kernel
PARTIALS: dict = {
    # arithmetic
    np.add: (1, 1),
    np.subtract: (1, -1),
    np.multiply: (P([1], _d_other), P([0], _d_other)),
    np.divide: _DIVIDE,
    quiet_divide: _DIVIDE,
    np.power: (P([0, 1], _d_power_base), P([Y, 0], _d_power_exponent)),
    np.float_power: (P([0, 1], _d_power_base), P([Y, 0], _d_power_exponent)),
    np.negative: (-1,),
    np.positive: (1,),
    np.conjugate: (1,),
    real_values: (1,),
    astype_values: (1,),
    broadcast_like: (1, 0),
    np.square: (P([0], _d_square),),
    np.reciprocal: (P([Y], _d_reciprocal),),
    np.sqrt: (P([Y], _d_sqrt),),
    np.cbrt: (P([Y], _d_cbrt),),
    np.absolute: (P([0], _d_abs),),
    np.fabs: (P([0], _d_abs),),
    np.maximum: _MAX,
    np.minimum: _MIN,
    np.fmax: _MAX,
    np.fmin: _MIN,
    where_values: (0, P([0], _where_first), P([0], _where_second)),
    clip_values: (P([0, 1, 2], _clip_partial), 0, 0),
    # exponentials and logarithms
    np.exp: (P([Y], _d_y),),
    np.exp2: (P([Y], _d_exp2),),
    np.expm1: (P([Y], _d_expm1),),
    np.log: (P([0], _d_log),),
    np.log2: (P([0], _d_log2),),
    np.log10: (P([0], _d_log10),),
    np.log1p: (P([0], _d_log1p),),
    np.logaddexp: (P([0, Y], _d_logaddexp), P([1, Y], _d_logaddexp)),
    np.logaddexp2: (P([0, Y], _d_logaddexp2), P([1, Y], _d_logaddexp2)),
    # trigonometric and hyperbolic
    np.sin: (P([0], _d_sin),),
    np.cos: (P([0], _d_cos),),
    np.tan: (P([Y], _d_tan),),
    np.arcsin: (P([0], _d_arcsin),),
    np.arccos: (P([0], _d_arccos),),
    np.arctan: (P([0], _d_arctan),),
    np.sinh: (P([0], _d_sinh),),
    np.cosh: (P([0], _d_cosh),),
    np.tanh: (P([Y], _d_tanh),),
    np.arcsinh: (P([0], _d_arcsinh),),
    np.arccosh: (P([0], _d_arccosh),),
    np.arctanh: (P([0], _d_arctanh),),
    np.arctan2: (P([0, 1], _d_arctan2_first), P([0, 1], _d_arctan2_second)),
    np.hypot: (P([0, Y], _d_hypot), P([1, Y], _d_hypot)),
    np.deg2rad: (math.pi / 180,),
    np.radians: (math.pi / 180,),
    np.rad2deg: (180 / math.pi,),
    np.degrees: (180 / math.pi,),
    # piecewise constant: zero derivative (as in JAX and PyTorch)
    **{f: (0,) * 2 for f in (np.sign, np.floor, np.ceil, np.trunc, np.rint, np.heaviside, round_values)},
    # the TRA's own elementwise kernels
    K.add: (1, 1),
    K.sub: (1, -1),
    K.mul: (P([1], _d_other), P([0], _d_other)),
    K.maximum: _MAX,
    K.minimum: _MIN,
    K.fmax: _MAX,
    K.fmin: _MIN,
    K.identity: (1,),
}


def register_partials(op, partials: tuple):
    """Partial derivatives of an elementwise operation ``op`` (a ufunc, the module-level
    function given to ``elementwise``, or a TRA ``Elementwise`` kernel), one per argument
    position: a number (a constant derivative) or ``Partial(needs, fn)``: ``fn(xp, *values)``
    of the arguments (positions) and output (``Y``) listed in ``needs`` (at most two of
    them arrays), a module-level function."""
    PARTIALS[op] = tuple(partials)


def elementwise_parts(kernel):
    """(partials, arguments with ``ARRAY`` for the array operands) of an elementwise kernel,
    or None if it is not one with known partials. A ufunc called with keyword arguments or
    for one output of several has none."""
    if isinstance(kernel, ElementwiseOp):
        op = kernel.op
        if op.index is not None or (isinstance(op.fn, np.ufunc) and op.params):
            return None
        key, args = op.fn, list(kernel.args)
    elif isinstance(kernel, K.Elementwise):
        key, args = kernel, [ARRAY] * kernel.arity
    else:
        return None
    partials = PARTIALS.get(key)
    if partials is None or len(partials) < len(args):
        return None
    return partials, args


def _const_value(partial, values):
    """Evaluate a partial whose needed values are all constants (NumPy)."""
    with np.errstate(all="ignore"):
        return partial.fn(np, *values)


def _partial_at(partial, template, chunks):
    """The partial at chunk level: ``template`` lists its needed values, ``ARRAY`` where a chunk goes."""
    it = iter(chunks)
    subst = [next(it) if v is ARRAY else v for v in template]
    if backends.backend_of(*chunks) is not backends.NUMPY:
        # torch/CuPy functions take no Python numbers: constants as 0-d chunks of the chunks' dtype
        dtype = backends.numpy_dtype(chunks[0].dtype)
        subst = backends.align(chunks[0], *(v if hasattr(v, "shape") else np.asarray(v, dtype) for v in subst))[1][1:]
    with np.errstate(all="ignore"):
        return partial.fn(xp_of(*chunks), *subst)


def _scaled(red, dtype, c, v):
    """``v`` (times the constant ``c``, if any) summed back by ``red``, cast."""
    xp = xp_of(v)
    return cast(xp, red(xp, v if c is None else v * c), dtype)


def _times_partial(red, dtype, partial, template, gc, t):
    xp = xp_of(gc, t)
    return cast(xp, red(xp, gc * _partial_at(partial, template, (t,))), dtype)


def _partial_cast(partial, template, dtype, a, b):
    return cast(xp_of(a, b), _partial_at(partial, template, (a, b)), dtype)


def _times(red, dtype, gc, dc):
    xp = xp_of(gc, dc)
    return cast(xp, red(xp, gc * dc), dtype)


def _reduced_axes(red, frontier, a):
    return red.axes(a)


def _reduced_broadcast_axes(red, name, frontier, a, b):
    return red.axes(K.broadcast_axes(frontier, (a, b), name))


def chain(g: Term, partial, values: dict, operand_axes, out_rank, dtype, name) -> Term | None:
    """``g · partial`` summed back to the operand's chunk shape (see ``Reduction``).

    ``values``: argument position (or ``Y``) -> a Term (forward relation) or a constant."""
    red = Reduction(operand_axes, out_rank)
    dtype = np.dtype(dtype)
    if isinstance(partial, Partial):
        vals = [values[i] for i in partial.needs]
        terms = [v for v in vals if isinstance(v, Term)]
        if not terms:
            partial = _const_value(partial, vals)
    if not isinstance(partial, Partial):
        c = partial
        if np.all(np.asarray(c) == 0):
            return None
        if isinstance(c, numbers.Number) and c == 1:
            if red.trivial and g.dtype == dtype:
                return g
            c = None
        return map_term(
            g, GradKernel(f"d{name}", Bound(_scaled, red, dtype, c), 1, axes=Bound(_reduced_axes, red), dtype=dtype)
        )
    template = tuple(ARRAY if isinstance(v, Term) else v for v in vals)
    axes = Bound(_reduced_broadcast_axes, red, name)
    if len(terms) == 1:
        k = GradKernel(f"d{name}", Bound(_times_partial, red, dtype, partial, template), 2, axes=axes, dtype=dtype)
        return zip_terms(g, terms[0], k)
    if len(terms) == 2:
        d = zip_terms(
            terms[0],
            terms[1],
            GradKernel(f"partial{name}", Bound(_partial_cast, partial, template, dtype), 2, dtype=dtype),
        )
        return zip_terms(g, d, GradKernel(f"d{name}", Bound(_times, red, dtype), 2, axes=axes, dtype=dtype))
    raise GradError(f"{name}: a partial derivative may read at most two forward relations")


def elementwise_transform(node, g, x: Term, y: Term):
    parts = elementwise_parts(node.kernel)
    if parts is None:
        return NotImplemented
    partials, args = parts
    which = args.index(ARRAY)
    values = {i: (x if a is ARRAY else a) for i, a in enumerate(args)}
    values[Y] = y
    return chain(
        g, partials[which], values, node.child.type.axes, node.type.rank, node.child.type.dtype, node.kernel.name
    )


def elementwise_join(node, g, side, terms, y):
    parts = elementwise_parts(node.kernel)
    if parts is None:
        return NotImplemented
    partials, args = parts
    positions = [i for i, a in enumerate(args) if a is ARRAY]
    values = {i: a for i, a in enumerate(args)}
    values[positions[0]], values[positions[1]] = terms[0], terms[1]
    values[Y] = y
    child = node.children[side]
    return chain(
        g, partials[positions[side]], values, child.type.axes, node.type.rank, child.type.dtype, node.kernel.name
    )


# ---------------------------------------------------------------- Transform kernels


def _expand_axes(xp, v, axes):
    shape = list(v.shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return xp.reshape(v, tuple(shape))


def _dsum(keepdims, axes, dtype, xc, gc):
    xp = xp_of(xc, gc)
    gc = gc if keepdims else _expand_axes(xp, gc, axes)
    return cast(xp, xp.broadcast_to(cast(xp, gc, dtype), tuple(xc.shape)), dtype)


def _extremum_share(keepdims, axes, dtype, xc, yc):
    """1/t where the chunk equals its extremum (t: ties in the chunk), else 0."""
    xp = xp_of(xc, yc)
    yc = yc if keepdims else _expand_axes(xp, yc, axes)
    m = xp.where(xc == yc, 1.0, 0.0)
    return cast(xp, m / xp.sum(m, axis=axes, keepdims=True), dtype)


def _dextremum(keepdims, axes, dtype, gc, dc):
    xp = xp_of(gc, dc)
    gc = gc if keepdims else _expand_axes(xp, gc, axes)
    return cast(xp, gc * dc, dtype)


def reduce_transform(node, g, x: Term, y: Term):
    """Chunk reductions (the frontend's ``ReduceChunk``, keepdims; the TRA's ``Reduce``)."""
    k = node.kernel
    op, axes = k.op, tuple(k.axes)
    keepdims = getattr(k, "keepdims", True)
    dtype = node.child.type.dtype
    if op in ("sum", "nansum"):
        return zip_terms(x, g, GradKernel("dsum", Bound(_dsum, keepdims, axes, dtype), 2, axes=first_axes, dtype=dtype))
    if op in ("max", "min", "amax", "amin"):
        d = zip_terms(
            x,
            y,
            GradKernel(
                f"argmask[{op}]", Bound(_extremum_share, keepdims, axes, dtype), 2, axes=first_axes, dtype=dtype
            ),
        )
        return zip_terms(
            g, d, GradKernel(f"d{op}", Bound(_dextremum, keepdims, axes, dtype), 2, axes=second_axes, dtype=dtype)
        )
    raise GradError(
        f"{node.describe()}: no derivative for the chunk reduction {op!r} (sum, mean, max and min are differentiable)"
    )


def _cast_after(kernel, dtype, v):
    return cast(xp_of(v), kernel(v), dtype)


def permute_transform(node, g, x, y):
    inv = tuple(int(i) for i in np.argsort(node.kernel.perm))
    back, dtype = Permute(inv), node.child.type.dtype
    return map_term(
        g, GradKernel(back.name, Bound(_cast_after, back, dtype), 1, axes=Bound(kernel_axes, back), dtype=dtype)
    )


def _reshape_like(dtype, xc, gc):
    xp = xp_of(xc, gc)
    return cast(xp, xp.reshape(gc, tuple(xc.shape)), dtype)


def reshape_transform(node, g, x, y):
    """Reshape back: extents from metadata when each input axis is constant or proportional to
    an output axis (always so for the frontend's reshapes), else from the forward chunk."""
    spec = tuple(node.kernel.spec)
    dtype = node.child.type.dtype
    inv = []
    for i, ax in enumerate(node.child.type.axes):
        c = ax.constant
        if c is not None:
            inv.append(c)
            continue
        hit = [(j, s) for j, s in enumerate(spec) if isinstance(s, tuple) and s[0] == i]
        if not hit:
            inv = None
            break
        j, (_, num, den) = hit[0]
        inv.append((j, den, num))
    if inv is None:
        return zip_terms(x, g, GradKernel("reshapeBack", Bound(_reshape_like, dtype), 2, axes=first_axes, dtype=dtype))
    back = Reshape(inv)
    return map_term(
        g, GradKernel("reshapeBack", Bound(_cast_after, back, dtype), 1, axes=Bound(kernel_axes, back), dtype=dtype)
    )


def _deinsum(s, o, dtype, xc, gc):
    """g of a one-operand einsum ``s->o`` spread back over the chunk's index space ``s``."""
    xp = xp_of(xc, gc)
    uniq = "".join(dict.fromkeys(s))
    sizes = {c: xc.shape[s.index(c)] for c in uniq}
    present = "".join(c for c in uniq if c in o)
    ge = K._einsum(xp, f"{o}->{present}", gc) if o != present else gc
    ge = xp.reshape(ge, tuple(sizes[c] if c in o else 1 for c in uniq))
    ge = xp.broadcast_to(ge, tuple(sizes[c] for c in uniq))
    if uniq == s:
        return cast(xp, ge, dtype)
    b = backends.backend_of(xc)
    out = b.zeros(tuple(xc.shape), dtype, b.device_of(xc))
    _, idx = backends.align(out, *np.indices(tuple(sizes[c] for c in uniq), sparse=True))
    out[tuple(idx[1 + uniq.index(c)] for c in s)] = ge
    return out


def einsum_transform(node, g, x, y):
    """A one-operand einsum ``s->o`` (sums, chunk diagonals): g spread back over ``s``."""
    k = node.kernel
    if not k.plain:
        raise GradError(f"{node.describe()}: extended einsums (custom combine/aggregate) are not differentiable")
    (s,), o = k.inputs, k.output
    dtype = node.child.type.dtype
    if len(set(s)) == len(s) and sorted(o) == sorted(s):  # a permutation: no forward data needed
        back = K.Einsum(f"{o}->{s}")
        return map_term(
            g,
            GradKernel(
                f"einsum[{o}->{s}]", Bound(_cast_after, back, dtype), 1, axes=Bound(kernel_axes, back), dtype=dtype
            ),
        )
    return zip_terms(
        x, g, GradKernel(f"deinsum[{s}->{o}]", Bound(_deinsum, s, o, dtype), 2, axes=first_axes, dtype=dtype)
    )


# ---------------------------------------------------------------- Join kernels


def einsum_join(node, g, side, terms, y, ctx):
    """gA = einsum(o,b->a)(g, B): a Join of the gradient with the other operand; the caller's
    Aggregate(add) over the dims A lacks makes it a contraction (gL = G·Rᵀ, gR = Lᵀ·G)."""
    k = node.kernel
    if not k.plain:
        raise GradError(f"{node.describe()}: extended einsums (custom combine/aggregate) are not differentiable")
    mine, other = (k.inputs[0], k.inputs[1]) if side == 0 else (k.inputs[1], k.inputs[0])
    o = k.output
    if len(set(mine)) != len(mine):
        raise GradError(
            f"{node.describe()}: a repeated index inside one operand of a join kernel ({mine!r}) is not differentiable"
        )
    missing = [c for c in mine if c not in o and c not in other]
    if missing:
        raise GradError(
            f"{node.describe()}: index {missing[0]!r} is summed inside one operand only; "
            f"not differentiable here (sum that operand first)"
        )
    return zip_terms(g, terms[1 - side], K.Einsum(f"{o},{other}->{mine}"))


def _with_extent(p, e):
    return np.concatenate([np.asarray(e), np.asarray(p)])


def _with_extent_axes(frontier, pa, ea):
    return (ChunkAxis(pa[0].key_dims, pa[0].sizes + 1),)


def _scatter(axis, dtype, gc, ep):
    """A piece's gradient placed in zeros of its block's extent (``ep``: extent, then positions)."""
    ext_, p = int(ep[0]), np.asarray(ep[1:])
    shape = list(gc.shape)
    shape[axis] = ext_
    b = backends.backend_of(gc)
    out = b.zeros(shape, dtype, b.device_of(gc))
    if p.shape[0] == 4 and p[3] == -1:  # a strided slice: (start, step, count, -1)
        p = int(p[0]) + int(p[1]) * np.arange(int(p[2]))
    return b.add_at(out, axis, p, gc)


def take_join(node, g, side, terms, y, ctx):
    """The frontend's gather ``Join([axis],[0],take)(X, pieces)``: scatter g into zeros of the
    block's extent (block extents from metadata, positions from the forward piece relation)."""
    if side != 0:
        return None
    axis = node.kernel.axis
    xt, pt = node.left.type, node.right.type
    ax = xt.axes[axis].simplified()
    if ax.key_dims not in ((), (axis,)):
        raise GradError(f"{node.describe()}: block extents along axis {axis} vary with other key dims")
    ext = {i: (int(ax.sizes) if not ax.key_dims else int(ax.sizes[i])) for i in range(pt.frontier[0])}
    E = ctx.const({k: [ext[k[0]]] for k in pt.iter_keys()}, pt.frontier, np.int64, "grad-extents")
    ep_kernel = GradKernel("withExtent", _with_extent, 2, axes=_with_extent_axes, dtype=np.int64)
    EP = Term(Join(node.right, E, [0, 1], [0, 1], ep_kernel), terms[1].dims)
    return zip_terms(
        g,
        EP,
        GradKernel(
            f"scatter[{axis}]",
            Bound(_scatter, axis, xt.dtype),
            2,
            axes=Bound(with_axis, axis, xt.axes[axis]),
            dtype=xt.dtype,
        ),
    )


def _split_piece(axis, side, dtype, gc, a):
    """The part of a concatenated block's gradient that came from ``a`` (left: 0, right: 1)."""
    index = [slice(None)] * gc.ndim
    index[axis] = slice(0, a.shape[axis]) if side == 0 else slice(a.shape[axis], None)
    return cast(xp_of(gc, a), gc[tuple(index)], dtype)


def concatenate_join(node, g, side, terms, y, ctx):
    axis = node.kernel.axis
    dtype = node.children[side].type.dtype
    axes = second_axes if side == 0 else Bound(with_axis, axis, node.right.type.axes[axis])
    return zip_terms(
        g, terms[0], GradKernel(f"split[{axis}]", Bound(_split_piece, axis, side, dtype), 2, axes=axes, dtype=dtype)
    )


def _dtriangle(which, dtype, gc, p):
    return cast(xp_of(gc), getattr(backends.numpy_like(gc), which)(gc, int(np.asarray(p).reshape(-1)[0])), dtype)


def triangle_join(node, g, side, terms, y, ctx):
    if side != 0:
        return None
    which, dtype = node.kernel.which, node.left.type.dtype
    return zip_terms(
        g, terms[1], GradKernel(f"d{which}", Bound(_dtriangle, which, dtype), 2, axes=first_axes, dtype=dtype)
    )


# ---------------------------------------------------------------- registry

# kernel class (or kernel) -> rule; a kernel's class is looked up along its MRO
TRANSFORM_RULES: dict = {
    ReduceChunk: reduce_transform,
    K.Reduce: reduce_transform,
    Permute: permute_transform,
    Reshape: reshape_transform,
    K.Einsum: einsum_transform,
}
JOIN_RULES: dict = {K.Einsum: einsum_join, Take: take_join, Concatenate: concatenate_join, Triangle: triangle_join}


def register_vjp(key, rule, kind="transform"):
    """Register the VJP of a chunk kernel class, or of one kernel (found by equality), ahead
    of any rule for its base classes.

    ``kind="transform"``: ``rule(node, g, x, y)`` for ``Transform(kernel)``; ``kind="join"``:
    ``rule(node, g, side, terms, y)`` for ``Join(..., kernel)`` and operand ``side`` (0 left,
    1 right). ``g``, ``x``, ``y``, ``terms[i]`` are ``Term``s (the upstream gradient, the
    forward input(s), the forward output); the rule returns a Term (build it with
    ``zip_terms``/``map_term`` and kernels such as ``GradKernel``) or None (no gradient)."""
    if not isinstance(key, (type, K.Kernel)):
        raise TypeError(f"register_vjp: key must be a kernel class or a kernel, got {key!r}")
    if kind not in ("transform", "join"):
        raise ValueError(f"register_vjp: kind must be 'transform' or 'join', got {kind!r}")
    table = TRANSFORM_RULES if kind == "transform" else JOIN_RULES
    table[key] = rule if kind == "transform" else _WithoutContext(rule)


class _WithoutContext:
    """A registered join rule without the builder's context argument."""

    def __init__(self, rule):
        self.rule = rule

    def __call__(self, node, g, side, terms, y, ctx):
        return self.rule(node, g, side, terms, y)


def _rule_for(table, kernel):
    rule = table.get(kernel) if not isinstance(kernel, type) else None
    if rule is not None:
        return rule
    for cls in type(kernel).__mro__:
        if cls in table:
            return table[cls]
    return None


def transform_vjp(node, g, x, y, ctx):
    k = node.kernel
    rule = _rule_for(TRANSFORM_RULES, k)
    if rule is not None:
        return rule(node, g, x, y)
    out = elementwise_transform(node, g, x, y)
    if out is not NotImplemented:
        return out
    raise GradError(
        f"{node.describe()}: no derivative rule for kernel {k.name!r} "
        f"({type(k).__qualname__}); it is not differentiable (register one with "
        f"dask_tra.autodiff.register_vjp)"
    )


def join_vjp(node, g, side, terms, y, ctx):
    k = node.kernel
    if isinstance(node.left, Join) and isinstance(node.left.kernel, Pack):
        raise GradError(
            f"{node.describe()}: elementwise functions of three or more arrays "
            f"(where/clip with array arguments) are not differentiable"
        )
    rule = _rule_for(JOIN_RULES, k)
    if rule is not None:
        return rule(node, g, side, terms, y, ctx)
    out = elementwise_join(node, g, side, terms, y)
    if out is not NotImplemented:
        return out
    raise GradError(
        f"{node.describe()}: no derivative rule for join kernel {k.name!r} "
        f"({type(k).__qualname__}); it is not differentiable (register one with "
        f"dask_tra.autodiff.register_vjp(..., kind='join'))"
    )


__all__ = [
    "PARTIALS",
    "Partial",
    "P",
    "Y",
    "register_partials",
    "register_vjp",
    "elementwise_parts",
    "transform_vjp",
    "join_vjp",
    "chain",
]

"""Vector-Jacobian products of the chunk kernels (the tensor extension of the paper, app. A).

Every TRA operator applies a kernel to chunks; its relation-Jacobian product (``rjp.py``)
needs the kernel's vector-Jacobian product, expressed again as TRA over the upstream
gradient ``g`` and the forward relations (the SAME node objects: forward intermediates are
reused, not recomputed). Rules are looked up by kernel class, then by kernel name:

- **elementwise** kernels (the frontend's ufuncs, ``Transform(exp)``, ``Join(multiply)``,
  ``Transform(multiply[·,2])`` with a baked scalar, ...): the chain rule
  ``g · ∂f/∂argᵢ``. The partial derivative is a constant (linear ops: no forward data is
  read), or a function of at most two of the operands and the output ``y``; it is joined
  with ``g`` and, where the operand was broadcast, summed back to the operand's shape.
  Table ``PARTIALS``; extend with ``register_partials``.
- **einsum / matmul** Join kernels: ``gA = einsum(o,b->a)(g, B)`` as a Join of the gradient
  with the other operand plus an Aggregate(add): itself a contraction the optimizer plans
  (for matmul: gL = G·Rᵀ, gR = Lᵀ·G).
- **reductions** (``sum``/``max``/``min`` over chunk axes), transpose, reshape, unary einsum
  (chunk diagonals), the frontend's gather (``take``), ``concatenate``, ``tril``/``triu``.

``register_vjp`` adds rules for other kernels (e.g. a ``Custom`` kernel).
"""
from __future__ import annotations

import ast
import math
import numbers
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..tra import Join
from ..tra import kernels as K
from ..tra.relation import ChunkAxis
from .terms import GradError, GradKernel, Reduction, Term, cast, map_term, xp_of, zip_terms

ARR = object()  # marks an array operand in a parsed kernel name
Y = -1  # "the operation's output" in a partial's needs


# ---------------------------------------------------------------- elementwise partials

@dataclass(frozen=True)
class Partial:
    """∂f/∂argᵢ as ``fn(xp, *values)`` of the args (by position) and output (``Y``) it needs."""

    needs: tuple
    fn: Callable


def P(needs, fn):
    return Partial(tuple(needs), fn)


def _ones_where(xp, cond):
    return xp.where(cond, 1.0, 0.0)


def _max_partial(first):
    def fn(xp, a, b):
        win = (a > b) if first else (b > a)
        return xp.where(win, 1.0, xp.where(a == b, 0.5, 0.0))  # ties split evenly (JAX, PyTorch)
    return fn


def _min_partial(first):
    def fn(xp, a, b):
        win = (a < b) if first else (b < a)
        return xp.where(win, 1.0, xp.where(a == b, 0.5, 0.0))
    return fn


def _sigmoid(xp, v):
    e = xp.exp(-xp.abs(v))
    return xp.where(v >= 0, 1 / (1 + e), e / (1 + e))


def _clip_partial(xp, v, lo, hi):
    m = v == v
    if lo is not None:
        m = m & (v >= lo)
    if hi is not None:
        m = m & (v <= hi)
    return _ones_where(xp, m)


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_DIVIDE = (P([1], lambda xp, b: 1 / b), P([Y, 1], lambda xp, y, b: -y / b))
_POWER = (P([0, 1], lambda xp, a, b: b * a ** (b - 1)), P([Y, 0], lambda xp, y, a: y * xp.log(a)))

PARTIALS: dict = {
    # arithmetic
    "add": (1, 1), "subtract": (1, -1),
    "multiply": (P([1], lambda xp, b: b), P([0], lambda xp, a: a)),
    "divide": _DIVIDE, "true_divide": _DIVIDE,
    "power": _POWER, "float_power": _POWER,
    "negative": (-1,), "positive": (1,), "identity": (1,), "conj": (1,), "conjugate": (1,), "real": (1,),
    "astype": (1, 0), "broadcastTo": (1, 0),
    "square": (P([0], lambda xp, a: 2 * a),),
    "reciprocal": (P([Y], lambda xp, y: -y * y),),
    "sqrt": (P([Y], lambda xp, y: 0.5 / y),),
    "cbrt": (P([Y], lambda xp, y: 1 / (3 * y * y)),),
    "absolute": (P([0], lambda xp, a: xp.sign(a)),), "abs": (P([0], lambda xp, a: xp.sign(a)),),
    "fabs": (P([0], lambda xp, a: xp.sign(a)),),
    "maximum": (P([0, 1], _max_partial(True)), P([0, 1], _max_partial(False))),
    "minimum": (P([0, 1], _min_partial(True)), P([0, 1], _min_partial(False))),
    "fmax": (P([0, 1], _max_partial(True)), P([0, 1], _max_partial(False))),
    "fmin": (P([0, 1], _min_partial(True)), P([0, 1], _min_partial(False))),
    "where": (0, P([0], lambda xp, c: _ones_where(xp, c != 0)), P([0], lambda xp, c: _ones_where(xp, c == 0))),
    "clip": (P([0, 1, 2], _clip_partial), 0, 0),
    # exponentials and logarithms
    "exp": (P([Y], lambda xp, y: y),),
    "exp2": (P([Y], lambda xp, y: y * _LN2),),
    "expm1": (P([Y], lambda xp, y: y + 1),),
    "log": (P([0], lambda xp, a: 1 / a),),
    "log2": (P([0], lambda xp, a: 1 / (a * _LN2)),),
    "log10": (P([0], lambda xp, a: 1 / (a * _LN10)),),
    "log1p": (P([0], lambda xp, a: 1 / (1 + a)),),
    "logaddexp": (P([0, Y], lambda xp, a, y: xp.exp(a - y)), P([1, Y], lambda xp, b, y: xp.exp(b - y))),
    "logaddexp2": (P([0, Y], lambda xp, a, y: 2.0 ** (a - y)), P([1, Y], lambda xp, b, y: 2.0 ** (b - y))),
    # trigonometric and hyperbolic
    "sin": (P([0], lambda xp, a: xp.cos(a)),),
    "cos": (P([0], lambda xp, a: -xp.sin(a)),),
    "tan": (P([Y], lambda xp, y: 1 + y * y),),
    "arcsin": (P([0], lambda xp, a: 1 / xp.sqrt(1 - a * a)),),
    "arccos": (P([0], lambda xp, a: -1 / xp.sqrt(1 - a * a)),),
    "arctan": (P([0], lambda xp, a: 1 / (1 + a * a)),),
    "sinh": (P([0], lambda xp, a: xp.cosh(a)),),
    "cosh": (P([0], lambda xp, a: xp.sinh(a)),),
    "tanh": (P([Y], lambda xp, y: 1 - y * y),),
    "arcsinh": (P([0], lambda xp, a: 1 / xp.sqrt(a * a + 1)),),
    "arccosh": (P([0], lambda xp, a: 1 / xp.sqrt(a * a - 1)),),
    "arctanh": (P([0], lambda xp, a: 1 / (1 - a * a)),),
    "arctan2": (P([0, 1], lambda xp, a, b: b / (a * a + b * b)), P([0, 1], lambda xp, a, b: -a / (a * a + b * b))),
    "hypot": (P([0, Y], lambda xp, a, y: a / y), P([1, Y], lambda xp, b, y: b / y)),
    "deg2rad": (math.pi / 180,), "radians": (math.pi / 180,),
    "rad2deg": (180 / math.pi,), "degrees": (180 / math.pi,),
    # piecewise constant: zero derivative (as in JAX and PyTorch)
    **{n: (0,) * 2 for n in ("sign", "floor", "ceil", "trunc", "rint", "round", "around", "heaviside",
                             "fix", "stop_gradient")},
    # dask_tra.autodiff.nn
    "sigmoid": (P([Y], lambda xp, y: y * (1 - y)),),
    "relu": (P([0], lambda xp, a: _ones_where(xp, a > 0)),),  # 0 at 0, like jax.nn.relu / torch.relu
    "softplus": (P([0], _sigmoid),),
}


def register_partials(op_name: str, partials: tuple):
    """Partial derivatives of an elementwise op, one per argument position: a number (a
    constant derivative) or ``Partial(needs, fn)``: ``fn(xp, *values)`` of the arguments
    (positions) and output (``Y``) listed in ``needs`` (at most two of them arrays)."""
    PARTIALS[op_name] = tuple(partials)


_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(.*)\])?$", re.S)


def _split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def _literal(s):
    if s == "·":
        return ARR
    special = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
    if s in special:
        return special[s]
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError):
        return s


def parse_elementwise(kernel, n_arrays):
    """(op name, args) for a frontend elementwise kernel: ``multiply[·,2]`` is multiply(ARR, 2);
    a plain name takes ``n_arrays`` arrays; a unary kernel with labels but no ``·`` (the
    frontend's ``divide[n]`` of mean, ``astype[float32]``, ``round[2]``) takes the array first.
    None if the name does not read this way."""
    m = _NAME.match(getattr(kernel, "name", ""))
    if m is None:
        return None
    op, inner = m.group(1), m.group(2)
    if op not in PARTIALS:
        return None
    if inner is None:
        args = [ARR] * n_arrays
    else:
        args = [_literal(s) for s in _split_top(inner)]
        if not any(a is ARR for a in args) and n_arrays == 1:
            args = [ARR] + args
    if sum(a is ARR for a in args) != n_arrays or len(PARTIALS[op]) < len(args):
        return None
    return op, args


def _const_value(partial, values):
    """Evaluate a partial whose needed values are all constants (NumPy)."""
    with np.errstate(all="ignore"):
        return partial.fn(np, *values)


def chain(g: Term, partial, values: dict, operand_axes, out_rank, dtype, name) -> Term | None:
    """``g · partial`` summed back to the operand's chunk shape (see ``Reduction``).

    ``values``: argument position (or ``Y``) -> a Term (forward relation) or a constant."""
    red = Reduction(operand_axes, out_rank)
    dtype = np.dtype(dtype)

    def finish(xp, v):
        return cast(xp, red(xp, v), dtype)

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
            fn = lambda v: finish(xp_of(v), v)  # noqa: E731
        else:
            fn = lambda v: finish(xp_of(v), v * c)  # noqa: E731
        return map_term(g, GradKernel(f"d{name}", fn, 1, axes=lambda f, a: red.axes(a), dtype=dtype))

    def local(*chunks):  # the partial at chunk level, constants substituted
        it = iter(chunks)
        subst = [next(it) if isinstance(v, Term) else v for v in vals]
        xp = xp_of(*chunks)
        with np.errstate(all="ignore"):
            return partial.fn(xp, *subst)

    if len(terms) == 1:
        def fn(gc, t):
            return finish(xp_of(gc, t), gc * local(t))
        k = GradKernel(f"d{name}", fn, 2, axes=lambda f, a, b: red.axes(K.broadcast_axes(f, (a, b), name)),
                       dtype=dtype)
        return zip_terms(g, terms[0], k)
    if len(terms) == 2:
        def part(a, b):
            return cast(xp_of(a, b), local(a, b), dtype)
        d = zip_terms(terms[0], terms[1], GradKernel(f"partial{name}", part, 2, dtype=dtype))

        def fn2(gc, dc):
            return finish(xp_of(gc, dc), gc * dc)
        k = GradKernel(f"d{name}", fn2, 2, axes=lambda f, a, b: red.axes(K.broadcast_axes(f, (a, b), name)),
                       dtype=dtype)
        return zip_terms(g, d, k)
    raise GradError(f"{name}: a partial derivative may read at most two forward relations")


def elementwise_transform(node, g, x: Term, y: Term):
    parsed = parse_elementwise(node.kernel, 1)
    if parsed is None:
        return NotImplemented
    op, args = parsed
    which = args.index(ARR)
    values = {i: (x if a is ARR else a) for i, a in enumerate(args)}
    values[Y] = y
    partial = PARTIALS[op][which]
    return chain(g, partial, values, node.child.type.axes, node.type.rank, node.child.type.dtype, op)


def elementwise_join(node, g, side, terms, y):
    parsed = parse_elementwise(node.kernel, 2)
    if parsed is None:
        return NotImplemented
    op, args = parsed
    positions = [i for i, a in enumerate(args) if a is ARR]
    values = {i: a for i, a in enumerate(args)}
    values[positions[0]], values[positions[1]] = terms[0], terms[1]
    values[Y] = y
    partial = PARTIALS[op][positions[side]]
    child = node.children[side]
    return chain(g, partial, values, child.type.axes, node.type.rank, child.type.dtype, op)


# ---------------------------------------------------------------- Transform kernels

def _cls(kernel):
    return type(kernel).__name__


def _expand_axes(xp, v, axes):
    shape = list(v.shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return xp.reshape(v, tuple(shape))


def reduce_transform(node, g, x: Term, y: Term):
    """Chunk reductions (the frontend's ``ReduceChunk``, keepdims; the TRA's ``Reduce``)."""
    k = node.kernel
    op, axes = k.op, tuple(k.axes)
    keepdims = getattr(k, "keepdims", True)
    dtype = node.child.type.dtype
    if op in ("sum", "nansum"):
        def fn(xc, gc):
            xp = xp_of(xc, gc)
            gc = gc if keepdims else _expand_axes(xp, gc, axes)
            return cast(xp, xp.broadcast_to(cast(xp, gc, dtype), tuple(xc.shape)), dtype)
        return zip_terms(x, g, GradKernel("dsum", fn, 2, axes=lambda f, a, b: a, dtype=dtype))
    if op in ("max", "min", "amax", "amin"):
        def mask(xc, yc):  # ties share the gradient evenly
            xp = xp_of(xc, yc)
            yc = yc if keepdims else _expand_axes(xp, yc, axes)
            m = xp.where(xc == yc, 1.0, 0.0)
            return cast(xp, m / xp.sum(m, axis=axes, keepdims=True), dtype)
        d = zip_terms(x, y, GradKernel(f"argmask[{op}]", mask, 2, axes=lambda f, a, b: a, dtype=dtype))

        def fn(gc, dc):
            xp = xp_of(gc, dc)
            gc = gc if keepdims else _expand_axes(xp, gc, axes)
            return cast(xp, gc * dc, dtype)
        return zip_terms(g, d, GradKernel(f"d{op}", fn, 2, axes=lambda f, a, b: b, dtype=dtype))
    raise GradError(f"{node.describe()}: no derivative for the chunk reduction {op!r} "
                    f"(sum, mean, max and min are differentiable)")


def permute_transform(node, g, x, y):
    perm = tuple(node.kernel.perm)
    inv = tuple(int(i) for i in np.argsort(perm))
    dtype = node.child.type.dtype
    k = GradKernel(f"transpose{list(inv)}", lambda v: cast(xp_of(v), xp_of(v).permute_dims(v, inv), dtype), 1,
                   axes=lambda f, a: tuple(a[i] for i in inv), dtype=dtype)
    return map_term(g, k)


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
        def fn(xc, gc):
            xp = xp_of(xc, gc)
            return cast(xp, xp.reshape(gc, tuple(xc.shape)), dtype)
        return zip_terms(x, g, GradKernel("reshapeBack", fn, 2, axes=lambda f, a, b: a, dtype=dtype))

    def ext(s, shape):
        return s if isinstance(s, int) else shape[s[0]] * s[1] // s[2]

    def fn1(v):
        xp = xp_of(v)
        return cast(xp, xp.reshape(v, tuple(ext(s, v.shape) for s in inv)), dtype)

    def axes(f, a):
        return tuple(ChunkAxis.const(s) if isinstance(s, int) else
                     ChunkAxis(a[s[0]].key_dims, a[s[0]].sizes * s[1] // s[2]) for s in inv)
    return map_term(g, GradKernel("reshapeBack", fn1, 1, axes=axes, dtype=dtype))


def einsum_transform(node, g, x, y):
    """A one-operand einsum ``s->o`` (sums, chunk diagonals): g spread back over ``s``."""
    k = node.kernel
    if not getattr(k, "plain", True):
        raise GradError(f"{node.describe()}: extended einsums (custom combine/aggregate) are not differentiable")
    (s,), o = k.inputs, k.output
    dtype = node.child.type.dtype
    uniq = "".join(dict.fromkeys(s))
    if uniq == s and sorted(o) == sorted(s):  # a permutation: no forward data needed
        sub = f"{o}->{s}"
        return map_term(g, GradKernel(f"einsum[{sub}]", lambda v: cast(xp_of(v), K._einsum(xp_of(v), sub, v), dtype),
                                      1, axes=lambda f, a: tuple(a[o.index(c)] for c in s), dtype=dtype))

    def fn(xc, gc):
        xp = xp_of(xc, gc)
        sizes = {c: xc.shape[s.index(c)] for c in uniq}
        present = "".join(c for c in uniq if c in o)
        ge = K._einsum(xp, f"{o}->{present}", gc) if o != present else gc
        ge = xp.reshape(ge, tuple(sizes[c] if c in o else 1 for c in uniq))
        ge = xp.broadcast_to(ge, tuple(sizes[c] for c in uniq))
        if uniq == s:
            return cast(xp, ge, dtype)
        out = np.zeros(tuple(xc.shape), dtype=dtype)
        idx = np.indices(tuple(sizes[c] for c in uniq), sparse=True)
        out[tuple(idx[uniq.index(c)] for c in s)] = np.asarray(ge)
        return out
    return zip_terms(x, g, GradKernel(f"deinsum[{s}->{o}]", fn, 2, axes=lambda f, a, b: a, dtype=dtype))


# ---------------------------------------------------------------- Join kernels

def einsum_join(node, g, side, terms, y):
    """gA = einsum(o,b->a)(g, B): a Join of the gradient with the other operand; the caller's
    Aggregate(add) over the dims A lacks makes it a contraction (gL = G·Rᵀ, gR = Lᵀ·G)."""
    k = node.kernel
    if not getattr(k, "plain", True):
        raise GradError(f"{node.describe()}: extended einsums (custom combine/aggregate) are not differentiable")
    mine, other = (k.inputs[0], k.inputs[1]) if side == 0 else (k.inputs[1], k.inputs[0])
    o = k.output
    if len(set(mine)) != len(mine):
        raise GradError(f"{node.describe()}: a repeated index inside one operand of a join kernel "
                        f"({mine!r}) is not differentiable")
    missing = [c for c in mine if c not in o and c not in other]
    if missing:
        raise GradError(f"{node.describe()}: index {missing[0]!r} is summed inside one operand only; "
                        f"not differentiable here (sum that operand first)")
    return zip_terms(g, terms[1 - side], K.Einsum(f"{o},{other}->{mine}"))


def take_join(node, g, side, terms, y, ctx):
    """The frontend's gather ``Join([axis],[0],take)(X, pieces)``: scatter g into zeros of the
    block's extent (block extents from metadata, positions from the forward piece relation)."""
    if side != 0:
        return None
    axis = int(re.match(r"take\[(\d+)\]", node.kernel.name).group(1))
    xt, pt = node.left.type, node.right.type
    ax = xt.axes[axis].simplified()
    if ax.key_dims not in ((), (axis,)):
        raise GradError(f"{node.describe()}: block extents along axis {axis} vary with other key dims")
    ext = {i: (int(ax.sizes) if not ax.key_dims else int(ax.sizes[i])) for i in range(pt.frontier[0])}
    E = ctx.const({k: [ext[k[0]]] for k in pt.iter_keys()}, pt.frontier, np.int64, "grad-extents")
    ep_kernel = GradKernel("withExtent", lambda p, e: np.concatenate([np.asarray(e), np.asarray(p)]), 2,
                           axes=lambda f, pa, ea: (ChunkAxis(pa[0].key_dims, pa[0].sizes + 1),), dtype=np.int64)
    EP = Term(Join(node.right, E, [0, 1], [0, 1], ep_kernel), terms[1].dims)
    dtype = xt.dtype

    def scatter(gc, ep):
        ext_, p = int(ep[0]), np.asarray(ep[1:])
        shape = list(gc.shape)
        shape[axis] = ext_
        out = np.zeros(shape, dtype=dtype)
        if p.shape[0] == 4 and p[3] == -1:
            start, step, cnt = int(p[0]), int(p[1]), int(p[2])
            stop = start + step * (cnt - 1) + (1 if step > 0 else -1)
            index = [slice(None)] * len(shape)
            index[axis] = slice(start, stop if stop >= 0 else None, step)
            out[tuple(index)] = gc
        else:
            np.add.at(np.moveaxis(out, axis, 0), p, np.moveaxis(np.asarray(gc), axis, 0))
        return out

    xaxis = xt.axes[axis]

    def axes(f, ga, ea):
        return tuple(xaxis if i == axis else a for i, a in enumerate(ga))
    return zip_terms(g, EP, GradKernel(f"scatter[{axis}]", scatter, 2, axes=axes, dtype=dtype))


def concatenate_join(node, g, side, terms, y):
    axis = int(re.match(r"concatenate\[(\d+)\]", node.kernel.name).group(1))
    child = node.children[side]
    dtype = child.type.dtype
    baxis = node.right.type.axes[axis]

    def fn(gc, a):
        xp = xp_of(gc, a)
        index = [slice(None)] * gc.ndim
        index[axis] = slice(0, a.shape[axis]) if side == 0 else slice(a.shape[axis], None)
        return cast(xp, gc[tuple(index)], dtype)

    def axes(f, ga, aa):
        return aa if side == 0 else tuple(baxis if i == axis else x for i, x in enumerate(ga))
    return zip_terms(g, terms[0], GradKernel(f"split[{axis}]", fn, 2, axes=axes, dtype=dtype))


def triangle_join(node, g, side, terms, y):
    if side != 0:
        return None
    which = node.kernel.name
    dtype = node.left.type.dtype

    def fn(gc, p):
        return cast(xp_of(gc), getattr(np, which)(gc, int(np.asarray(p).reshape(-1)[0])), dtype)
    return zip_terms(g, terms[1], GradKernel(f"d{which}", fn, 2, axes=lambda f, a, b: a, dtype=dtype))


# ---------------------------------------------------------------- registry

TRANSFORM_RULES: list = []  # (matcher, rule(node, g, x, y[, ctx]))
JOIN_RULES: list = []  # (matcher, rule(node, g, side, terms, y[, ctx]))


def _matcher(key):
    if isinstance(key, type):
        return lambda k: isinstance(k, key)
    if isinstance(key, str):
        if key.endswith("*"):
            return lambda k: getattr(k, "name", "").startswith(key[:-1])
        return lambda k: getattr(k, "name", None) == key
    if callable(key):
        return key
    raise TypeError(f"register_vjp: key must be a kernel class, a kernel name or a predicate, got {key!r}")


def register_vjp(key, rule, kind="transform"):
    """Register the VJP of a chunk kernel (looked up before the built-in rules).

    ``key``: a Kernel class, a kernel name (``"name*"`` for a prefix) or a predicate on the kernel.
    ``kind="transform"``: ``rule(node, g, x, y)`` for ``Transform(kernel)``; ``kind="join"``:
    ``rule(node, g, side, terms, y)`` for ``Join(..., kernel)`` and operand ``side`` (0 left,
    1 right). ``g``, ``x``, ``y``, ``terms[i]`` are ``Term``s (the upstream gradient, the
    forward input(s), the forward output); the rule returns a Term (build it with
    ``zip_terms``/``map_term`` and kernels such as ``GradKernel``) or None (no gradient)."""
    (TRANSFORM_RULES if kind == "transform" else JOIN_RULES).insert(0, (_matcher(key), rule))


_BUILTIN_TRANSFORM = [
    (lambda k: _cls(k) in ("ReduceChunk", "Reduce") and hasattr(k, "op"), reduce_transform),
    (lambda k: hasattr(k, "perm") and _cls(k) == "Permute", permute_transform),
    (lambda k: hasattr(k, "spec") and _cls(k) == "Reshape", reshape_transform),
    (lambda k: isinstance(k, K.Einsum), einsum_transform),
]
_BUILTIN_JOIN = [
    (lambda k: isinstance(k, K.Einsum), einsum_join),
    (lambda k: re.fullmatch(r"take\[\d+\]", getattr(k, "name", "")) is not None, take_join),
    (lambda k: re.fullmatch(r"concatenate\[\d+\]", getattr(k, "name", "")) is not None, concatenate_join),
    (lambda k: getattr(k, "name", None) in ("tril", "triu") and _cls(k) != "Elementwise", triangle_join),
]


def transform_vjp(node, g, x, y, ctx):
    k = node.kernel
    for match, rule in TRANSFORM_RULES + _BUILTIN_TRANSFORM:
        if match(k):
            return rule(node, g, x, y)
    out = elementwise_transform(node, g, x, y)
    if out is not NotImplemented:
        return out
    raise GradError(f"{node.describe()}: no derivative rule for kernel {k.name!r} "
                    f"({_cls(k)}); it is not differentiable (register one with "
                    f"dask_tra.autodiff.register_vjp)")


def join_vjp(node, g, side, terms, y, ctx):
    k = node.kernel
    if _cls(node.left) == "Join" and getattr(node.left.kernel, "name", "").startswith("pack"):
        raise GradError(f"{node.describe()}: elementwise functions of three or more arrays "
                        f"(where/clip with array arguments) are not differentiable")
    for match, rule in JOIN_RULES + _BUILTIN_JOIN:
        if match(k):
            if rule is take_join:
                return take_join(node, g, side, terms, y, ctx)
            return rule(node, g, side, terms, y)
    out = elementwise_join(node, g, side, terms, y)
    if out is not NotImplemented:
        return out
    raise GradError(f"{node.describe()}: no derivative rule for join kernel {k.name!r} "
                    f"({_cls(k)}); it is not differentiable (register one with "
                    f"dask_tra.autodiff.register_vjp(..., kind='join'))")


__all__ = ["PARTIALS", "Partial", "P", "Y", "register_partials", "register_vjp", "parse_elementwise",
           "transform_vjp", "join_vjp", "chain"]

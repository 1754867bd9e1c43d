"""The derivatives of the TRA's own chunk kernels: the vector-Jacobian products of
``Elementwise`` (the chain rule over the partials of ``add``, ``multiply``, ...), ``Reduce``
and ``Einsum``, registered in ``dask_tra.tra.vjp`` by kernel type, with the backward pass's
chunk functions they build.

The TRA (``tra/kernels.py``) defines the kernels and the building blocks every kernel's VJP
uses (``GradKernel``, ``chain``, ``Reduction``, ``cast``: the frontend's kernels in
``array/kernels.py``, below this package, register their VJPs with them); the rules for the
TRA's kernels live here, with the backward pass, and the package imports this module, so
they are registered before any gradient is built.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import backends
from ..tra.kernels import (
    ARRAY,
    MAX_PARTIALS,
    MIN_PARTIALS,
    MUL_PARTIALS,
    Bound,
    Einsum,
    Elementwise,
    GradKernel,
    Reduce,
    _einsum,
    add,
    cast,
    cast_after,
    elementwise_join_vjp,
    elementwise_transform_vjp,
    first_axes,
    fmax,
    fmin,
    identity,
    kernel_axes,
    maximum,
    minimum,
    mul,
    second_axes,
    sub,
    xp_of,
)
from ..tra.vjp import GradError, TermLike, partials_for, register_partials, register_vjp

# ---------------------------------------------------------------- elementwise kernels: the chain rule


@register_vjp(Elementwise)
def _elementwise_transform(node: Any, g: TermLike, x: TermLike, y: TermLike) -> Any:
    k = node.kernel
    return elementwise_transform_vjp(node, g, x, y, partials_for(k), [ARRAY] * k.arity)


@register_vjp(Elementwise, kind="join")
def _elementwise_join(node: Any, g: TermLike, side: int, terms: Sequence[TermLike], y: TermLike) -> Any:
    k = node.kernel
    return elementwise_join_vjp(node, g, side, terms, y, partials_for(k), [ARRAY] * k.arity)


# the partials of the TRA's elementwise kernels

register_partials(add, (1, 1))
register_partials(sub, (1, -1))
register_partials(mul, MUL_PARTIALS)
register_partials(maximum, MAX_PARTIALS)
register_partials(minimum, MIN_PARTIALS)
register_partials(fmax, MAX_PARTIALS)
register_partials(fmin, MIN_PARTIALS)
register_partials(identity, (1,))


# ---------------------------------------------------------------- chunk reductions


def _expand_axes(xp: Any, v: Any, axes: Sequence[int]) -> Any:
    shape = list(v.shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return xp.reshape(v, tuple(shape))


def _dsum(keepdims: bool, axes: tuple, dtype: np.dtype, xc: Any, gc: Any) -> Any:
    xp = xp_of(xc, gc)
    gc = gc if keepdims else _expand_axes(xp, gc, axes)
    return cast(xp, xp.broadcast_to(cast(xp, gc, dtype), tuple(xc.shape)), dtype)


def _extremum_share(keepdims: bool, axes: tuple, dtype: np.dtype, xc: Any, yc: Any) -> Any:
    """1/t where the chunk equals its extremum (t: ties in the chunk), else 0."""
    xp = xp_of(xc, yc)
    yc = yc if keepdims else _expand_axes(xp, yc, axes)
    m = xp.where(xc == yc, 1.0, 0.0)
    return cast(xp, m / xp.sum(m, axis=axes, keepdims=True), dtype)


def _dextremum(keepdims: bool, axes: tuple, dtype: np.dtype, gc: Any, dc: Any) -> Any:
    xp = xp_of(gc, dc)
    gc = gc if keepdims else _expand_axes(xp, gc, axes)
    return cast(xp, gc * dc, dtype)


@register_vjp(Reduce)
def reduce_vjp(node: Any, g: TermLike, x: TermLike, y: TermLike) -> TermLike:
    """Chunk reductions (``Reduce``: the TRA's, and the frontend's with ``keepdims``)."""
    k = node.kernel
    op, axes = k.op, tuple(k.axes)
    keepdims = getattr(k, "keepdims", True)
    dtype = node.child.type.dtype
    if op in ("sum", "nansum"):
        return x.zip(g, GradKernel("dsum", Bound(_dsum, keepdims, axes, dtype), 2, axes=first_axes, dtype=dtype))
    if op in ("max", "min", "amax", "amin"):
        d = x.zip(
            y,
            GradKernel(
                f"argmask[{op}]", Bound(_extremum_share, keepdims, axes, dtype), 2, axes=first_axes, dtype=dtype
            ),
        )
        return g.zip(
            d, GradKernel(f"d{op}", Bound(_dextremum, keepdims, axes, dtype), 2, axes=second_axes, dtype=dtype)
        )
    raise GradError(
        f"{node.describe()}: no derivative for the chunk reduction {op!r} (sum, mean, max and min are differentiable)"
    )


# ---------------------------------------------------------------- einsums


def _deinsum(s: str, o: str, dtype: np.dtype, xc: Any, gc: Any) -> Any:
    """g of a one-operand einsum ``s->o`` spread back over the chunk's index space ``s``."""
    xp = xp_of(xc, gc)
    uniq = "".join(dict.fromkeys(s))
    sizes = {c: xc.shape[s.index(c)] for c in uniq}
    present = "".join(c for c in uniq if c in o)
    ge = _einsum(xp, f"{o}->{present}", gc) if o != present else gc
    ge = xp.reshape(ge, tuple(sizes[c] if c in o else 1 for c in uniq))
    ge = xp.broadcast_to(ge, tuple(sizes[c] for c in uniq))
    if uniq == s:
        return cast(xp, ge, dtype)
    b = backends.backend_of(xc)
    out = b.zeros(tuple(xc.shape), dtype, b.device_of(xc))
    _, idx = backends.align(out, *np.indices(tuple(sizes[c] for c in uniq), sparse=True))
    out[tuple(idx[1 + uniq.index(c)] for c in s)] = ge
    return out


@register_vjp(Einsum)
def _einsum_transform(node: Any, g: TermLike, x: TermLike, y: TermLike) -> TermLike:
    """A one-operand einsum ``s->o`` (sums, chunk diagonals): g spread back over ``s``."""
    k = node.kernel
    if not k.plain:
        raise GradError(f"{node.describe()}: extended einsums (custom combine/aggregate) are not differentiable")
    (s,), o = k.inputs, k.output
    dtype = node.child.type.dtype
    if len(set(s)) == len(s) and sorted(o) == sorted(s):  # a permutation: no forward data needed
        back = Einsum(f"{o}->{s}")
        return g.map(
            GradKernel(
                f"einsum[{o}->{s}]", Bound(cast_after, back, dtype), 1, axes=Bound(kernel_axes, back), dtype=dtype
            ),
        )
    return x.zip(g, GradKernel(f"deinsum[{s}->{o}]", Bound(_deinsum, s, o, dtype), 2, axes=first_axes, dtype=dtype))


@register_vjp(Einsum, kind="join")
def _einsum_join(node: Any, g: TermLike, side: int, terms: Sequence[TermLike], y: TermLike) -> TermLike:
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
    return g.zip(terms[1 - side], Einsum(f"{o},{other}->{mine}"))

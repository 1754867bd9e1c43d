"""Vector-Jacobian products of the chunk kernels (the tensor extension of the paper, app. A).

Every TRA operator applies a kernel to chunks; its relation-Jacobian product (``rjp.py``)
needs the kernel's vector-Jacobian product, expressed again as TRA over the upstream
gradient ``g`` and the forward relations (the SAME node objects: forward intermediates are
reused, not recomputed). The rules live with the kernels: the module that defines a kernel
class registers its VJP in ``dask_tra.tra.vjp`` (``register_vjp``), and elementwise kernels
find theirs by their operation's partial derivatives (``register_partials``); nothing reads a
kernel's display name:

- ``dask_tra/tra/kernels.py``: the TRA's ``Elementwise`` kernels (``Join(multiply)``, ...:
  the chain rule ``g · ∂f/∂argᵢ``, ``chain``), ``Einsum`` (one operand: sums, diagonals; a
  join: ``gA = einsum(o,b->a)(g, B)``, with the caller's Aggregate(add) a contraction the
  optimizer plans; for matmul gL = G·Rᵀ, gR = Lᵀ·G) and ``Reduce``;
- ``dask_tra/array/kernels.py``: the frontend's ``ElementwiseOp`` (NumPy ufuncs' partials;
  ``Transform(multiply[·,2])`` reads its baked scalar from the kernel's ``args``),
  ``ReduceChunk``, ``Permute``, ``Reshape``, the gather ``Take``, ``Concatenate``, ``Triangle``;
- here: the partials of the frontend's own elementwise functions (``where``, ``clip``,
  ``astype``, ...), and the dispatch (``transform_vjp``, ``join_vjp``).

``register_vjp`` adds rules for other kernel classes or kernels (e.g. a ``Custom`` kernel).
Everything a rule puts in a kernel is a module-level function with its constants bound by
``Bound``, so gradients pickle like any other expression.
"""

from __future__ import annotations

from ..array.elementwise import astype_values, clip_values, real_values, round_values, where_values
from ..array.kernels import DIVIDE_PARTIALS, Pack
from ..array.manipulation import broadcast_like
from ..array.reductions import quiet_divide
from ..tra import Join
from ..tra.kernels import chain
from ..tra.vjp import PARTIALS, P, Partial, Y, register_partials, register_vjp, vjp_for
from .terms import GradError

# ---------------------------------------------------------------- the frontend's elementwise functions


def _ones_where(xp, cond):
    return xp.where(cond, 1.0, 0.0)


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


register_partials(quiet_divide, DIVIDE_PARTIALS)
register_partials(real_values, (1,))
register_partials(astype_values, (1,))
register_partials(broadcast_like, (1, 0))
register_partials(where_values, (0, P([0], _where_first), P([0], _where_second)))
register_partials(clip_values, (P([0, 1, 2], _clip_partial), 0, 0))
register_partials(round_values, (0, 0))


# ---------------------------------------------------------------- dispatch


def transform_vjp(node, g, x, y, ctx):
    k = node.kernel
    rule = vjp_for(k, "transform")
    out = NotImplemented if rule is None else rule(node, g, x, y, ctx)
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
    rule = vjp_for(k, "join")
    out = NotImplemented if rule is None else rule(node, g, side, terms, y, ctx)
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
    "transform_vjp",
    "join_vjp",
    "chain",
]

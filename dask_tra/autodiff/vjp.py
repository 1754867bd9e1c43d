"""Vector-Jacobian products of the chunk kernels (the tensor extension of the paper, app. A).

Every TRA operator applies a kernel to chunks; its relation-Jacobian product (``rjp.py``)
needs the kernel's vector-Jacobian product, expressed again as TRA over the upstream
gradient ``g`` and the forward relations (the SAME node objects: forward intermediates are
reused, not recomputed). Rules are registered in ``dask_tra.tra.vjp`` by kernel class
(``register_vjp``): the frontend's kernels' by the module that defines them, the TRA's own
kernels' by the backward pass; elementwise kernels find theirs by their operation's partial
derivatives (``register_partials``); nothing reads a kernel's display name:

- ``dask_tra/autodiff/kernels.py``: the TRA's ``Elementwise`` kernels (``Join(multiply)``, ...:
  the chain rule ``g · ∂f/∂argᵢ``, ``chain``), ``Einsum`` (one operand: sums, diagonals; a
  join: ``gA = einsum(o,b->a)(g, B)``, with the caller's Aggregate(add) a contraction the
  optimizer plans; for matmul gL = G·Rᵀ, gR = Lᵀ·G) and ``Reduce``;
- ``dask_tra/array/kernels.py``: the frontend's ``ElementwiseOp`` (NumPy ufuncs' partials;
  ``Transform(multiply[·,2])`` reads its baked scalar from the kernel's ``args``),
  ``Permute``, ``Reshape``, the gather ``Take`` and ``Cut``, ``Concatenate``, ``Triangle``;
- ``dask_tra/array/elementwise.py``, ``reductions.py``, ``manipulation.py``: the partials of
  the frontend's own functions on values (``where``, ``clip``, ``astype``, ...), next to them;
- here: the dispatch (``transform_vjp``, ``join_vjp``).

``register_vjp`` adds rules for other kernel classes or kernels (e.g. a ``Custom`` kernel).
Everything a rule puts in a kernel is a module-level function with its constants bound by
``Bound``, so gradients pickle like any other expression.
"""

from __future__ import annotations

from ..array.kernels import Pack
from ..tra import Join
from ..tra.kernels import chain
from ..tra.vjp import PARTIALS, P, Partial, Y, register_partials, register_vjp, vjp_for
from . import kernels as _kernels  # noqa: F401 (registers the VJPs of the TRA's kernels)
from .terms import GradError

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

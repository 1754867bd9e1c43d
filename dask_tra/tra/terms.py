"""Terms: TRA expressions placed in a common key space, what kernel VJP rules build on.

A *term* is a TRA expression whose key dims are named by dims of a common key space (the
"universe" of one relation-Jacobian product: a Join's output key, a Transform's key, an
Aggregate's input key). Joining two terms joins them on the universe dims they share,
exactly like a natural join, so a rule can be written as "multiply the upstream gradient by
the derivative" without counting key positions by hand. The backward pass itself is in
``dask_tra.autodiff``; the rules are registered with the kernels (``tra/vjp.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .expr import Expr, Join, ReKey, Transform
from .kernels import Kernel
from .keyfuncs import KeyMap
from .vjp import GradError


@dataclass(frozen=True)
class Term:
    """``expr`` with key dim i standing for universe dim ``dims[i]``."""

    expr: Any
    dims: tuple

    @property
    def dtype(self) -> Any:
        return self.expr.type.dtype

    def map(self, kernel: Kernel) -> Term:
        return map_term(self, kernel)

    def zip(self, other: Term, kernel: Kernel) -> Term:
        return zip_terms(self, other, kernel)


def zip_terms(t1: Term, t2: Term, kernel: Kernel) -> Term:
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
    expr: Expr = Join(t1.expr, t2.expr, [t1.dims.index(d) for d in common], [t2.dims.index(d) for d in common], kernel)
    return Term(expr, t1.dims + tuple(d for d in t2.dims if d not in t1.dims))


def map_term(t: Term, kernel: Kernel) -> Term:
    return Term(Transform(t.expr, kernel), t.dims)


def reorder(t: Term, order: Iterable) -> Term:
    """The same relation with its key dims in universe order ``order`` (a ReKey, if needed)."""
    order = tuple(order)
    if order == t.dims:
        return t
    if sorted(order) != sorted(t.dims):
        raise GradError(f"internal: cannot reorder dims {t.dims} as {order}")
    return Term(ReKey(t.expr, KeyMap.selecting([t.dims.index(d) for d in order])), order)


__all__ = ["Term", "zip_terms", "map_term", "reorder"]

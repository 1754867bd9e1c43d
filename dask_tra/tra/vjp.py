"""The registry of derivatives: vector-Jacobian products of chunk kernels by kernel type, the
partial derivatives of elementwise operations, and relation-Jacobian products of operators
the backward pass does not know (``register_rjp``: a new per-tuple operator's, next to it).

The module that defines a frontend kernel class registers its VJP next to it
(``array/kernels.py``), so adding a kernel with its derivative touches one file; the TRA's
own kernels have theirs with the backward pass (``autodiff/kernels.py``). The backward pass
(``dask_tra.autodiff``) looks rules up here by kernel type (``vjp_for``), never by display name.
This module imports nothing else of the package but its errors: the kernel modules import it,
and it knows kernels only as keys.

A rule receives *terms* (``TermLike``: an expression with its key dims named in a common key
space; ``dask_tra.tra.terms.Term``) and returns a term, or None when no gradient flows:

- ``kind="transform"``: ``rule(node, g, x, y)`` for ``Transform(kernel)``: ``g`` the upstream
  gradient, ``x`` the forward input, ``y`` the forward output;
- ``kind="join"``: ``rule(node, g, side, terms, y)`` for ``Join(..., kernel)`` and operand
  ``side`` (0 left, 1 right): ``terms`` the two forward operands.

A rule registered with ``context=True`` also gets the backward pass's context last (it makes
small constant relations: ``ctx.const(chunks, frontier, dtype, what)``). A rule may return
``NotImplemented`` to say it has no derivative for this particular kernel (an elementwise
kernel whose operation has no registered partials): the backward pass then reports the
kernel as not differentiable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from .errors import TRAError

Rule = Callable[..., Any]


class GradError(TRAError):
    """The gradient cannot be built (a non-differentiable or unsupported operation)."""


class TermLike(Protocol):
    """What a VJP rule is handed and returns: an expression whose key dim i stands for dim
    ``dims[i]`` of a common key space (``dask_tra.tra.terms.Term``)."""

    @property
    def expr(self) -> Any: ...

    @property
    def dims(self) -> tuple: ...

    @property
    def dtype(self) -> Any: ...

    def map(self, kernel: Any) -> TermLike:
        """``Transform(kernel)`` of the term, same dims."""
        ...

    def zip(self, other: TermLike, kernel: Any) -> TermLike:
        """The natural join of two terms on the dims they share, applying ``kernel``."""
        ...


# ---------------------------------------------------------------- VJP rules by kernel type

_RULES: dict[str, dict[Any, Rule]] = {"transform": {}, "join": {}}


class _WithoutContext:
    """A rule that takes no context argument, called with one."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    def __call__(self, *args: Any) -> Any:
        return self.rule(*args[:-1])


def register_vjp(key: Any, rule: Rule | None = None, kind: str = "transform", *, context: bool = False) -> Any:
    """Register the VJP of a chunk kernel class, or of one kernel (found by equality), ahead
    of any rule for its base classes (see the module doc for the rule's signature).

    ``register_vjp(Permute, rule)``, or as a decorator: ``@register_vjp(Permute)``. ``key`` is
    a class or a kernel instance (any object with ``out_axes``)."""
    if not isinstance(key, type) and not hasattr(key, "out_axes"):
        raise TypeError(f"register_vjp: key must be a kernel class or a kernel, got {key!r}")
    if kind not in _RULES:
        raise ValueError(f"register_vjp: kind must be 'transform' or 'join', got {kind!r}")

    def add(fn: Rule) -> Rule:
        _RULES[kind][key] = fn if context else _WithoutContext(fn)
        return fn

    return add if rule is None else add(rule)


def vjp_for(kernel: Any, kind: str) -> Rule | None:
    """The rule for ``kernel`` in a ``kind`` node (``"transform"`` or ``"join"``), called with the
    backward pass's context last: the kernel's own rule, else its class's, else the nearest
    base class's; None if none is registered."""
    table = _RULES[kind]
    rule = table.get(kernel) if not isinstance(kernel, type) else None
    if rule is not None:
        return rule
    for cls in type(kernel).__mro__:
        if cls in table:
            return table[cls]
    return None


# ---------------------------------------------------------------- RJPs of new operators

_RJPS: dict[type, Rule] = {}


def register_rjp(op: type, rule: Rule | None = None) -> Any:
    """Register the relation-Jacobian product of a one-input TRA operator class (or use as a
    decorator): ``rule(node, g)`` gets the gradient of the node's output as a TRA expression
    over the node's keys and returns the gradient of its input, an expression over the input's
    keys with the input's type; None when no gradient flows. The seven operators of the paper
    have their rules in ``dask_tra.autodiff.rjp``."""

    def add(fn: Rule) -> Rule:
        _RJPS[op] = fn
        return fn

    return add if rule is None else add(rule)


def rjp_for(op: type) -> Rule | None:
    """The registered rule of an operator class (or of its nearest base class), or None."""
    return next((_RJPS[c] for c in op.__mro__ if c in _RJPS), None)


# ---------------------------------------------------------------- elementwise partials

Y = -1  # "the operation's output" in a partial's needs


@dataclass(frozen=True)
class Partial:
    """∂f/∂argᵢ as ``fn(xp, *values)`` of the args (by position) and output (``Y``) it needs.
    ``fn`` is module-level (it goes into the gradient's kernels)."""

    needs: tuple
    fn: Callable


def P(needs: Any, fn: Callable) -> Partial:
    return Partial(tuple(needs), fn)


# keyed by operation: a NumPy ufunc (the frontend's ufuncs), a module-level function (the
# frontend's other elementwise operations), or a TRA Elementwise kernel
PARTIALS: dict[Any, tuple] = {}


def register_partials(op: Any, partials: Any) -> None:
    """Partial derivatives of an elementwise operation ``op`` (a ufunc, the module-level
    function given to ``elementwise``, or a TRA ``Elementwise`` kernel), one per argument
    position: a number (a constant derivative) or ``Partial(needs, fn)``: ``fn(xp, *values)``
    of the arguments (positions) and output (``Y``) listed in ``needs`` (at most two of
    them arrays), a module-level function."""
    PARTIALS[op] = tuple(partials)


def partials_for(op: Any) -> tuple | None:
    """The registered partials of ``op``, or None."""
    return PARTIALS.get(op)


__all__ = [
    "GradError",
    "TermLike",
    "register_vjp",
    "vjp_for",
    "register_rjp",
    "rjp_for",
    "Y",
    "Partial",
    "P",
    "PARTIALS",
    "register_partials",
    "partials_for",
]

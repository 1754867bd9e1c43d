"""Relational automatic differentiation: gradients of TRA expressions, as TRA expressions.

``grad(loss, wrt)`` / ``value_and_grad(loss, wrt)`` build the backward pass of a scalar
RelArray by relation-Jacobian products of the TRA operators (``rjp.py``) and
vector-Jacobian products of their chunk kernels (``vjp.py``). The result is lazy TRA that
shares the forward nodes; ``compute(loss, grads)`` (or ``Joint``) plans and runs forward
and backward as one computation. ``nn`` has differentiable building blocks (sigmoid,
relu, softmax, cross-entropy, stop_gradient). See docs/autodiff.md.
"""

from ..array.joint import Joint, compute
from . import nn
from .api import grad, value_and_grad
from .nn import stop_gradient
from .terms import GradError, GradKernel, Term, map_term, zip_terms
from .vjp import P, Partial, Y, register_partials, register_vjp

__all__ = [
    "grad",
    "value_and_grad",
    "compute",
    "Joint",
    "nn",
    "stop_gradient",
    "GradError",
    "register_vjp",
    "register_partials",
    "Partial",
    "P",
    "Y",
    "GradKernel",
    "Term",
    "zip_terms",
    "map_term",
]

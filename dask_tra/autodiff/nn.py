"""Differentiable building blocks for models over RelArrays (like ``jax.nn``).

``sigmoid``, ``relu`` and ``softplus`` are single elementwise kernels with their own
derivatives; ``softmax``, ``log_softmax``, ``logsumexp`` and the losses are compositions of
frontend operations (exp, sums, maxima, ...), shifted by the ``stop_gradient`` of the row
maximum for stability (the shift cancels in the value and in the gradient, so cutting it
saves differentiating the maximum).
"""

from __future__ import annotations

import numpy as np

from .. import backends
from ..tra import Transform
from ..tra.kernels import first_axes
from ..tra.tasks import identity
from .terms import GradKernel
from .vjp import P, Y, register_partials


def _float_dtype(v):
    return np.result_type(backends.dtype_of(v), np.float16)


def _sigmoid_np(v):
    xp = backends.numpy_like(v)  # NumPy's functions, in the chunk's library
    e = xp.exp(-xp.absolute(v))
    return xp.astype(xp.where(v >= 0, 1 / (1 + e), e / (1 + e)), _float_dtype(v), copy=False)


def _relu_np(v):
    return backends.numpy_like(v).maximum(v, 0)


def _softplus_np(v):
    xp = backends.numpy_like(v)
    return xp.astype(xp.logaddexp(0, v), _float_dtype(v), copy=False)


class _Stop(GradKernel):
    stops_gradient = True


STOP_GRADIENT = _Stop("stop_gradient", identity, 1, axes=first_axes)


def stop_gradient(x):
    """``x`` unchanged, but no gradient flows through it (``jax.lax.stop_gradient``, ``detach``)."""
    from ..array.creation import asarray
    from ..array.relations import wrap

    x = asarray(x)
    return wrap(Transform(x.expr, STOP_GRADIENT), x)


def _unary(name, fn, x):
    from ..array.elementwise import elementwise

    return elementwise(name, fn, x)


def sigmoid(x):
    """1 / (1 + exp(-x)), computed without overflow. d/dx = y (1 - y)."""
    return _unary("sigmoid", _sigmoid_np, x)


def relu(x):
    """max(x, 0). d/dx = 1 where x > 0, else 0 (0 at 0, like ``jax.nn.relu`` and ``torch.relu``;
    ``maximum(x, 0)`` instead splits the tie: 0.5 at 0)."""
    return _unary("relu", _relu_np, x)


def softplus(x):
    """log(1 + exp(x)), computed without overflow. d/dx = sigmoid(x)."""
    return _unary("softplus", _softplus_np, x)


def _d_sigmoid(xp, y):
    return y * (1 - y)


def _d_softplus(xp, v):  # the sigmoid
    e = xp.exp(-xp.abs(v))
    return xp.where(v >= 0, 1 / (1 + e), e / (1 + e))


def _d_relu(xp, a):
    return xp.where(a > 0, 1.0, 0.0)  # 0 at 0, like jax.nn.relu / torch.relu


register_partials(_sigmoid_np, (P([Y], _d_sigmoid),))
register_partials(_relu_np, (P([0], _d_relu),))
register_partials(_softplus_np, (P([0], _d_softplus),))


def logsumexp(x, axis=-1, keepdims=False):
    """log(sum(exp(x), axis)), shifted by the (gradient-stopped) maximum for stability."""
    from .. import array as da

    m = stop_gradient(da.max(x, axis=axis, keepdims=True))
    out = da.log(da.sum(da.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else da.squeeze(out, axis=axis)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x), axis), shifted by the (gradient-stopped) maximum for stability."""
    from .. import array as da

    e = da.exp(x - stop_gradient(da.max(x, axis=axis, keepdims=True)))
    return e / da.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    """x - logsumexp(x, axis, keepdims=True)."""
    return x - logsumexp(x, axis=axis, keepdims=True)


def _reduce(v, reduction):
    from .. import array as da

    if reduction == "mean":
        return da.mean(v)
    if reduction == "sum":
        return da.sum(v)
    if reduction == "none":
        return v
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def cross_entropy(logits, labels, axis=-1, reduction="mean"):
    """Softmax cross-entropy: -sum(labels * log_softmax(logits), axis), averaged (``"mean"``),
    summed (``"sum"``) or per example (``"none"``). ``labels``: one-hot rows or probabilities
    of the logits' shape. Its gradient is softmax(logits) - labels (per example)."""
    from .. import array as da

    return _reduce(-da.sum(labels * log_softmax(logits, axis=axis), axis=axis), reduction)


def binary_cross_entropy_with_logits(logits, labels, reduction="mean"):
    """Sigmoid cross-entropy of independent labels (multi-label classification):
    softplus(z) - y·z per entry, averaged over all entries (``"mean"``), summed (``"sum"``)
    or not (``"none"``). Its gradient is sigmoid(z) - y (per entry)."""
    return _reduce(softplus(logits) - labels * logits, reduction)


def mse(pred, target, reduction="mean"):
    """Mean (or summed) squared error."""
    d = pred - target
    return _reduce(d * d, reduction)


__all__ = [
    "sigmoid",
    "relu",
    "softplus",
    "logsumexp",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "binary_cross_entropy_with_logits",
    "mse",
    "stop_gradient",
]

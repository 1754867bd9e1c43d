"""``grad`` and ``value_and_grad`` over RelArrays."""

from __future__ import annotations

import numpy as np

from ..array.core import RelArray
from ..runtime.sources import Source
from ..tra.tasks import Data
from .backward import backward
from .terms import Context, GradError, Term, cast_term, materialize, same_axes


class ConstSource(Source):
    """Binds a ``ConstRelation`` made by the backward pass to its chunks."""

    def __init__(self, const):
        self.input, self.chunks = const.input, const.chunks

    def task(self, key):
        return Data(self.chunks[tuple(key)])


def _is_relarray(x):
    return isinstance(x, RelArray)


def _flatten(wrt):
    """(list of RelArrays, rebuild) for a RelArray or a list/tuple/dict of them."""
    if _is_relarray(wrt):
        return [wrt], lambda gs: gs[0]
    if isinstance(wrt, dict):
        keys = list(wrt)
        return [wrt[k] for k in keys], lambda gs: dict(zip(keys, gs))
    if isinstance(wrt, (list, tuple)):
        items = list(wrt)
        return items, (lambda gs: type(wrt)(gs)) if isinstance(wrt, tuple) else (lambda gs: list(gs))
    raise TypeError(f"wrt must be a RelArray or a list, tuple or dict of RelArrays, got {type(wrt).__name__}")


def _seed(loss, seed, ctx):
    from ..array.creation import asarray

    if seed is None:
        if loss.ndim != 0:
            raise ValueError(
                f"grad requires a scalar loss (shape ()), got shape {loss.shape}; pass "
                f"seed= (a cotangent of the loss's shape) for a vector-Jacobian product"
            )
        c = ctx.const({(): np.ones((), loss.dtype)}, (), loss.dtype, "grad-seed", rank=0)
        return Term(c, ()), {}
    if not _is_relarray(seed):
        seed = np.asarray(seed)
        if seed.shape != loss.shape:
            raise ValueError(f"seed has shape {seed.shape}, the loss has shape {loss.shape}")
        seed = asarray(seed, chunks=loss.chunks)
    if seed.shape != loss.shape:
        raise ValueError(f"seed has shape {seed.shape}, the loss has shape {loss.shape}")
    if seed.chunks != loss.chunks:
        seed = seed.rechunk(loss.chunks)
    if seed.dtype != loss.dtype:
        seed = seed.astype(loss.dtype)
    return Term(seed.expr, tuple(range(loss.ndim))), dict(seed.sources)


def value_and_grad(loss, wrt, *, seed=None, allow_unused=True):
    """``(loss, gradients)``: the gradients of ``loss`` with respect to ``wrt``, lazily.

    ``loss``: a scalar floating-point RelArray (or any shape, with ``seed``: then this is the
    vector-Jacobian product ``seedᵀ·∂loss/∂wrt``). ``wrt``: a RelArray whose expression is
    part of ``loss``'s expression (matched by node identity; inputs or intermediates), or a
    list/tuple/dict of them; the gradients come back in the same structure, each with the
    shape, chunks and dtype of its ``wrt``.

    The gradients' expressions share the forward nodes of ``loss``: compute them *together*
    with ``dask_tra.autodiff.compute(loss, grads)`` (or ``Joint``) to plan forward and
    backward as one computation in which every forward intermediate is computed once.

    A ``wrt`` the loss does not depend on (or only through non-differentiable integer or
    boolean results) gets a gradient of zeros, as in JAX; ``allow_unused=False`` raises
    instead (PyTorch's default).

    Parameters
    ----------
    loss : RelArray
        A floating-point result; a scalar unless ``seed`` is given.
    wrt : RelArray or list, tuple or dict of RelArrays
        Arrays ``loss`` is computed from (inputs or intermediates).
    seed : RelArray or array_like, optional
        The cotangent of ``loss``'s shape: the result is ``seedᵀ·∂loss/∂wrt``.
    allow_unused : bool, default True
        Whether a ``wrt`` that ``loss`` does not depend on gets zeros (else ValueError).

    Returns
    -------
    (RelArray, gradients)
        ``loss`` and the lazy gradients, in ``wrt``'s structure.

    Examples
    --------
    >>> w = da.from_array(np.array([1.0, 2.0, 3.0]), chunks=2)
    >>> value, (g,) = dask_tra.value_and_grad((w * w).sum(), [w])
    >>> value.compute(), g.compute()
    (np.float64(14.0), array([2., 4., 6.]))
    """
    from ..array.creation import zeros

    if not _is_relarray(loss):
        raise TypeError(f"loss must be a RelArray, got {type(loss).__name__}")
    if loss.dtype.kind != "f":
        raise TypeError(
            f"grad requires a floating-point loss, got dtype {loss.dtype} (integer and boolean "
            f"results, e.g. of comparisons or argmax, are not differentiable)"
        )
    flat, rebuild = _flatten(wrt)
    for i, w in enumerate(flat):
        if not _is_relarray(w):
            raise TypeError(f"wrt[{i}] must be a RelArray, got {type(w).__name__}")
        if w.dtype.kind != "f":
            raise TypeError(f"wrt[{i}] has dtype {w.dtype}: only floating-point arrays have gradients")
    ctx = Context()
    seed_term, seed_sources = _seed(loss, seed, ctx)
    found = {id(n) for n in loss.expr.walk()}
    cots = backward(loss.expr, seed_term, [w.expr for w in flat], ctx)
    results = []
    for i, w in enumerate(flat):
        cot = cots.get(id(w.expr))
        if cot is None:
            if not allow_unused:
                where = (
                    "is not part of the loss's expression"
                    if id(w.expr) not in found
                    else "reaches the loss only through non-differentiable (integer/boolean) operations"
                )
                raise ValueError(f"wrt[{i}] {where}; pass allow_unused=True for a zero gradient")
            results.append(None)
            continue
        t = cast_term(materialize(cot, w.expr.type, ctx), w.dtype)
        if not same_axes(t.expr.type, w.expr.type):
            raise GradError(f"internal: gradient chunks {t.expr.type.axes} differ from wrt[{i}]'s")
        results.append(t.expr)
    sources = {}
    sources.update(loss.sources)
    for w in flat:
        sources.update(w.sources)
    sources.update(seed_sources)
    sources.update({name: ConstSource(c) for name, c in ctx.consts.items()})
    grads = [
        zeros(w.shape, dtype=w.dtype, chunks=w.chunks) if e is None else RelArray(e, sources)
        for w, e in zip(flat, results)
    ]
    return loss, rebuild(grads)


def grad(loss, wrt, *, seed=None, allow_unused=True):
    """The gradients of scalar ``loss`` with respect to ``wrt`` (lazy RelArrays; see
    ``value_and_grad``).

    Parameters
    ----------
    loss : RelArray
        A floating-point result; a scalar unless ``seed`` is given.
    wrt : RelArray or list, tuple or dict of RelArrays
        Arrays ``loss`` is computed from (inputs or intermediates).
    seed : RelArray or array_like, optional
        The cotangent of ``loss``'s shape: the result is ``seedᵀ·∂loss/∂wrt``.
    allow_unused : bool, default True
        Whether a ``wrt`` that ``loss`` does not depend on gets zeros (else ValueError).

    Returns
    -------
    RelArray or list, tuple or dict of RelArrays
        The gradients, in ``wrt``'s structure, each of its ``wrt``'s shape, chunks and dtype.

    Examples
    --------
    >>> w = da.from_array(np.array([1.0, 2.0, 3.0]), chunks=2)
    >>> dask_tra.grad((w * w).sum(), w).compute()
    array([2., 4., 6.])
    """
    return value_and_grad(loss, wrt, seed=seed, allow_unused=allow_unused)[1]


__all__ = ["grad", "value_and_grad", "ConstSource"]

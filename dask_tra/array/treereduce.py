"""``reduction``: dask.array's generic tree reduction with the user's functions.

``chunk(block, axis=, keepdims=True)`` runs on every block (``blockwise``; its result has
``output_size`` elements along each reduced axis); then, while more than ``split_every``
partial results lie along a reduced axis, groups of ``split_every`` of them are made one block
(a merging ``rechunk``: Filter, ReKey, Concat) and ``combine(block, axis=, keepdims=True)``
runs on each (``map_blocks``); finally the rest is made one block along the reduced axes and
``aggregate(block, axis=, keepdims=)`` runs once per block of the kept axes. With
``concatenate=False`` the combine/aggregate functions get nested lists of the partial
results (one level per reduced axis), as dask passes them."""

from __future__ import annotations

import functools
import inspect
import math
from numbers import Integral

import numpy as np

from .creation import asarray
from .relations import axes_of, check_dtype


def _takes_dtype(func):
    try:
        return "dtype" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _split_every(split_every, axes):
    if split_every is None:
        from dask import config

        split_every = config.get("split_every", None) or 4
    if isinstance(split_every, dict):
        return {a: int(split_every.get(a, 2)) for a in axes}
    if isinstance(split_every, Integral) and not isinstance(split_every, bool):
        n = max(int(split_every ** (1 / (len(axes) or 1))), 2)
        return dict.fromkeys(axes, n)
    raise ValueError("split_every must be a int or a dict")


def _nested(block, axes, size):
    """A block of partial results, split into nested lists along ``axes`` (pieces of ``size``)."""
    if not axes:
        return block
    a, rest = axes[0], axes[1:]
    return [_nested(np.take(block, np.arange(i, i + size), axis=a), rest, size) for i in range(0, block.shape[a], size)]


def apply_step(block, func, axes, keepdims, concatenate, size):
    """One combine/aggregate call on a block of partial results."""
    data = block if concatenate else _nested(block, axes, size)
    return func(data, axis=axes, keepdims=keepdims)


def _dtype_of(func, sample, axes, fallback, **kw):
    """The dtype ``func`` gives on a one-element sample (dask's meta), else ``fallback``."""
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(func(sample, axis=axes, keepdims=True, **kw))
        return check_dtype(out.dtype)
    except Exception:  # noqa: BLE001 (a probe, as dask's meta: any failure means no answer)
        return fallback


def _step(t, func, axes, groups, keepdims, concatenate, size, dtype):
    from .blockwise import map_blocks

    merged = {a: tuple(sum(t.chunks[a][i : i + groups[a]]) for i in range(0, t.numblocks[a], groups[a])) for a in axes}
    t = t.rechunk(merged)
    name = getattr(func, "__name__", "reduce")
    f = functools.partial(apply_step, func=func, axes=axes, keepdims=keepdims, concatenate=concatenate, size=size)
    if keepdims:
        chunks = tuple((size,) * len(c) if d in axes else c for d, c in enumerate(t.chunks))
        return map_blocks(f, t, dtype=dtype, chunks=chunks, name=name)
    chunks = tuple(c for d, c in enumerate(t.chunks) if d not in axes)
    return map_blocks(f, t, dtype=dtype, chunks=chunks, drop_axis=list(axes), name=name)


def reduction(
    x,
    chunk,
    aggregate,
    axis=None,
    keepdims=False,
    dtype=None,
    split_every=None,
    combine=None,
    name=None,
    out=None,
    concatenate=True,
    output_size=1,
    meta=None,
    weights=None,
):
    """A tree reduction of ``x`` over ``axis`` with the user's functions, as dask.array's ``reduction``.

    ``chunk`` runs on every block, ``combine`` on groups of ``split_every`` partial results
    until few remain, ``aggregate`` once per block of the kept axes (see the module doc).

    Parameters
    ----------
    x : array_like
        The array.
    chunk : callable
        ``chunk(block, axis=, keepdims=True)``: a block's partial result (``output_size``
        elements along each reduced axis).
    aggregate : callable
        ``aggregate(partials, axis=, keepdims=)``: the final result from the partial results.
    axis : int or tuple of int, optional
        The axes reduced over; None: all.
    keepdims : bool, optional
        Keep the reduced axes with length one.
    dtype : dtype
        The result's dtype (required, as in dask).
    split_every : int or dict, optional
        How many partial results one ``combine`` merges along each reduced axis.
    combine : callable, optional
        ``combine(partials, axis=, keepdims=True)``; default ``chunk``.
    name : str, optional
        Accepted for dask's signature.
    out : None
        Not supported (RelArrays are immutable): a RelArray raises ``TypeError``.
    concatenate : bool, optional
        Concatenate the partial results before ``combine``/``aggregate`` (default); False
        passes nested lists, as dask does.
    output_size : int, optional
        The elements ``chunk`` returns along each reduced axis (default 1).
    meta : array, optional
        An empty array of the result's type.
    weights : array_like, optional
        Broadcast against ``x`` and passed to ``chunk`` as ``weights=``, block by block.

    Returns
    -------
    RelArray
        The reduction.

    Examples
    --------
    >>> x = da.arange(6, chunks=2)
    >>> da.reduction(x, np.sum, np.sum, dtype=int).compute()
    np.int64(15)
    >>> da.reduction(x, np.max, np.max, dtype=int, split_every=2).compute()
    np.int64(5)
    """
    from .blockwise import blockwise
    from .manipulation import broadcast_to

    x = asarray(x)
    axes = axes_of(axis, x.ndim)
    if dtype is None:
        raise ValueError("Must specify dtype")
    dtype = check_dtype(dtype)
    if out is not None:
        raise TypeError("out= is not supported by dask_tra arrays (they are immutable)")
    if not isinstance(output_size, Integral) or output_size < 1:
        raise ValueError(f"output_size must be a positive integer, got {output_size!r}")
    if not callable(chunk) or not callable(aggregate) or (combine is not None and not callable(combine)):
        raise TypeError("reduction: chunk, aggregate (and combine) must be callables")
    if _takes_dtype(chunk):
        chunk = functools.partial(chunk, dtype=dtype)
    if _takes_dtype(aggregate):
        aggregate = functools.partial(aggregate, dtype=dtype)
    inds = tuple(range(x.ndim))
    args = [x, inds]
    sample_kw = {}
    if weights is not None:
        w = asarray(weights)
        try:
            w = broadcast_to(w, x.shape).rechunk(x.chunks)
        except ValueError:
            raise ValueError(f"Weights with shape {w.shape} are not broadcastable to x with shape {x.shape}") from None
        args += [w, inds]
        sample_kw = {"weights": np.ones((1,) * x.ndim, w.dtype)}
    sample = np.ones((1,) * x.ndim, x.dtype)
    if weights is not None:
        part_dtype = _dtype_of(lambda s, **kw: chunk(s, kw.pop("weights"), **kw), sample, axes, dtype, **sample_kw)
    else:
        part_dtype = _dtype_of(chunk, sample, axes, dtype)
    t = blockwise(
        chunk,
        inds,
        *args,
        axis=axes,
        keepdims=True,
        dtype=part_dtype,
        name=name or getattr(chunk, "__name__", "chunk"),
        adjust_chunks={a: output_size for a in axes},
    )
    if not axes:
        return _step(t, aggregate, axes, {}, keepdims, concatenate, output_size, dtype)
    every = _split_every(split_every, axes)
    depth = 1
    for a in axes:
        if every[a] != 1 and t.numblocks[a] > 1:
            depth = max(depth, math.ceil(math.log(t.numblocks[a], every[a])))
    step = combine or aggregate
    for _ in range(depth - 1):
        sample = np.ones((output_size,) * x.ndim, t.dtype)
        part_dtype = _dtype_of(
            lambda s, **kw: apply_step(s, step, axes, True, concatenate, output_size), sample, axes, t.dtype
        )
        t = _step(t, step, axes, {a: max(every[a], 1) for a in axes}, True, concatenate, output_size, part_dtype)
    return _step(t, aggregate, axes, {a: t.numblocks[a] for a in axes}, keepdims, concatenate, output_size, dtype)


__all__ = ["reduction"]

"""Order statistics: median, quantile, percentile and their NaN-skipping forms.

An order statistic needs every element of a slice together, so (like dask) the reduced axes
are first made one block each (a rechunk: gathers), then NumPy's own function runs on every
block, a ``blockwise`` kernel: the quantile dims (``q``'s shape) come first, as in NumPy.
Unlike dask, ``axis=None`` and several axes are supported (the whole of those axes then sits
in each block: mind the block size).
"""

from __future__ import annotations

import numpy as np

from .blockwise import blockwise
from .creation import asarray
from .relations import axes_of

_NUMPY = {"median": np.median, "nanmedian": np.nanmedian, "quantile": np.quantile, "nanquantile": np.nanquantile}


def order_statistic(block, fn, q, axes, method, keepdims):
    """NumPy's ``fn`` on one block (all of the reduced axes), quantile dims first."""
    if fn in ("median", "nanmedian"):
        return _NUMPY[fn](block, axis=axes, keepdims=keepdims)
    return _NUMPY[fn](block, q, axis=axes, method=method, keepdims=keepdims)


def _reduce(fn, a, q, axis, method, keepdims):
    a = asarray(a)
    axes = axes_of(axis, a.ndim)
    q = None if q is None else np.asarray(q, dtype=np.float64)
    if q is not None and ((q < 0) | (q > 1)).any():
        raise ValueError("Quantiles must be in the range [0, 1]")
    if a.size == 0 and fn in ("quantile", "median"):
        raise ValueError(f"{fn} of an empty array")
    a = a.rechunk({d: -1 for d in axes}) if axes else a
    qdims = [f"q{i}" for i in range(0 if q is None else q.ndim)]
    ind = [f"a{d}" for d in range(a.ndim)]
    out_ind = qdims + [l for d, l in enumerate(ind) if keepdims or d not in axes]
    adjust = {f"a{d}": 1 for d in axes} if keepdims else None
    probe = order_statistic(np.ones((1,) * a.ndim, a.dtype), fn, q, axes, method, keepdims)
    return blockwise(
        order_statistic,
        out_ind,
        a,
        ind,
        fn,
        None,
        q,
        None,
        axes,
        None,
        method,
        None,
        keepdims,
        None,
        new_axes={l: n for l, n in zip(qdims, () if q is None else q.shape)},
        adjust_chunks=adjust,
        dtype=probe.dtype,
        concatenate=True,
        name=fn,
    )


def median(a, axis=None, keepdims=False, out=None, overwrite_input=False):
    """numpy.median along ``axis`` (None: all)."""
    _no_out(out)
    return _reduce("median", a, None, axis, None, keepdims)


def nanmedian(a, axis=None, keepdims=False, out=None, overwrite_input=False):
    """numpy.nanmedian along ``axis`` (None: all)."""
    _no_out(out)
    return _reduce("nanmedian", a, None, axis, None, keepdims)


def quantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    """numpy.quantile: the quantile dims (``q``'s shape) come first."""
    _no_out(out, weights)
    return _reduce("quantile", a, q, axis, interpolation or method, keepdims)


def nanquantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    """numpy.nanquantile: the quantile dims (``q``'s shape) come first."""
    _no_out(out, weights)
    return _reduce("nanquantile", a, q, axis, interpolation or method, keepdims)


def percentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    """numpy.percentile (``q`` in [0, 100])."""
    return quantile(
        a,
        np.asarray(q) / 100,
        axis,
        out,
        overwrite_input,
        method,
        keepdims,
        weights=weights,
        interpolation=interpolation,
    )


def nanpercentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    """numpy.nanpercentile (``q`` in [0, 100])."""
    return nanquantile(
        a,
        np.asarray(q) / 100,
        axis,
        out,
        overwrite_input,
        method,
        keepdims,
        weights=weights,
        interpolation=interpolation,
    )


def _no_out(out, weights=None):
    if out is not None:
        raise TypeError("out= is not supported by dask_tra arrays (they are immutable)")
    if weights is not None:
        raise NotImplementedError("quantile weights= is not supported")


__all__ = ["median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "quantile"]

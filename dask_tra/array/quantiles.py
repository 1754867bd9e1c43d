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

_NUMPY = {
    "median": np.median,
    "nanmedian": np.nanmedian,
    "quantile": np.quantile,
    "nanquantile": np.nanquantile,
    "percentile": np.percentile,
    "nanpercentile": np.nanpercentile,
}


def order_statistic(block, fn, q, axes, method, keepdims):
    """NumPy's ``fn`` on one block (all of the reduced axes), quantile dims first."""
    if fn in ("median", "nanmedian"):
        return _NUMPY[fn](block, axis=axes, keepdims=keepdims)
    return _NUMPY[fn](block, q, axis=axes, method=method, keepdims=keepdims)


def _reduce(fn, a, q, axis, method, keepdims):
    a = asarray(a)
    axes = axes_of(axis, a.ndim)
    if q is not None:
        # a Python int/float q stays one, so that NumPy promotes it weakly, as for NumPy arrays;
        # anything else keeps its dtype (float32 q, float32 data: a float32 result)
        q = q if type(q) in (int, float) else np.asarray(q)
        scale = 100 if fn.endswith("percentile") else 1
        qs = np.asarray(q)
        if not (np.all(0 <= qs) and np.all(qs <= scale)):  # NaN fails too, as in NumPy
            raise ValueError(f"{'Percentiles' if scale == 100 else 'Quantiles'} must be in the range [0, {scale}]")
    if a.size == 0 and fn in ("quantile", "percentile", "median"):
        raise ValueError(f"{fn} of an empty array")
    a = a.rechunk({d: -1 for d in axes}) if axes else a
    qdims = [f"q{i}" for i in range(np.ndim(q))]
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
        new_axes={l: n for l, n in zip(qdims, np.shape(q))},
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
    _no_out(out, weights)
    return _reduce("percentile", a, q, axis, interpolation or method, keepdims)


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
    _no_out(out, weights)
    return _reduce("nanpercentile", a, q, axis, interpolation or method, keepdims)


def _no_out(out, weights=None):
    if out is not None:
        raise TypeError("out= is not supported by dask_tra arrays (they are immutable)")
    if weights is not None:
        raise NotImplementedError("quantile weights= is not supported")


__all__ = ["median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "quantile"]

"""NaN-skipping reductions and scans, built from the plain ones (``reductions``).

- nanvar/nanstd: two passes, as NumPy computes them: the NaN-skipping mean (``nansum`` over the
  count of non-NaN elements), then the ``sum`` of squared deviations (0 at the NaNs) over
  ``count - ddof`` (NaN where that is not positive).
- nancumsum/nancumprod: the scan of the array with NaNs replaced by 0 (1).
- nanargmin/nanargmax: ``argmin``/``argmax`` of the array with NaNs replaced by +inf (-inf).
  An all-NaN slice raises NumPy's ``ValueError`` when computed (as dask does); a slice whose
  only non-NaN values equal the infinity NaNs are replaced with gives the first of them, NaN
  or not.
Integer and boolean arrays hold no NaNs: these are the plain functions for them.
"""

from __future__ import annotations

import numpy as np
from dask.utils import derived_from

from . import elementwise as ew
from . import reductions as red
from .creation import asarray


def _has_nan(a) -> bool:
    return a.dtype.kind in "fc"


@derived_from(np)
@red.with_out
def nanvar(
    a, axis=None, dtype=None, keepdims=False, ddof=0, split_every=None, out=None, *, correction=None, _root=False, **kw
):
    """numpy.nanvar over ``axis`` (None: all)."""
    red._no_out(out, kw)
    a = asarray(a)
    ddof = correction if correction is not None else ddof
    if not _has_nan(a):
        return red.var(a, axis, dtype, keepdims, ddof, _root=_root)
    res = np.nanvar(np.ones(2, a.dtype), dtype=dtype).dtype
    nan = ew.isnan(a)
    n = red.sum(ew.logical_not(nan), axis, keepdims=True)
    mean = ew.true_divide(red.nansum(a, axis, dtype=dtype, keepdims=True), n)
    d = ew.where(nan, 0, ew.subtract(a, mean))  # NaN from inf - inf stays NaN, as in NumPy
    sq = ew.real(ew.multiply(d, ew.conj(d))) if a.dtype.kind == "c" else ew.multiply(d, d)
    total = red.sum(sq, axis, keepdims=keepdims)
    dof = ew.subtract(n if keepdims else red.sum(ew.logical_not(nan), axis), ddof)
    v = ew.where(ew.less_equal(dof, 0), np.nan, ew.true_divide(total, dof))  # NumPy: NaN where count <= ddof
    return ew.astype(ew.sqrt(v) if _root else v, res)


@derived_from(np)
def nanstd(a, axis=None, dtype=None, keepdims=False, ddof=0, split_every=None, out=None, *, correction=None, **kw):
    """numpy.nanstd over ``axis`` (None: all)."""
    return nanvar(a, axis, dtype, keepdims, ddof, out=out, correction=correction, _root=True, **kw)


def _filled(a, value):
    a = asarray(a)
    return ew.where(ew.isnan(a), value, a) if _has_nan(a) else a


@derived_from(np)
def nancumsum(x, axis=None, dtype=None, out=None, **kw):
    """numpy.nancumsum: NaNs count as zero."""
    return red.cumsum(_filled(x, 0), axis, dtype, out=out, **kw)


@derived_from(np)
def nancumprod(x, axis=None, dtype=None, out=None, **kw):
    """numpy.nancumprod: NaNs count as one."""
    return red.cumprod(_filled(x, 1), axis, dtype, out=out, **kw)


def _nanarg(op, fill):
    plain = getattr(red, op)

    def reduce(a, axis=None, keepdims=False, split_every=None, out=None, **kw):
        red._no_out(out)
        a = asarray(a)
        if not _has_nan(a):
            return plain(a, axis, keepdims, **kw)
        index = plain(_filled(a, fill), axis, keepdims, **kw)
        all_nan = red.all(ew.isnan(a), axis, keepdims=keepdims)
        return ew.elementwise(f"nan{op}", checked_index, index, all_nan, dtype=index.dtype)

    reduce.__name__ = f"nan{op}"
    reduce.__doc__ = f"numpy.nan{op}: the index of the {op[3:]} ignoring NaNs (ValueError on an all-NaN slice)."
    return red.with_out(reduce)


def checked_index(index, all_nan):
    """The index, unless its slice was all NaN: then NumPy's error, when the block is computed."""
    if np.any(all_nan):
        raise ValueError("All-NaN slice encountered")
    return index


nanargmin = derived_from(np)(_nanarg("argmin", np.inf))
nanargmax = derived_from(np)(_nanarg("argmax", -np.inf))

__all__ = ["nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanstd", "nanvar"]

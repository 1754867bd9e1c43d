"""``assert_eq`` (dask.array.utils'): compare two arrays, each a RelArray, a dask collection,
a NumPy array or a scalar. RelArrays are computed (this is a test helper: it computes, as
dask's does); ``check_chunks`` also runs the TRA reference executor, which checks every
chunk's shape and dtype against the array's metadata."""

from __future__ import annotations

import numpy as np

from .. import backends
from .core import RelArray


def _value(x, scheduler, check_chunks, check_dtype, check_shape=True):
    import dask

    if isinstance(x, RelArray):
        (v,) = dask.compute(x, scheduler=scheduler)
        v = v if isinstance(v, np.ma.MaskedArray) else np.asarray(backends.to_numpy(v))
        if check_shape and v.shape != x.shape:
            raise AssertionError(f"computed shape {v.shape} != declared shape {x.shape}")
        if check_dtype and v.dtype != x.dtype:
            raise AssertionError(f"computed dtype {v.dtype} != declared dtype {x.dtype}")
        if check_chunks:
            from .testing import reference

            reference(x)
        return v
    if dask.is_dask_collection(x):
        (v,) = dask.compute(x, scheduler=scheduler)
        return np.asanyarray(v)
    return np.asanyarray(x)


def assert_eq(
    a,
    b,
    check_shape=True,
    check_graph=True,
    check_meta=True,
    check_chunks=True,
    check_ndim=True,
    check_type=True,
    check_dtype=True,
    equal_nan=True,
    scheduler="sync",
    **kwargs,
):
    """Raise ``AssertionError`` unless ``a`` and ``b`` agree in ndim, shape, dtype and values
    (dask.array.utils' ``assert_eq``).

    Values are compared with ``np.allclose`` (``kwargs`` such as ``rtol``/``atol``). Two
    masked arrays (``numpy.ma``) must have equal masks; masked elements' values are not
    compared (dask's ``masked_equal=True``).

    Parameters
    ----------
    a, b : array_like
        RelArrays, dask arrays, NumPy arrays or scalars (lazy ones are computed).
    check_shape : bool, optional
        Compare shapes; False also skips the check of a computed array's shape against its
        declared one (dask's).
    check_graph, check_meta, check_type : bool, optional
        dask-graph details, accepted as no-ops.
    check_chunks : bool, optional
        Also run the TRA reference executor on a RelArray and check every block's shape
        against its declared chunks.
    check_ndim : bool, optional
        Compare the numbers of dimensions.
    check_dtype : bool, optional
        Compare dtypes (and a computed array's dtype with its declared one).
    equal_nan : bool, optional
        NaNs in the same places compare equal (default True).
    scheduler : str, optional
        The dask scheduler that computes lazy arguments (default ``"sync"``).
    **kwargs
        Passed to ``np.allclose``.

    Returns
    -------
    bool
        True (otherwise it raises).

    Raises
    ------
    AssertionError
        ``a`` and ``b`` differ.

    Examples
    --------
    >>> da.assert_eq(da.arange(3, chunks=2), np.arange(3))
    True
    >>> da.assert_eq(da.ones(2, chunks=1), np.ones(2) + 1e-9, atol=1e-6)
    True
    """
    av = _value(a, scheduler, check_chunks, check_dtype, check_shape)
    bv = _value(b, scheduler, check_chunks, check_dtype, check_shape)
    if isinstance(av, np.ma.MaskedArray) or isinstance(bv, np.ma.MaskedArray):
        # masked arrays: the masks agree, and the values where unmasked (dask's assert_eq)
        am, bm = np.ma.getmaskarray(av), np.ma.getmaskarray(bv)
        both = isinstance(av, np.ma.MaskedArray) and isinstance(bv, np.ma.MaskedArray)
        if both and am.shape == bm.shape and not np.array_equal(am, bm):
            raise AssertionError(f"a and b have different masks ({int(np.sum(am != bm))} elements differ)")
        if am.shape == bm.shape and (am.any() or bm.any()):  # one masked: compare where it is not
            m = am | bm
            av, bv = np.where(m, 0, np.ma.getdata(av)), np.where(m, 0, np.ma.getdata(bv))
        av, bv = np.asarray(np.ma.getdata(av)), np.asarray(np.ma.getdata(bv))
    if check_ndim and av.ndim != bv.ndim:
        raise AssertionError(f"a and b have different ndim: {av.ndim} != {bv.ndim}")
    if check_shape and av.shape != bv.shape:
        raise AssertionError(f"a and b have different shapes: {av.shape} != {bv.shape}")
    if check_dtype and str(av.dtype) != str(bv.dtype):
        raise AssertionError(f"a and b have different dtypes: ({av.dtype}, {bv.dtype})")
    if av.dtype.kind in "fc" or bv.dtype.kind in "fc":
        ok = av.shape == bv.shape or not check_shape
        ok = ok and bool(np.allclose(av, bv, equal_nan=equal_nan, **kwargs))
    else:
        ok = bool(np.array_equal(av, bv))
    if not ok:
        diff = "" if av.shape != bv.shape else f" ({int(np.sum(av != bv))} elements differ)"
        raise AssertionError(f"a and b have different values{diff}:\n{av!r}\n{bv!r}")
    return True


def meta_from_array(x, ndim=None, dtype=None):
    """An empty array of ``x``'s chunk type, with ``ndim`` dimensions and ``dtype``
    (dask.array.utils' ``meta_from_array``).

    Parameters
    ----------
    x : array_like, RelArray or type
        An array (a RelArray's chunk type is its ``_meta``'s), or an array type.
    ndim : int, optional
        The meta's number of dimensions; default ``x``'s.
    dtype : dtype, optional
        The meta's dtype; default ``x``'s.

    Returns
    -------
    array
        An array of ``x``'s library with no elements.

    Examples
    --------
    >>> da.meta_from_array(np.ones(3), ndim=2)
    array([], shape=(0, 0), dtype=float64)
    >>> da.meta_from_array(da.ones(3, chunks=2)).dtype
    dtype('float64')
    """
    from dask.array.utils import meta_from_array as dask_meta

    return dask_meta(x._meta if isinstance(x, RelArray) else x, ndim=ndim, dtype=dtype)


__all__ = ["assert_eq", "meta_from_array"]

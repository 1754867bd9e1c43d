"""``dask.array.ma``: NumPy masked arrays in blocks.

A masked RelArray is one whose chunks are ``numpy.ma.MaskedArray``s: they ride the NumPy
backend, and kernels use ``numpy.ma``'s functions where NumPy's would drop a mask
(``dask_tra/backends/masked.py``). Each function here is an elementwise kernel running
``numpy.ma``'s function on the blocks (so a block's fill value and mask are NumPy's), or is
built from the array operations (``average``, ``count``, ``nonzero``). ``compute()`` returns a
``MaskedArray``; reductions skip masked elements and give ``np.ma.masked`` where every element
was masked.
"""

from __future__ import annotations

import numpy as np
from dask.utils import derived_from

from ..backends import masked as _masked
from .creation import asarray
from .elementwise import elementwise
from .relations import is_array

# ---------------------------------------------------------------- block functions (module-level: kernels pickle)


def _masked_where(condition, a):
    return np.ma.masked_where(condition, a, copy=True)


def _masked_values(value, rtol, atol, shrink, x):
    return np.ma.masked_values(x, value, rtol=rtol, atol=atol, shrink=shrink)


def _masked_inside(v1, v2, x):
    return np.ma.masked_inside(x, v1, v2)


def _masked_outside(v1, v2, x):
    return np.ma.masked_outside(x, v1, v2)


def _masked_compare(name, value, x):
    return getattr(np.ma, name)(x, value)


def _filled(fill_value, x):
    return np.ma.filled(x, fill_value)


def _fix_invalid(fill_value, x):
    return np.ma.fix_invalid(x, fill_value=fill_value)


def _masked_array(fill_value, dtype, data, mask=np.ma.nomask):
    return np.ma.masked_array(data, mask=mask, fill_value=fill_value, dtype=dtype)


def _set_fill_value(fill_value, x):
    if not isinstance(x, np.ma.MaskedArray):
        return x  # as numpy.ma.set_fill_value: a plain array is left as it is
    x = x.copy()  # never change a block in place (it may be shared)
    x.fill_value = fill_value
    return x


def _like(name, x):
    return getattr(np.ma.core, name)(x)


def _where(c, x, y):
    return np.ma.where(c, x, y)


def _mask_of(x):
    return np.ma.getmaskarray(x)


def _data_of(x):
    return np.asarray(np.ma.getdata(x))


# ---------------------------------------------------------------- helpers


def _array(a):
    return a if is_array(a) else asarray(a)


def _scalar_only(value, what):
    if is_array(value) or np.ndim(value) != 0:
        raise ValueError(f"da.ma.{what} doesn't support array `value`s")


def _apply(name, fn, *args, dtype=None):
    from ..tra.kernels import Bound
    from .kernels import Op

    if isinstance(fn, tuple):  # constants bound into the kernel: named in it (plans are cached by name)
        name = f"{name}[{','.join(repr(p) for p in fn[1:])}]"
        fn = Bound(*fn)
    return elementwise(name, Op(fn), *args, dtype=dtype)


# ---------------------------------------------------------------- masking


@derived_from(np.ma)
def masked_where(condition, a):
    """``numpy.ma.masked_where``: ``a`` masked where ``condition`` is true (of ``a``'s shape, or a
    scalar)."""
    a = _array(a)
    cshape = getattr(condition, "shape", np.shape(condition))
    if cshape and tuple(cshape) != tuple(a.shape):
        raise IndexError(f"Inconsistent shape between the condition and the input (got {cshape} and {a.shape})")
    cond = condition if np.ndim(condition) == 0 and not is_array(condition) else _array(condition)
    if not is_array(cond):
        return _apply("masked_where", (_masked_where, bool(cond)), a, dtype=a.dtype)
    return _apply("masked_where", _masked_where, cond, a, dtype=a.dtype)


def _compare(name):
    def f(x, value):
        x = _array(x)
        if name in ("masked_equal",):
            _scalar_only(value, name)
        v = value if np.ndim(value) == 0 and not is_array(value) else _array(value)
        if not is_array(v):
            return _apply(name, (_masked_compare, name, v), x, dtype=x.dtype)
        return _apply(name, (_masked_where_compare, name), x, v, dtype=x.dtype)

    f.__name__ = name
    f.__doc__ = _COMPARE_DOC.format(name=name, where=_COMPARE_WHERE[name], mask=_COMPARE_MASK[name])
    return f


_COMPARE_WHERE = {
    "masked_equal": "equal to",
    "masked_not_equal": "not equal to",
    "masked_greater": "greater than",
    "masked_greater_equal": "greater than or equal to",
    "masked_less": "less than",
    "masked_less_equal": "less than or equal to",
}
_COMPARE_MASK = {
    "masked_equal": "[False, False,  True, False]",
    "masked_not_equal": "[ True,  True, False,  True]",
    "masked_greater": "[False, False, False,  True]",
    "masked_greater_equal": "[False, False,  True,  True]",
    "masked_less": "[ True,  True, False, False]",
    "masked_less_equal": "[ True,  True,  True, False]",
}
_COMPARE_DOC = """``x`` masked where it is {where} ``value`` (``numpy.ma.{name}`` on every block).

    Parameters
    ----------
    x : array_like
        The array (a masked one keeps its mask, the new one added).
    value : scalar or array_like
        What ``x`` is compared with (broadcast against ``x``).

    Returns
    -------
    RelArray
        ``x`` with masked chunks (``numpy.ma.MaskedArray``).

    Examples
    --------
    >>> x = da.arange(4, chunks=2)
    >>> da.ma.{name}(x, 2).compute().mask
    array({mask})
    """


def _masked_where_compare(name, x, v):
    ops = {
        "masked_greater": np.greater,
        "masked_greater_equal": np.greater_equal,
        "masked_less": np.less,
        "masked_less_equal": np.less_equal,
        "masked_not_equal": np.not_equal,
    }
    return np.ma.masked_where(ops[name](np.ma.getdata(x), v), x, copy=True)


masked_equal = _compare("masked_equal")
masked_not_equal = _compare("masked_not_equal")
masked_greater = _compare("masked_greater")
masked_greater_equal = _compare("masked_greater_equal")
masked_less = _compare("masked_less")
masked_less_equal = _compare("masked_less_equal")


def masked_inside(x, v1, v2):
    """``x`` masked where it is inside the interval ``[v1, v2]`` (``numpy.ma.masked_inside`` on every block).

    Parameters
    ----------
    x : array_like
        The array.
    v1, v2 : scalar
        The interval's ends (in either order).

    Returns
    -------
    RelArray
        ``x`` with masked chunks.

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.ma.masked_inside(x, 1, 3).compute().mask
    array([False,  True,  True,  True, False, False])
    """
    x = _array(x)
    return _apply("masked_inside", (_masked_inside, v1, v2), x, dtype=x.dtype)


def masked_outside(x, v1, v2):
    """``x`` masked where it is outside the interval ``[v1, v2]`` (``numpy.ma.masked_outside`` on every block).

    Parameters
    ----------
    x : array_like
        The array.
    v1, v2 : scalar
        The interval's ends (in either order).

    Returns
    -------
    RelArray
        ``x`` with masked chunks.

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.ma.masked_outside(x, 1, 3).compute().mask
    array([ True, False, False, False,  True,  True])
    """
    x = _array(x)
    return _apply("masked_outside", (_masked_outside, v1, v2), x, dtype=x.dtype)


@derived_from(np.ma)
def masked_values(x, value, rtol=1e-05, atol=1e-08, shrink=True):
    x = _array(x)
    _scalar_only(value, "masked_values")
    return _apply("masked_values", (_masked_values, value, rtol, atol, shrink), x, dtype=x.dtype)


def masked_invalid(a):
    """``a`` masked where it is NaN or infinite (``numpy.ma.masked_invalid`` on every block).

    Parameters
    ----------
    a : array_like
        The array.

    Returns
    -------
    RelArray
        ``a`` with masked chunks.

    Examples
    --------
    >>> x = da.from_array(np.array([1.0, np.nan, np.inf]), chunks=2)
    >>> da.ma.masked_invalid(x).compute().mask
    array([False,  True,  True])
    """
    a = _array(a)
    return _apply("masked_invalid", np.ma.masked_invalid, a, dtype=a.dtype)


@derived_from(np.ma)
def fix_invalid(a, fill_value=None):
    a = _array(a)
    return _apply("fix_invalid", (_fix_invalid, fill_value), a, dtype=a.dtype)


def masked_array(data, mask=np.ma.nomask, fill_value=None, chunks="auto", **kwargs):
    """A masked array from ``data`` and ``mask``, block by block (``numpy.ma.masked_array``).

    Parameters
    ----------
    data : array_like
        The values.
    mask : array_like of bool, optional
        True where masked, of ``data``'s shape (or one element); default: nothing masked.
    fill_value : scalar, optional
        The fill value of the masked chunks.
    chunks : int, tuple or "auto", optional
        The block sizes when ``data`` is not a RelArray (as ``from_array``).
    **kwargs
        ``dtype=``: the result's dtype.

    Returns
    -------
    RelArray
        An array with masked chunks (``numpy.ma.MaskedArray``).

    Raises
    ------
    numpy.ma.MaskError
        ``mask`` and ``data`` have different shapes.
    ValueError
        ``fill_value`` is not a scalar.

    Examples
    --------
    >>> m = da.ma.masked_array(da.arange(4, chunks=2), mask=[True, False, False, True])
    >>> m.sum().compute()
    np.int64(3)
    """
    data = data if is_array(data) else asarray(data, chunks=chunks)
    if getattr(fill_value, "shape", ()) or (is_array(fill_value) and fill_value.ndim):
        raise ValueError("non-scalar fill_value not supported")
    if is_array(fill_value):
        fill_value = np.asarray(fill_value.compute())[()]
    dtype = np.dtype(kwargs.pop("dtype", data.dtype))
    if mask is np.ma.nomask:
        return _apply("masked_array", (_masked_array, fill_value, dtype), data, dtype=dtype)
    mask = _array(mask)
    if mask.size == 1:
        mask = mask.reshape((1,) * data.ndim)
    elif tuple(data.shape) != tuple(mask.shape):
        raise np.ma.MaskError(
            f"Mask and data not compatible: data shape is {data.shape!r}, and mask shape is {mask.shape!r}."
        )
    return _apply("masked_array", (_masked_array, fill_value, dtype), data, mask, dtype=dtype)


# ---------------------------------------------------------------- access


@derived_from(np.ma)
def filled(a, fill_value=None):
    """``numpy.ma.filled``: a plain array, masked elements replaced by ``fill_value`` (None: each
    block's own fill value, as NumPy)."""
    a = _array(a)
    return _apply("filled", (_filled, fill_value), a, dtype=a.dtype)


def getdata(a):
    """The data of a masked array, without its mask (``numpy.ma.getdata`` on every block).

    Parameters
    ----------
    a : array_like
        The array (an unmasked one is returned as it is).

    Returns
    -------
    RelArray
        ``a``'s values as a plain array, masked elements included.

    Examples
    --------
    >>> m = da.ma.masked_array(da.arange(4, chunks=2), mask=[True, False, False, True])
    >>> da.ma.getdata(m).compute()
    array([0, 1, 2, 3])
    """
    a = _array(a)
    return _apply("getdata", _data_of, a, dtype=a.dtype)


def getmaskarray(a):
    """The mask of a masked array, as a full boolean array (``numpy.ma.getmaskarray`` on every block).

    Parameters
    ----------
    a : array_like
        The array (unmasked: all False).

    Returns
    -------
    RelArray
        A boolean array of ``a``'s shape, True where masked.

    Examples
    --------
    >>> m = da.ma.masked_array(da.arange(4, chunks=2), mask=[True, False, False, True])
    >>> da.ma.getmaskarray(m).compute()
    array([ True, False, False,  True])
    """
    a = _array(a)
    return _apply("getmaskarray", _mask_of, a, dtype=bool)


@derived_from(np.ma)
def set_fill_value(a, fill_value):
    """``numpy.ma.set_fill_value``: in place, as dask (``a`` is rebound to the new blocks)."""
    a = _array(a)
    if getattr(fill_value, "shape", ()) or is_array(fill_value):
        raise ValueError("da.ma.set_fill_value doesn't support array `value`s")
    fill_value = np.ma.core._check_fill_value(fill_value, a.dtype)
    a._become(_apply("set_fill_value", (_set_fill_value, fill_value), a, dtype=a.dtype))


def _like_func(name):
    def f(a, **kwargs):
        a = _array(a)
        return _apply(name, (_like, name), a, dtype=kwargs.get("dtype", a.dtype))

    f.__name__ = name
    f.__doc__ = f"``numpy.ma.{name}`` of every block (the mask kept)."
    return f


empty_like = derived_from(np.ma)(_like_func("empty_like"))
ones_like = derived_from(np.ma)(_like_func("ones_like"))
zeros_like = derived_from(np.ma)(_like_func("zeros_like"))


# ---------------------------------------------------------------- built from array operations


@derived_from(np.ma)
def count(a, axis=None, keepdims=False, split_every=None):
    """``numpy.ma.count``: the unmasked elements along ``axis``."""
    from .elementwise import logical_not
    from .reductions import sum

    return sum(logical_not(getmaskarray(a)), axis=axis, keepdims=keepdims, dtype=np.intp)


@derived_from(np.ma)
def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """``numpy.ma.average``: masked elements (and their weights) left out."""
    from .elementwise import where
    from .reductions import sum

    a = _array(a)
    valid = getmaskarray(a)
    if weights is None:
        num = sum(a, axis=axis, keepdims=keepdims)
        den = sum(where(valid, 0, 1), axis=axis, keepdims=keepdims)
    else:
        w = _array(weights)
        if w.shape != a.shape:
            if axis is None or w.ndim != 1 or w.shape[0] != a.shape[axis]:
                raise ValueError("weights must be of a's shape, or 1-d along axis")
            w = w.reshape(tuple(w.shape[0] if d == (axis % a.ndim) else 1 for d in range(a.ndim)))
        num = sum(a * w, axis=axis, keepdims=keepdims)
        den = sum(where(valid, 0, w), axis=axis, keepdims=keepdims)
    avg = num / den
    return (avg, den) if returned else avg


@derived_from(np.ma)
def nonzero(a):
    """``numpy.ma.nonzero``: the indices of the unmasked non-zero elements."""
    from .datadependent import nonzero as _nonzero

    return _nonzero(filled(a, 0))


@derived_from(np.ma)
def where(condition, x=None, y=None):
    """``numpy.ma.where``: masked where ``condition`` is masked, or where the chosen value is."""
    if (x is None) != (y is None):
        raise ValueError("either both or neither of x and y should be given")
    if x is None:
        return nonzero(condition)
    args = [v if is_array(v) or np.ndim(v) == 0 else _array(v) for v in (condition, x, y)]
    return _apply("where", _where, *args)


# ---------------------------------------------------------------- Dask's dispatch for masked blocks


def _register_dispatch():
    """Dask measures a masked block as data + mask bytes, and a reduction's partial result
    (``MaskedPartial``) concatenates to a plain ``MaskedArray`` (what ``compute()`` returns)."""
    from dask.array.dispatch import concatenate_lookup
    from dask.sizeof import sizeof

    def concatenate(arrays, axis=0):
        out = np.ma.concatenate([_masked.plain(a) for a in arrays], axis=axis)
        return out.view(np.ma.MaskedArray)

    concatenate_lookup.register(_masked.MaskedPartial)(concatenate)
    sizeof.register(np.ma.MaskedArray)(_masked.sizeof)


_register_dispatch()


__all__ = [
    "masked_array",
    "masked_equal",
    "masked_greater",
    "masked_greater_equal",
    "masked_inside",
    "masked_invalid",
    "masked_less",
    "masked_less_equal",
    "masked_not_equal",
    "masked_outside",
    "masked_values",
    "masked_where",
    "filled",
    "fix_invalid",
    "getdata",
    "getmaskarray",
    "set_fill_value",
    "average",
    "empty_like",
    "ones_like",
    "zeros_like",
    "count",
    "nonzero",
    "where",
]

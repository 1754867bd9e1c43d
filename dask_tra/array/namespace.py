"""The Python Array API standard (2024.12) namespace of RelArrays: ``x.__array_namespace__()``.

Functions are those of ``dask_tra.array`` under the standard's names and signatures
(positional-only arrays, keyword-only options, ``device`` accepted as "cpu"). Type
promotion and dtype handling are NumPy 2's (which follow the standard where it speaks).
Functions whose output shape depends on data (``nonzero``, ``unique_*``) find it by an
eager pass (``datadependent``). ``linalg`` and ``fft`` are the standard's extensions. ``docs/api.md`` lists the gaps.
"""

import types as _types
from collections import namedtuple as _namedtuple

import numpy as _np

from . import namespace_fft as fft  # noqa: F401 (the Array API extensions)
from . import namespace_linalg as linalg  # noqa: F401
from .creation import asarray as _asarray  # the one asarray; the standard's below wraps it
from .methods import da as _da  # dask_tra.array: the package binds it before it imports this module
from .namespace_array import (
    Array,  # noqa: F401 (Array: what creation returns)
    floor_divide,  # noqa: F401 (the standard's special cases)
)
from .namespace_array import kept as _kept
from .namespace_array import made as _made
from .relations import is_array as _is_array

__array_api_version__ = "2024.12"

e, inf, nan, newaxis, pi = _np.e, _np.inf, _np.nan, None, _np.pi
bool = _np.bool_  # noqa: A001
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float32, float64, complex64, complex128 = _np.float32, _np.float64, _np.complex64, _np.complex128

# ---------------------------------------------------------------- elementwise
_SAME = """abs add bitwise_and bitwise_or bitwise_xor ceil conj copysign cos cosh equal exp floor
greater greater_equal hypot imag isfinite isinf isnan less less_equal log log1p log2 log10
logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply negative nextafter
not_equal positive real reciprocal remainder sign signbit sin sinh square sqrt subtract tan
trunc""".split()
globals().update({n: getattr(_da, n) for n in _SAME})


def _expm1_chunks(a):
    """exp(a) - 1 where a complex ``a`` has an infinite or NaN part, or is zero (the standard's
    special cases, which are C99's cexp's less one; NumPy's and torch's complex expm1 give
    NaN + NaN j there, and -0 + 0j for -0 + 0j), the library's expm1 elsewhere (real chunks:
    unchanged)."""
    from .kernels import dtype_of, npx

    xp = npx(a)
    with _np.errstate(all="ignore"):
        out = xp.expm1(a)
        if dtype_of(out).kind != "c":
            return out
        return xp.where(xp.isfinite(a) & (a != 0), out, xp.exp(a) - 1)


def expm1(x, /):
    from .elementwise import elementwise

    return elementwise("expm1", _expm1_chunks, x)


def _tanh_chunks(a):
    """The library's tanh, with the standard's ``tanh(±infinity + b j) = ±1 + 0j`` for a finite
    ``b`` (the zero's sign that of ``b``: conjugate symmetry). NumPy and torch follow C99's
    ``1 + 0 sin(2b) j``, which gives -0 for some positive ``b``."""
    from .kernels import dtype_of, npx

    xp = npx(a)
    with _np.errstate(all="ignore"):
        out = xp.tanh(a)
        if dtype_of(out).kind != "c":
            return out
        im = xp.imag(a)
        flip = xp.isinf(xp.real(a)) & xp.isfinite(im) & (xp.signbit(xp.imag(out)) != xp.signbit(im))
        return xp.where(flip, xp.conj(out), out)


def tanh(x, /):
    from .elementwise import elementwise

    return elementwise("tanh", _tanh_chunks, x)


_RENAMED = {
    "acos": "arccos",
    "acosh": "arccosh",
    "asin": "arcsin",
    "asinh": "arcsinh",
    "atan": "arctan",
    "atan2": "arctan2",
    "atanh": "arctanh",
    "bitwise_left_shift": "left_shift",
    "bitwise_invert": "invert",
    "bitwise_right_shift": "right_shift",
    "pow": "power",
    "divide": "true_divide",
}
globals().update({n: getattr(_da, m) for n, m in _RENAMED.items()})


def _integral_keeps(name):
    f = getattr(_da, name)

    def g(x, /):
        x = _asarray(x)
        return _da.astype(x, x.dtype) if x.dtype.kind in "biu" else f(x)

    g.__name__ = name
    return g


ceil, floor, trunc = (_integral_keeps(n) for n in ("ceil", "floor", "trunc"))


def round(x, /):  # noqa: A001
    x = _asarray(x)
    return _da.astype(x, x.dtype) if x.dtype.kind in "biu" else _da.round(x)


def clip(x, /, min=None, max=None):  # noqa: A002
    x = _asarray(x)
    return _da.astype(_da.clip(x, min, max), x.dtype, copy=False)


def where(condition, x1, x2, /):
    return _da.where(condition, x1, x2)


# ---------------------------------------------------------------- creation
def _dev(device):
    if device not in (None, "cpu"):
        raise ValueError(f"unsupported device {device!r}; RelArrays live on 'cpu' (their chunks' library)")


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """``creation.asarray`` with the standard's ``device=`` and ``copy=``. ``copy=True``: a new
    array that a later item assignment to ``obj`` (or a change of the NumPy data it wraps)
    leaves alone."""
    _dev(device)
    given = _is_array(obj)
    if copy and not given:
        obj = _np.array(obj, copy=True)
    out = _asarray(obj, dtype=dtype)
    if copy and out is obj:
        out = out.copy()
    return out if given else _made(out)  # a RelArray given keeps its kind (and its ``//``)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    _dev(device)
    return _made(_da.arange(start, stop, step, dtype=dtype))


def empty(shape, *, dtype=None, device=None):
    _dev(device)
    return _made(_da.empty(shape, dtype=dtype or float64))


def zeros(shape, *, dtype=None, device=None):
    _dev(device)
    return _made(_da.zeros(shape, dtype=dtype or float64))


def ones(shape, *, dtype=None, device=None):
    _dev(device)
    return _made(_da.ones(shape, dtype=dtype or float64))


def full(shape, fill_value, *, dtype=None, device=None):
    _dev(device)
    return _made(_da.full(shape, fill_value, dtype=dtype))


def empty_like(x, /, *, dtype=None, device=None):
    return _made(_da.empty_like(x, dtype=dtype))


def zeros_like(x, /, *, dtype=None, device=None):
    return _made(_da.zeros_like(x, dtype=dtype))


def ones_like(x, /, *, dtype=None, device=None):
    return _made(_da.ones_like(x, dtype=dtype))


def full_like(x, /, fill_value, *, dtype=None, device=None):
    return _made(_da.full_like(x, fill_value, dtype=dtype))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    _dev(device)
    return _made(_da.eye(n_rows, M=n_cols, k=k, dtype=dtype or float64))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    _dev(device)
    return _made(_da.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))


def from_dlpack(x, /, *, device=None, copy=None):
    return _made(_asarray(_np.from_dlpack(x)))


def meshgrid(*arrays, indexing="xy"):
    out = _da.meshgrid(*arrays, indexing=indexing)
    return [_kept(arrays, g) for g in out]  # a list in 2024.12 (a tuple from 2025.12)


tril, triu = _da.tril, _da.triu


# ---------------------------------------------------------------- data types
def astype(x, dtype, /, *, copy=True, device=None):
    _dev(device)
    return _da.astype(x, dtype, copy=copy)


def _dtype_of(v):
    return v.dtype if _is_array(v) or isinstance(v, _np.ndarray) else v


def result_type(*arrays_and_dtypes):
    return _np.result_type(*[_dtype_of(v) for v in arrays_and_dtypes])


def can_cast(from_, to, /):
    return _np.can_cast(_dtype_of(from_), to)


_FInfo = _namedtuple("finfo_object", ["bits", "eps", "max", "min", "smallest_normal", "dtype"])


def finfo(type, /):  # noqa: A002
    """NumPy's finfo with Python floats, as the standard asks (NumPy's are NumPy scalars)."""
    f = _np.finfo(_dtype_of(type))
    return _FInfo(int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), f.dtype)


def iinfo(type, /):  # noqa: A002
    return _np.iinfo(_dtype_of(type))


def isdtype(dtype, kind):
    return _np.isdtype(dtype, kind)


# ---------------------------------------------------------------- linear algebra, manipulation
def matmul(x1, x2, /):
    return _da.matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    return _da.tensordot(x1, x2, axes)


vecdot, matrix_transpose = _da.vecdot, _da.matrix_transpose


def broadcast_arrays(*arrays):
    return [_kept(arrays, b) for b in _da.broadcast_arrays(*arrays)]  # a list in 2024.12 (a tuple from 2025.12)


def broadcast_to(x, /, shape):
    return _kept((x,), _da.broadcast_to(x, shape))


def concat(arrays, /, *, axis=0):
    return _da.concatenate(arrays, axis=axis)


def expand_dims(x, /, axis=0):
    return _da.expand_dims(x, axis)


def flip(x, /, *, axis=None):
    return _da.flip(x, axis)


def moveaxis(x, source, destination, /):
    return _da.moveaxis(x, source, destination)


def permute_dims(x, /, axes):
    return _da.transpose(x, axes)


def repeat(x, repeats, /, *, axis=None):
    if _is_array(repeats):  # the output length depends on the repeats: computed first
        repeats = _np.asarray(repeats)
    return _da.repeat(x, repeats, axis)


def reshape(x, /, shape, *, copy=None):
    return _da.reshape(x, shape)


def roll(x, /, shift, *, axis=None):
    return _da.roll(x, shift, axis)


def squeeze(x, /, axis):
    return _da.squeeze(x, axis)


def stack(arrays, /, *, axis=0):
    return _da.stack(arrays, axis)


def tile(x, repetitions, /):
    return _da.tile(x, repetitions)


def unstack(x, /, *, axis=0):
    return _da.unstack(x, axis=axis)


def take(x, indices, /, *, axis=None):
    if axis is None and x.ndim != 1:
        raise ValueError("take: axis is required for arrays of more than one dimension")
    return _da.take(x, indices, axis=0 if axis is None else axis)


def take_along_axis(x, indices, /, *, axis=-1):
    return _da.take_along_axis(x, indices, axis)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    return _da.sort(x, axis=axis, descending=descending, stable=stable)


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    return _da.argsort(x, axis=axis, descending=descending, stable=stable)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    return _da.searchsorted(x1, x2, side=side, sorter=sorter)


# ---------------------------------------------------------------- statistics, searching, utility
def _red(name):
    f = getattr(_da, name)

    def g(x, /, *, axis=None, keepdims=False, **kw):
        return f(x, axis=axis, keepdims=keepdims, **kw)

    g.__name__ = name
    return g


max, min, mean, all, any, argmax, argmin, count_nonzero = (  # noqa: A001
    _red(n) for n in ("max", "min", "mean", "all", "any", "argmax", "argmin", "count_nonzero")
)


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001
    return _da.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    return _da.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _da.var(x, axis=axis, ddof=correction, keepdims=keepdims)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _da.std(x, axis=axis, ddof=correction, keepdims=keepdims)


def _cumulative(name):
    f = getattr(_da, "cumsum" if name == "cumulative_sum" else "cumprod")

    def g(x, /, *, axis=None, dtype=None, include_initial=False):
        if axis is None:
            if x.ndim != 1:
                raise ValueError(f"{name}: axis is required for arrays of more than one dimension")
            axis = 0
        out = f(x, axis=axis, dtype=dtype)
        if include_initial:
            axis = axis % x.ndim
            shape = out.shape[:axis] + (1,) + out.shape[axis + 1 :]
            first = _da.full(shape, 0 if name == "cumulative_sum" else 1, dtype=out.dtype)
            out = _da.concatenate([first, out], axis=axis)
        return out

    g.__name__ = name
    return g


cumulative_sum, cumulative_prod = _cumulative("cumulative_sum"), _cumulative("cumulative_prod")


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    return _da.diff(x, n=n, axis=axis, prepend=prepend, append=append)


def nonzero(x, /):
    if _asarray(x).ndim == 0:
        raise ValueError("nonzero of a 0-d array")
    return tuple(_kept((x,), v) for v in _da.nonzero(x))


_UniqueAll = _namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
_UniqueCounts = _namedtuple("UniqueCountsResult", ["values", "counts"])
_UniqueInverse = _namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique(x, index, inverse, counts):
    """NumPy's unique of the computed values (NaNs kept distinct, as the standard says)."""
    a = _np.asarray(x)
    out = _np.unique(a.ravel(), return_index=index, return_inverse=inverse, return_counts=counts, equal_nan=False)
    out = list(out) if isinstance(out, tuple) else [out]
    if inverse:
        out[1 + index] = out[1 + index].reshape(a.shape)
    return [_kept((x,), _da.from_array(v)) for v in out]


def unique_values(x, /):
    return _unique(x, False, False, False)[0]


def unique_counts(x, /):
    return _UniqueCounts(*_unique(x, False, False, True))


def unique_inverse(x, /):
    return _UniqueInverse(*_unique(x, False, True, False))


def unique_all(x, /):
    return _UniqueAll(*_unique(x, True, True, True))


class _Info:
    """``__array_namespace_info__()``: devices, default dtypes, capabilities."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 52}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu"]

    def default_dtypes(self, *, device=None):
        return {
            "real floating": _np.dtype(float64),
            "complex floating": _np.dtype(complex128),
            "integral": _np.dtype(int64),
            "indexing": _np.dtype(int64),
        }

    def dtypes(self, *, device=None, kind=None):
        out = {n: _np.dtype(n) for n in _da._DTYPES}  # the Array API's dtypes, as dask.array's aliases
        return out if kind is None else {n: d for n, d in out.items() if _np.isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()


# ---------------------------------------------------------------- beyond the standard
# NumPy names xarray's duck-array code calls on ``__array_namespace__()`` (rolling pads, xr.dot
# and quantile transpose, reductions with skipna use the nan-functions)
transpose, einsum, concatenate, pad = _da.transpose, _da.einsum, _da.concatenate, _da.pad
median, nanmedian, quantile, nanquantile = _da.median, _da.nanmedian, _da.quantile, _da.nanquantile
nansum, nanprod, nanmean, nanmax, nanmin = _da.nansum, _da.nanprod, _da.nanmean, _da.nanmax, _da.nanmin
nanvar, nanstd, nanargmin, nanargmax = _da.nanvar, _da.nanstd, _da.nanargmin, _da.nanargmax
nancumsum, nancumprod, cumsum, cumprod = _da.nancumsum, _da.nancumprod, _da.cumsum, _da.cumprod
sliding_window_view = _da.sliding_window_view
lib = _types.SimpleNamespace(stride_tricks=_types.SimpleNamespace(sliding_window_view=sliding_window_view))

"""The Python Array API standard (2024.12) namespace of RelArrays: ``x.__array_namespace__()``.

Functions are those of ``dask_tra.array`` under the standard's names and signatures
(positional-only arrays, keyword-only options, ``device`` accepted as "cpu"). Type
promotion and dtype handling are NumPy 2's (which follow the standard where it speaks).
Functions whose output shape depends on data (``nonzero``, ``unique_*``) and sorting are
not supported: they raise NotImplementedError. ``docs/api.md`` lists the gaps.
"""
import numpy as _np

import dask_tra.array as _da
from .relations import is_array as _is_array

__array_api_version__ = "2024.12"

e, inf, nan, newaxis, pi = _np.e, _np.inf, _np.nan, None, _np.pi
bool = _np.bool_  # noqa: A001
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float32, float64, complex64, complex128 = _np.float32, _np.float64, _np.complex64, _np.complex128

# ---------------------------------------------------------------- elementwise
_SAME = """abs add bitwise_and bitwise_or bitwise_xor ceil conj copysign cos cosh equal exp expm1 floor
floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal log log1p log2 log10
logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply negative nextafter
not_equal positive real reciprocal remainder sign signbit sin sinh square sqrt subtract tan tanh
trunc""".split()
globals().update({n: getattr(_da, n) for n in _SAME})
_RENAMED = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
            "atan2": "arctan2", "atanh": "arctanh", "bitwise_left_shift": "left_shift",
            "bitwise_invert": "invert", "bitwise_right_shift": "right_shift", "pow": "power",
            "divide": "true_divide"}
globals().update({n: getattr(_da, m) for n, m in _RENAMED.items()})


def _integral_keeps(name):
    f = getattr(_da, name)

    def g(x, /):
        x = _da.asarray(x)
        return _da.astype(x, x.dtype) if x.dtype.kind in "biu" else f(x)
    g.__name__ = name
    return g


ceil, floor, trunc = (_integral_keeps(n) for n in ("ceil", "floor", "trunc"))


def round(x, /):  # noqa: A001
    x = _da.asarray(x)
    return _da.astype(x, x.dtype) if x.dtype.kind in "biu" else _da.round(x)


def clip(x, /, min=None, max=None):  # noqa: A002
    x = _da.asarray(x)
    return _da.astype(_da.clip(x, min, max), x.dtype, copy=False)


def where(condition, x1, x2, /):
    return _da.where(condition, x1, x2)


# ---------------------------------------------------------------- creation
def _dev(device):
    if device not in (None, "cpu"):
        raise ValueError(f"unsupported device {device!r}; RelArrays live on 'cpu' (their chunks' library)")


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    _dev(device)
    return _da.asarray(obj, dtype=dtype)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    _dev(device)
    return _da.arange(start, stop, step, dtype=dtype)


def empty(shape, *, dtype=None, device=None):
    _dev(device)
    return _da.empty(shape, dtype=dtype or float64)


def zeros(shape, *, dtype=None, device=None):
    _dev(device)
    return _da.zeros(shape, dtype=dtype or float64)


def ones(shape, *, dtype=None, device=None):
    _dev(device)
    return _da.ones(shape, dtype=dtype or float64)


def full(shape, fill_value, *, dtype=None, device=None):
    _dev(device)
    return _da.full(shape, fill_value, dtype=dtype)


def empty_like(x, /, *, dtype=None, device=None):
    return _da.empty_like(x, dtype=dtype)


def zeros_like(x, /, *, dtype=None, device=None):
    return _da.zeros_like(x, dtype=dtype)


def ones_like(x, /, *, dtype=None, device=None):
    return _da.ones_like(x, dtype=dtype)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    return _da.full_like(x, fill_value, dtype=dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    _dev(device)
    return _da.eye(n_rows, M=n_cols, k=k, dtype=dtype or float64)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    _dev(device)
    return _da.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


def from_dlpack(x, /, *, device=None, copy=None):
    return _da.asarray(_np.from_dlpack(x))


def meshgrid(*arrays, indexing="xy"):
    arrays = [_da.ravel(_da.asarray(a)) for a in arrays]
    n = len(arrays)
    shapes = [[1] * n for _ in arrays]
    for i, a in enumerate(arrays):
        shapes[i][i] = a.shape[0]
    if indexing == "xy" and n > 1:
        for s in shapes:
            s[0], s[1] = s[1], s[0]
    grids = [_da.reshape(a, tuple(s)) for a, s in zip(arrays, shapes)]
    return _da.broadcast_arrays(*grids)


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


def finfo(type, /):  # noqa: A002
    return _np.finfo(_dtype_of(type))


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
    return _da.broadcast_arrays(*arrays)


def broadcast_to(x, /, shape):
    return _da.broadcast_to(x, shape)


def concat(arrays, /, *, axis=0):
    return _da.concatenate(arrays, axis=axis)


def expand_dims(x, /, *, axis=0):
    return _da.expand_dims(x, axis)


def flip(x, /, *, axis=None):
    return _da.flip(x, axis)


def moveaxis(x, source, destination, /):
    return _da.moveaxis(x, source, destination)


def permute_dims(x, /, axes):
    return _da.transpose(x, axes)


def repeat(x, repeats, /, *, axis=None):
    if _is_array(repeats):
        raise NotImplementedError("repeat with a RelArray of repeats has a data-dependent shape")
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
    if _is_array(indices):
        raise NotImplementedError("take with a RelArray of indices: compute the indices first")
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis is required for arrays of more than one dimension")
        axis = 0
    return x[(slice(None),) * (axis % x.ndim) + (_np.asarray(indices),)]


# ---------------------------------------------------------------- statistics, searching, utility
def _red(name):
    f = getattr(_da, name)

    def g(x, /, *, axis=None, keepdims=False, **kw):
        return f(x, axis=axis, keepdims=keepdims, **kw)
    g.__name__ = name
    return g


max, min, mean, all, any, argmax, argmin, count_nonzero = (  # noqa: A001
    _red(n) for n in ("max", "min", "mean", "all", "any", "argmax", "argmin", "count_nonzero"))


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
            shape = out.shape[:axis] + (1,) + out.shape[axis + 1:]
            first = _da.full(shape, 0 if name == "cumulative_sum" else 1, dtype=out.dtype)
            out = _da.concatenate([first, out], axis=axis)
        return out
    g.__name__ = name
    return g


cumulative_sum, cumulative_prod = _cumulative("cumulative_sum"), _cumulative("cumulative_prod")


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    return _da.diff(x, n=n, axis=axis, prepend=prepend, append=append)


def _unsupported(name, why):
    def f(*args, **kwargs):
        raise NotImplementedError(f"{name}: {why}")
    f.__name__ = name
    return f


_DATA_SHAPE = "the output shape depends on the data; not supported by dask_tra arrays"
nonzero = _unsupported("nonzero", _DATA_SHAPE)
unique_all, unique_counts, unique_inverse, unique_values = (
    _unsupported(n, _DATA_SHAPE) for n in ("unique_all", "unique_counts", "unique_inverse", "unique_values"))
sort, argsort, searchsorted = (_unsupported(n, "sorting is not supported yet")
                               for n in ("sort", "argsort", "searchsorted"))
take_along_axis = _unsupported("take_along_axis", "indices are data; not supported yet")


class _Info:
    """``__array_namespace_info__()``: devices, default dtypes, capabilities."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": False, "max dimensions": 52}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu"]

    def default_dtypes(self, *, device=None):
        return {"real floating": _np.dtype(float64), "complex floating": _np.dtype(complex128),
                "integral": _np.dtype(int64), "indexing": _np.dtype(int64)}

    def dtypes(self, *, device=None, kind=None):
        names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64", "complex64", "complex128"]
        out = {n: _np.dtype(n) for n in names}
        return out if kind is None else {n: d for n, d in out.items() if _np.isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()

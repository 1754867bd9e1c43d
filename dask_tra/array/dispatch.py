"""NumPy's protocols: ``__array_ufunc__`` and ``__array_function__`` route NumPy calls on
RelArrays to this namespace, so ``np.exp(x)`` or ``np.tensordot(x, y)`` build TRA
expressions instead of computing."""

from __future__ import annotations

import numpy as np

from . import methods
from .chunk_types import is_valid_chunk_type, should_defer
from .core import RelArray
from .gufuncs import apply_gufunc

# NumPy functions that only read dtypes: answered from metadata
DTYPE_ONLY = {np.result_type, np.can_cast, np.min_scalar_type}
REDUCE_UFUNCS = {
    "add": "sum",
    "multiply": "prod",
    "maximum": "max",
    "minimum": "min",
    "logical_or": "any",
    "logical_and": "all",
    "fmax": "nanmax",
    "fmin": "nanmin",
}
ACCUMULATE_UFUNCS = {"add": "cumsum", "multiply": "cumprod"}


def _namespace():
    """dask_tra.array, as bound for RelArray's methods (``methods.bind``): the package imports
    this module, so this module does not import the package."""
    return methods.da


def _known(v) -> bool:
    """Whether a RelArray handles an operation with ``v`` (else it defers: NEP 13)."""
    return not should_defer(v)


def array_ufunc(ufunc, method, *inputs, **kwargs):
    da = _namespace()
    if not all(_known(v) for v in (*inputs, *(kwargs.get("out") or ()))):
        return NotImplemented
    if method == "__call__":
        if ufunc is np.matmul:
            return da.matmul(*inputs, **kwargs)
        if ufunc is np.vecdot:
            return da.vecdot(*inputs, **kwargs)
        if ufunc.signature is not None:  # a generalized ufunc (``numba.guvectorize``): dask's route
            return apply_gufunc(ufunc, ufunc.signature, *inputs, **kwargs)
        return da.apply_ufunc(ufunc, *inputs, **kwargs)
    if method == "reduce" and ufunc.__name__ in REDUCE_UFUNCS:
        kwargs.setdefault("axis", 0)
        return getattr(da, REDUCE_UFUNCS[ufunc.__name__])(*inputs, **kwargs)
    if method == "accumulate" and ufunc.__name__ in ACCUMULATE_UFUNCS:
        kwargs.setdefault("axis", 0)
        return getattr(da, ACCUMULATE_UFUNCS[ufunc.__name__])(*inputs, **kwargs)
    if method == "outer" and len(inputs) == 2:
        a, b = (da.asarray(v) for v in inputs)
        return da.apply_ufunc(ufunc, da.reshape(a, a.shape + (1,) * b.ndim), b, **kwargs)
    return NotImplemented


def array_function(func, types, args, kwargs):
    if func in DTYPE_ONLY:
        swap = [a.dtype if isinstance(a, RelArray) else a for a in args]
        return func(*swap, **kwargs)
    if not all(issubclass(t, RelArray) or is_valid_chunk_type(t) for t in types):
        return NotImplemented
    impl = HANDLED.get(func)
    if impl is None:
        impl = getattr(_submodule(func), func.__name__, None)
    if impl is None or not callable(impl):
        return _computed(func, args, kwargs)
    return impl(*args, **kwargs)


def _submodule(func):
    """dask_tra's module for a NumPy function's (``numpy.linalg.det`` -> ``dask_tra.array.linalg``),
    or None when the function is not NumPy's."""
    mod = getattr(func, "__module__", "") or ""
    if not mod.startswith("numpy"):
        return None
    name = mod.split(".")[1] if mod.count(".") else ""
    if name in ("linalg", "fft") and getattr(getattr(np, name), func.__name__, None) is func:
        return getattr(_namespace(), name)
    return _namespace() if getattr(np, func.__name__, None) is func else None


def _computed(func, args, kwargs):
    """dask.array's answer to a NumPy function it lacks: a FutureWarning, then the function on
    the computed arguments (the only place where a NumPy call computes)."""
    import warnings

    import dask

    warnings.warn(
        f"The `{func.__module__}.{func.__name__}` function is not implemented by dask_tra array. "
        "You may want to use the da.map_blocks function or something similar to silence this warning. "
        "Your code may stop working in a future release.",
        FutureWarning,
        stacklevel=3,
    )
    args, kwargs = dask.compute(args, kwargs)
    return func(*args, **kwargs)


def _shape(a):
    return a.shape


def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    da = _namespace()
    return bool(da.all(da.isclose(a, b, rtol, atol, equal_nan)).compute())


def _array_equal(a1, a2, equal_nan=False):
    da = _namespace()
    a1, a2 = da.asarray(a1), da.asarray(a2)
    if a1.shape != a2.shape:
        return False
    eq = (
        da.equal(a1, a2)
        if not equal_nan
        else da.logical_or(da.equal(a1, a2), da.logical_and(da.isnan(a1), da.isnan(a2)))
    )
    return bool(da.all(eq).compute())


HANDLED = {
    np.shape: _shape,
    np.iscomplexobj: lambda x: np.issubdtype(x.dtype, np.complexfloating),
    np.isrealobj: lambda x: not np.issubdtype(x.dtype, np.complexfloating),
    np.ndim: lambda a: a.ndim,
    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
    np.allclose: _allclose,
    np.array_equal: _array_equal,
    np.amax: lambda *a, **k: _namespace().max(*a, **k),
    np.amin: lambda *a, **k: _namespace().min(*a, **k),
}


__all__ = ["array_ufunc", "array_function", "HANDLED"]

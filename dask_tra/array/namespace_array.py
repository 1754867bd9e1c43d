"""The arrays the Array API namespace makes: RelArrays whose operators agree with its functions."""

import numpy as np

from . import methods
from .core import RelArray


class Array(RelArray):
    """A RelArray made by a creation function of ``dask_tra.array.namespace`` (``asarray`` of
    non-RelArray data, ``zeros``, ``arange``, ...). The standard asks that ``x1 // x2`` equal the
    namespace's ``floor_divide(x1, x2)``: floor(x1 / x2) where an operand is infinite, where NumPy's
    floor_divide (and so ``//`` on a ``dask_tra.array`` RelArray) gives NaN or -1. Every other
    operator is RelArray's. An array computed from ``Array``s alone (and scalars or NumPy arrays)
    is an ``Array``; one computed with a ``dask_tra.array`` RelArray among its operands is a
    RelArray, and so is ``//`` of the two: a namespace-made scalar that xarray's ``fillna``
    mixes into a user's array leaves it NumPy's."""

    _repr_name = "dask_tra.array.namespace.Array"

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """As RelArray's; ``ndarray // Array`` (NumPy's operator calls ``np.floor_divide``) is the
        namespace's floor_divide too."""
        if ufunc is np.floor_divide and method == "__call__" and len(inputs) == 2 and not kwargs:
            reflected = inputs[0] is not self
            out = _floor_divide(self, inputs[0] if reflected else inputs[1], reflected)
            if out is not NotImplemented:
                return out
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)

    def __floordiv__(self, other):
        """``self // other``: ``floor_divide`` (the namespace's)."""
        return _floor_divide(self, other)

    def __rfloordiv__(self, other):
        """``other // self``: ``floor_divide`` (the namespace's)."""
        return _floor_divide(self, other, reflected=True)


def _floor_divide(x, other, reflected=False):
    if isinstance(other, RelArray) and not isinstance(other, Array):  # a RelArray's kind wins: NumPy's //
        return RelArray.__rfloordiv__(x, other) if reflected else RelArray.__floordiv__(x, other)
    if methods.defers_to(other):
        return NotImplemented  # as RelArray's operators: the other operand's type answers
    return floor_divide(other, x) if reflected else floor_divide(x, other)


def _floor_divide_chunks(a, b):
    """floor(a / b) where an operand is infinite (the standard's special cases; NumPy returns
    NaN or -1 there), NumPy's floor_divide elsewhere."""
    from .kernels import dtype_of, npx

    xp = npx(a, b)
    with np.errstate(all="ignore"):
        out = xp.floor_divide(a, b)
        if dtype_of(out).kind != "f":
            return out
        return xp.where(xp.isinf(a) | xp.isinf(b), xp.floor(a / b), out)


def floor_divide(x1, x2, /):
    from .elementwise import elementwise

    return elementwise("floor_divide", _floor_divide_chunks, x1, x2)


def made(x):
    """``x``, a RelArray a creation function just built, as an ``Array`` (a new object over the
    same relation: ``x`` may be one the caller holds too)."""
    out = Array.__new__(Array)
    out.__dict__.update(x.__dict__)
    out._plans = {}
    return out


def kept(inputs, out):
    """``out``, computed from the arrays ``inputs`` by a function that mixes in arrays of its own
    or finds ``out`` by an eager pass (``broadcast_to``, ``inv``; ``nonzero``, ``unique_*``), of
    their kind: an ``Array`` when every RelArray among ``inputs`` is one."""
    arrays = [a for a in inputs if isinstance(a, RelArray)]
    return made(out) if arrays and all(isinstance(a, Array) for a in arrays) else out

"""NumPy chunks: the reference backend (kernels behave exactly as NumPy)."""

from __future__ import annotations

import numpy as np

from .base import Backend
from .masked import any_masked, plain, refuse
from .registry import register


class _NumpyNamespace:
    """NumPy itself, plus ``astype`` as a function (NumPy < 2.1 lacks ``np.astype``)."""

    def __getattr__(self, name):
        value = getattr(np, name)
        self.__dict__[name] = value  # later lookups skip __getattr__
        return value

    @staticmethod
    def astype(x, dtype, copy=True):
        x = x if hasattr(x, "astype") else np.asarray(x)
        return x.astype(np.dtype(dtype), copy=copy)

    @staticmethod
    def asarray(x, dtype=None):
        return np.asarray(x, dtype=dtype)


class NumpyBackend(Backend):
    name = "numpy"
    module_name = "numpy"
    chunk_modules = ("numpy",)

    def __init__(self):
        self._ns = _NumpyNamespace()

    @property
    def module(self):
        return np

    def np(self, device=None):
        return self._ns

    def chunk_types(self):
        return (np.ndarray,)

    def from_numpy(self, a, device=None):
        return np.asarray(a)

    def asarray(self, x, dtype=None, device=None):
        from . import _backend_of_one

        src = _backend_of_one(x)
        if src is not None and src is not self:
            x = src.to_numpy(x)
        return np.asarray(x, dtype=dtype)

    def full(self, shape, value, dtype, device=None):
        return np.full(tuple(shape), value, np.dtype(dtype))

    def astype(self, x, dtype, copy=False):
        return self._ns.astype(x, dtype, copy=copy)

    def concat(self, chunks, axis=0):
        chunks = list(chunks)
        if any_masked(*chunks):  # np.concatenate drops masks
            return np.ma.concatenate([plain(c) for c in chunks], axis=axis)
        if all(getattr(c, "flags", None) is None or c.flags.c_contiguous for c in chunks):
            return np.concatenate(chunks, axis=axis)
        # written in C order, as dask's concatenate3 writes it: np.concatenate keeps its inputs'
        # layout, so transposed blocks would give a reader strided rows (a quantile sorts them 2x slower)
        shape = list(np.shape(chunks[0]))
        shape[axis] = sum(np.shape(c)[axis] for c in chunks)
        return np.concatenate(chunks, axis=axis, out=np.empty(shape, np.result_type(*chunks)))

    def einsum(self, subscripts, *operands):
        for c in operands:
            refuse(c, "einsum")
        return np.einsum(subscripts, *operands)

    def matmul(self, a, b):
        refuse(a, "matmul")
        refuse(b, "matmul")
        return a @ b

    def to_numpy(self, x):
        return np.asarray(x)

    def sizeof(self, x):
        return int(np.asarray(x).nbytes)

    def block(self, x, index):
        return x[index]


register(NumpyBackend())

"""``scipy.sparse`` chunks (2-d matrices and arrays: ``csr_matrix``, ``csc_array``, ...).

What dask.array does with them, dask_tra does: blocks made by ``map_blocks`` or ``from_array``,
sliced (rows, columns, integer and boolean indexes), joined (``vstack``/``hstack``, keeping the
chunks' format and container), assembled by ``compute``. ``scipy.sparse`` takes no part in
NumPy's protocols, so NumPy functions on these chunks raise ``UnsupportedOperation`` naming the
function, never densifying silently; ``to_numpy`` (``toarray``) is the explicit way out.
"""

from __future__ import annotations

import numpy as np

from .base import Backend, UnsupportedOperation
from .registry import register


class _Refusing:
    """NumPy's names on scipy.sparse chunks: joins and reshapes, every other one refused by name."""

    def __init__(self, backend):
        self._b = backend

    def concatenate(self, arrays, axis=0, **kw):
        return self._b.concat(arrays, axis=axis)

    concat = concatenate

    def reshape(self, x, shape, **kw):
        shape = tuple(shape)
        if not self._b.owns(x):
            return np.reshape(x, shape)
        if len(shape) == 2:
            return x.reshape(shape)
        return x.toarray().reshape(shape)  # a scipy.sparse chunk is 2-d: a row or value is dense

    def take(self, x, indices, axis=None, **kw):
        if not self._b.owns(x) or axis is None:
            return np.take(x, indices, axis=axis)
        return x[np.asarray(indices)] if axis % 2 == 0 else x[:, np.asarray(indices)]

    def flip(self, x, axis=None):
        if not self._b.owns(x):
            return np.flip(x, axis)
        axes = (0, 1) if axis is None else tuple(a % 2 for a in np.atleast_1d(axis))
        return x[tuple(slice(None, None, -1) if a in axes else slice(None) for a in (0, 1))]

    def asarray(self, x, dtype=None):
        if self._b.owns(x):
            return x if dtype is None else x.astype(np.dtype(dtype))
        return np.asarray(x, dtype=dtype)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in ("errstate", "dtype", "result_type", "ndim", "shape"):
            return getattr(np, name)
        raise UnsupportedOperation(f"numpy.{name} is not supported on scipy.sparse chunks")


class ScipySparseBackend(Backend):
    name = "scipy.sparse"
    module_name = "scipy.sparse"
    chunk_modules = ("scipy.sparse",)
    dense = False
    dense_products = True

    def __init__(self):
        self._ns = _Refusing(self)

    @property
    def xp(self):
        return self._ns

    def np(self, device=None):
        return self._ns

    def chunk_types(self):
        m = self.module
        return (m.spmatrix, m.sparray) if hasattr(m, "sparray") else (m.spmatrix,)

    def from_numpy(self, a, device=None):
        a = np.asarray(a)
        if a.ndim != 2:
            raise UnsupportedOperation(f"scipy.sparse chunks are 2-d, not {a.ndim}-d")
        return self.module.csr_matrix(a)

    def full(self, shape, value, dtype, device=None):
        if value != 0:
            return self.from_numpy(np.full(tuple(shape), value, np.dtype(dtype)))
        return self.module.csr_matrix(tuple(shape), dtype=np.dtype(dtype))

    def astype(self, x, dtype, copy=False):
        return x.astype(np.dtype(dtype), copy=copy)

    def concat(self, chunks, axis=0):
        chunks = [c if self.owns(c) else self.from_numpy(c) for c in chunks]
        stack = (self.module.vstack, self.module.hstack)[axis % 2]
        return stack(chunks, format=chunks[0].format)

    def matmul(self, a, b):
        out = a @ b
        return out.toarray() if self.owns(out) and any(isinstance(v, np.ndarray) for v in (a, b)) else out

    def einsum(self, subscripts, *operands):
        raise UnsupportedOperation("numpy.einsum is not supported on scipy.sparse chunks")

    def to_numpy(self, x):
        return x.toarray() if self.owns(x) else np.asarray(x)

    def sizeof(self, x):
        parts = ("data", "indices", "indptr", "row", "col", "offsets")
        return int(sum(getattr(x, p).nbytes for p in parts if isinstance(getattr(x, p, None), np.ndarray)))

    def is_plain(self, x):
        return False  # serialized by distributed's scipy.sparse serializer

    def probe(self, ones):
        return self.from_numpy(ones) if ones.ndim == 2 else ones

    def dask_meta(self, ndim, dtype):
        return self.zeros((0,) * ndim, dtype) if ndim == 2 else np.empty((0,) * ndim, np.dtype(dtype))

    def empty(self, shape, dtype, device=None):
        if len(shape) != 2:  # a 0-d or 1-d result of these chunks (a RelArray's _meta)
            return np.empty(tuple(shape), np.dtype(dtype))
        return self.zeros(shape, dtype)

    def add_at(self, out, axis, index, values):
        raise UnsupportedOperation("numpy.add.at is not supported on scipy.sparse chunks")


register(ScipySparseBackend())

"""pydata ``sparse`` chunks (``sparse.COO``, and the library's other ``SparseArray`` formats).

``sparse`` implements NumPy's protocols (``__array_ufunc__``, ``__array_function__``), so the
NumPy-style namespace is NumPy itself, dispatching to ``sparse``: ``np.sum(coo)`` runs
``sparse.sum``. A NumPy function ``sparse`` has no implementation of raises
``UnsupportedOperation`` naming it (never a silent densification). NumPy operands of a kernel
are converted to COO (``from_numpy``); ``to_numpy`` (``todense``) is the one explicit way back.
Chunks cross workers with distributed's own ``sparse`` serializer (coordinates and data).
"""

from __future__ import annotations

import numpy as np

from .base import Backend, UnsupportedOperation
from .registry import register

_DENSIFY = "Cannot convert a sparse array to dense automatically"
_SIGNATURE = ("unexpected keyword argument", "positional argument")


def unsupported(name, e=None):
    """The error for NumPy function ``name`` on sparse chunks."""
    why = f" ({e})" if e is not None else ""
    return UnsupportedOperation(
        f"numpy.{name} is not supported on pydata sparse chunks by the sparse library{why}; "
        f"convert with .map_blocks(lambda b: b.todense()) first"
    )


def _guarded(name, f):
    def call(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except TypeError as e:
            if "no implementation found" in str(e):
                raise unsupported(name) from None
            if any(w in str(e) for w in _SIGNATURE):  # sparse's function lacks NumPy's argument
                raise unsupported(name, e) from None
            raise
        except RuntimeError as e:
            if _DENSIFY in str(e):
                raise unsupported(name, "it would densify") from None
            raise

    call.__name__ = name
    return call


class _SparseNamespace:
    """NumPy's names on sparse chunks: NumPy's functions (dispatched to ``sparse``), with the
    few that must not densify or that ``sparse`` spells differently replaced."""

    def __init__(self, backend):
        self._b = backend

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        f = getattr(np, name)
        if callable(f) and not isinstance(f, (type, np.ufunc)) and name != "errstate":
            f = _guarded(name, f)
        self.__dict__[name] = f
        return f

    @staticmethod
    def astype(x, dtype, copy=True):
        x = x if hasattr(x, "astype") else np.asarray(x)
        return x.astype(np.dtype(dtype), copy=copy)

    def asarray(self, x, dtype=None):
        if self._b.owns(x):
            return x if dtype is None else x.astype(np.dtype(dtype), copy=False)
        return np.asarray(x, dtype=dtype)

    def concatenate(self, arrays, axis=0, **kw):
        return self._b.concat(arrays, axis=axis)

    concat = concatenate

    def stack(self, arrays, axis=0, **kw):
        return self._b.module.stack(self._b.same_fill(arrays), axis=axis)

    def full_like(self, x, fill_value, dtype=None, **kw):
        dtype = np.dtype(x.dtype if dtype is None else dtype)
        return self._b.full(x.shape, fill_value, dtype)

    def zeros_like(self, x, dtype=None, **kw):
        return self.full_like(x, 0, dtype)

    def ones_like(self, x, dtype=None, **kw):
        return self.full_like(x, 1, dtype)

    def einsum(self, subscripts, *operands, **kw):
        return self._b.einsum(subscripts, *operands)

    def flip(self, x, axis=None):
        return self._b.module.flip(x, axis=axis)  # sparse's takes axis by keyword only

    def array(self, x, dtype=None, copy=True, **kw):
        if not self._b.owns(x):
            return np.array(x, dtype=dtype, copy=copy)
        return x.astype(np.dtype(dtype)) if dtype is not None else x.copy()


class SparseBackend(Backend):
    name = "sparse"
    module_name = "sparse"
    chunk_modules = ("sparse",)
    dense = False
    dense_products = True

    def __init__(self):
        self._ns = _SparseNamespace(self)

    @property
    def xp(self):
        return self.module  # sparse is its own Array API namespace

    def np(self, device=None):
        return self._ns

    def chunk_types(self):
        m = self.module  # the formats by name: Dask's own lazy dispatch registers COO itself
        return (m.COO, m.GCXS, m.DOK, m.SparseArray)

    def from_numpy(self, a, device=None):
        a = np.asarray(a)
        return self.module.COO.from_numpy(a)

    def asarray(self, x, dtype=None, device=None):
        out = x if self.owns(x) else self.from_numpy(_dense(x))
        return out if dtype is None else self.astype(out, dtype)

    def full(self, shape, value, dtype, device=None):
        return self.module.full(tuple(shape), value, dtype=np.dtype(dtype))

    def zeros(self, shape, dtype, device=None):
        return self.module.zeros(tuple(shape), dtype=np.dtype(dtype))

    def empty(self, shape, dtype, device=None):
        return self.zeros(shape, dtype)

    def random(self, method, seed, shape, dtype, params=(), device=None):
        dense = super().random(method, seed, shape, dtype, params, device)
        return dense if self.owns(dense) else self.from_numpy(dense)

    def astype(self, x, dtype, copy=False):
        return x.astype(np.dtype(dtype), copy=copy)

    def concat(self, chunks, axis=0):
        return self.module.concatenate(self.same_fill(chunks), axis=axis)

    def same_fill(self, chunks):
        """``chunks`` as COO of one fill value (``sparse`` refuses to join differing ones): the
        first chunk's; a chunk of another fill value is rebuilt from its dense values."""
        chunks = [self.asarray(c) for c in chunks]
        fill = chunks[0].fill_value if chunks else 0
        out = []
        for c in chunks:
            if not _same(c.fill_value, fill):
                c = self.module.COO.from_numpy(c.todense(), fill_value=fill)
            out.append(c)
        return out

    def matmul(self, a, b):
        return self._product(self.module.matmul(a, b), a, b)

    def einsum(self, subscripts, *operands):
        return self._product(self.module.einsum(subscripts, *operands), *operands)

    def _product(self, out, *operands):
        """A product's result: dense (NumPy) where an operand is dense (``dense_products``)."""
        return out.todense() if any(isinstance(o, np.ndarray) for o in operands) and self.owns(out) else out

    def to_numpy(self, x):
        return x.todense() if self.owns(x) else np.asarray(x)

    def sizeof(self, x):
        return int(x.nbytes)  # coordinates and values of the stored elements

    def is_plain(self, x):
        return False  # serialized by distributed's sparse serializer, never densified

    def probe(self, ones):
        return self.from_numpy(ones)  # a block function meets COO methods, not NumPy's

    def dask_meta(self, ndim, dtype):
        return self.zeros((0,) * ndim, dtype)

    def block(self, x, index):
        return x[index]

    def add_at(self, out, axis, index, values):
        raise UnsupportedOperation("numpy.add.at is not supported on pydata sparse chunks")


def _same(a, b):
    return bool(a == b or (a != a and b != b))  # NaN fill values match


def _dense(x):
    """A non-sparse operand as a NumPy array (a chunk of another backend by its own transfer)."""
    if isinstance(x, np.ndarray):
        return x
    from . import to_numpy

    return to_numpy(x) if hasattr(x, "shape") else np.asarray(x)


register(SparseBackend())

"""The backend interface, and what all backends share."""

from __future__ import annotations

import functools
import importlib
import math

import numpy as np

from . import registry


class UnsupportedOperation(NotImplementedError):
    """A NumPy function a backend has no implementation of (named in the message)."""


# NumPy dtypes every backend maps (torch lacks arithmetic on uint16/32/64: storage only)
NUMPY_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)

REDUCTIONS = ("sum", "prod", "max", "min", "any", "all", "nansum", "nanprod", "nanmax", "nanmin")


def weak_or_dtype(v):
    """What ``ufunc.resolve_dtypes`` takes for operand ``v``: Python int/float/complex stay weak
    (NEP 50), everything else gives its NumPy dtype."""
    t = type(v)
    if t is bool:
        return np.dtype(bool)
    if t in (int, float, complex):
        return t
    dt = getattr(v, "dtype", None)
    if dt is None:
        return np.asarray(v).dtype
    return numpy_dtype(dt)


def numpy_dtype(dtype) -> np.dtype:
    """A NumPy dtype for a dtype of any backend (``torch.float32`` -> ``float32``): the backend
    owning the dtype's type maps it."""
    if isinstance(dtype, np.dtype):
        return dtype
    b = registry.owner_of_module(type(dtype).__module__)
    return np.dtype(dtype) if b is None else b.numpy_dtype(dtype)


def result_type(*values) -> np.dtype:
    """NumPy's result dtype of some operands (chunks of any library, NumPy or Python scalars;
    Python scalars are weak, NEP 50)."""
    return np.result_type(*[v if type(v) in (int, float, complex) else weak_or_dtype(v) for v in values])


@functools.lru_cache(maxsize=4096)
def loop_dtypes(ufunc_name: str, operands: tuple, out_dtype=None) -> tuple:
    """NumPy's loop dtypes (inputs..., outputs...) of ufunc ``ufunc_name`` for these operand
    dtypes (or weak Python types), optionally with ``dtype=`` forcing the output."""
    u = getattr(np, ufunc_name)
    dtypes = tuple(operands) + (None,) * u.nout
    if out_dtype is None:
        return u.resolve_dtypes(dtypes)
    return u.resolve_dtypes(dtypes, signature=(None,) * u.nin + (np.dtype(out_dtype),) * u.nout)


class Backend:
    """One chunk library. Subclasses set ``name``, ``module_name`` (the library to import) and
    ``chunk_modules`` (modules or packages whose types are its chunks), fill in the methods, and
    ``registry.register`` an instance at the end of their module."""

    name = "backend"
    module_name = ""
    chunk_modules: tuple = ()
    dense = True  # chunks store every element (bytes = size x itemsize); False for sparse formats
    # a product (einsum, matmul) of a chunk with a dense NumPy operand is a NumPy chunk (sparse
    # formats: dense in general, as sparse.tensordot and dask give it)
    dense_products = False

    def __repr__(self):
        return f"<dask_tra backend {self.name!r}>"

    def __reduce__(self):  # pickles as a reference to the registry entry
        return registry.lookup, (self.name,)

    # ------------------------------------------------------------ library and namespaces
    @functools.cached_property
    def module(self):
        try:
            return importlib.import_module(self.module_name)
        except ImportError as e:
            raise ImportError(
                f"the {self.name!r} chunk backend needs {self.module_name!r}: pip install {self.module_name}"
            ) from e

    def available(self) -> bool:
        try:
            _ = self.module  # imports it
        except ImportError:
            return False
        return True

    @functools.cached_property
    def xp(self):
        """The library's Array API namespace (array_api_compat)."""
        return importlib.import_module(f"array_api_compat.{self.module_name}")

    def np(self, device=None):
        """A NumPy-style namespace for chunks on ``device``: NumPy's function names, keyword
        arguments and type promotion, running in this library."""
        raise NotImplementedError

    def owns(self, x) -> bool:
        return registry.owner_of_type(type(x)) is self

    def chunk_types(self) -> tuple:
        """The library's chunk classes (imports the library): what Dask's dispatch registers."""
        return ()

    # ------------------------------------------------------------ dtypes
    def dtype(self, dtype):
        """The library dtype for a NumPy dtype."""
        return np.dtype(dtype)

    def numpy_dtype(self, dtype) -> np.dtype:
        """The NumPy dtype for a library dtype."""
        return np.dtype(dtype)

    def dtype_of(self, x) -> np.dtype:
        return self.numpy_dtype(x.dtype)

    # ------------------------------------------------------------ devices
    def device_of(self, x):
        return None

    def resolve_device(self, device=None):
        """The device new chunks go to (``None``: this process' default for the library)."""
        return device

    def device_memory(self) -> int | None:
        """Total bytes of this process' device memory, or None when chunks live in host memory."""
        return None

    def synchronize(self) -> None:
        """Wait until this process' device has finished the work queued on it (kernels on GPUs
        run asynchronously; a no-op for host memory)."""

    def in_device_memory(self, device=None) -> bool:
        """Whether chunks made for ``device`` (a ``config`` device; None: the default) live in
        device memory, so that the device's memory is a plan's per-site limit."""
        return False

    def device_name(self, device=None) -> str:
        """The name of ``device`` (a ``config`` device or one of ``device_of``) as
        ``RelArray.device`` reports it: ``"cpu"``, ``"cuda"`` (the worker's GPU), ``"cuda:0"``."""
        return "cpu"

    def chunk_device(self, x) -> str | None:
        """The device holding chunk ``x`` when it is in device memory (a name as ``device_name``),
        None when it is in host memory."""
        return None

    # ------------------------------------------------------------ creation
    def from_numpy(self, a, device=None):
        """A chunk holding NumPy array ``a`` (on ``device``)."""
        raise NotImplementedError

    def asarray(self, x, dtype=None, device=None):
        """``x`` (a chunk of any backend, a NumPy array, a scalar or a list) in this library.
        Between device libraries the data moves by DLPack (zero copy)."""
        src = registry.owner_of_type(type(x))
        if src is self:
            out = self.to_device(x, device)
        elif src is None or src.name == "numpy":
            out = self.from_numpy(np.asarray(x), device)
        else:
            out = self._from_foreign(x, src, device)
        return out if dtype is None else self.astype(out, dtype)

    def _from_foreign(self, x, src, device):
        try:
            return self.to_device(self._from_dlpack(x), device)
        except Exception:
            # no common device (e.g. a CPU tensor into CuPy): an explicit copy through host
            return self.from_numpy(src.to_numpy(x), device)

    def _from_dlpack(self, x):
        return self.module.from_dlpack(x)

    def to_device(self, x, device=None):
        return x

    def full(self, shape, value, dtype, device=None):
        return self.np(self.resolve_device(device)).full(tuple(shape), value, np.dtype(dtype))

    def zeros(self, shape, dtype, device=None):
        return self.full(shape, 0, dtype, device)

    def empty(self, shape, dtype, device=None):
        return self.full(shape, 0, dtype, device)

    def random(self, method, seed, shape, dtype, params=(), device=None):
        """A chunk of ``numpy.random.default_rng(seed).<method>(size=shape, **params)``.

        Values come from NumPy's seeded generator on the worker, then the chunk is created in
        this library (one host-to-device copy for device libraries): every backend draws the
        same values for the same seed, key and chunking.
        """
        rng = np.random.default_rng(list(seed) if isinstance(seed, (tuple, list)) else seed)
        out = np.asarray(getattr(rng, method)(size=tuple(shape), **dict(params))).astype(dtype, copy=False)
        return out if self.name == "numpy" else self.from_numpy(out, self.resolve_device(device))

    # ------------------------------------------------------------ operations
    def astype(self, x, dtype, copy=False):
        return x.astype(np.dtype(dtype), copy=copy)

    def concat(self, chunks, axis=0):
        return self.xp.concat(list(chunks), axis=axis)

    def matmul(self, a, b):
        return a @ b

    def einsum(self, subscripts, *operands):
        return self.module.einsum(subscripts, *operands)

    def reduce(self, op, x, axis=None, keepdims=False, dtype=None):
        """NumPy reduction ``op`` (sum, prod, max, min, any, all, nansum, nanprod, nanmax,
        nanmin) over ``axis`` (int, tuple or None)."""
        if op not in REDUCTIONS:
            raise ValueError(f"unknown reduction {op!r}; known: {REDUCTIONS}")
        kw = {"dtype": np.dtype(dtype)} if dtype is not None and op in ("sum", "prod", "nansum", "nanprod") else {}
        return getattr(self.np(self.device_of(x)), op)(x, axis=axis, keepdims=keepdims, **kw)

    def ufunc(self, name, device=None):
        """A callable with the semantics of ``numpy.<name>`` (a ufunc) on this library's chunks."""
        return getattr(self.np(device), name)

    def coerce(self, x, dtype):
        """``x`` with NumPy dtype ``dtype`` (cast only if it differs)."""
        dtype = np.dtype(dtype)
        return x if self.dtype_of(x) == dtype else self.astype(x, dtype)

    # ------------------------------------------------------------ host and memory
    def to_numpy(self, x) -> np.ndarray:
        """The explicit transfer to host memory."""
        return np.asarray(x)

    def sizeof(self, x) -> int:
        return int(math.prod(x.shape)) * self.dtype_of(x).itemsize

    def is_plain(self, x) -> bool:
        """Whether chunk ``x`` is values only: ``to_numpy`` then ``from_numpy`` gives it back whole
        (a tensor holding autograd state is not)."""
        return True

    def probe(self, ones):
        """What a block function's dtype inference passes for an input of this library, given
        NumPy ``ones`` (NumPy itself, unless the library's chunks behave differently on host)."""
        return ones

    def dask_meta(self, ndim, dtype):
        """The empty array dask.array takes as ``meta`` for chunks of this library (NumPy's
        unless dask.array knows the library's arrays)."""
        return np.empty((0,) * ndim, dtype=np.dtype(dtype))

    def block(self, x, index):
        """A contiguous copy of ``x[index]`` (a chunk to ship on its own, not a view of ``x``)."""
        return x[index]

    def add_at(self, out, axis, index, values):
        """``out`` with ``values`` added in place at positions ``index`` (a 1-d integer NumPy
        array; repeated positions accumulate) along ``axis``: NumPy's ``add.at``."""
        np.add.at(np.moveaxis(out, axis, 0), index, np.moveaxis(values, axis, 0))
        return out


__all__ = [
    "Backend",
    "UnsupportedOperation",
    "weak_or_dtype",
    "result_type",
    "loop_dtypes",
    "REDUCTIONS",
    "NUMPY_DTYPES",
]

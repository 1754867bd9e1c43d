"""Chunk libraries behind one small interface: NumPy, CuPy and torch.

Kernels never import a chunk library. They ask the backend of their inputs::

    from dask_tra import backends
    b, (a, c) = backends.align(a, c)     # the chunks' backend; NumPy operands converted to it
    b.xp                                  # its Array API namespace (array_api_compat)
    b.np(device)                          # a NumPy-style namespace: NumPy's names and semantics
    b.astype(a, np.float32); b.einsum("ij,jk->ik", a, c); b.concat([a, c], axis=0)

A backend is chosen from a chunk (``backend_of(chunk)``: by the chunk's type, without
importing anything) or by name (``get("torch")``). Every backend offers:

- ``xp`` (Array API namespace) and ``np(device)`` (NumPy names: ufuncs, reductions with
  ``dtype=``, ``where``, ``take``, ``cumsum``, ... with NumPy's type promotion);
- dtypes: ``dtype(numpy_dtype)`` -> library dtype, ``numpy_dtype(library_dtype)`` -> NumPy dtype;
- creation: ``from_numpy``, ``asarray``, ``full``, ``zeros``, ``random`` (from a seed);
- ``concat``, ``matmul``, ``einsum``, ``reduce``, ``astype``, ``ufunc``;
- ``to_numpy`` (the one explicit transfer to host), ``sizeof``, ``device_of``,
  ``device_memory`` (bytes of this process' device, None for host memory);
- devices: ``in_device_memory(device)``, ``device_name(device)``, ``chunk_device(chunk)``;
- for adapters (the Dask layer): ``chunk_modules``, ``chunk_types()``, ``dask_meta``, ``is_plain``.

A backend joins by one file: ``backends/<name>_backend.py`` (imported with this package), or
any module, defines a ``Backend`` subclass and calls ``register(...)`` (``registry.py``).

This package imports neither Dask nor any chunk library at import time.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np

from . import registry
from .base import Backend, UnsupportedOperation, numpy_dtype, result_type, weak_or_dtype
from .registry import on_register, register, registered

# each *_backend module registers its backend (NumPy, the reference, first)
for _m in sorted(
    (m.name for m in pkgutil.iter_modules(__path__) if m.name.endswith("_backend")),
    key=lambda name: name != "numpy_backend",
):
    importlib.import_module(f"{__name__}.{_m}")
del _m

NUMPY = registered()["numpy"]


def names() -> tuple:
    """Registered backend names: ``("numpy", "cupy", "torch")`` and any registered later."""
    return tuple(registered())


def get(name) -> Backend:
    """The backend called ``name`` (a Backend is returned as is)."""
    if isinstance(name, Backend):
        return name
    try:
        return registry.lookup(name)
    except KeyError:
        raise ValueError(f"unknown chunk backend {name!r}; known: {list(registered())}") from None


def available(name) -> bool:
    """Whether the library behind backend ``name`` can be imported (CuPy: and sees a GPU)."""
    return get(name).available()


def _backend_of_one(x):
    """The backend owning ``x``'s type (by module name, through its MRO), or None."""
    t = type(x)
    if t is np.ndarray:
        return NUMPY
    return registry.owner_of_type(t)


def backend_of(*chunks) -> Backend:
    """The backend of some chunks: the one non-NumPy library among them, else NumPy.

    Scalars, None and NumPy arrays (parameter chunks, baked constants) defer to the other
    operands' library. Chunks of two different non-NumPy libraries are refused.
    """
    found = None
    for c in chunks:
        b = _backend_of_one(c)
        if b is None or b is NUMPY:
            continue
        if found is None:
            found = b
        elif b is not found:
            raise TypeError(
                f"chunks of two libraries in one kernel: {found.name} and {b.name}; "
                f"convert one with RelArray.to_backend(...)"
            )
    return found or NUMPY


def backend_of_type(x) -> str:
    """Backend name of an array (or a dask meta); "numpy" for anything else."""
    b = _backend_of_one(x)
    return b.name if b is not None else "numpy"


def align(*chunks, keep=()):
    """(backend, chunks) with NumPy array (and NumPy scalar) operands converted to the backend's library, on the
    device of its first chunk; operands at positions ``keep`` (host parameters a kernel reads
    as integers) stay NumPy. NumPy-only inputs come back untouched."""
    b = backend_of(*chunks)
    if b is NUMPY:
        return b, chunks
    device = None
    for c in chunks:
        if b.owns(c):
            device = b.device_of(c)
            break
    return b, tuple(
        b.from_numpy(np.asarray(c), device) if isinstance(c, (np.ndarray, np.generic)) and i not in keep else c
        for i, c in enumerate(chunks)
    )


def namespace(*chunks):
    """The Array API namespace of some chunks."""
    return backend_of(*chunks).xp


def numpy_like(*chunks):
    """The NumPy-style namespace of some chunks (NumPy's names and semantics), on their device."""
    b = backend_of(*chunks)
    if b is NUMPY:
        return b.np()
    for c in chunks:
        if b.owns(c):
            return b.np(b.device_of(c))
    return b.np()


def dtype_of(x) -> np.dtype:
    """The NumPy dtype of a chunk of any backend."""
    return numpy_dtype(x.dtype)


def to_numpy(x):
    """``x`` as a NumPy array (the explicit transfer to host; NumPy arrays pass through)."""
    if isinstance(x, np.ndarray):
        return x
    b = _backend_of_one(x)
    return (b or NUMPY).to_numpy(x)


def convert(x, name, device=None):
    """Chunk ``x`` in backend ``name``'s library (DLPack between device libraries)."""
    return get(name).asarray(x, device=device)


def sizeof(x) -> int:
    """Bytes held by chunk ``x`` (its elements; views count their own extent)."""
    b = _backend_of_one(x)
    return (b or NUMPY).sizeof(x)


def block(nested, ndim=None):
    """Concatenate a nested list of chunks (as ``dask.array.core.concatenate3``) with the
    chunks' own library: the result is a chunk of that library, never a NumPy copy."""

    def depth(v):
        d = 0
        while isinstance(v, list):
            v, d = v[0], d + 1
        return d

    ndim = depth(nested) if ndim is None else ndim

    def first(v):
        while isinstance(v, list):
            v = v[0]
        return v

    b = backend_of(first(nested))

    def glue(v, axis):
        if not isinstance(v, list):
            return v
        parts = [glue(p, axis + 1) for p in v]
        return parts[0] if len(parts) == 1 else b.concat(parts, axis=axis)

    return glue(nested, 0)


__all__ = [
    "Backend",
    "UnsupportedOperation",
    "NUMPY",
    "register",
    "on_register",
    "registered",
    "names",
    "get",
    "available",
    "backend_of",
    "backend_of_type",
    "align",
    "namespace",
    "numpy_like",
    "numpy_dtype",
    "dtype_of",
    "to_numpy",
    "convert",
    "sizeof",
    "block",
    "weak_or_dtype",
    "result_type",
]

"""Chunk kernels the array frontend adds to the TRA's own (``dask_tra.tra.kernels``).

Each declares its output chunk axes from its input axes, so every operator built with it
knows its chunk shapes from metadata. Kernels never see keys: anything that depends on
where a chunk sits (offsets, slices) reaches them as data, through a join with a small
parameter relation (see ``relations.param_relation``).

Kernels never import a chunk library: they are written against NumPy's API and get it from
their chunks, ``xp = npx(*chunks)`` (NumPy itself for NumPy chunks; CuPy; for torch, NumPy's
functions with NumPy's type promotion, from ``dask_tra.backends``). ``Fn`` aligns its inputs
(NumPy parameter chunks join the data's library and device) and casts a non-NumPy output to
its declared dtype, so chunks always have the dtype their metadata says.
"""
from __future__ import annotations

import numpy as np

from .. import backends
from ..tra.kernels import Einsum, Kernel
from ..tra.kernels import broadcast_axes as _tra_broadcast_axes
from ..tra.relation import ChunkAxis


def npx(*chunks):
    """The NumPy-style namespace of some chunks (NumPy's names and semantics, in their library)."""
    return backends.numpy_like(*chunks)


def dtype_of(chunk) -> np.dtype:
    """A chunk's dtype as a NumPy dtype (whatever its library)."""
    return backends.dtype_of(chunk)


class Fn(Kernel):
    """A chunk function with declared facts: ``axes(frontier, *in_axes)`` gives the output
    chunk axes (default: those of input 0), ``dtype`` the output dtype. Inputs at positions
    ``host_args`` are parameter chunks the function reads on the host (offsets, index lists):
    they stay NumPy arrays whatever the data's library."""

    def __init__(self, name, fn, arity=1, axes=None, dtype=None, associative=False,
                 commutative=False, distributes_over=(), host_args=()):
        self.name, self.fn, self.arity = name, fn, arity
        self.host_args = tuple(host_args)
        self._axes, self._dtype = axes, None if dtype is None else np.dtype(dtype)
        self.associative, self.commutative = associative, commutative
        self.distributes_over = frozenset(distributes_over)

    def __call__(self, *chunks):
        b, chunks = backends.align(*chunks, keep=getattr(self, "host_args", ()))
        out = self.fn(*chunks)
        if b is backends.NUMPY or self._dtype is None:
            return out
        if not b.owns(out):  # a scalar result: back into the chunks' library and device
            out = b.asarray(out, device=b.device_of(next(c for c in chunks if b.owns(c))))
        return b.coerce(out, self._dtype)

    def out_axes(self, frontier, *in_axes):
        return tuple(self._axes(frontier, *in_axes)) if self._axes else tuple(in_axes[0])

    def out_dtype(self, *dtypes):
        return self._dtype if self._dtype is not None else np.result_type(*dtypes)


class Permute(Kernel):
    """Transpose a chunk: output axis j is input axis ``perm[j]``."""

    def __init__(self, perm):
        self.perm = tuple(int(p) for p in perm)
        self.name = f"transpose{list(self.perm)}"

    def __call__(self, chunk):
        return npx(chunk).transpose(chunk, self.perm)

    def out_axes(self, frontier, axes):
        return tuple(axes[p] for p in self.perm)

    def out_dtype(self, dtype):
        return np.dtype(dtype)


class Reshape(Kernel):
    """Reshape a chunk. ``spec[j]`` is ``n`` (output axis j has constant extent n) or
    ``(p, num, den)`` (extent = input axis p's extent * num / den)."""

    def __init__(self, spec):
        self.spec = tuple(s if isinstance(s, tuple) else int(s) for s in spec)
        self.name = "reshape"

    def _extent(self, s, shape):
        return s if isinstance(s, int) else shape[s[0]] * s[1] // s[2]

    def __call__(self, chunk):
        return npx(chunk).reshape(chunk, tuple(self._extent(s, chunk.shape) for s in self.spec))

    def out_axes(self, frontier, axes):
        return tuple(ChunkAxis.const(s) if isinstance(s, int) else
                     ChunkAxis(axes[s[0]].key_dims, axes[s[0]].sizes * s[1] // s[2]) for s in self.spec)

    def out_dtype(self, dtype):
        return np.dtype(dtype)


class ReduceChunk(Kernel):
    """Reduce a chunk along ``axes`` with a NumPy reduction, keeping the reduced axes (extent 1)."""

    def __init__(self, op, axes, dtype):
        self.op, self.axes, self.dtype = op, tuple(sorted(axes)), np.dtype(dtype)
        self.name = f"{op}{list(self.axes)}"

    def __call__(self, chunk):
        b = backends.backend_of(chunk)
        out = b.reduce(self.op, chunk, axis=self.axes, keepdims=True, dtype=self.dtype)
        if b is backends.NUMPY:
            return np.asarray(out).astype(self.dtype, copy=False)
        return b.coerce(out, self.dtype)

    def out_axes(self, frontier, axes):
        return tuple(ChunkAxis.const(1) if i in self.axes else ax for i, ax in enumerate(axes))

    def out_dtype(self, dtype):
        return self.dtype


def broadcast_axes(frontier, *axes_list):
    """NumPy broadcasting of chunk axes (right-aligned; extent-1 axes stretch)."""
    return _tra_broadcast_axes(frontier, axes_list, "broadcast")


def along(axes, axis, new_axis):
    """``axes`` with chunk axis ``axis`` replaced."""
    return tuple(axes[:axis]) + (new_axis,) + tuple(axes[axis + 1:])




class ExtendedEinsum(Einsum):
    """EinDecomp's extended einsum (custom combine/aggregate) with a declared output dtype."""

    def __init__(self, subscripts, combine, aggregate, dtype):
        super().__init__(subscripts, combine=combine, aggregate=aggregate)
        self._dtype = np.dtype(dtype)

    def out_dtype(self, *dtypes):
        return self._dtype


class ToBackend(Kernel):
    """Convert a chunk to another library (``RelArray.to_backend``): DLPack between device
    libraries (no copy), an explicit host copy only to or from NumPy."""

    def __init__(self, backend, device=None):
        self.backend = backends.get(backend).name
        self.device = None if device is None else str(device)
        self.name = f"to_{self.backend}" + (f"[{self.device}]" if self.device else "")

    def __call__(self, chunk):
        return backends.convert(chunk, self.backend, self.device)

    def out_axes(self, frontier, axes):
        return tuple(axes)

    def out_dtype(self, dtype):
        return np.dtype(dtype)

    def out_backend(self, *in_backends):
        return self.backend

    def __eq__(self, other):
        return isinstance(other, ToBackend) and (other.backend, other.device) == (self.backend, self.device)

    def __hash__(self):
        return hash(("to_backend", self.backend, self.device))


__all__ = ["Fn", "Permute", "Reshape", "ReduceChunk", "ExtendedEinsum", "ToBackend", "broadcast_axes", "along",
           "npx", "dtype_of"]

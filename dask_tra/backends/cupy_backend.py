"""CuPy chunks on the GPU of the process (a dask-cuda worker sees exactly one).

CuPy mirrors NumPy's API and (since CuPy 13) its type promotion, so the NumPy-style namespace
is CuPy itself; it only converts NumPy array operands (small parameter chunks such as block
offsets) to device arrays, because CuPy refuses implicit host-to-device conversion. Nothing
here ever copies a chunk back to host: ``to_numpy`` is the only way, and it is explicit.
"""

from __future__ import annotations

import numpy as np

from .base import Backend
from .registry import register


def _is_ndarray(v):
    return isinstance(v, np.ndarray)


class _CupyNamespace:
    def __init__(self, backend, device):
        self._b, self._device = backend, device

    def _conv(self, v):
        if isinstance(v, np.ndarray):
            return self._b.from_numpy(v, self._device) if v.ndim else v[()]
        if isinstance(v, (list, tuple)) and any(_is_ndarray(e) for e in v):
            return type(v)(self._conv(e) for e in v)
        return v

    def __getattr__(self, name):
        if name == "errstate":  # the host context manager (no effect on device kernels)
            return np.errstate
        f = getattr(self._b.module, name, None)
        if f is None:
            u = getattr(np, name, None)
            if not isinstance(u, np.ufunc):
                from .base import UnsupportedOperation

                raise UnsupportedOperation(f"numpy.{name} has no CuPy implementation")
            f = u  # a NumPy ufunc CuPy lacks by name: NumPy dispatches to CuPy (__array_ufunc__)
        if not callable(f) or isinstance(f, type):
            self.__dict__[name] = f
            return f

        def call(*args, **kwargs):
            return f(*(self._conv(a) for a in args), **{k: self._conv(v) for k, v in kwargs.items()})

        call.__name__ = name
        self.__dict__[name] = call
        return call

    @staticmethod
    def astype(x, dtype, copy=True):
        return x.astype(np.dtype(dtype), copy=copy)

    def asarray(self, x, dtype=None):
        return self._b.asarray(x, dtype=dtype, device=self._device)

    def full(self, shape, fill_value, dtype=None):
        cupy = self._b.module
        if isinstance(fill_value, cupy.ndarray):  # a 0-d chunk: filled on the device, no sync
            out = cupy.empty(tuple(shape), dtype=fill_value.dtype if dtype is None else np.dtype(dtype))
            out[...] = fill_value
            return out
        return cupy.full(tuple(shape), fill_value, dtype=dtype)


class CupyBackend(Backend):
    name = "cupy"
    module_name = "cupy"
    chunk_modules = ("cupy", "cupyx")

    def __init__(self):
        self._namespaces = {}

    def available(self) -> bool:
        try:
            return self.module.cuda.runtime.getDeviceCount() > 0
        except Exception:  # not installed, no driver, no device
            return False

    def np(self, device=None):
        key = None if device is None else int(getattr(device, "id", device))
        ns = self._namespaces.get(key)
        if ns is None:
            ns = self._namespaces[key] = _CupyNamespace(self, key)
        return ns

    def chunk_types(self):
        return (self.module.ndarray,)

    def device_of(self, x):
        return x.device.id

    def in_device_memory(self, device=None):
        return True

    def synchronize(self):
        self.module.cuda.Device().synchronize()

    def device_name(self, device=None):
        d = self.resolve_device(device)
        return "cuda" if d is None else f"cuda:{d}"

    def chunk_device(self, x):
        return f"cuda:{x.device.id}"

    def resolve_device(self, device=None):
        if device is None or device in ("auto", "cuda", "gpu", "cpu"):
            return None  # the current device: a dask-cuda worker's own GPU
        if isinstance(device, str) and device.startswith("cuda:"):
            return int(device[5:])
        return int(device)

    def _on(self, device):
        import contextlib

        d = self.resolve_device(device)
        return contextlib.nullcontext() if d is None else self.module.cuda.Device(d)

    def device_memory(self):
        try:
            return int(self.module.cuda.Device().mem_info[1])
        except Exception:
            return None

    def from_numpy(self, a, device=None):
        with self._on(device):
            return self.module.asarray(a)

    def to_device(self, x, device=None):
        d = self.resolve_device(device)
        if d is None or x.device.id == d:
            return x
        with self.module.cuda.Device(d):
            return x.copy()

    def full(self, shape, value, dtype, device=None):
        with self._on(device):
            return self.module.full(tuple(shape), value, dtype=np.dtype(dtype))

    def concat(self, chunks, axis=0):
        return self.module.concatenate(list(chunks), axis=axis)

    def einsum(self, subscripts, *operands):
        return self.module.einsum(subscripts, *operands)

    def to_numpy(self, x):
        return self.module.asnumpy(x)

    def sizeof(self, x):
        return int(x.nbytes)

    def dask_meta(self, ndim, dtype):
        return self.module.empty((0,) * ndim, dtype=np.dtype(dtype))

    def block(self, x, index):
        return self.module.ascontiguousarray(x[index])

    def add_at(self, out, axis, index, values):
        import cupyx

        with self.module.cuda.Device(out.device.id):
            cupyx.scatter_add(out, (slice(None),) * axis + (self.module.asarray(index),), values)
        return out


register(CupyBackend())

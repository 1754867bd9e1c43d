"""Array methods, operators and protocols of RelArray (NumPy / dask.array / Array API style).

Every method builds a TRA expression through the namespace functions; only the
conversions to Python scalars (``bool(x)``, ``float(x)``, ...) and ``__array__`` compute.
"""
from __future__ import annotations

import numpy as np


def _da():
    import dask_tra.array as da
    return da


def chunk_device(expr, sources) -> str:
    """The device of ``expr``'s chunks, from metadata: an input's is its source's (the library's
    default when the source names none), a ``to_backend`` conversion names its own, and every
    other operator keeps that of its first input of its own library (kernels run on the device
    of their input chunks)."""
    from .. import backends
    from .kernels import ToBackend
    dev = {}
    for node in expr.walk():
        b = backends.get(node.type.backend)
        kernel = getattr(node, "kernel", None)
        if isinstance(kernel, ToBackend):
            dev[id(node)] = b.device_name(kernel.device)
        elif not node.children:
            dev[id(node)] = b.device_name(getattr(sources.get(getattr(node, "name", None)), "device", None))
        else:
            same = [dev[id(c)] for c in node.children if c.type.backend == node.type.backend]
            dev[id(node)] = same[0] if same else b.device_name()
    return dev[id(expr)]


def _binary(name, reflected=False):
    def op(self, other):
        from .dispatch import _known
        if not _known(other) and not hasattr(other, "dask"):
            return NotImplemented
        f = getattr(_da(), name)
        return f(other, self) if reflected else f(self, other)
    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


def _unary(name):
    def op(self):
        return getattr(_da(), name)(self)
    return op


def _method(name):
    def m(self, *args, **kwargs):
        return getattr(_da(), name)(self, *args, **kwargs)
    m.__name__ = name
    m.__doc__ = f"See ``dask_tra.array.{name}``."
    return m


def _scalar(convert):
    def to(self):
        if self.size != 1 and convert is bool:  # NumPy's exception types
            raise ValueError(f"The truth value of an array with more than one element is ambiguous "
                             f"(size {self.size}). Use a.any() or a.all()")
        if self.size != 1:
            raise TypeError(f"only arrays of size 1 can be converted to Python scalars (size {self.size})")
        return convert(self.compute().reshape(()).item())
    return to


_OPS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
        "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "and": "bitwise_and",
        "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift",
        "divmod": "divmod", "matmul": "matmul"}
_CMP = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
        "ge": "greater_equal"}


class ArrayMethods:
    __hash__ = object.__hash__

    def __index__(self):
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return _scalar(int)(self)

    def flatten(self):
        return _da().ravel(self)

    def nonzero(self):
        raise NotImplementedError("nonzero has a data-dependent shape; it is not supported")

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or np.ndim(axes[0]) == 1):
            axes = axes[0]
        return _da().transpose(self, axes or None)

    def reshape(self, *shape, order="C", **kwargs):
        if len(shape) == 1 and np.ndim(shape[0]) == 1:
            shape = shape[0]
        return _da().reshape(self, shape, order=order, **kwargs)

    @property
    def T(self):
        return _da().transpose(self)

    @property
    def mT(self):
        return _da().matrix_transpose(self)

    @property
    def real(self):
        return _da().real(self)

    @property
    def imag(self):
        return _da().imag(self)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def chunksize(self):
        return tuple(max(c) if c else 0 for c in self.chunks)

    @property
    def device(self):
        """Where the chunks live: ``"cpu"``, ``"cuda:0"``, ``"cuda"`` (each worker's own GPU), read
        from the metadata (``chunk_device``), never by computing."""
        return chunk_device(self.expr, self.sources)

    def to_device(self, device, /, *, stream=None):
        if device is not None and device != self.device:
            raise ValueError(f"unsupported device {device!r} for chunks on {self.device!r}; "
                             f"convert with to_backend(backend, device)")
        return self

    def copy(self):
        return self

    def __len__(self):
        if not self.ndim:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, index):
        from .indexing import getitem
        return getitem(self, index)

    def __setitem__(self, index, value):
        raise TypeError("RelArrays are immutable: use dask_tra.array.where(mask, value, x) instead")

    def __array__(self, dtype=None, copy=None):
        from ..backends import to_numpy
        out = to_numpy(self.compute())  # CuPy/torch results: the explicit copy to host
        return out if dtype is None else out.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .dispatch import array_ufunc
        return array_ufunc(ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from .dispatch import array_function
        return array_function(func, types, args, kwargs)

    def __array_namespace__(self, *, api_version=None):
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"unsupported Array API version {api_version!r}")
        from . import namespace
        return namespace

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        return np.asarray(self).__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)

    @property
    def blocks(self):
        """``x.blocks[i, j]``: the array made of the selected blocks."""
        from .blockwise import BlockView
        return BlockView(self)

    @property
    def vindex(self):
        """``x.vindex[rows, cols]``: point-wise indexing with broadcast integer arrays."""
        from .blockwise import VIndex
        return VIndex(self)

    def map_blocks(self, func, *args, **kwargs):
        return _da().map_blocks(func, self, *args, **kwargs)

    def map_overlap(self, func, depth, boundary=None, trim=True, **kwargs):
        return _da().map_overlap(func, self, depth=depth, boundary=boundary, trim=trim, **kwargs)

    def store(self, target, **kwargs):
        return _da().store([self], [target], **kwargs)

    def to_zarr(self, *args, **kwargs):
        return _da().to_zarr(self, *args, **kwargs)

    def to_hdf5(self, filename, datapath, **kwargs):
        return _da().to_hdf5(filename, datapath, self, **kwargs)

    def to_delayed(self, optimize_graph=True):
        return _da().to_delayed(self, optimize_graph)

    def _repr_html_(self):
        from .display import repr_html
        return repr_html(self)


for _py, _name in _OPS.items():
    setattr(ArrayMethods, f"__{_py}__", _binary(_name))
    setattr(ArrayMethods, f"__r{_py}__", _binary(_name, reflected=True))
for _py, _name in _CMP.items():
    setattr(ArrayMethods, f"__{_py}__", _binary(_name))
for _py, _name in (("neg", "negative"), ("pos", "positive"), ("abs", "absolute"), ("invert", "invert")):
    setattr(ArrayMethods, f"__{_py}__", _unary(_name))
for _py, _convert in (("bool", bool), ("int", int), ("float", float), ("complex", complex)):
    setattr(ArrayMethods, f"__{_py}__", _scalar(_convert))
for _name in ("astype", "sum", "prod", "mean", "var", "std", "min", "max", "argmin", "argmax", "any", "all",
              "cumsum", "cumprod", "dot", "swapaxes", "squeeze", "ravel", "rechunk", "round", "clip", "conj",
              "repeat", "to_backend"):
    setattr(ArrayMethods, _name, _method(_name))
ArrayMethods.conjugate = ArrayMethods.conj
del _py, _name, _convert

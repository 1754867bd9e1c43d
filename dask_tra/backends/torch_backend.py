"""torch chunks (CPU or CUDA tensors), with NumPy's semantics.

torch's own type promotion differs from NumPy's (``int32 + float32`` is float32 in torch,
float64 in NumPy), some names mean something else (``torch.equal`` compares whole tensors,
``torch.sum(dim=())`` sums everything) and some functions are missing (``nanmax``, ``cbrt``).
The NumPy-style namespace here resolves every ufunc call with NumPy's own loop resolution
(``ufunc.resolve_dtypes``), casts the operands to the loop's dtypes, runs the torch function
and casts the result to NumPy's output dtype, so a torch chunk always has the dtype the
metadata (computed with NumPy) promises. Nothing here converts a tensor through NumPy:
``to_numpy`` is the one explicit transfer.

Default device: ``"cpu"``; ``dask_tra.config.set(device="cuda")`` puts created chunks on the
worker's GPU (kernels always run on the device of their input chunks).
"""

from __future__ import annotations

import math

import numpy as np

from .base import Backend, UnsupportedOperation, loop_dtypes, result_type, weak_or_dtype
from .registry import register

_DTYPE_NAMES = {
    "bool": "bool",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
    "complex128": "complex128",
}


class _UFunc:
    """``numpy.<name>`` on tensors: NumPy's loop dtypes, torch's kernel ``impl``."""

    def __init__(self, ns, name, impl):
        self.ns, self.name, self.impl = ns, name, impl
        self.nin = getattr(np, name).nin

    def __call__(self, *args, dtype=None, **kwargs):
        if kwargs:
            raise UnsupportedOperation(
                f"numpy.{self.name} on torch chunks: keyword arguments {sorted(kwargs)} are not supported"
            )
        if len(args) != self.nin:
            raise TypeError(f"{self.name} takes {self.nin} operands, got {len(args)}")
        loops = loop_dtypes(
            self.name, tuple(weak_or_dtype(a) for a in args), None if dtype is None else np.dtype(dtype)
        )
        ns = self.ns
        ops = [ns.tensor(a, dt) for a, dt in zip(args, loops[: self.nin])]
        out = self.impl(*ops)
        outs = loops[self.nin :]
        if isinstance(out, tuple):
            return tuple(ns.astype(o, dt) for o, dt in zip(out, outs))
        return ns.astype(out, outs[0])


class TorchNamespace:
    """NumPy's functions (those kernels use) for tensors on one device."""

    def __init__(self, backend, device):
        self._b, self.device = backend, device
        self.torch = backend.module
        self.xp = backend.xp

    # -------------------------------------------------------- conversion helpers
    def tdtype(self, dtype):
        return self._b.dtype(dtype)

    def tensor(self, v, dtype=None):
        """``v`` (tensor, NumPy array or scalar) as a tensor (of NumPy dtype ``dtype``) on this device."""
        torch = self.torch
        if isinstance(v, torch.Tensor):
            return v if dtype is None else self.astype(v, dtype, copy=False)
        if isinstance(v, np.ndarray) and v.ndim:
            t = self._b.from_numpy(v, self.device)
            return t if dtype is None else self.astype(t, dtype, copy=False)
        if dtype is None:  # Python scalars: NumPy's default dtypes (int64, float64, complex128)
            dtype = np.asarray(v).dtype
        item = v.item() if isinstance(v, (np.generic, np.ndarray)) else v
        return torch.tensor(item, dtype=self.tdtype(dtype), device=self.device)

    def _promoted(self, *vals):
        """(NumPy result dtype, tensors in it) for ``vals``; Python scalars are weak (NEP 50)."""
        dt = result_type(*vals)
        return dt, [self.tensor(v, dt) for v in vals]

    def astype(self, x, dtype, copy=True):
        if not isinstance(x, self.torch.Tensor):
            return self.tensor(x, dtype)
        td = self.tdtype(dtype)
        if x.dtype == td:
            return x.clone() if copy else x
        return x.to(td)

    def asarray(self, x, dtype=None):
        return self.tensor(x, dtype)

    def kind(self, x):
        return self._b.numpy_dtype(x.dtype).kind

    # -------------------------------------------------------- ufuncs
    def __getattr__(self, name):
        impl = _UFUNC_IMPLS.get(name)
        if impl is not None:
            f = _UFunc(self, name, impl(self.torch) if callable(impl) else getattr(self.torch, impl))
            self.__dict__[name] = f
            return f
        if name.startswith("_"):
            raise AttributeError(name)
        raise UnsupportedOperation(
            f"numpy.{name} has no torch implementation in dask_tra "
            f"(dask_tra/backends/torch_backend.py lists those that do)"
        )

    # -------------------------------------------------------- creation
    def zeros(self, shape, dtype=float):
        return self.torch.zeros(tuple(shape), dtype=self.tdtype(dtype), device=self.device)

    def ones(self, shape, dtype=float):
        return self.torch.ones(tuple(shape), dtype=self.tdtype(dtype), device=self.device)

    def empty(self, shape, dtype=float):
        return self.torch.empty(tuple(shape), dtype=self.tdtype(dtype), device=self.device)

    def full(self, shape, fill_value, dtype=None):
        if isinstance(fill_value, self.torch.Tensor):  # a 0-d chunk: stays on the device
            dt = dtype if dtype is not None else self.kind_dtype(fill_value)
            return self.astype(fill_value, dt).expand(tuple(shape)).clone()
        if isinstance(fill_value, np.generic):
            fill_value = fill_value.item()
        dt = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
        return self.torch.full(tuple(shape), fill_value, dtype=self.tdtype(dt), device=self.device)

    def kind_dtype(self, x):
        return self._b.numpy_dtype(x.dtype)

    def zeros_like(self, x, dtype=None):
        return self.full(tuple(x.shape), 0, dtype or self.kind_dtype(x))

    def ones_like(self, x, dtype=None):
        return self.full(tuple(x.shape), 1, dtype or self.kind_dtype(x))

    def full_like(self, x, fill_value, dtype=None):
        return self.full(tuple(x.shape), fill_value, dtype or self.kind_dtype(x))

    def arange(self, *args, dtype=None):
        dtype = np.arange(*args[:3]).dtype if dtype is None else np.dtype(dtype)
        return self.torch.arange(*args, dtype=self.tdtype(dtype), device=self.device)

    def eye(self, N, M=None, k=0, dtype=float):
        M = N if M is None else M
        out = self.torch.zeros((N, M), dtype=self.tdtype(dtype), device=self.device)
        if N and M:
            out.diagonal(k).fill_(1)
        return out

    # -------------------------------------------------------- shape and joining
    def reshape(self, x, shape):
        return self.torch.reshape(x, tuple(shape))

    def transpose(self, x, axes=None):
        axes = tuple(reversed(range(x.ndim))) if axes is None else tuple(axes)
        return x.permute(axes)

    def flip(self, x, axis=None):
        return self.torch.flip(x, dims=tuple(self._axes(x, axis)))

    def broadcast_to(self, x, shape):
        return self.tensor(x).broadcast_to(tuple(shape))

    def ascontiguousarray(self, x):
        return self.tensor(x).contiguous()

    def array(self, x, dtype=None):
        out = self.tensor(x, dtype).clone()
        return out.contiguous()

    def concatenate(self, arrays, axis=0):
        dt, ts = self._promoted(*arrays)
        return self.torch.cat(ts, dim=axis)

    def stack(self, arrays, axis=0):
        dt, ts = self._promoted(*arrays)
        return self.torch.stack(ts, dim=axis)

    def take(self, x, indices, axis=None):
        idx = self.tensor(
            np.asarray(indices, dtype=np.int64) if not isinstance(indices, self.torch.Tensor) else indices
        ).long()
        if axis is None:
            return self.torch.take(x.reshape(-1), idx)
        flat = self.torch.index_select(x, axis, idx.reshape(-1))
        return flat.reshape(tuple(x.shape[:axis]) + tuple(idx.shape) + tuple(x.shape[axis + 1 :]))

    def sort(self, x, axis=-1, kind=None):
        # NaN sorts last, as in NumPy; always stable (NumPy's default quicksort promises nothing)
        return self.torch.sort(x, dim=axis, stable=True).values

    def argsort(self, x, axis=-1, kind=None):
        return self.torch.argsort(x, dim=axis, stable=True)

    def take_along_axis(self, x, indices, axis):
        return self.torch.take_along_dim(x, self.tensor(indices).long(), dim=axis)

    def tril(self, x, k=0):
        return self.torch.tril(x, diagonal=int(k))

    def triu(self, x, k=0):
        return self.torch.triu(x, diagonal=int(k))

    def einsum(self, subscripts, *operands):
        return self.torch.einsum(subscripts, *operands)

    def matmul(self, a, b):
        return a @ b

    # -------------------------------------------------------- elementwise functions (not ufuncs)
    def where(self, condition, x, y):
        cond = self.tensor(condition, np.bool_)
        dt, (tx, ty) = self._promoted(x, y)
        return self.torch.where(cond, tx, ty)

    def clip(self, a, a_min=None, a_max=None):
        vals = [v for v in (a, a_min, a_max) if v is not None]
        dt, ts = self._promoted(*vals)
        x = ts[0]
        lo = ts[1] if a_min is not None else None
        hi = ts[-1] if a_max is not None else None
        if lo is None and hi is None:
            return x
        if self.kind(x) == "b":
            x, lo2, hi2 = (
                x.to(self.torch.uint8),
                None if lo is None else lo.to(self.torch.uint8),
                None if hi is None else hi.to(self.torch.uint8),
            )
            return self.torch.clamp(x, lo2, hi2).bool()
        return self.torch.clamp(x, lo, hi)

    def round(self, x, decimals=0):
        k = self.kind(x)
        if k in "biu":
            if decimals >= 0:
                return x.clone()
            f = 10 ** (-decimals)
            return self.astype(self.torch.round(x.double() / f) * f, self.kind_dtype(x))
        if k == "c":
            return self.torch.complex(
                self.torch.round(x.real, decimals=decimals), self.torch.round(x.imag, decimals=decimals)
            )
        return self.torch.round(x, decimals=decimals)

    around = round

    def real(self, x):
        x = self.tensor(x)
        return x.real if self.kind(x) == "c" else x

    def imag(self, x):
        x = self.tensor(x)
        return x.imag if self.kind(x) == "c" else self.torch.zeros_like(x)

    def conj(self, x):
        return self.conjugate(x)

    def angle(self, z, deg=False):
        z = self.tensor(z)
        if self.kind(z) in "biu":
            z = z.double()
        out = self.torch.angle(z)
        return out * (180 / math.pi) if deg else out

    def isclose(self, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
        dt, (ta, tb) = self._promoted(a, b)
        if dt.kind not in "fc":
            ta, tb = ta.double(), tb.double()
        return self.torch.isclose(ta, tb, rtol=rtol, atol=atol, equal_nan=equal_nan)

    def nan_to_num(self, x, copy=True, nan=0.0, posinf=None, neginf=None):
        x = self.tensor(x)
        k = self.kind(x)
        if k in "biu":
            return x.clone()
        if k == "c":
            return self.torch.complex(
                self.nan_to_num(x.real, nan=nan, posinf=posinf, neginf=neginf),
                self.nan_to_num(x.imag, nan=nan, posinf=posinf, neginf=neginf),
            )
        return self.torch.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    # -------------------------------------------------------- reductions (NumPy's keywords)
    def _axes(self, x, axis):
        if axis is None:
            return tuple(range(x.ndim))
        return (int(axis),) if np.ndim(axis) == 0 else tuple(int(a) for a in axis)

    def sum(self, x, axis=None, dtype=None, keepdims=False):
        dt = self._acc(x, dtype)
        return self.xp.sum(self.astype(x, dt, copy=False), axis=self._axes(x, axis), keepdims=keepdims)

    def prod(self, x, axis=None, dtype=None, keepdims=False):
        dt = self._acc(x, dtype)
        return self.xp.prod(self.astype(x, dt, copy=False), axis=self._axes(x, axis), keepdims=keepdims)

    def _acc(self, x, dtype):
        if dtype is not None:
            return np.dtype(dtype)
        return np.sum(np.zeros(1, self.kind_dtype(x))).dtype  # NumPy's default accumulator

    def nansum(self, x, axis=None, dtype=None, keepdims=False):
        if self.kind(x) in "fc":
            x = self.torch.where(self.torch.isnan(x), self.torch.zeros((), dtype=x.dtype, device=x.device), x)
        return self.sum(x, axis, dtype, keepdims)

    def nanprod(self, x, axis=None, dtype=None, keepdims=False):
        if self.kind(x) in "fc":
            x = self.torch.where(self.torch.isnan(x), self.torch.ones((), dtype=x.dtype, device=x.device), x)
        return self.prod(x, axis, dtype, keepdims)

    def _extreme(self, fn, x, axis, keepdims):
        axes = self._axes(x, axis)
        if not axes:
            return x.clone()
        if any(x.shape[a] == 0 for a in axes):
            raise ValueError("zero-size array to reduction operation which has no identity")
        if self.kind(x) == "b":
            return fn(x.to(self.torch.uint8), dim=axes, keepdim=keepdims).bool()
        if x.is_complex():
            return self._complex_extreme(fn, x, axes, keepdims)
        return fn(x, dim=axes, keepdim=keepdims)

    def _complex_extreme(self, fn, x, axes, keepdims):
        """NumPy orders complex numbers by real part, then imaginary part; NaN propagates."""
        torch = self.torch
        fill = -math.inf if fn is torch.amax else math.inf
        best_re = fn(x.real, dim=axes, keepdim=True)
        im = torch.where(x.real == best_re, x.imag, torch.full((), fill, dtype=x.real.dtype, device=x.device))
        out = torch.complex(best_re, fn(im, dim=axes, keepdim=True))
        nan = torch.isnan(x).any(dim=axes, keepdim=True)
        out = torch.where(nan, torch.full((), complex("nan+nanj"), dtype=x.dtype, device=x.device), out)
        return out if keepdims else out.squeeze(axes)

    def max(self, x, axis=None, keepdims=False):  # NaN propagates, as in NumPy
        return self._extreme(self.torch.amax, x, axis, keepdims)

    def min(self, x, axis=None, keepdims=False):
        return self._extreme(self.torch.amin, x, axis, keepdims)

    amax, amin = max, min

    def _nanextreme(self, fn, fill, x, axis, keepdims):
        if self.kind(x) not in "fc":
            return self._extreme(fn, x, axis, keepdims)
        nan = self.torch.isnan(x)
        filled = self.torch.where(nan, self.torch.full((), fill, dtype=x.dtype, device=x.device), x)
        out = self._extreme(fn, filled, axis, keepdims)
        allnan = self.torch.all(nan, dim=self._axes(x, axis), keepdim=keepdims) if self._axes(x, axis) else nan
        return self.torch.where(allnan, self.torch.full((), float("nan"), dtype=x.dtype, device=x.device), out)

    def nanmax(self, x, axis=None, keepdims=False):
        return self._nanextreme(self.torch.amax, -math.inf, x, axis, keepdims)

    def nanmin(self, x, axis=None, keepdims=False):
        return self._nanextreme(self.torch.amin, math.inf, x, axis, keepdims)

    def any(self, x, axis=None, keepdims=False):
        return self.xp.any(self.astype(x, np.bool_, copy=False), axis=self._axes(x, axis), keepdims=keepdims)

    def all(self, x, axis=None, keepdims=False):
        return self.xp.all(self.astype(x, np.bool_, copy=False), axis=self._axes(x, axis), keepdims=keepdims)

    def _scan(self, fn, x, axis, dtype):
        if axis is None:
            x, axis = x.reshape(-1), 0
        dt = dtype if dtype is not None else np.cumsum(np.zeros(1, self.kind_dtype(x))).dtype
        return fn(self.astype(x, dt, copy=False), dim=int(axis))

    def cumsum(self, x, axis=None, dtype=None):
        return self._scan(self.torch.cumsum, x, axis, dtype)

    def cumprod(self, x, axis=None, dtype=None):
        return self._scan(self.torch.cumprod, x, axis, dtype)

    def _arg(self, fn, x, axis=None, keepdims=False):
        """NumPy's argmin/argmax: first occurrence; a NaN wins (its first position)."""
        torch = self.torch
        if self.kind(x) == "b":
            x = x.to(torch.uint8)
        if axis is None:
            flat = x.reshape(-1)
            out = fn(flat)
            if self.kind(flat) in "fc":
                nan = torch.isnan(flat)
                out = torch.where(nan.any(), torch.argmax(nan.to(torch.uint8)), out)
            return out.reshape((1,) * x.ndim) if keepdims else out
        out = fn(x, dim=axis, keepdim=keepdims)
        if self.kind(x) in "fc":
            nan = torch.isnan(x)
            out = torch.where(
                nan.any(dim=axis, keepdim=keepdims), torch.argmax(nan.to(torch.uint8), dim=axis, keepdim=keepdims), out
            )
        return out

    def argmin(self, x, axis=None, keepdims=False):
        return self._arg(self.torch.argmin, x, axis, keepdims)

    def argmax(self, x, axis=None, keepdims=False):
        return self._arg(self.torch.argmax, x, axis, keepdims)

    @staticmethod
    def errstate(**kwargs):
        return np.errstate(**kwargs)


def _cbrt(torch):
    return lambda x: torch.sign(x) * torch.abs(x) ** (1.0 / 3.0)


def _spacing(torch):
    return lambda x: torch.nextafter(x, torch.copysign(torch.full_like(x, math.inf), x)) - x


def _modf(torch):
    def modf(x):
        ip = torch.trunc(x)
        frac = torch.where(torch.isinf(x), torch.copysign(torch.zeros_like(x), x), x - ip)
        return frac, ip

    return modf


def _int_divisor_safe(fn_name):
    """NumPy gives 0 (with a warning) for an integer division by zero; torch raises."""

    def make(torch):
        fn = getattr(torch, fn_name)

        def op(a, b):
            if a.is_floating_point() or a.is_complex():
                return fn(a, b)
            zero = b == 0
            if a.dtype == torch.bool:
                a, b = a.to(torch.int8), b.to(torch.int8)
            out = fn(a, torch.where(zero, torch.ones_like(b), b))
            return torch.where(zero, torch.zeros_like(out), out)

        return op

    return make


def _divmod(torch):
    fd, rm = _int_divisor_safe("floor_divide")(torch), _int_divisor_safe("remainder")(torch)
    return lambda a, b: (fd(a, b), rm(a, b))


def _nan_kept(fn_name):
    """sign/heaviside: NaN stays NaN (torch gives 0)."""

    def make(torch):
        fn = getattr(torch, fn_name)

        def op(x, *rest):
            if x.is_complex():
                return torch.sgn(x)
            out = fn(x, *rest)
            return torch.where(torch.isnan(x), x, out) if x.is_floating_point() else out

        return op

    return make


def _int_safe(fn_name):
    """floor/ceil/trunc/rint: integers are their own value; complex rounds both parts."""

    def make(torch):
        fn = getattr(torch, fn_name)

        def op(x):
            if x.is_complex():
                return torch.complex(fn(x.real), fn(x.imag))
            return fn(x) if x.is_floating_point() else x.clone()

        return op

    return make


def _abs(torch):
    return lambda x: x.clone() if x.dtype == torch.bool else torch.abs(x)


def _invert(torch):
    return lambda x: torch.logical_not(x) if x.dtype == torch.bool else torch.bitwise_not(x)


def _complex_order(fn_name, strict, greater):
    """Comparisons: complex numbers order lexicographically (real, then imaginary), as in NumPy."""

    def make(torch):
        fn = getattr(torch, fn_name)

        def op(a, b):
            if not a.is_complex():
                return fn(a, b)
            first = torch.gt(a.real, b.real) if greater else torch.lt(a.real, b.real)
            second = (
                (torch.gt if greater else torch.lt)(a.imag, b.imag)
                if strict
                else (torch.ge if greater else torch.le)(a.imag, b.imag)
            )
            return first | ((a.real == b.real) & second)

        return op

    return make


def _complex_extreme(fn_name, greater, ignore_nan):
    """maximum/minimum/fmax/fmin; complex: lexicographic, NaN propagates (fmax/fmin: ignored)."""

    def make(torch):
        fn = getattr(torch, fn_name)

        def op(a, b):
            if not a.is_complex():
                return fn(a, b)
            pick_a = a.real > b.real if greater else a.real < b.real
            pick_a = pick_a | ((a.real == b.real) & ((a.imag >= b.imag) if greater else (a.imag <= b.imag)))
            na, nb = torch.isnan(a), torch.isnan(b)
            pick_a = (pick_a | nb) & ~na if ignore_nan else (pick_a | na) & ~(nb & ~na)
            return torch.where(pick_a, a, b)

        return op

    return make


# numpy ufunc name -> torch function name, or a factory taking the torch module
_UFUNC_IMPLS = {
    "add": "add",
    "subtract": "subtract",
    "multiply": "multiply",
    "divide": "true_divide",
    "true_divide": "true_divide",
    "floor_divide": _int_divisor_safe("floor_divide"),
    "power": "pow",
    "float_power": "float_power",
    "mod": _int_divisor_safe("remainder"),
    "remainder": _int_divisor_safe("remainder"),
    "fmod": _int_divisor_safe("fmod"),
    "divmod": _divmod,
    "negative": "neg",
    "positive": "positive",
    "absolute": _abs,
    "fabs": _abs,
    "rint": _int_safe("round"),
    "sign": _nan_kept("sign"),
    "heaviside": _nan_kept("heaviside"),
    "conj": "conj_physical",
    "conjugate": "conj_physical",
    "exp": "exp",
    "exp2": "exp2",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "expm1": "expm1",
    "log1p": "log1p",
    "sqrt": "sqrt",
    "square": "square",
    "cbrt": _cbrt,
    "reciprocal": "reciprocal",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arctan2": "atan2",
    "hypot": "hypot",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "deg2rad": "deg2rad",
    "rad2deg": "rad2deg",
    "degrees": "rad2deg",
    "radians": "deg2rad",
    "greater": _complex_order("gt", True, True),
    "greater_equal": _complex_order("ge", False, True),
    "less": _complex_order("lt", True, False),
    "less_equal": _complex_order("le", False, False),
    "not_equal": "ne",
    "equal": "eq",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "logical_xor": "logical_xor",
    "logical_not": "logical_not",
    "maximum": _complex_extreme("maximum", True, False),
    "minimum": _complex_extreme("minimum", False, False),
    "fmax": _complex_extreme("fmax", True, True),
    "fmin": _complex_extreme("fmin", False, True),
    "isfinite": "isfinite",
    "isinf": "isinf",
    "isnan": "isnan",
    "signbit": "signbit",
    "copysign": "copysign",
    "nextafter": "nextafter",
    "spacing": _spacing,
    "modf": _modf,
    "ldexp": "ldexp",
    "frexp": "frexp",
    "floor": _int_safe("floor"),
    "ceil": _int_safe("ceil"),
    "trunc": _int_safe("trunc"),
    "logaddexp": "logaddexp",
    "logaddexp2": "logaddexp2",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "invert": _invert,
    "bitwise_not": _invert,
    "bitwise_invert": _invert,
    "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
    "gcd": "gcd",
    "lcm": "lcm",
}


class TorchBackend(Backend):
    name = "torch"
    module_name = "torch"
    chunk_modules = ("torch",)

    def __init__(self):
        self._namespaces = {}
        self._to_torch = self._to_numpy = None

    def _tables(self):
        if self._to_torch is None:
            torch = self.module
            self._to_torch = {np.dtype(k): getattr(torch, v) for k, v in _DTYPE_NAMES.items() if hasattr(torch, v)}
            self._to_numpy = {v: k for k, v in self._to_torch.items()}
        return self._to_torch, self._to_numpy

    def dtype(self, dtype):
        if isinstance(dtype, self.module.dtype):
            return dtype
        try:
            return self._tables()[0][np.dtype(dtype)]
        except KeyError:
            raise TypeError(f"torch has no dtype for NumPy's {np.dtype(dtype)}") from None

    def numpy_dtype(self, dtype):
        if isinstance(dtype, np.dtype):
            return dtype
        try:
            return self._tables()[1][dtype]
        except KeyError:
            raise TypeError(f"no NumPy dtype for {dtype}") from None

    def np(self, device=None):
        key = None if device is None else str(device)
        ns = self._namespaces.get(key)
        if ns is None:
            ns = self._namespaces[key] = TorchNamespace(self, self.resolve_device(device))
        return ns

    def chunk_types(self):
        return (self.module.Tensor,)

    def device_of(self, x):
        return x.device

    def in_device_memory(self, device=None):
        return str(device or "").startswith("cuda")

    def synchronize(self):
        if self.module.cuda.is_available() and self.module.cuda.is_initialized():
            self.module.cuda.synchronize()

    def device_name(self, device=None):
        if device is None or device == "auto":  # "auto": CUDA where the worker has it
            return "cpu" if device is None else "auto"
        return str(self.module.device(device))

    def chunk_device(self, x):
        return None if x.device.type == "cpu" else str(x.device)

    def resolve_device(self, device=None):
        if device is None or device == "auto":
            return (
                self.module.device("cpu")
                if device is None
                else self.module.device("cuda" if self.module.cuda.is_available() else "cpu")
            )
        return self.module.device(device)

    def device_memory(self):
        torch = self.module
        try:
            if torch.cuda.is_available():
                return int(torch.cuda.mem_get_info()[1])
        except Exception:
            pass
        return None

    def from_numpy(self, a, device=None):
        a = np.asarray(a)
        if a.dtype.byteorder not in "=|":
            a = a.astype(a.dtype.newbyteorder("="))
        if not a.flags.writeable:
            a = a.copy()  # torch.from_numpy warns on read-only arrays (e.g. broadcast views)
        t = self.module.from_numpy(a) if a.ndim else self.module.tensor(a[()], dtype=self.dtype(a.dtype))
        d = self.resolve_device(device)
        return t if d.type == "cpu" else t.to(d)

    def to_device(self, x, device=None):
        if device is None:
            return x
        d = self.resolve_device(device)
        return x if x.device == d else x.to(d)

    def _from_dlpack(self, x):
        return self.module.from_dlpack(x)

    def full(self, shape, value, dtype, device=None):
        return self.np(device).full(tuple(shape), value, np.dtype(dtype))

    def astype(self, x, dtype, copy=False):
        return self.np(x.device).astype(x, dtype, copy=copy)

    def concat(self, chunks, axis=0):
        return self.module.cat(list(chunks), dim=axis)

    def reduce(self, op, x, axis=None, keepdims=False, dtype=None):
        return super().reduce(op, x, axis, keepdims, dtype)

    def ufunc(self, name, device=None):
        return getattr(self.np(device), name)

    def to_numpy(self, x):
        return x.detach().numpy(force=True)

    def sizeof(self, x):
        return int(x.element_size() * x.nelement())

    def is_plain(self, x):
        return not x.requires_grad

    def block(self, x, index):
        return x[index].clone()

    def add_at(self, out, axis, index, values):
        return out.index_add_(axis, self.module.as_tensor(np.asarray(index), device=out.device), values)


register(TorchBackend())

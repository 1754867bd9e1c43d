"""Chunk kernels: the functions TRA operators apply to chunks, with the facts rules need.

A kernel knows how to run on chunks of any library (through the chunks' backend,
``dask_tra.backends``: NumPy, CuPy or torch), how its output chunk axes follow from its
input axes (so shapes are known from metadata), its output dtype, its flop count, and
algebraic facts: associative, commutative, and which kernels it distributes over.
Rewrite rules may fire only when these facts allow.

Kernels never import a chunk library. Their inputs are aligned first (``backends.align``:
NumPy operands such as parameter chunks join the other operands' library and device), and
on non-NumPy chunks the output is cast to the dtype the metadata (NumPy's rules) promises,
so a torch or CuPy chunk always has the dtype ``out_dtype`` says.

Kernels are data: module-level classes whose fields (operation, constants, axes) say what
they compute. They pickle with the standard ``pickle`` and compare equal by value; a kernel
that needs a function holds a module-level one, with its constants bound by ``Bound``.
"""

from __future__ import annotations

import math
import string

import numpy as np

from .. import backends
from .errors import ChunkShapeError, TRAError
from .relation import ChunkAxis, unify_axes


def namespace(*chunks):
    """The Array API namespace (numpy, cupy, torch, ...) of some chunks."""
    return backends.namespace(*chunks)


def frozen(value):
    """A hashable stand-in for ``value`` that is equal exactly when the values are
    (arrays by dtype, shape and contents; dicts, lists and sets by their items; NaN equals NaN)."""
    if isinstance(value, (float, complex, np.inexact)) and value != value:
        return ("nan", type(value).__name__)
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((frozen(k), frozen(v)) for k, v in value.items()), key=repr)))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(frozen(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(frozen(v) for v in value))
    return value


class Bound:
    """``fn(*params, *args)``: a module-level function with its leading parameters bound.
    Like ``functools.partial``, but compared by value (``fn`` and the parameters)."""

    __slots__ = ("fn", "params")

    def __init__(self, fn, *params):
        self.fn, self.params = fn, params

    def __call__(self, *args):
        return self.fn(*self.params, *args)

    def __eq__(self, other):
        return isinstance(other, Bound) and self.fn == other.fn and frozen(self.params) == frozen(other.params)

    def __hash__(self):
        return hash((self.fn, frozen(self.params)))

    def __reduce__(self):
        return (Bound, (self.fn, *self.params))

    def __repr__(self):
        return f"{getattr(self.fn, '__qualname__', self.fn)}{self.params}"


def first_axes(frontier, axes, *others):
    """Output chunk axes = those of the first input."""
    return tuple(axes)


def second_axes(frontier, _, axes, *others):
    """Output chunk axes = those of the second input."""
    return tuple(axes)


def with_axis(axis, new, frontier, axes, *others):
    """Output chunk axes = the first input's, with chunk axis ``axis`` replaced by ``new``."""
    return tuple(new if i == axis else a for i, a in enumerate(axes))


def kernel_axes(kernel, frontier, *in_axes):
    """Output chunk axes = those ``kernel`` would give (bind it: ``Bound(kernel_axes, k)``)."""
    return tuple(kernel.out_axes(frontier, *in_axes))


def _in_dtypes(chunks):
    """NumPy dtypes of chunks of any library (Python scalars stay Python values: weak)."""
    return [c if type(c) in (int, float, complex) else backends.weak_or_dtype(c) for c in chunks]


class Kernel:
    """Base kernel. Subclasses set ``name``/``arity`` and implement ``__call__`` and ``out_axes``."""

    name = "kernel"
    arity = 1
    associative = False
    commutative = False
    distributes_over: frozenset = frozenset()
    identity_map = False  # true for the identity transform (idOp)

    def __call__(self, *chunks):
        raise NotImplementedError

    def out_axes(self, frontier, *in_axes) -> tuple:
        """Output chunk axes from input axes (key dims already in the output key's numbering)."""
        raise NotImplementedError

    def out_dtype(self, *dtypes) -> np.dtype:
        return np.result_type(*dtypes)

    def flops(self, *shapes) -> int:
        """Floating-point operations for one application to chunks of these shapes."""
        return max(math.prod(s) for s in shapes) if shapes else 0

    def distributes(self, other: "Kernel") -> bool:
        return other.name in self.distributes_over

    def out_backend(self, *in_backends) -> str:
        """The backend name of the output chunks: the inputs' non-NumPy library, if any (NumPy
        operands such as parameter relations join it). Conversion kernels override this."""
        return next((b for b in in_backends if b != "numpy"), "numpy")

    def __eq__(self, other):
        return type(other) is type(self) and frozen(vars(self)) == frozen(vars(other))

    def __hash__(self):
        return hash((type(self).__name__, frozen(vars(self))))

    def __repr__(self):
        return self.name


def broadcast_axes(frontier, axes_list, what):
    """NumPy broadcasting of chunk axes (right-aligned; constant-1 axes stretch)."""
    rank = max(len(a) for a in axes_list)
    out = []
    for i in range(rank):
        cur = None
        for axes in axes_list:
            j = i - (rank - len(axes))
            if j < 0:
                continue
            ax = axes[j]
            if ax.constant == 1 and cur is not None:
                continue
            if cur is None or cur.constant == 1:
                cur = ax
            else:
                cur = unify_axes(cur, ax, frontier, f"{what} (axis {i})")
        out.append(cur)
    return tuple(out)


class Elementwise(Kernel):
    """An elementwise function of ``arity`` chunks, NumPy-broadcast.

    ``fn`` receives the chunks and their namespace ``xp``; ``op_name`` names it.
    """

    def __init__(self, op_name, fn, arity, *, associative=False, commutative=False, distributes_over=(), dtype=None):
        self.name = op_name
        self.fn = fn
        self.arity = arity
        self.associative = associative
        self.commutative = commutative
        self.distributes_over = frozenset(distributes_over)
        self._dtype = None if dtype is None else np.dtype(dtype)

    def __call__(self, *chunks):
        b, chunks = backends.align(*chunks)
        if b is backends.NUMPY:
            return self.fn(b.xp, *chunks)
        if self._dtype is None:  # NumPy's promotion: compute in the result dtype
            dt = np.result_type(*_in_dtypes(chunks))
            chunks = tuple(b.coerce(c, dt) if hasattr(c, "dtype") else c for c in chunks)
            return b.coerce(self.fn(b.xp, *chunks), dt)
        return b.coerce(self.fn(b.xp, *chunks), self._dtype)

    def out_axes(self, frontier, *in_axes):
        return broadcast_axes(frontier, in_axes, self.name)

    def out_dtype(self, *dtypes):
        return self._dtype if self._dtype is not None else np.result_type(*dtypes)

    def __eq__(self, other):
        return isinstance(other, Elementwise) and other.name == self.name

    def __hash__(self):
        return hash(("elementwise", self.name))


def _add(xp, a, b):
    return a + b


def _subtract(xp, a, b):
    return a - b


def _multiply(xp, a, b):
    return a * b


# NumPy's maximum/minimum (complex numbers ordered lexicographically, NaN propagating) and
# fmax/fmin (NaN ignoring) in every library: the Array API's (and torch's) refuse complex operands
def _maximum(xp, a, b):
    return backends.numpy_like(a, b).maximum(a, b)


def _minimum(xp, a, b):
    return backends.numpy_like(a, b).minimum(a, b)


def _fmax(xp, a, b):
    return backends.numpy_like(a, b).fmax(a, b)


def _fmin(xp, a, b):
    return backends.numpy_like(a, b).fmin(a, b)


def _same(xp, a):
    return a


add = Elementwise("add", _add, 2, associative=True, commutative=True, distributes_over={"maximum", "minimum"})
sub = Elementwise("subtract", _subtract, 2)
mul = Elementwise("multiply", _multiply, 2, associative=True, commutative=True, distributes_over={"add", "subtract"})
maximum = Elementwise("maximum", _maximum, 2, associative=True, commutative=True, distributes_over={"minimum"})
minimum = Elementwise("minimum", _minimum, 2, associative=True, commutative=True, distributes_over={"maximum"})
fmax = Elementwise("fmax", _fmax, 2, associative=True, commutative=True)
fmin = Elementwise("fmin", _fmin, 2, associative=True, commutative=True)
identity = Elementwise("identity", _same, 1)
identity.identity_map = True

AGGREGATORS = {k.name: k for k in (add, mul, maximum, minimum)}


class Einsum(Kernel):
    """A chunk-level einsum such as ``"ik,kj->ij"`` (matmul) with optional custom combine/aggregate.

    With the default multiply/sum it runs the chunks' own einsum; a custom ``combine``
    (elementwise, binary) and ``aggregate`` (an associative kernel from ``AGGREGATORS``)
    give EinDecomp's extended einsum, e.g. squared difference with sum.
    """

    def __init__(self, subscripts: str, combine: Elementwise | None = None, aggregate: Elementwise | None = None):
        ins, _, out = subscripts.replace(" ", "").partition("->")
        self.inputs = tuple(ins.split(","))
        self.output = out
        letters = set("".join(self.inputs))
        if not _ or not set(out) <= letters or len(set(out)) != len(out):
            raise TRAError(f"Einsum kernel: invalid subscripts {subscripts!r}")
        if any(not set(s) <= set(string.ascii_letters) for s in self.inputs + (out,)):
            raise TRAError(f"Einsum kernel: subscripts must be letters, got {subscripts!r}")
        self.subscripts = ",".join(self.inputs) + "->" + out
        self.arity = len(self.inputs)
        self.combine = combine
        self.aggregate = aggregate or add
        custom = combine is not None or aggregate is not None
        self.plain = not custom  # decided here: identity checks do not survive pickling
        self.is_matmul = self.subscripts == "ik,kj->ij" and not custom
        self.name = (
            "matmul"
            if self.is_matmul
            else (f"einsum[{self.subscripts}]" + (f"({combine},{self.aggregate})" if custom else ""))
        )
        # the kernel folds its summed letters with ``aggregate``; folding partial results
        # (across blocks) with the same associative aggregate is exact
        self.distributes_over = frozenset({self.aggregate.name})

    def __call__(self, *chunks):
        b, chunks = backends.align(*chunks)
        if b is not backends.NUMPY:  # NumPy's promotion (torch refuses mixed dtypes)
            dt = self.out_dtype(*_in_dtypes(chunks))
            if self.plain:
                chunks = tuple(b.coerce(c, dt) for c in chunks)
            out = self._run(b, chunks)
            return b.coerce(out, dt)
        return self._run(b, chunks)

    def _run(self, b, chunks):
        if self.plain:
            if self.is_matmul:
                return b.matmul(chunks[0], chunks[1])
            return b.einsum(self.subscripts, *chunks)
        return self._extended(b.xp, *chunks)

    def _extended(self, xp, a, b):
        """combine(a, b) over the joint index space, then reduce the summed letters with aggregate."""
        letters = "".join(dict.fromkeys(self.inputs[0] + self.inputs[1]))
        ea = _expand(xp, a, self.inputs[0], letters)
        eb = _expand(xp, b, self.inputs[1], letters)
        c = self.combine(ea, eb) if self.combine else ea * eb
        reduced = [i for i, l in enumerate(letters) if l not in self.output]
        red = {"add": xp.sum, "multiply": xp.prod, "maximum": xp.max, "minimum": xp.min}[self.aggregate.name]
        if reduced:
            c = red(c, axis=tuple(reduced))
        kept = [l for l in letters if l in self.output]
        perm = tuple(kept.index(l) for l in self.output)
        return xp.permute_dims(c, perm) if perm != tuple(range(len(perm))) else c

    def out_axes(self, frontier, *in_axes):
        by_label: dict[str, ChunkAxis] = {}
        for labels, axes in zip(self.inputs, in_axes):
            if len(labels) != len(axes):
                raise ChunkShapeError(f"{self.name}: chunk of rank {len(axes)} for subscripts {labels!r}")
            for l, ax in zip(labels, axes):
                by_label[l] = (
                    ax if l not in by_label else unify_axes(by_label[l], ax, frontier, f"{self.name} (index {l!r})")
                )
        return tuple(by_label[l] for l in self.output)

    def flops(self, *shapes):
        ext: dict[str, int] = {}
        for labels, shape in zip(self.inputs, shapes):
            ext.update(zip(labels, shape))
        contracted = any(l not in self.output for l in ext)
        return (2 if contracted else 1) * math.prod(ext.values())

    def __eq__(self, other):
        return isinstance(other, Einsum) and other.name == self.name and other.subscripts == self.subscripts

    def __hash__(self):
        return hash(("einsum", self.name, self.subscripts))


def _einsum(xp, subscripts, *chunks):
    """The chunks' own einsum (the Array API lacks one; each backend supplies it)."""
    return backends.backend_of(*chunks).einsum(subscripts, *chunks)


def _expand(xp, a, labels, letters):
    """View chunk ``a`` (indexed by ``labels``) over all ``letters``, with size-1 axes for the rest."""
    perm = sorted(range(len(labels)), key=lambda i: letters.index(labels[i]))
    a = xp.permute_dims(a, tuple(perm)) if perm != list(range(len(labels))) else a
    shape, it = [], iter(a.shape)
    for l in letters:
        shape.append(next(it) if l in labels else 1)
    return xp.reshape(a, tuple(shape))


matmul = Einsum("ik,kj->ij")


class Reduce(Kernel):
    """Reduce a chunk along ``axes`` with an aggregator (sum/prod/max/min)."""

    arity = 1

    def __init__(self, op: str, axes, keepdims=False):
        if op not in {"sum", "prod", "max", "min"}:
            raise TRAError(f"Reduce: unknown reduction {op!r}")
        self.op, self.axes, self.keepdims = op, tuple(sorted(axes)), keepdims
        self.name = f"{op}{list(self.axes)}"

    def __call__(self, chunk):
        b = backends.backend_of(chunk)
        out = getattr(b.xp, self.op)(chunk, axis=self.axes, keepdims=self.keepdims)
        if b is backends.NUMPY:
            return out
        return b.coerce(out, self.out_dtype(b.dtype_of(chunk)))

    def out_axes(self, frontier, axes):
        if any(a >= len(axes) for a in self.axes):
            raise ChunkShapeError(f"{self.name}: chunk has rank {len(axes)}")
        return tuple(
            ChunkAxis.const(1) if i in self.axes else ax
            for i, ax in enumerate(axes)
            if self.keepdims or i not in self.axes
        )

    def out_dtype(self, dtype):
        return np.sum(np.zeros(1, dtype)).dtype if self.op in ("sum", "prod") else np.dtype(dtype)

    def __eq__(self, other):
        return isinstance(other, Reduce) and (other.op, other.axes, other.keepdims) == (
            self.op,
            self.axes,
            self.keepdims,
        )

    def __hash__(self):
        return hash(("reduce", self.op, self.axes, self.keepdims))


class Custom(Kernel):
    """A user function with declared output axes (``out_axes_fn``; default: same as input 0)."""

    def __init__(self, name, fn, arity=1, out_axes_fn=None, dtype=None):
        self.name, self.fn, self.arity = name, fn, arity
        self._out_axes_fn = out_axes_fn
        self._dtype = dtype

    def __call__(self, *chunks):
        b, chunks = backends.align(*chunks)
        out = self.fn(*chunks)
        if b is backends.NUMPY or self._dtype is None:
            return out
        return b.coerce(out, self._dtype)

    def out_axes(self, frontier, *in_axes):
        return self._out_axes_fn(*in_axes) if self._out_axes_fn else tuple(in_axes[0])

    def out_dtype(self, *dtypes):
        return np.dtype(self._dtype) if self._dtype is not None else np.result_type(*dtypes)


def _diag(a):
    b = backends.backend_of(a)
    return a * b.np(b.device_of(a)).eye(a.shape[0], dtype=b.dtype_of(a))


def diag_kernel():
    """The papers' ``diag``: keep a square chunk's diagonal as a diagonal matrix."""
    return Custom("diag", _diag)


__all__ = [
    "Kernel",
    "Elementwise",
    "Einsum",
    "Reduce",
    "Custom",
    "Bound",
    "frozen",
    "first_axes",
    "second_axes",
    "with_axis",
    "kernel_axes",
    "add",
    "sub",
    "mul",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "identity",
    "matmul",
    "AGGREGATORS",
    "namespace",
    "diag_kernel",
]

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
import numbers
import string
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .. import backends
from ..backends import masked
from ..backends.base import REDUCTIONS
from .errors import ChunkShapeError, TRAError
from .relation import ChunkAxis, unify_axes
from .vjp import GradError, P, Partial, TermLike, Y


def namespace(*chunks: Any) -> Any:
    """The Array API namespace (numpy, cupy, torch, ...) of some chunks."""
    return backends.namespace(*chunks)


def concat_chunks(chunks: Sequence[Any], axis: int) -> Any:
    """Chunks joined along ``axis`` by their backend (which keeps what the library's plain
    concatenate would drop: a masked chunk's mask)."""
    return backends.backend_of(*chunks).concat(list(chunks), axis=axis)


def frozen(value: Any) -> Any:
    """A hashable stand-in for ``value`` that is equal exactly when the values are
    (arrays by dtype, shape and contents; dicts, lists and sets by their items; NaN equals NaN)."""
    if isinstance(value, (float, complex, np.inexact)) and value != value:
        return ("nan", type(value).__name__)
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        items = [(frozen(k), frozen(v)) for k, v in value.items()]
        try:
            return ("dict", frozenset(items))
        except TypeError:  # an unhashable value (a slice): compared in a canonical order
            return ("dict", tuple(sorted(items, key=repr)))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(frozen(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(frozen(v) for v in value))
    return value


def same_fields(a: dict, b: dict) -> bool:
    """Whether two objects' fields (``vars``) are equal as ``frozen`` values, the fields they
    share by identity (functions, nested kernels) not frozen."""
    return a.keys() == b.keys() and all(x is b[k] or frozen(x) == frozen(b[k]) for k, x in a.items())


class Bound:
    """``fn(*params, *args)``: a module-level function with its leading parameters bound.
    Like ``functools.partial``, but compared by value (``fn`` and the parameters)."""

    __slots__ = ("fn", "params")

    def __init__(self, fn: Callable, *params: Any) -> None:
        self.fn, self.params = fn, params

    def __call__(self, *args: Any) -> Any:
        return self.fn(*self.params, *args)

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, Bound) and self.fn == other.fn and frozen(self.params) == frozen(other.params)
        )

    def __hash__(self) -> int:
        return hash((self.fn, frozen(self.params)))

    def __reduce__(self) -> tuple:
        return (Bound, (self.fn, *self.params))

    def __repr__(self) -> str:
        return f"{getattr(self.fn, '__qualname__', self.fn)}{self.params}"


def first_axes(frontier: tuple, axes: Sequence[ChunkAxis], *others: Any) -> tuple:
    """Output chunk axes = those of the first input."""
    return tuple(axes)


def second_axes(frontier: tuple, _: Any, axes: Sequence[ChunkAxis], *others: Any) -> tuple:
    """Output chunk axes = those of the second input."""
    return tuple(axes)


def with_axis(axis: int, new: ChunkAxis, frontier: tuple, axes: Sequence[ChunkAxis], *others: Any) -> tuple:
    """Output chunk axes = the first input's, with chunk axis ``axis`` replaced by ``new``."""
    return tuple(new if i == axis else a for i, a in enumerate(axes))


def kernel_axes(kernel: Kernel, frontier: tuple, *in_axes: Any) -> tuple:
    """Output chunk axes = those ``kernel`` would give (bind it: ``Bound(kernel_axes, k)``)."""
    return tuple(kernel.out_axes(frontier, *in_axes))


def _in_dtypes(chunks: Sequence[Any]) -> list:
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
    permutes: tuple | None = None  # a pure transpose of the chunk: output axis j is input axis permutes[j]
    # block-sparse facts (a missing block is all zeros): an all-zero input chunk gives an
    # all-zero output (multiply, matmul), so a Join or Transform may skip missing blocks; and
    # folding in a zero chunk changes nothing (add), so an Aggregate may skip them
    annihilates = False
    zero_identity = False

    def __call__(self, *chunks: Any) -> Any:
        raise NotImplementedError

    def out_axes(self, frontier: tuple, *in_axes: Any) -> tuple:
        """Output chunk axes from input axes (key dims already in the output key's numbering)."""
        raise NotImplementedError

    def out_dtype(self, *dtypes: Any) -> np.dtype:
        return np.result_type(*dtypes)

    def flops(self, *shapes: tuple) -> int:
        """Floating-point operations for one application to chunks of these shapes."""
        return max(math.prod(s) for s in shapes) if shapes else 0

    def makes_products(self, left_type: Any, right_type: Any) -> bool:
        """Whether joining two blocks of these relations is a block product (more flops than a
        pass over both blocks), judged on their first blocks."""
        if not all(math.prod(t.frontier) for t in (left_type, right_type)):
            return False
        shapes = [t.chunk_shape((0,) * t.key_arity) for t in (left_type, right_type)]
        return self.flops(*shapes) > sum(math.prod(s) for s in shapes)

    def compose(self, inner: "Kernel") -> "Kernel | None":
        """A kernel equal to ``self ∘ inner`` and simpler than ``Composed`` (two transposes are
        one), or None."""
        return None

    def restricted(self, dim: int, kept: tuple) -> "Kernel":
        """This kernel where output key dim ``dim`` keeps only the blocks ``kept`` (old numbers,
        renumbered 0, 1, ... in that order): itself, unless it stores output sizes per block."""
        return self

    def distributes(self, other: "Kernel") -> bool:
        return other.name in self.distributes_over

    def parts_merge(self, axis: int) -> "Kernel | None":
        """The kernel merging this one's results on the parts of a chunk cut along array axis
        ``axis`` (``self(concat(a, b)) == merge(self(a), self(b))``, for any parts, empty ones
        too), or None."""
        return None

    def out_backend(self, *in_backends: str) -> str:
        """The backend name of the output chunks: the inputs' non-NumPy library, if any (NumPy
        operands such as parameter relations join it). Conversion kernels override this."""
        return next((b for b in in_backends if b != "numpy"), "numpy")

    def __eq__(self, other: object) -> bool:
        return self is other or type(other) is type(self) and same_fields(vars(self), vars(other))

    def __hash__(self) -> int:
        return hash((type(self).__name__, frozen(vars(self))))

    def __repr__(self) -> str:
        return self.name


class Composed(Kernel):
    """``outer ∘ inner``: ``inner`` on the chunks, then the unary ``outer`` on its result.

    Kept flat (``parts``, in the order they run), so a fused chain of a thousand kernels is one
    loop, not a thousand nested calls."""

    def __init__(self, outer: Kernel, inner: Kernel) -> None:
        self.parts: tuple[Kernel, ...] = _parts(inner) + _parts(outer)
        self.name = "∘".join(k.name for k in reversed(self.parts))
        self.arity = self.parts[0].arity
        # f∘g distributes over an aggregation when f and g both do (unary g only)
        self.distributes_over = (
            frozenset.intersection(*(k.distributes_over for k in self.parts)) if self.arity == 1 else frozenset()
        )
        self.annihilates = all(k.annihilates for k in self.parts)

    def __call__(self, *chunks: Any) -> Any:
        out = self.parts[0](*chunks)
        for k in self.parts[1:]:
            out = k(out)
        return out

    def out_axes(self, frontier: tuple, *in_axes: Any) -> tuple:
        axes = tuple(self.parts[0].out_axes(frontier, *in_axes))
        for k in self.parts[1:]:
            axes = tuple(k.out_axes(frontier, axes))
        return axes

    def out_dtype(self, *dtypes: Any) -> np.dtype:
        dtype = self.parts[0].out_dtype(*dtypes)
        for k in self.parts[1:]:
            dtype = k.out_dtype(dtype)
        return np.dtype(dtype)

    def out_backend(self, *in_backends: str) -> str:
        backend = self.parts[0].out_backend(*in_backends)
        for k in self.parts[1:]:
            backend = k.out_backend(backend)
        return backend

    def flops(self, *shapes: tuple) -> int:
        total, axes = 0, [tuple(ChunkAxis.const(n) for n in shape) for shape in shapes]
        for k in self.parts:
            total += k.flops(*(tuple(ax.constant for ax in a) for a in axes))
            axes = [tuple(k.out_axes((), *axes))]
        return total


def _parts(kernel: Kernel) -> tuple[Kernel, ...]:
    return kernel.parts if isinstance(kernel, Composed) else (kernel,)


def broadcast_axes(frontier: tuple, axes_list: Sequence[Sequence[ChunkAxis]], what: str) -> tuple:
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

    def __init__(
        self,
        op_name: str,
        fn: Callable,
        arity: int,
        *,
        associative: bool = False,
        commutative: bool = False,
        distributes_over: Iterable[str] = (),
        dtype: Any = None,
        annihilates: bool = False,
        zero_identity: bool = False,
    ) -> None:
        self.name = op_name
        self.annihilates, self.zero_identity = annihilates, zero_identity
        self.fn = fn
        self.arity = arity
        self.associative = associative
        self.commutative = commutative
        self.distributes_over = frozenset(distributes_over)
        self._dtype = None if dtype is None else np.dtype(dtype)

    def __call__(self, *chunks: Any) -> Any:
        b, chunks = backends.align(*chunks)
        if b is backends.NUMPY:
            return self.fn(b.xp, *chunks)
        if self._dtype is None:  # NumPy's promotion: compute in the result dtype
            dt = np.result_type(*_in_dtypes(chunks))
            chunks = tuple(b.coerce(c, dt) if hasattr(c, "dtype") else c for c in chunks)
            return b.coerce(self.fn(b.xp, *chunks), dt)
        return b.coerce(self.fn(b.xp, *chunks), self._dtype)

    def out_axes(self, frontier: tuple, *in_axes: Any) -> tuple:
        return broadcast_axes(frontier, in_axes, self.name)

    def out_dtype(self, *dtypes: Any) -> np.dtype:
        return self._dtype if self._dtype is not None else np.result_type(*dtypes)


def _add(xp: Any, a: Any, b: Any) -> Any:
    return a + b


def _subtract(xp: Any, a: Any, b: Any) -> Any:
    return a - b


def _multiply(xp: Any, a: Any, b: Any) -> Any:
    return a * b


# NumPy's maximum/minimum (complex numbers ordered lexicographically, NaN propagating) and
# fmax/fmin (NaN ignoring) in every library: the Array API's (and torch's) refuse complex operands
def _maximum(xp: Any, a: Any, b: Any) -> Any:
    return backends.numpy_like(a, b).maximum(a, b)


def _minimum(xp: Any, a: Any, b: Any) -> Any:
    return backends.numpy_like(a, b).minimum(a, b)


def _fmax(xp: Any, a: Any, b: Any) -> Any:
    return backends.numpy_like(a, b).fmax(a, b)


def _fmin(xp: Any, a: Any, b: Any) -> Any:
    return backends.numpy_like(a, b).fmin(a, b)


def _same(xp: Any, a: Any) -> Any:
    return a


add = Elementwise(
    "add", _add, 2, associative=True, commutative=True, distributes_over={"maximum", "minimum"}, zero_identity=True
)
sub = Elementwise("subtract", _subtract, 2)
mul = Elementwise(
    "multiply", _multiply, 2, associative=True, commutative=True, distributes_over={"add", "subtract"}, annihilates=True
)
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
        self.is_matmul = not custom and _is_matmul(self.inputs, out)
        self.name = (
            "matmul"
            if self.is_matmul
            else (f"einsum[{self.subscripts}]" + (f"({combine},{self.aggregate})" if custom else ""))
        )
        # the kernel folds its summed letters with ``aggregate``; folding partial results
        # (across blocks) with the same associative aggregate is exact
        self.distributes_over = frozenset({self.aggregate.name})
        # zero chunks combine to zeros, and add/multiply/max/min of zeros is zero
        self.annihilates = combine is None or combine.annihilates

    def __call__(self, *chunks: Any) -> Any:
        b = backends.backend_of(*chunks)
        if not (self.plain and b.dense_products and any(isinstance(c, np.ndarray) for c in chunks)):
            b, chunks = backends.align(*chunks)  # else a sparse chunk meets a dense one: dense out
        if b is not backends.NUMPY:  # NumPy's promotion (torch refuses mixed dtypes)
            dt = self.out_dtype(*_in_dtypes(chunks))
            if self.plain:
                chunks = tuple(b.coerce(c, dt) for c in chunks)
            out = self._run(b, chunks)
            return b.coerce(out, dt)
        return self._run(b, chunks)

    def _run(self, b: Any, chunks: Sequence[Any]) -> Any:
        if self.plain:
            if self.is_matmul:
                return b.matmul(chunks[0], chunks[1])
            return b.einsum(self.subscripts, *chunks)
        return self._extended(b.xp, *chunks)

    def _extended(self, xp: Any, a: Any, b: Any) -> Any:
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

    def out_backend(self, *in_backends: str) -> str:
        out = super().out_backend(*in_backends)
        dense = self.plain and "numpy" in in_backends and backends.get(out).dense_products
        return "numpy" if dense else out

    def out_axes(self, frontier: tuple, *in_axes: Any) -> tuple:
        by_label: dict[str, ChunkAxis] = {}
        for labels, axes in zip(self.inputs, in_axes):
            if len(labels) != len(axes):
                raise ChunkShapeError(f"{self.name}: chunk of rank {len(axes)} for subscripts {labels!r}")
            for l, ax in zip(labels, axes):
                by_label[l] = (
                    ax if l not in by_label else unify_axes(by_label[l], ax, frontier, f"{self.name} (index {l!r})")
                )
        return tuple(by_label[l] for l in self.output)

    def flops(self, *shapes: tuple) -> int:
        ext: dict[str, int] = {}
        for labels, shape in zip(self.inputs, shapes):
            ext.update(zip(labels, shape))
        contracted = any(l not in self.output for l in ext)
        return (2 if contracted else 1) * math.prod(ext.values())


def _is_matmul(inputs: tuple, out: str) -> bool:
    """Whether subscripts say a matrix product, whatever the letters: two matrices, the left's
    columns summed against the right's rows, the output the left's rows by the right's columns."""
    if len(inputs) != 2 or not all(len(s) == 2 for s in (*inputs, out)):
        return False
    (i, k), (k2, j) = inputs
    return k == k2 and len({i, k, j}) == 3 and out == i + j


def _einsum(xp: Any, subscripts: str, *chunks: Any) -> Any:
    """The chunks' own einsum (the Array API lacks one; each backend supplies it)."""
    return backends.backend_of(*chunks).einsum(subscripts, *chunks)


def _expand(xp: Any, a: Any, labels: str, letters: str) -> Any:
    """View chunk ``a`` (indexed by ``labels``) over all ``letters``, with size-1 axes for the rest."""
    perm = sorted(range(len(labels)), key=lambda i: letters.index(labels[i]))
    a = xp.permute_dims(a, tuple(perm)) if perm != list(range(len(labels))) else a
    shape, it = [], iter(a.shape)
    for l in letters:
        shape.append(next(it) if l in labels else 1)
    return xp.reshape(a, tuple(shape))


matmul = Einsum("ik,kj->ij")


class Reduce(Kernel):
    """Reduce a chunk along ``axes`` with a NumPy reduction (``backends.base.REDUCTIONS``: sum,
    prod, max, min, any, all and their NaN-skipping forms). ``keepdims`` keeps the reduced axes
    (extent 1), as the frontend's reductions do; ``dtype`` fixes the output dtype (default:
    NumPy's for the reduction of the input dtype). A masked chunk (``numpy.ma``) skips its
    masked elements and gives a partial whose fully masked elements are absent, so merging
    partials skips them."""

    arity = 1

    def __init__(self, op: str, axes: Iterable[int], keepdims: bool = False, dtype: Any = None) -> None:
        if op not in REDUCTIONS:
            raise TRAError(f"Reduce: unknown reduction {op!r}")
        self.op, self.axes, self.keepdims = op, tuple(sorted(axes)), keepdims
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.name = f"{op}{list(self.axes)}"
        self.annihilates = op == "sum"

    def __call__(self, chunk: Any) -> Any:
        if masked.is_masked(chunk):
            return _reduce_masked(self.op, self.axes, self.keepdims, self.out_dtype(chunk.dtype), chunk)
        b = backends.backend_of(chunk)
        out = b.reduce(self.op, chunk, axis=self.axes, keepdims=self.keepdims, dtype=self.dtype)
        if b is backends.NUMPY:
            return out if self.dtype is None else np.asarray(out).astype(self.dtype, copy=False)
        return b.coerce(out, self.out_dtype(b.dtype_of(chunk)))

    def parts_merge(self, axis: int) -> Kernel | None:
        """Along a reduced axis kept (extent 1): the merge of the reductions with an identity
        (a max of an empty part has none)."""
        if axis not in self.axes or not self.keepdims:
            return None
        return {"sum": add, "nansum": add, "prod": mul, "nanprod": mul, "any": maximum, "all": minimum}.get(self.op)

    def out_axes(self, frontier: tuple, axes: Sequence[ChunkAxis]) -> tuple:
        if any(a >= len(axes) for a in self.axes):
            raise ChunkShapeError(f"{self.name}: chunk has rank {len(axes)}")
        return tuple(
            ChunkAxis.const(1) if i in self.axes else ax
            for i, ax in enumerate(axes)
            if self.keepdims or i not in self.axes
        )

    def out_dtype(self, dtype: Any) -> np.dtype:
        if self.dtype is not None:
            return self.dtype
        if self.op in ("any", "all"):
            return np.dtype(bool)
        if self.op in ("sum", "prod", "nansum", "nanprod"):
            return np.sum(np.zeros(1, dtype)).dtype
        return np.dtype(dtype)


def _reduce_masked(op: str, axes: tuple, keepdims: bool, dtype: np.dtype, chunk: Any) -> Any:
    """A masked chunk's reduction (``numpy.ma``'s: masked elements skipped) as a partial whose
    fully masked elements are absent, so that merging partials skips them."""
    if op.startswith("nan"):
        chunk = masked.NAMESPACE.where(np.isnan(np.ma.getdata(chunk)), np.ma.masked, chunk)
        op = op[3:]
    kw = {"dtype": dtype} if op in ("sum", "prod") else {}
    out = getattr(chunk, op)(axis=axes, keepdims=True, **kw)
    mask = np.ma.getmaskarray(out) if out is not np.ma.masked else np.ones((1,) * chunk.ndim, bool)
    data = np.asarray(np.ma.getdata(out)).astype(dtype, copy=False).reshape(mask.shape)
    if not keepdims:
        data, mask = np.squeeze(data, axis=axes), np.squeeze(mask, axis=axes)
    return np.ma.MaskedArray(data, mask=mask).view(masked.MaskedPartial)


class Custom(Kernel):
    """A user function with declared output axes (``out_axes_fn``; default: same as input 0)."""

    def __init__(
        self, name: str, fn: Callable, arity: int = 1, out_axes_fn: Callable | None = None, dtype: Any = None
    ) -> None:
        self.name, self.fn, self.arity = name, fn, arity
        self._out_axes_fn = out_axes_fn
        self._dtype = dtype

    def __call__(self, *chunks: Any) -> Any:
        b, chunks = backends.align(*chunks)
        out = self.fn(*chunks)
        if b is backends.NUMPY or self._dtype is None:
            return out
        return b.coerce(out, self._dtype)

    def out_axes(self, frontier: tuple, *in_axes: Any) -> tuple:
        return self._out_axes_fn(*in_axes) if self._out_axes_fn else tuple(in_axes[0])

    def out_dtype(self, *dtypes: Any) -> np.dtype:
        return np.dtype(self._dtype) if self._dtype is not None else np.result_type(*dtypes)


def _diag(a: Any) -> Any:
    b = backends.backend_of(a)
    return a * b.np(b.device_of(a)).eye(a.shape[0], dtype=b.dtype_of(a))


def diag_kernel() -> Custom:
    """The papers' ``diag``: keep a square chunk's diagonal as a diagonal matrix."""
    return Custom("diag", _diag)


# ---------------------------------------------------------------- building blocks of derivatives
#
# What every kernel's VJP (``tra/vjp.py``'s registry) is built with: the backward pass's kernel
# (``GradKernel``), the chain rule of elementwise kernels (``chain``), the fold of a broadcast
# contribution back to an operand's shape (``Reduction``), the partials of max, min and
# multiply. They sit here, below the array layer, because the frontend's kernels
# (``array/kernels.py``) register their VJPs next to them; the VJPs of the kernels above live
# with the backward pass, in ``autodiff/kernels.py``. Rules get terms (``vjp.TermLike``) and
# build with their ``map``/``zip``; see ``tra/vjp.py``.


class _Array:
    """Marks an array operand among an elementwise kernel's arguments (the others are constants)."""

    def __repr__(self) -> str:
        return "·"

    def __reduce__(self) -> str:
        return "ARRAY"


ARRAY = _Array()


class GradKernel(Kernel):
    """A chunk function of the backward pass with declared output axes and dtype.

    ``axes(frontier, *in_axes)`` gives the output chunk axes (default: NumPy broadcasting of
    the inputs); ``dtype`` the output dtype (default: that of the first input). ``fn`` and
    ``axes`` are module-level functions (constants bound with ``Bound``), so gradients pickle.
    """

    def __init__(self, name: str, fn: Callable, arity: int, axes: Callable | None = None, dtype: Any = None) -> None:
        self.name, self.fn, self.arity = name, fn, arity
        self._axes = axes
        self._dtype = None if dtype is None else np.dtype(dtype)

    def __call__(self, *chunks: Any) -> Any:
        # NumPy chunks join the other operands' library and device, but for integer ones: the
        # backward pass's parameter chunks (offsets, extents), read on the host as integers
        keep = tuple(i for i, c in enumerate(chunks) if isinstance(c, np.ndarray) and c.dtype.kind in "iu")
        _, chunks = backends.align(*chunks, keep=keep)
        return self.fn(*chunks)

    def out_axes(self, frontier: tuple, *in_axes: Any) -> tuple:
        if self._axes is not None:
            return tuple(self._axes(frontier, *in_axes))
        return broadcast_axes(frontier, in_axes, self.name)

    def out_dtype(self, *dtypes: Any) -> np.dtype:
        return self._dtype if self._dtype is not None else np.dtype(dtypes[0])


def cast(xp: Any, v: Any, dtype: Any) -> Any:
    """``v`` as an array of NumPy dtype ``dtype`` in its own library: the backend of ``v`` maps
    the dtype, never ``xp`` (the namespace of ``v``, kept for the callers); a Python scalar
    becomes a NumPy 0-d array."""
    if not hasattr(v, "dtype") or not hasattr(v, "shape"):
        return np.asarray(v, dtype=dtype)
    return backends.backend_of(v).coerce(v, dtype)


def xp_of(*chunks: Any) -> Any:
    arrays = [c for c in chunks if hasattr(c, "shape") and hasattr(c, "dtype")]
    return namespace(*arrays) if arrays else namespace(np.zeros(()))


class Reduction:
    """How a contribution chunk (broadcast shape) folds back to an operand's chunk shape:
    sum the leading axes the operand lacks, and (keeping them) the axes where the operand
    has a constant extent 1 that was stretched. Static: read from the chunk-axis metadata."""

    def __init__(self, operand_axes: Sequence[ChunkAxis], out_rank: int) -> None:
        self.lead = out_rank - len(operand_axes)
        if self.lead < 0:
            raise GradError("operand has a higher chunk rank than the result it broadcasts to")
        self.operand_axes = tuple(operand_axes)
        self.keep = tuple(i for i, ax in enumerate(operand_axes) if ax.constant == 1)

    def axes(self, axes: Sequence[ChunkAxis]) -> tuple:
        """Output axes from the contribution's axes."""
        axes = tuple(axes)[self.lead :]
        return tuple(ChunkAxis.const(1) if i in self.keep else ax for i, ax in enumerate(axes))

    def __call__(self, xp: Any, v: Any) -> Any:
        if self.lead:
            v = xp.sum(v, axis=tuple(range(self.lead)))
        shrink = tuple(i for i in self.keep if v.shape[i] != 1)
        if shrink:
            v = xp.sum(v, axis=shrink, keepdims=True)
        return v

    @property
    def trivial(self) -> bool:
        return self.lead == 0 and not self.keep

    def __eq__(self, other: object) -> bool:
        return self is other or isinstance(other, Reduction) and same_fields(vars(self), vars(other))

    def __hash__(self) -> int:
        return hash(frozen(vars(self)))


# ---------------------------------------------------------------- the elementwise chain rule


def _const_value(partial: Partial, values: Sequence) -> Any:
    """Evaluate a partial whose needed values are all constants (NumPy)."""
    with np.errstate(all="ignore"):
        return partial.fn(np, *values)


def _partial_at(partial: Partial, template: tuple, chunks: tuple) -> Any:
    """The partial at chunk level: ``template`` lists its needed values, ``ARRAY`` where a chunk goes."""
    it = iter(chunks)
    subst = [next(it) if v is ARRAY else v for v in template]
    if backends.backend_of(*chunks) is not backends.NUMPY:
        # torch/CuPy functions take no Python numbers: constants as 0-d chunks of the chunks' dtype
        dtype = backends.numpy_dtype(chunks[0].dtype)
        subst = backends.align(chunks[0], *(v if hasattr(v, "shape") else np.asarray(v, dtype) for v in subst))[1][1:]
    with np.errstate(all="ignore"):
        return partial.fn(xp_of(*chunks), *subst)


def _scaled(red: Reduction, dtype: np.dtype, c: Any, v: Any) -> Any:
    """``v`` (times the constant ``c``, if any) summed back by ``red``, cast."""
    xp = xp_of(v)
    return cast(xp, red(xp, v if c is None else v * c), dtype)


def _times_partial(red: Reduction, dtype: np.dtype, partial: Partial, template: tuple, gc: Any, t: Any) -> Any:
    xp = xp_of(gc, t)
    return cast(xp, red(xp, gc * _partial_at(partial, template, (t,))), dtype)


def _partial_cast(partial: Partial, template: tuple, dtype: np.dtype, a: Any, b: Any) -> Any:
    return cast(xp_of(a, b), _partial_at(partial, template, (a, b)), dtype)


def _times(red: Reduction, dtype: np.dtype, gc: Any, dc: Any) -> Any:
    xp = xp_of(gc, dc)
    return cast(xp, red(xp, gc * dc), dtype)


def _reduced_axes(red: Reduction, frontier: tuple, a: tuple) -> tuple:
    return red.axes(a)


def _reduced_broadcast_axes(red: Reduction, name: str, frontier: tuple, a: tuple, b: tuple) -> tuple:
    return red.axes(broadcast_axes(frontier, (a, b), name))


def chain(
    g: TermLike,
    partial: Any,
    values: dict,
    operand_axes: Sequence[ChunkAxis],
    out_rank: int,
    dtype: Any,
    name: str,
    terms: frozenset = frozenset(),
) -> TermLike | None:
    """``g · partial`` summed back to the operand's chunk shape (see ``Reduction``).

    ``values``: argument position (or ``Y``) -> a term (a forward relation; its key is in
    ``terms``) or a constant."""
    red = Reduction(operand_axes, out_rank)
    dtype = np.dtype(dtype)
    if isinstance(partial, Partial):
        vals = [values[i] for i in partial.needs]
        is_term = [i in terms for i in partial.needs]
        needed = [v for v, t in zip(vals, is_term) if t]
        if not needed:
            partial = _const_value(partial, vals)
    if not isinstance(partial, Partial):
        c = partial
        if np.all(np.asarray(c) == 0):
            return None
        if isinstance(c, numbers.Number) and c == 1:
            if red.trivial and g.dtype == dtype:
                return g
            c = None
        return g.map(
            GradKernel(f"d{name}", Bound(_scaled, red, dtype, c), 1, axes=Bound(_reduced_axes, red), dtype=dtype)
        )
    template = tuple(ARRAY if t else v for v, t in zip(vals, is_term))
    axes = Bound(_reduced_broadcast_axes, red, name)
    if len(needed) == 1:
        k = GradKernel(f"d{name}", Bound(_times_partial, red, dtype, partial, template), 2, axes=axes, dtype=dtype)
        return g.zip(needed[0], k)
    if len(needed) == 2:
        d = needed[0].zip(
            needed[1],
            GradKernel(f"partial{name}", Bound(_partial_cast, partial, template, dtype), 2, dtype=dtype),
        )
        return g.zip(d, GradKernel(f"d{name}", Bound(_times, red, dtype), 2, axes=axes, dtype=dtype))
    raise GradError(f"{name}: a partial derivative may read at most two forward relations")


def elementwise_transform_vjp(
    node: Any, g: TermLike, x: TermLike, y: TermLike, partials: tuple | None, args: Sequence
) -> Any:
    """The VJP of ``Transform(k)`` for an elementwise ``k`` of arguments ``args`` (``ARRAY`` for
    the array operand, constants baked in) with these ``partials`` (NotImplemented if None)."""
    if partials is None or len(partials) < len(args):
        return NotImplemented
    which = list(args).index(ARRAY)
    values: dict = {i: (x if a is ARRAY else a) for i, a in enumerate(args)}
    values[Y] = y
    return chain(
        g,
        partials[which],
        values,
        node.child.type.axes,
        node.type.rank,
        node.child.type.dtype,
        node.kernel.name,
        frozenset((which, Y)),
    )


def elementwise_join_vjp(
    node: Any, g: TermLike, side: int, terms: Sequence[TermLike], y: TermLike, partials: tuple | None, args: Sequence
) -> Any:
    """The VJP of ``Join(..., k)`` for an elementwise ``k`` (see ``elementwise_transform_vjp``)."""
    if partials is None or len(partials) < len(args):
        return NotImplemented
    positions = [i for i, a in enumerate(args) if a is ARRAY]
    values: dict = {i: a for i, a in enumerate(args)}
    values[positions[0]], values[positions[1]] = terms[0], terms[1]
    values[Y] = y
    child = node.children[side]
    return chain(
        g,
        partials[positions[side]],
        values,
        child.type.axes,
        node.type.rank,
        child.type.dtype,
        node.kernel.name,
        frozenset((positions[0], positions[1], Y)),
    )


# partials the TRA's elementwise kernels (``autodiff/kernels.py``) and the frontend's share


def tie_share(win: Any, a: Any, b: Any, xp: Any) -> Any:
    return xp.where(win, 1.0, xp.where(a == b, 0.5, 0.0))  # ties split evenly (JAX, PyTorch)


def d_max_first(xp: Any, a: Any, b: Any) -> Any:
    return tie_share(a > b, a, b, xp)


def d_max_second(xp: Any, a: Any, b: Any) -> Any:
    return tie_share(b > a, a, b, xp)


def d_min_first(xp: Any, a: Any, b: Any) -> Any:
    return tie_share(a < b, a, b, xp)


def d_min_second(xp: Any, a: Any, b: Any) -> Any:
    return tie_share(b < a, a, b, xp)


def d_other(xp: Any, b: Any) -> Any:
    return b


MAX_PARTIALS = (P([0, 1], d_max_first), P([0, 1], d_max_second))
MIN_PARTIALS = (P([0, 1], d_min_first), P([0, 1], d_min_second))
MUL_PARTIALS = (P([1], d_other), P([0], d_other))


def cast_after(kernel: Kernel, dtype: np.dtype, v: Any) -> Any:
    """``kernel(v)`` cast to ``dtype`` (bind the kernel and dtype: a backward kernel's function)."""
    return cast(xp_of(v), kernel(v), dtype)


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
    "ARRAY",
    "GradKernel",
    "Reduction",
    "cast",
    "cast_after",
    "xp_of",
    "chain",
    "elementwise_transform_vjp",
    "elementwise_join_vjp",
]

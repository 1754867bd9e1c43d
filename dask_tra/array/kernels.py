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

import math

import numpy as np

from .. import backends
from ..backends import masked
from ..tra.expr import Join
from ..tra.kernels import (
    ARRAY,
    MAX_PARTIALS,
    MIN_PARTIALS,
    MUL_PARTIALS,
    Bound,
    Einsum,
    GradKernel,
    Kernel,
    cast,
    cast_after,
    elementwise_join_vjp,
    elementwise_transform_vjp,
    first_axes,
    frozen,
    kernel_axes,
    second_axes,
    with_axis,
    xp_of,
)
from ..tra.kernels import broadcast_axes as _tra_broadcast_axes
from ..tra.relation import ChunkAxis
from ..tra.terms import Term
from ..tra.vjp import GradError, P, Y, partials_for, register_partials, register_vjp


def npx(*chunks):
    """The NumPy-style namespace of some chunks (NumPy's names and semantics, in their library;
    ``numpy.ma``'s where NumPy's would drop the mask of a masked chunk: ``backends.masked``)."""
    if masked.any_masked(*chunks):
        return masked.namespace(*chunks)
    return backends.numpy_like(*chunks)


def dtype_of(chunk) -> np.dtype:
    """A chunk's dtype as a NumPy dtype (whatever its library)."""
    return backends.dtype_of(chunk)


class ChunkFunction(Kernel):
    """A kernel that runs ``run(*chunks)`` on its aligned inputs (those at positions
    ``host_args`` stay NumPy) and casts a non-NumPy output to its declared dtype."""

    host_args: tuple = ()
    _dtype = None

    def run(self, *chunks):
        raise NotImplementedError

    def __call__(self, *chunks):
        b, chunks = backends.align(*chunks, keep=self.host_args)
        out = self.run(*chunks)
        if b is backends.NUMPY or self._dtype is None:
            return out
        if not b.owns(out):  # a scalar result: back into the chunks' library and device
            out = b.asarray(out, device=b.device_of(next(c for c in chunks if b.owns(c))))
        return b.coerce(out, self._dtype)

    def out_dtype(self, *dtypes):
        return self._dtype if self._dtype is not None else np.result_type(*dtypes)


class Fn(ChunkFunction):
    """A chunk function with declared facts: ``axes(frontier, *in_axes)`` gives the output
    chunk axes (default: those of input 0), ``dtype`` the output dtype. Inputs at positions
    ``host_args`` are parameter chunks the function reads on the host (offsets, index lists):
    they stay NumPy arrays whatever the data's library. ``fn`` and ``axes`` should be
    module-level functions (constants bound with ``Bound``) so the kernel pickles."""

    def __init__(
        self,
        name,
        fn,
        arity=1,
        axes=None,
        dtype=None,
        associative=False,
        commutative=False,
        distributes_over=(),
        host_args=(),
    ):
        self.name, self.fn, self.arity = name, fn, arity
        self.host_args = tuple(host_args)
        self._axes, self._dtype = axes, None if dtype is None else np.dtype(dtype)
        self.associative, self.commutative = associative, commutative
        self.distributes_over = frozenset(distributes_over)

    def run(self, *chunks):
        return self.fn(*chunks)

    def out_axes(self, frontier, *in_axes):
        return tuple(self._axes(frontier, *in_axes)) if self._axes else tuple(in_axes[0])


# ---------------------------------------------------------------- elementwise operations


class Op:
    """An elementwise operation on values: ``fn(*values, **params)``, output ``index`` of a
    multi-output ufunc. A NumPy ufunc runs in the chunks' own library; any other ``fn`` is a
    module-level function written against NumPy's API (it takes its namespace from ``npx``)."""

    def __init__(self, fn, index=None, **params):
        self.fn, self.index = fn, index
        self.params = tuple(sorted(params.items()))

    def __call__(self, *values):
        params = dict(self.params)
        if isinstance(self.fn, np.ufunc) and backends.backend_of(*values) is not backends.NUMPY:
            out = getattr(npx(*values), self.fn.__name__)(*values, **params)
        else:
            out = self.fn(*values, **params)
        return out if self.index is None else out[self.index]

    def __eq__(self, other):
        return (
            isinstance(other, Op)
            and (self.fn, self.index) == (other.fn, other.index)
            and frozen(self.params) == frozen(other.params)
        )

    def __hash__(self):
        return hash((self.fn, self.index, frozen(self.params)))

    def __repr__(self):
        return f"Op({getattr(self.fn, '__name__', self.fn)})"


class ElementwiseOp(ChunkFunction):
    """``op`` applied elementwise (NumPy broadcasting) to ``args``: per argument of ``op``,
    ``ARRAY`` (the next input chunk) or a constant baked in (``x * 2``: ``(ARRAY, 2)``)."""

    def __init__(self, name, op: Op, args, dtype):
        self.name, self.op, self.args = name, op, tuple(args)
        self.arity = sum(a is ARRAY for a in self.args)
        self._dtype = np.dtype(dtype)

    def values(self, chunks):
        """``args`` with the chunks in the ``ARRAY`` positions."""
        it = iter(chunks)
        return [next(it) if a is ARRAY else a for a in self.args]

    def run(self, *chunks):
        out = self.op(*self.values(chunks))
        if isinstance(out, (np.ndarray, np.generic)) and out.dtype != self._dtype:
            out = out.astype(self._dtype)
        return out

    def out_axes(self, frontier, *in_axes):
        return broadcast_axes(frontier, *in_axes)


class Pack(ChunkFunction):
    """Join kernel stacking operands (the left one already packed when ``count`` > 2) on a
    leading axis in a common dtype: how three or more arrays meet one elementwise kernel."""

    arity = 2

    def __init__(self, count, dtype):
        self.count, self._dtype = int(count), np.dtype(dtype)
        self.name = f"pack{self.count}"

    def run(self, a, b):
        xp = npx(a, b)
        a = a if self.count > 2 else a[None]
        b = xp.broadcast_to(b, np.broadcast_shapes(tuple(a.shape[1:]), tuple(b.shape)))
        a = xp.broadcast_to(a, (a.shape[0],) + tuple(b.shape))
        return xp.concatenate([xp.astype(a, self._dtype), xp.astype(b[None], self._dtype)])

    def out_axes(self, frontier, a, b):
        return (ChunkAxis.const(self.count),) + broadcast_axes(frontier, a[1:] if self.count > 2 else a, b)


class Unpack(ChunkFunction):
    """The last Join of a packed elementwise operation: unpack the operands (their own
    ``dtypes``) and apply the elementwise kernel ``apply``."""

    arity = 2

    def __init__(self, apply: ElementwiseOp, dtypes):
        self.apply, self.dtypes = apply, tuple(np.dtype(d) for d in dtypes)
        self.name, self._dtype = apply.name, apply._dtype

    def run(self, packed, last):
        xp = npx(packed, last)
        parts = [xp.astype(packed[i], dt) for i, dt in enumerate(self.dtypes[:-1])]
        return xp.asarray(self.apply.run(*parts, last))

    def out_axes(self, frontier, a, b):
        return broadcast_axes(frontier, a[1:], b)


# ---------------------------------------------------------------- kernels reading parameter chunks


class Take(ChunkFunction):
    """Cut a block into a piece along ``axis`` (``rechunk.gather``): the piece's positions come
    in a parameter chunk, ``[start, step, length, -1]`` for a progression, else the list.
    ``sizes[old block, piece]`` are the piece lengths; the piece number is key dim ``piece_dim``."""

    arity = 2
    host_args = (1,)

    def __init__(self, axis, sizes, piece_dim, dtype):
        self.axis, self.sizes, self.piece_dim = int(axis), np.asarray(sizes, dtype=np.int64), int(piece_dim)
        self._dtype = np.dtype(dtype)
        self.name = f"take[{self.axis}]"

    def run(self, chunk, p):
        return take_positions(chunk, p, self.axis)

    def out_axes(self, frontier, xa, pa):
        return along(xa, self.axis, ChunkAxis((self.axis, self.piece_dim), self.sizes))


def take_positions(chunk, p, axis):
    """The positions ``p`` of ``chunk`` along ``axis`` (``Take``'s encoding)."""
    if p.shape[0] == 4 and p[3] == -1:
        start, step, n = int(p[0]), int(p[1]), int(p[2])
        last = start + step * (n - 1)
        index = [slice(None)] * chunk.ndim
        index[axis] = slice(min(start, last), max(start, last) + 1, abs(step))
        out = chunk[tuple(index)]  # a reversed run: the forward slice, flipped (torch has no negative steps)
        return out if step > 0 else npx(out).flip(out, axis)
    return npx(chunk).take(chunk, p, axis=axis)


def _listed(p):
    """``Take``'s encoding of positions as the list of positions."""
    p = np.asarray(p)
    return int(p[0]) + int(p[1]) * np.arange(int(p[2])) if p.shape[0] == 4 and p[3] == -1 else p


class Cut(Kernel):
    """The same positions of every block along ``axis`` (``Take``'s encoding): the gather where
    each new block is one piece of its own old block, with no piece relation to join."""

    annihilates = True

    def __init__(self, axis, positions, dtype):
        self.axis, self.positions = int(axis), np.asarray(positions, dtype=np.int64)
        self._dtype = np.dtype(dtype)
        self.name = f"cut[{self.axis}]"

    def __call__(self, chunk):
        return take_positions(chunk, self.positions, self.axis)

    def out_axes(self, frontier, axes):
        return along(axes, self.axis, ChunkAxis.const(len(_listed(self.positions))))

    def out_dtype(self, dtype):
        return np.dtype(dtype)


class Concatenate(ChunkFunction):
    """Join kernel concatenating two blocks along ``axis``; ``total[i]`` is the joined extent
    of block row i along that axis."""

    arity = 2

    def __init__(self, axis, total):
        self.axis, self.total = int(axis), tuple(int(t) for t in total)
        self.name = f"concatenate[{self.axis}]"

    def run(self, u, v):
        return npx(u, v).concatenate([u, v], axis=self.axis)

    def out_axes(self, frontier, u, v):
        return along(u, self.axis, ChunkAxis.along(self.axis, self.total))


class Triangle(ChunkFunction):
    """``tril``/``triu`` (``which``) of a block, its diagonal offset in a parameter chunk."""

    arity = 2
    host_args = (1,)

    def __init__(self, which, dtype):
        if which not in ("tril", "triu"):
            raise ValueError(f"Triangle: which must be 'tril' or 'triu', got {which!r}")
        self.which, self._dtype = which, np.dtype(dtype)
        self.name = which

    def run(self, c, p):
        return getattr(npx(c), self.which)(c, int(p[0]))

    def out_axes(self, frontier, c, p):
        return tuple(c)


class Permute(Kernel):
    """Transpose a chunk: output axis j is input axis ``perm[j]``."""

    annihilates = True

    def __init__(self, perm):
        self.perm = self.permutes = tuple(int(p) for p in perm)
        self.name = f"transpose{list(self.perm)}"
        self.identity_map = self.perm == tuple(range(len(self.perm)))

    def compose(self, inner):
        if isinstance(inner, Permute) and len(inner.perm) == len(self.perm):
            return Permute(tuple(inner.perm[p] for p in self.perm))
        return None

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
        chunk = masked.plain(chunk)  # a reduction's partial, finished (squeezed)
        return npx(chunk).reshape(chunk, tuple(self._extent(s, chunk.shape) for s in self.spec))

    def out_axes(self, frontier, axes):
        return tuple(
            ChunkAxis.const(s)
            if isinstance(s, int)
            else ChunkAxis(axes[s[0]].key_dims, axes[s[0]].sizes * s[1] // s[2])
            for s in self.spec
        )

    def out_dtype(self, dtype):
        return np.dtype(dtype)


def broadcast_axes(frontier, *axes_list):
    """NumPy broadcasting of chunk axes (right-aligned; extent-1 axes stretch)."""
    return _tra_broadcast_axes(frontier, axes_list, "broadcast")


def along(axes, axis, new_axis):
    """``axes`` with chunk axis ``axis`` replaced."""
    return tuple(axes[:axis]) + (new_axis,) + tuple(axes[axis + 1 :])


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


# ---------------------------------------------------------------- derivatives (registered in tra/vjp.py)
#
# The VJPs of the kernels above, found by kernel type by the backward pass
# (``dask_tra.autodiff``); elementwise kernels by their operation's partials: NumPy's ufuncs
# here, the frontend's own elementwise functions by ``dask_tra.autodiff.vjp``. Rules get
# terms (``tra.vjp.TermLike``) and build with their ``map``/``zip``; see ``tra/vjp.py``.


@register_vjp(ElementwiseOp)
def _elementwise_transform(node, g, x, y):
    parts = _elementwise_partials(node.kernel)
    return NotImplemented if parts is None else elementwise_transform_vjp(node, g, x, y, *parts)


@register_vjp(ElementwiseOp, kind="join")
def _elementwise_join(node, g, side, terms, y):
    parts = _elementwise_partials(node.kernel)
    return NotImplemented if parts is None else elementwise_join_vjp(node, g, side, terms, y, *parts)


def _elementwise_partials(kernel):
    """(partials, arguments) of an ``ElementwiseOp``, or None: a ufunc called with keyword
    arguments or for one output of several has none."""
    op = kernel.op
    if op.index is not None or (isinstance(op.fn, np.ufunc) and op.params):
        return None
    return partials_for(op.fn), list(kernel.args)


_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _d_y(xp, y):
    return y


def _d_reciprocal_of(xp, b):
    return 1 / b


def _d_divide_right(xp, y, b):
    return -y / b


def _d_power_base(xp, a, b):
    return b * a ** (b - 1)


def _d_power_exponent(xp, y, a):
    return y * xp.log(a)


def _d_square(xp, a):
    return 2 * a


def _d_reciprocal(xp, y):
    return -y * y


def _d_sqrt(xp, y):
    return 0.5 / y


def _d_cbrt(xp, y):
    return 1 / (3 * y * y)


def _d_abs(xp, a):
    return xp.sign(a)


def _d_exp2(xp, y):
    return y * _LN2


def _d_expm1(xp, y):
    return y + 1


def _d_log(xp, a):
    return 1 / a


def _d_log2(xp, a):
    return 1 / (a * _LN2)


def _d_log10(xp, a):
    return 1 / (a * _LN10)


def _d_log1p(xp, a):
    return 1 / (1 + a)


def _d_logaddexp(xp, a, y):
    return xp.exp(a - y)


def _d_logaddexp2(xp, a, y):
    return 2.0 ** (a - y)


def _d_sin(xp, a):
    return xp.cos(a)


def _d_cos(xp, a):
    return -xp.sin(a)


def _d_tan(xp, y):
    return 1 + y * y


def _d_arcsin(xp, a):
    return 1 / xp.sqrt(1 - a * a)


def _d_arccos(xp, a):
    return -1 / xp.sqrt(1 - a * a)


def _d_arctan(xp, a):
    return 1 / (1 + a * a)


def _d_sinh(xp, a):
    return xp.cosh(a)


def _d_cosh(xp, a):
    return xp.sinh(a)


def _d_tanh(xp, y):
    return 1 - y * y


def _d_arcsinh(xp, a):
    return 1 / xp.sqrt(a * a + 1)


def _d_arccosh(xp, a):
    return 1 / xp.sqrt(a * a - 1)


def _d_arctanh(xp, a):
    return 1 / (1 - a * a)


def _d_arctan2_first(xp, a, b):
    return b / (a * a + b * b)


def _d_arctan2_second(xp, a, b):
    return -a / (a * a + b * b)


def _d_hypot(xp, a, y):
    return a / y


DIVIDE_PARTIALS = (P([1], _d_reciprocal_of), P([Y, 1], _d_divide_right))
_POWER = (P([0, 1], _d_power_base), P([Y, 0], _d_power_exponent))

for _op, _partials in {
    # arithmetic
    np.add: (1, 1),
    np.subtract: (1, -1),
    np.multiply: MUL_PARTIALS,
    np.divide: DIVIDE_PARTIALS,
    np.power: _POWER,
    np.float_power: _POWER,
    np.negative: (-1,),
    np.positive: (1,),
    np.conjugate: (1,),
    np.square: (P([0], _d_square),),
    np.reciprocal: (P([Y], _d_reciprocal),),
    np.sqrt: (P([Y], _d_sqrt),),
    np.cbrt: (P([Y], _d_cbrt),),
    np.absolute: (P([0], _d_abs),),
    np.fabs: (P([0], _d_abs),),
    np.maximum: MAX_PARTIALS,
    np.minimum: MIN_PARTIALS,
    np.fmax: MAX_PARTIALS,
    np.fmin: MIN_PARTIALS,
    # exponentials and logarithms
    np.exp: (P([Y], _d_y),),
    np.exp2: (P([Y], _d_exp2),),
    np.expm1: (P([Y], _d_expm1),),
    np.log: (P([0], _d_log),),
    np.log2: (P([0], _d_log2),),
    np.log10: (P([0], _d_log10),),
    np.log1p: (P([0], _d_log1p),),
    np.logaddexp: (P([0, Y], _d_logaddexp), P([1, Y], _d_logaddexp)),
    np.logaddexp2: (P([0, Y], _d_logaddexp2), P([1, Y], _d_logaddexp2)),
    # trigonometric and hyperbolic
    np.sin: (P([0], _d_sin),),
    np.cos: (P([0], _d_cos),),
    np.tan: (P([Y], _d_tan),),
    np.arcsin: (P([0], _d_arcsin),),
    np.arccos: (P([0], _d_arccos),),
    np.arctan: (P([0], _d_arctan),),
    np.sinh: (P([0], _d_sinh),),
    np.cosh: (P([0], _d_cosh),),
    np.tanh: (P([Y], _d_tanh),),
    np.arcsinh: (P([0], _d_arcsinh),),
    np.arccosh: (P([0], _d_arccosh),),
    np.arctanh: (P([0], _d_arctanh),),
    np.arctan2: (P([0, 1], _d_arctan2_first), P([0, 1], _d_arctan2_second)),
    np.hypot: (P([0, Y], _d_hypot), P([1, Y], _d_hypot)),
    np.deg2rad: (math.pi / 180,),
    np.radians: (math.pi / 180,),
    np.rad2deg: (180 / math.pi,),
    np.degrees: (180 / math.pi,),
    # piecewise constant: zero derivative (as in JAX and PyTorch)
    **{f: (0,) * 2 for f in (np.sign, np.floor, np.ceil, np.trunc, np.rint, np.heaviside)},
}.items():
    register_partials(_op, _partials)


@register_vjp(Permute)
def _permute_transform(node, g, x, y):
    inv = tuple(int(i) for i in np.argsort(node.kernel.perm))
    back, dtype = Permute(inv), node.child.type.dtype
    return g.map(GradKernel(back.name, Bound(cast_after, back, dtype), 1, axes=Bound(kernel_axes, back), dtype=dtype))


def _reshape_like(dtype, xc, gc):
    xp = xp_of(xc, gc)
    return cast(xp, xp.reshape(gc, tuple(xc.shape)), dtype)


@register_vjp(Reshape)
def _reshape_transform(node, g, x, y):
    """Reshape back: extents from metadata when each input axis is constant or proportional to
    an output axis (always so for the frontend's reshapes), else from the forward chunk."""
    spec = tuple(node.kernel.spec)
    dtype = node.child.type.dtype
    inv = []
    for i, ax in enumerate(node.child.type.axes):
        c = ax.constant
        if c is not None:
            inv.append(c)
            continue
        hit = [(j, s) for j, s in enumerate(spec) if isinstance(s, tuple) and s[0] == i]
        if not hit:
            inv = None
            break
        j, (_, num, den) = hit[0]
        inv.append((j, den, num))
    if inv is None:
        return x.zip(g, GradKernel("reshapeBack", Bound(_reshape_like, dtype), 2, axes=first_axes, dtype=dtype))
    back = Reshape(inv)
    return g.map(
        GradKernel("reshapeBack", Bound(cast_after, back, dtype), 1, axes=Bound(kernel_axes, back), dtype=dtype)
    )


def _with_extent(p, e):
    return np.concatenate([np.asarray(e), np.asarray(p)])


def _with_extent_axes(frontier, pa, ea):
    return (ChunkAxis(pa[0].key_dims, pa[0].sizes + 1),)


def _scatter(axis, dtype, gc, ep):
    """A piece's gradient placed in zeros of its block's extent (``ep``: extent, then positions)."""
    shape = list(gc.shape)
    shape[axis] = int(ep[0])
    b = backends.backend_of(gc)
    out = b.zeros(shape, dtype, b.device_of(gc))
    return b.add_at(out, axis, _listed(ep[1:]), gc)


def _uncut(axis, positions, dtype, xc, gc):
    """A cut's gradient placed in zeros of its block's shape."""
    b = backends.backend_of(gc)
    out = b.zeros(tuple(xc.shape), dtype, b.device_of(gc))
    return b.add_at(out, axis, _listed(positions), gc)


@register_vjp(Cut)
def _cut_transform(node, g, x, y):
    k, dtype = node.kernel, node.child.type.dtype
    return x.zip(
        g, GradKernel(f"uncut[{k.axis}]", Bound(_uncut, k.axis, k.positions, dtype), 2, axes=first_axes, dtype=dtype)
    )


@register_vjp(Take, kind="join", context=True)
def _take_join(node, g, side, terms, y, ctx):
    """The frontend's gather ``Join([axis],[0],take)(X, pieces)``: scatter g into zeros of the
    block's extent (block extents from metadata, positions from the forward piece relation)."""
    if side != 0:
        return None
    axis = node.kernel.axis
    xt, pt = node.left.type, node.right.type
    ax = xt.axes[axis].simplified()
    if ax.key_dims not in ((), (axis,)):
        raise GradError(f"{node.describe()}: block extents along axis {axis} vary with other key dims")
    ext = {i: (int(ax.sizes) if not ax.key_dims else int(ax.sizes[i])) for i in range(pt.frontier[0])}
    E = ctx.const({k: [ext[k[0]]] for k in pt.iter_keys()}, pt.frontier, np.int64, "grad-extents")
    ep_kernel = GradKernel("withExtent", _with_extent, 2, axes=_with_extent_axes, dtype=np.int64)
    EP = Term(Join(node.right, E, [0, 1], [0, 1], ep_kernel), terms[1].dims)
    return g.zip(
        EP,
        GradKernel(
            f"scatter[{axis}]",
            Bound(_scatter, axis, xt.dtype),
            2,
            axes=Bound(with_axis, axis, xt.axes[axis]),
            dtype=xt.dtype,
        ),
    )


def _split_piece(axis, side, dtype, gc, a):
    """The part of a concatenated block's gradient that came from ``a`` (left: 0, right: 1)."""
    index = [slice(None)] * gc.ndim
    index[axis] = slice(0, a.shape[axis]) if side == 0 else slice(a.shape[axis], None)
    return cast(xp_of(gc, a), gc[tuple(index)], dtype)


@register_vjp(Concatenate, kind="join")
def _concatenate_join(node, g, side, terms, y):
    axis = node.kernel.axis
    dtype = node.children[side].type.dtype
    axes = second_axes if side == 0 else Bound(with_axis, axis, node.right.type.axes[axis])
    return g.zip(
        terms[0], GradKernel(f"split[{axis}]", Bound(_split_piece, axis, side, dtype), 2, axes=axes, dtype=dtype)
    )


def _dtriangle(which, dtype, gc, p):
    return cast(xp_of(gc), getattr(backends.numpy_like(gc), which)(gc, int(np.asarray(p).reshape(-1)[0])), dtype)


@register_vjp(Triangle, kind="join")
def _triangle_join(node, g, side, terms, y):
    if side != 0:
        return None
    which, dtype = node.kernel.which, node.left.type.dtype
    return g.zip(terms[1], GradKernel(f"d{which}", Bound(_dtriangle, which, dtype), 2, axes=first_axes, dtype=dtype))


__all__ = [
    "ChunkFunction",
    "Fn",
    "ARRAY",
    "Op",
    "ElementwiseOp",
    "Pack",
    "Unpack",
    "Take",
    "Cut",
    "Concatenate",
    "Triangle",
    "Permute",
    "Reshape",
    "ExtendedEinsum",
    "ToBackend",
    "broadcast_axes",
    "along",
    "npx",
    "dtype_of",
    "DIVIDE_PARTIALS",
]

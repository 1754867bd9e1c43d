"""Elementwise operations with NumPy broadcasting.

One array operand: ``Transform(f)``. Two: ``Join`` on the key dims both keep, with an
``Elementwise`` kernel. A dim of extent 1 broadcast against a longer one is ReKeyed away
(its key is always 0) and the chunk kernel broadcasts it. Key dims both operands keep must
be chunked alike: the smaller operand is rechunked to the larger one's chunks first.
Three or more (``where``, ``clip`` with array bounds): each Join but the last packs its
operands into a stacked chunk (leading axis, common dtype); the last unpacks and applies f.
Scalars are baked into the kernel. The output dtype is NumPy's, found by applying f to
empty arrays at call time (so NumPy's TypeErrors surface at call time too).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from dask.utils import derived_from

from .. import backends, config
from ..tra import Join, Transform
from ..tra import kernels as K
from ..tra.vjp import P, register_partials
from .creation import zeros
from .kernels import ARRAY, ElementwiseOp, Op, Pack, ToBackend, Unpack, npx
from .rechunk import rechunk_axes, unified_chunks, warn_more_blocks
from .relations import check_dtype, is_array, is_scalar, nbytes, reject_masked, rekey, wrap

_FACTS = {np.add: K.add, np.multiply: K.mul, np.subtract: K.sub, np.maximum: K.maximum, np.minimum: K.minimum}


def _baked(x) -> bool:
    return x is None or is_scalar(x)


def _chunk_library(a) -> bool:
    """A CuPy array or torch tensor operand (wrapped with from_array, keeping its library)."""
    return backends.backend_of_type(a) != "numpy"


def _label(v):
    if v is None:
        return "None"
    return repr(v.item() if isinstance(v, (np.generic, np.ndarray)) else v)


def result_dtype(fn, args):
    """NumPy's output dtype of ``fn`` on these operands (raises NumPy's errors)."""
    probe = [v if _baked(v) else np.zeros((0,), v.dtype) for v in args]
    with np.errstate(all="ignore"):
        return np.asarray(fn(*probe)).dtype


def _operands(args, out_shape):
    """RelArrays for the array arguments; NumPy ones chunked to match the RelArray ones."""
    from .creation import from_array

    n = len(out_shape)
    known = {}
    for a in args:
        if is_array(a):
            for d, c in enumerate(a.chunks):
                known.setdefault((n - a.ndim + d, sum(c)), c)
    out = []
    for a in args:
        if _baked(a) or is_array(a):
            out.append(a)
            continue
        a = a if hasattr(a, "dask") or _chunk_library(a) else np.asarray(a)
        if hasattr(a, "dask"):
            from .creation import from_dask

            out.append(from_dask(a))
            continue
        chunks = tuple(known.get((n - a.ndim + d, s), s) for d, s in enumerate(a.shape))
        out.append(from_array(a, chunks=chunks))
    return out


def elementwise(name, fn, *args, dtype=None, facts=None):
    """``fn(*values)`` elementwise over RelArrays, NumPy arrays and scalars (NumPy broadcasting).
    ``fn``: an ``Op``, or a module-level function of the values (so the kernel pickles)."""
    op = fn if isinstance(fn, Op) else Op(fn)
    reject_masked(*args, what=name)  # before _baked: np.ma.masked is a 0-d array
    args = [a if _baked(a) or is_array(a) or hasattr(a, "dask") or _chunk_library(a) else np.asarray(a) for a in args]
    shapes = [np.shape(a) if not is_array(a) else a.shape for a in args if not _baked(a)]
    out_shape = np.broadcast_shapes(*shapes)
    out_dtype = check_dtype(dtype if dtype is not None else result_dtype(op, args))
    args = _operands(args, out_shape)
    arrays = [i for i, a in enumerate(args) if not _baked(a)]
    if any(_baked(a) for a in args):
        name = f"{name}[{','.join('·' if i in arrays else _label(a) for i, a in enumerate(args))}]"
        facts = None
    apply = ElementwiseOp(name, op, [ARRAY if i in arrays else a for i, a in enumerate(args)], out_dtype)
    parts, extra = _aligned([args[i] for i in arrays], out_shape)
    if len(parts) == 1:
        ((expr, dims),) = parts
        return wrap(Transform(expr, apply), *[args[i] for i in arrays], extra=extra)
    dtypes = [args[i].dtype for i in arrays]
    expr, dims = parts[0]
    for step, (rexpr, rdims) in enumerate(parts[1:], start=2):
        common = [o for o in dims if o in rdims]
        last = step == len(parts)
        if last and len(parts) == 2:
            kernel = facts or apply
        elif last:
            kernel = Unpack(apply, dtypes)
        else:
            kernel = Pack(step, np.result_type(*dtypes))
        expr = Join(expr, rexpr, [dims.index(o) for o in common], [rdims.index(o) for o in common], kernel)
        dims = dims + [o for o in rdims if o not in dims]
    expr = rekey(expr, [dims.index(o) for o in range(len(out_shape))])
    return wrap(expr, *[args[i] for i in arrays], extra=extra)


def _aligned(arrays, out_shape):
    """Per operand: (expression with broadcast dims ReKeyed away, output dim of each key dim),
    and the sources rechunking added; dims kept by several operands take dask.array's common
    chunks (``common_blockdim``): the one chunking of several blocks, else the common refinement
    of them all (blocks are only split, never merged)."""
    n = len(out_shape)
    given: dict = {}
    for a in sorted(arrays, key=nbytes, reverse=True):
        for d in range(a.ndim):
            if a.shape[d] == out_shape[n - a.ndim + d]:
                given.setdefault(n - a.ndim + d, []).append(tuple(a.chunks[d]))
    target = {d: unified_chunks(cs) for d, cs in given.items()}
    warn_more_blocks(max(math.prod(a.numblocks) for a in arrays), math.prod(len(c) for c in target.values()))
    parts, extra = [], {}
    for a in arrays:
        off = n - a.ndim
        kept = [d for d in range(a.ndim) if a.shape[d] == out_shape[off + d]]
        r = rechunk_axes(a, {d: target[off + d] for d in kept})
        parts.append((rekey(r.expr, kept), [off + d for d in kept]))
        extra.update(r.sources)
    return parts, extra


# ---------------------------------------------------------------- NumPy ufuncs


_UFUNC_KEYWORDS = {"casting", "order", "dtype", "subok", "signature", "axes", "axis", "keepdims"}


def apply_ufunc(ufunc, *args, out=None, where=True, **kwargs):
    """A NumPy ufunc applied to RelArrays, elementwise.

    ``np.exp(x)`` on a RelArray lands here through ``__array_ufunc__``. ``out=`` (a RelArray)
    is rebound to the result, as dask.array does; with ``where=``, the result is ``out``'s value
    where the condition is False (0 without ``out``, where NumPy leaves memory uninitialized).
    A ufunc with several outputs (``np.divmod``) returns a tuple of RelArrays.

    Parameters
    ----------
    ufunc : numpy.ufunc
        The ufunc.
    *args : array_like
        Its operands: RelArrays, dask arrays, NumPy arrays or scalars, broadcast together.
    out : RelArray or tuple of one RelArray, optional
        A RelArray rebound to the result (its expression is replaced).
    where : array_like of bool, optional
        Where to apply the ufunc (True: everywhere).
    **kwargs
        The ufunc's other keywords (``dtype=``, ...).

    Returns
    -------
    RelArray or tuple of RelArray
        The lazy result, one per ufunc output.

    Examples
    --------
    >>> x = da.ones(4, chunks=2)
    >>> da.apply_ufunc(np.add, x, 1).compute()
    array([2., 2., 2., 2.])
    >>> np.exp(da.zeros(2, chunks=1)).compute()
    array([1., 1.])
    """
    from .methods import handle_out, normalize_out

    unknown = [k for k in kwargs if k not in _UFUNC_KEYWORDS]
    if unknown:  # NumPy's error (its ufuncs take only these keywords)
        raise TypeError(f"{ufunc.__name__}() got an unexpected keyword argument {unknown[0]!r}")
    out = normalize_out(out)
    if where is not True:
        if ufunc.nout > 1:
            raise NotImplementedError(f"{ufunc.__name__}: where= with several outputs is not supported")
        value = apply_ufunc(ufunc, *args, **kwargs)
        keep = out if out is not None else np.zeros((), value.dtype)
        cond = False if where is None else where
        return handle_out(out, astype(elementwise("where", where_values, cond, value, keep), value.dtype))
    name = ufunc.__name__ + (f"[{kwargs}]" if kwargs else "")
    if ufunc.nout > 1:
        return tuple(elementwise(f"{name}.{i}", Op(ufunc, i, **kwargs), *args) for i in range(ufunc.nout))
    facts = _FACTS.get(ufunc) if not kwargs else None
    return handle_out(out, elementwise(name, Op(ufunc, **kwargs), *args, facts=facts))


def _lazy(args, kwargs) -> bool:
    """Whether a call has a lazy (RelArray or dask) argument: dask.array's ufuncs run NumPy's
    directly on NumPy inputs (NumPy in, NumPy out)."""
    return any(hasattr(a, "__dask_graph__") for a in (*args, *kwargs.values()))


def _derived_doc(obj, source=np):
    """dask.array's docstring of a wrapper: NumPy's, after dask's disclaimer."""
    return derived_from(source)(obj)


class da_frompyfunc:
    """A serializable ``np.frompyfunc`` object (dask.array's): NumPy's object ufunc of ``func``."""

    def __init__(self, func, nin, nout):
        self._ufunc = np.frompyfunc(func, nin, nout)
        self._func, self.nin, self.nout = func, nin, nout
        self._name = getattr(func, "__name__", type(func).__name__)
        self.__name__ = f"frompyfunc-{self._name}"

    def __repr__(self):
        return f"da.frompyfunc<{self._name}, {self.nin}, {self.nout}>"

    def __dask_tokenize__(self):
        from dask.tokenize import normalize_token

        return (normalize_token(self._func), self.nin, self.nout)

    def __reduce__(self):
        return (da_frompyfunc, (self._func, self.nin, self.nout))

    def __call__(self, *args, **kwargs):
        return self._ufunc(*args, **kwargs)

    def __getattr__(self, a):
        if not a.startswith("_"):
            return getattr(self._ufunc, a)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {a!r}")

    def __dir__(self):
        return list(set(dir(type(self))) | set(self.__dict__) | set(dir(self._ufunc)))


class ufunc:
    """dask.array's ufunc object (``da.add``, ``da.log``, ...): NumPy's ufunc over RelArrays
    (lazy when an argument is), NumPy's own on NumPy inputs; NumPy's attributes (``nin``,
    ``nout``, ``types``, ...) and ``outer``. ``np.add.reduce``/``accumulate`` on a RelArray go
    through ``__array_ufunc__`` (``dispatch.py``)."""

    _forward_attrs = {"nin", "nargs", "nout", "ntypes", "identity", "signature", "types"}

    def __init__(self, ufunc):
        if not isinstance(ufunc, (np.ufunc, da_frompyfunc)):
            raise TypeError(f"must be an instance of `ufunc` or `da_frompyfunc`, got `{type(ufunc).__name__}")
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        if isinstance(ufunc, np.ufunc):
            _derived_doc(self)

    def __dask_tokenize__(self):
        from dask.tokenize import normalize_token

        return self.__name__, normalize_token(self._ufunc)

    def __reduce__(self):
        return (ufunc, (self._ufunc,))

    def __getattr__(self, key):
        if key in self._forward_attrs:
            return getattr(self._ufunc, key)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __dir__(self):
        return list(self._forward_attrs.union(dir(type(self)), self.__dict__))

    def __repr__(self):
        return repr(self._ufunc)

    def __call__(self, *args, **kwargs):
        if not _lazy(args, kwargs):
            return self._ufunc(*args, **kwargs)
        if isinstance(self._ufunc, da_frompyfunc):
            raise TypeError(
                f"{self.__name__}: a frompyfunc ufunc returns object arrays, which dask_tra.array does not hold; "
                "use map_blocks with np.vectorize(func, otypes=[dtype]) for a numeric result"
            )
        return apply_ufunc(self._ufunc, *args, **kwargs)

    def outer(self, A, B, **kwargs):
        """``ufunc.outer(A, B)``: ``A``'s axes, then ``B``'s (NumPy's on NumPy inputs)."""
        from .creation import asarray as _asarray
        from .structure import reshape

        if self.nin != 2:
            raise ValueError("outer product only supported for binary functions")
        if "out" in kwargs:
            raise ValueError("`out` kwarg not supported")
        if not _lazy((A, B), {}):
            return self._ufunc.outer(A, B, **kwargs)
        A, B = _asarray(A), _asarray(B)
        return self(reshape(A, A.shape + (1,) * B.ndim), B, **kwargs)


@derived_from(np)
def frompyfunc(func, nin, nout):
    """dask.array.frompyfunc: ``np.frompyfunc(func, nin, nout)`` as a ``ufunc`` object. Its
    results are object arrays: on NumPy inputs NumPy's; on RelArrays a TypeError (dask_tra
    arrays hold numeric and boolean dtypes only)."""
    if nout > 1:
        raise NotImplementedError("frompyfunc with more than one output")
    return ufunc(da_frompyfunc(func, nin, nout))


def _always_lazy(u):
    """``frexp``/``modf`` as dask.array has them: functions giving a tuple of lazy arrays, also
    on NumPy input."""

    def f(x, /):
        from .creation import asarray as _asarray

        return apply_ufunc(u, _asarray(x))

    f.__name__ = f.__qualname__ = u.__name__
    return _derived_doc(f)


UFUNCS = """add subtract multiply divide true_divide floor_divide power float_power mod remainder fmod
divmod negative positive absolute fabs rint sign heaviside conj conjugate exp exp2 log log2 log10
expm1 log1p sqrt square cbrt reciprocal sin cos tan arcsin arccos arctan arctan2 hypot sinh cosh
tanh arcsinh arccosh arctanh deg2rad rad2deg degrees radians greater greater_equal less less_equal
not_equal equal logical_and logical_or logical_xor logical_not maximum minimum fmax fmin isfinite
isinf isnan signbit copysign nextafter spacing ldexp floor ceil trunc logaddexp
logaddexp2 bitwise_and bitwise_or bitwise_xor invert bitwise_not left_shift right_shift gcd
lcm""".split()
globals().update({n: ufunc(getattr(np, n)) for n in UFUNCS})
frexp, modf = _always_lazy(np.frexp), _always_lazy(np.modf)
UFUNCS += ["frexp", "modf"]
abs = globals()["absolute"]  # noqa: A001


@derived_from(np)
def where(condition, x=None, y=None):
    if x is None and y is None:
        raise NotImplementedError("where(condition) (nonzero) has a data-dependent shape; pass x and y")
    return elementwise("where", where_values, condition, x, y)


@derived_from(np)
def clip(a, a_min=None, a_max=None, **kwargs):
    a_min, a_max = kwargs.pop("min", a_min), kwargs.pop("max", a_max)
    if not _lazy((a, a_min, a_max), kwargs):
        return np.clip(a, a_min, a_max, **kwargs)  # dask.array's: NumPy in, NumPy out
    return elementwise("clip", clip_values, a, a_min, a_max)


@derived_from(np)
def astype(x, dtype, casting="unsafe", copy=True, **kwargs):
    kwargs.pop("order", None)  # dask.array ignores the memory layout too
    if kwargs:
        raise TypeError(f"astype does not take the following keyword arguments: {list(kwargs)}")
    dtype = check_dtype(dtype)
    if not np.can_cast(x.dtype, dtype, casting=casting):
        raise TypeError(f"Cannot cast array data from {x.dtype!r} to {dtype!r} according to the rule {casting!r}")
    if x.dtype == dtype:  # RelArrays are immutable: no copy needed
        return x
    return elementwise(f"astype[{dtype}]", Op(astype_values, dtype=dtype), x, dtype=dtype)


def to_backend(x, backend=None, device=None):
    """``x`` with chunks of another library.

    A TRA ``Transform`` with a conversion kernel, run where each chunk is: nothing is gathered.

    Parameters
    ----------
    x : RelArray
        The array.
    backend : {"numpy", "cupy", "torch"}, optional
        The chunk library; None: dask's ``array.backend`` config (``"numpy"`` unless set).
    device : str or int, optional
        torch: a device such as ``"cuda"``; CuPy: a device number. Default: the worker's
        default device.

    Returns
    -------
    RelArray
        The same values, with chunks of ``backend``'s library.

    Examples
    --------
    >>> x = da.ones(2, chunks=1)
    >>> y = da.to_backend(x, "numpy")
    >>> type(y.compute()).__name__
    'ndarray'
    """
    import dask

    from ..tra import Transform
    from .creation import asarray as _asarray

    x = _asarray(x)
    if backend is None:
        backend = dask.config.get("array.backend", "numpy")
    try:
        name = backends.get(backend).name
    except ValueError as e:  # dask's wording first
        raise ValueError(f"No backend dispatch registered for {backend!r}: {e}") from None
    if x.expr.type.backend == name and device is None:
        return x
    expr = Transform(x.expr, ToBackend(name, device))
    return wrap(expr, x)


def around(x, decimals=0):
    """Round to the given number of decimals, elementwise (``numpy.round``; ``round`` is this).

    Parameters
    ----------
    x : array_like
        The values (a RelArray, or anything ``asarray`` takes).
    decimals : int, optional
        Decimal places to keep; negative rounds to tens, hundreds and so on. NumPy's rule:
        halves round to the nearest even value.

    Returns
    -------
    RelArray
        ``x`` rounded, with ``x``'s shape, chunks and dtype.

    See Also
    --------
    numpy.round

    Examples
    --------
    >>> x = da.from_array(np.array([1.234, 5.678, 2.5]), chunks=2)
    >>> da.around(x, 1).compute()
    array([1.2, 5.7, 2.5])
    >>> da.round(x).compute()
    array([1., 6., 2.])
    """
    return elementwise(f"round[{decimals}]", Op(round_values, decimals=decimals), x)


round = around  # noqa: A001


@derived_from(np)
def real(x):
    if not _lazy((x,), {}):
        return np.real(x)
    if is_array(x) and x.dtype.kind != "c":  # the values themselves, as NumPy (no new operation:
        return wrap(x.expr, x)  # xarray's array-type checks ask every array for .real)
    return elementwise("real", real_values, x)


@derived_from(np)
def imag(x):
    if not _lazy((x,), {}):
        return np.imag(x)
    if is_array(x) and x.dtype.kind != "c" and x.expr.type.backend == "numpy":  # zeros, as NumPy
        zeros = _zeros(x.chunks, x.dtype, config.get("backend"), config.get("device"))
        return wrap(zeros.expr, zeros)  # a new array: one may be assigned to (x.imag[0] = 1)
    return elementwise("imag", imag_values, x)


@functools.lru_cache(maxsize=64)
def _zeros(chunks, dtype, backend, device):
    """Zeros of these chunks, made once per chunking and settings: xarray's array-type checks
    ask every array for ``.imag``."""
    return zeros(tuple(map(sum, chunks)), chunks=chunks, dtype=dtype)


@derived_from(np)
def angle(x, deg=False):
    if not _lazy((x,), {}):
        return np.angle(x, deg=deg)
    return elementwise("angle", Op(angle_values, deg=deg), x)


@derived_from(np)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return elementwise("isclose", Op(isclose_values, rtol=rtol, atol=atol, equal_nan=equal_nan), a, b)


@derived_from(np)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if not _lazy((x,), {}):
        return np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    return elementwise("nanToNum", Op(nan_to_num_values, nan=nan, posinf=posinf, neginf=neginf), x)


# ---------------------------------------------------------------- the operations on values


def where_values(c, u, v):
    return npx(c, u, v).where(c, u, v)


def clip_values(v, lo, hi):
    return npx(v, lo, hi).clip(v, lo, hi)


def astype_values(v, dtype):
    return npx(v).astype(v, dtype)


def round_values(v, decimals):
    return npx(v).round(v, decimals)


def real_values(v):
    return npx(v).real(v)


# their partial derivatives (autodiff's chain rule for the kernels applying them)


def _ones_where(xp, cond):
    return xp.where(cond, 1.0, 0.0)


def _clip_partial(xp, v, lo, hi):
    m = v == v
    if lo is not None:
        m = m & (v >= lo)
    if hi is not None:
        m = m & (v <= hi)
    return _ones_where(xp, m)


def _where_first(xp, c):
    return _ones_where(xp, c != 0)


def _where_second(xp, c):
    return _ones_where(xp, c == 0)


register_partials(real_values, (1,))
register_partials(astype_values, (1,))
register_partials(where_values, (0, P([0], _where_first), P([0], _where_second)))
register_partials(clip_values, (P([0, 1, 2], _clip_partial), 0, 0))
register_partials(round_values, (0, 0))


def imag_values(v):
    return npx(v).imag(v)


def angle_values(v, deg):
    return npx(v).angle(v, deg=deg)


def isclose_values(u, v, rtol, atol, equal_nan):
    return npx(u, v).isclose(u, v, rtol, atol, equal_nan)


def nan_to_num_values(v, nan, posinf, neginf):
    return npx(v).nan_to_num(v, nan=nan, posinf=posinf, neginf=neginf)


__all__ = UFUNCS + [
    "abs",
    "where",
    "clip",
    "astype",
    "to_backend",
    "around",
    "round",
    "real",
    "imag",
    "angle",
    "isclose",
    "nan_to_num",
    "apply_ufunc",
    "frompyfunc",
]

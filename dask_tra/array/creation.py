"""Creating RelArrays. Every creation is one TRA ``Input`` bound to a source: an in-memory
array, a dask.array (lazily), constants, or blocks made on their site (arange, linspace, eye)."""

from __future__ import annotations

import math

import numpy as np
from dask.utils import derived_from

from .. import backends, config
from ..runtime.sources import ArraySource, ConstantSource, DaskSource
from ..tra import Transform
from .kernels import Reshape, ToBackend
from .lazy import from_lazy, is_lazy, user_name
from .rechunk import rechunk
from .relations import (
    BlockSource,
    auto_chunks,
    check_dtype,
    is_array,
    is_dask,
    reject_masked,
    rekey,
    wrap,
    wrap_source,
)


def _shape(shape) -> tuple:
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)


def from_array(x, chunks="auto", name=None, **kwargs):
    """Wrap an array as a RelArray cut into dask-style ``chunks``.

    The array is an in-memory one (NumPy, CuPy or torch), or one read block by block where
    and when the plan needs it (h5py, zarr, netCDF4, memmap, any sliceable array-like;
    ``lock=`` serialises its reads).

    As dask.array: an in-memory array with NumPy's protocols and a ``copy`` method (NumPy, CuPy)
    is copied now, so changing ``x`` afterwards does not change the result; a torch tensor
    (which dask does not copy either) and the lazily read array-likes are read when computed.
    Unlike dask (which copies a memmap into memory), a memmap is read lazily.

    Parameters
    ----------
    x : array_like
        The data: a NumPy, CuPy or torch array, a sliceable array-like (h5py dataset, zarr
        array, netCDF4 variable, memmap), a dask.array (``from_dask``), a RelArray (returned,
        rechunked if ``chunks`` is given), or anything ``numpy.asarray`` accepts.
    chunks : int, tuple, dict or "auto", optional
        The block sizes, as dask.array takes them: one size for every axis, a size per axis,
        explicit block sizes per axis (``((2, 2), (3,))``), ``-1`` or ``None`` for a whole axis,
        ``"auto"`` for blocks near ``array.chunk-size``.
    name : str, optional
        The array's name (its result keys' first element); by default one derived from the
        contents, so equal data gives equal names.
    **kwargs
        ``lock=``: a lock (or True) serialising the reads of a lazily read array-like. Other
        keywords of dask.array's ``from_array`` are accepted and ignored.

    Returns
    -------
    RelArray
        A lazy array over ``x``'s blocks; nothing is read or computed until it is.

    See Also
    --------
    from_dask, asarray, from_zarr

    Examples
    --------
    >>> x = da.from_array(np.arange(6).reshape(2, 3), chunks=(1, 3))
    >>> x.chunks
    ((1, 1), (3,))
    >>> x.sum().compute()
    np.int64(15)
    """
    return _from_array(x, chunks, name, copy=True, **kwargs)


def _from_array(x, chunks="auto", name=None, copy=True, **kwargs):
    """``from_array``; ``copy=False`` wraps an in-memory ``x`` without copying it."""
    from dask.utils import is_arraylike

    if is_array(x):
        return x if chunks == "auto" else rechunk(x, chunks)
    if is_dask(x):
        return from_dask(x) if chunks == "auto" else from_dask(x).rechunk(chunks)
    if is_lazy(x):  # h5py, zarr, netCDF4, memmap: read block by block where needed
        return from_lazy(x, chunks, name=name, lock=kwargs.get("lock", False))
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        x = np.asarray(x)  # lists, tuples, scalars: a new array already
    elif copy and is_arraylike(x) and hasattr(x, "copy"):
        x = x.copy()  # dask.array's rule: later changes to x are not seen
    dtype = check_dtype(backends.numpy_dtype(x.dtype))  # torch.float32 -> float32
    return wrap_source(ArraySource(x, auto_chunks(chunks, tuple(x.shape), dtype)), name=user_name(name))


def from_dask(x):
    """Wrap a dask.array without computing it; its graph becomes part of the plan's graph.

    Parameters
    ----------
    x : dask.array.Array
        The array, with known chunk sizes (``x.compute_chunk_sizes()`` first otherwise).

    Returns
    -------
    RelArray
        A lazy array whose blocks are ``x``'s keys: operations on it are planned by dask_tra,
        and ``x``'s own tasks run as dask would run them.

    Raises
    ------
    TypeError
        ``x`` is not a dask.array.
    ValueError
        ``x`` has unknown (NaN) chunk sizes.

    See Also
    --------
    from_array

    Examples
    --------
    >>> import dask.array
    >>> y = da.from_dask(dask.array.arange(4, chunks=2))
    >>> y.chunks
    ((2, 2),)
    >>> (y * 2).compute()
    array([0, 2, 4, 6])
    """
    import dask.array as da

    if not isinstance(x, da.Array):
        raise TypeError(f"from_dask expects a dask.array.Array, got {type(x).__name__}")
    if any(np.isnan(c) for cs in x.chunks for c in cs):
        raise ValueError("from_dask needs known chunk sizes; call x.compute_chunk_sizes() first")
    check_dtype(x.dtype)
    return wrap_source(DaskSource(x))


@derived_from(np)
def asarray(
    a, allow_unknown_chunksizes=False, dtype=None, order=None, *, like=None, copy=None, chunks="auto", **kwargs
):
    """A RelArray for ``a`` (RelArray, dask.array, NumPy array, list or scalar), optionally cast
    (dask.array's signature; ``like``: chunks of its library, as dask's ``like=`` meta). The data
    is copied, as ``from_array`` does, so later changes to ``a`` are not seen; ``copy=False``
    shares ``a``'s memory instead (NumPy's meaning: ValueError where a copy cannot be avoided)."""
    if is_array(a):
        out = a
    elif is_dask(a):
        out = from_dask(a)
    elif isinstance(a, np.ma.MaskedArray):  # masked blocks (np.asarray would drop the mask)
        if a is np.ma.masked:
            reject_masked(a, what="asarray")
        out = _from_array(a, chunks, copy=copy is not False, **kwargs)
    else:
        b = np.asarray(a, dtype=dtype, order=order, copy=copy)  # copy=False: NumPy's ValueError if it must copy
        fresh = b is not a and b.flags.owndata  # made here, shared with nothing (not a view of a)
        out = _from_array(b, chunks, copy=copy is None and not fresh, **kwargs)
    out = out if dtype is None or out.dtype == np.dtype(dtype) else out.astype(dtype)
    backend = like.sparse_expr.type.backend if is_array(like) else backends.backend_of_type(like)
    if backend != "numpy" and out.sparse_expr.type.backend != backend:
        out = wrap(Transform(out.expr, ToBackend(backends.get(backend).name, None)), out)
    return out


def array(x, dtype=None, ndmin=None, *, copy=None, order=None, like=None, chunks="auto", **kwargs):
    """dask.array's ``array``: ``asarray`` with ``ndmin`` leading axes of length 1 added as needed."""
    out = asarray(x, dtype=dtype, order=order, like=like, copy=copy, chunks=chunks, **kwargs)
    extra = 0 if ndmin is None else int(ndmin) - out.ndim
    if extra <= 0:
        return out
    spec = (1,) * extra + tuple((p, 1, 1) for p in range(out.ndim))
    expr = Transform(out.expr, Reshape(spec))  # one block along each new axis
    return wrap(rekey(expr, (None,) * extra + tuple(range(out.ndim))), out)


def _constant(word, shape, fill_value, dtype, chunks, name, backend=None):
    """``word``'s array (dask's name ``<word>-<token>``, or ``name``) of ``fill_value``, with chunks of
    ``backend`` (None: the configured one)."""
    shape = _shape(shape)
    reject_masked(fill_value, what=word)
    if np.ndim(fill_value) != 0:
        raise ValueError(f"fill_value must be scalar. Received {type(fill_value).__name__} instead.")
    dtype = check_dtype(dtype if dtype is not None else np.asarray(fill_value).dtype)
    source = ConstantSource(fill_value, shape, auto_chunks(chunks, shape, dtype), dtype, prefix=word, backend=backend)
    return wrap_source(source, name=name)


@derived_from(np)
def full(shape, fill_value, dtype=None, chunks="auto", name=None, **kwargs):
    return _constant("full", shape, fill_value, dtype, chunks, name)


@derived_from(np)
def zeros(shape, dtype=float, chunks="auto", name=None, **kwargs):
    return _constant("zeros", shape, 0, dtype, chunks, name)


@derived_from(np)
def ones(shape, dtype=float, chunks="auto", name=None, **kwargs):
    return _constant("ones", shape, 1, dtype, chunks, name)


@derived_from(np)
def empty(shape, dtype=float, chunks="auto", name=None, **kwargs):
    """Like zeros (chunks are made filled)."""
    return _constant("empty", shape, 0, dtype, chunks, name)


def _like(word, a, fill_value, dtype, chunks, shape, name):
    a = a if hasattr(a, "shape") else np.asarray(a)
    shape = a.shape if shape is None else _shape(shape)
    if chunks is None:
        chunks = a.chunks if is_array(a) and shape == a.shape else "auto"
    # chunks of ``a``'s library where it is not NumPy (dask: ``like=a._meta``)
    backend = a.sparse_expr.type.backend if is_array(a) else backends.backend_of_type(a)
    backend = None if backend == "numpy" else backend
    return _constant(word, shape, fill_value, dtype if dtype is not None else a.dtype, chunks, name, backend)


@derived_from(np)
def zeros_like(a, dtype=None, chunks=None, shape=None, name=None, **kwargs):
    return _like("zeros_like", a, 0, dtype, chunks, shape, name)


@derived_from(np)
def ones_like(a, dtype=None, chunks=None, shape=None, name=None, **kwargs):
    return _like("ones_like", a, 1, dtype, chunks, shape, name)


@derived_from(np)
def empty_like(a, dtype=None, chunks=None, shape=None, name=None, **kwargs):
    return _like("empty_like", a, 0, dtype, chunks, shape, name)


@derived_from(np)
def full_like(a, fill_value, dtype=None, chunks=None, shape=None, name=None, **kwargs):
    return _like("full_like", a, fill_value, dtype, chunks, shape, name)


def _blocks(kind, shape, chunks, dtype, params, backend=None):
    dtype = check_dtype(dtype)
    backend = backends.get(backend if backend is not None else config.get("backend")).name
    return wrap_source(
        BlockSource(kind, shape, auto_chunks(chunks, shape, dtype), dtype, params, backend, config.get("device"))
    )


@derived_from(np)
def arange(start=None, stop=None, step=1, *, chunks="auto", like=None, dtype=None):
    """``arange(stop)`` or ``arange(start, stop, step)``; blocks are made on their site. Dtype,
    length and values are NumPy's for every kind of argument (Python or NumPy scalars): the
    dtype promotes each argument's own dtype with ``intp``; the length is
    ``ceil((stop - start) / step)`` in the arguments' arithmetic; element ``i`` is
    ``first + i * (second - first)`` in the dtype, ``first`` and ``second`` being ``start``
    and ``start + step`` stored in it. ``like``: chunks of ``like``'s library."""
    if start is None and stop is None:
        raise TypeError("arange() requires stop to be specified.")
    if start is None:
        start = 0
    elif stop is None:
        start, stop = 0, start
    reject_masked(start, stop, step, what="arange")
    if dtype is None:  # NumPy's PyArray_ArangeObj: at least intp, promoted by each argument's dtype
        dtype = np.result_type(np.intp, *(np.asarray(v).dtype for v in (start, stop, step)))
    dtype = check_dtype(dtype)
    if dtype.kind == "b":
        raise TypeError(f"arange() not supported for inputs with DType {type(dtype)}.")
    n = _arange_length(start, stop, step, dtype.kind == "c")
    first = np.empty(2, dtype)  # NumPy stores start and start + step, then fills from them
    if n > 0:
        first[0] = start
        first[1] = start + step if n > 1 else first[0]
    backend = backends.backend_of_type(like) if like is not None and not is_array(like) else None
    return _blocks("arange", (n,), chunks, dtype, (first[0], first[1]), backend)


def _arange_length(start, stop, step, cmplx) -> int:
    """NumPy's ``_calc_length``: ``ceil((stop - start) / step)`` in the arguments' own arithmetic
    (for a complex dtype and a Python-complex quotient: the smaller of its parts'), at least 0;
    an OverflowError there (``start + step`` included) is NumPy's ValueError."""
    try:
        span = stop - start
        quotient = span / step
        if cmplx and isinstance(quotient, complex):  # np.complex128 too, not np.complex64 (as NumPy)
            return max(0, min(_ceil_length(quotient.real), _ceil_length(quotient.imag)))
        value = float(quotient)  # a Python complex: TypeError; a NumPy one: its real part
        if quotient == 0 and span != 0:  # underflow, or a step of inf
            return 0 if math.copysign(1.0, value) < 0 else 1
        length = max(0, _ceil_length(value))
        if length > 0:
            _ = start + step  # NumPy computes it here: its errors are length errors
        return length
    except OverflowError:
        raise ValueError("Maximum allowed size exceeded") from None


def _ceil_length(value) -> int:
    """NumPy's ``_arange_safe_ceil_to_intp`` on a 64-bit platform."""
    if math.isnan(value):
        raise ValueError("arange: cannot compute length")
    if math.isinf(value) or not -(2**63) <= math.ceil(value) <= 2**63:
        raise OverflowError("arange: overflow while computing length")
    length = math.ceil(value)
    return 0 if length == 2**63 else length  # 2.0**63 passes NumPy's check and converts to INTP_MIN


@derived_from(np)
def linspace(start, stop, num=50, endpoint=True, retstep=False, chunks="auto", dtype=None, **kwargs):
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else np.nan
    dtype = np.result_type(start, stop, float) if dtype is None else dtype
    out = _blocks("linspace", (num,), chunks, dtype, (start, stop, 0 if div <= 0 else step, num, endpoint))
    return (out, step) if retstep else out


@derived_from(np)
def eye(N, chunks="auto", M=None, k=0, dtype=float):
    M = N if M is None else M
    return _blocks("eye", (int(N), int(M)), chunks, dtype, (int(k),))


__all__ = [
    "from_array",
    "from_dask",
    "asarray",
    "array",
    "full",
    "zeros",
    "ones",
    "empty",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "arange",
    "linspace",
    "eye",
]

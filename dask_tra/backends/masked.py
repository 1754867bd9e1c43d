"""Masked chunks (``numpy.ma.MaskedArray``): they ride the NumPy backend.

A masked chunk is a NumPy chunk (``backend_of`` finds NumPy through its type's module), so
every kernel's NumPy path runs on it: ufuncs and NumPy's reductions and methods (``sum``,
``max``, ``cumsum``, ``reshape``, ``transpose``, ``take``, ``astype``, ...) keep the mask. The
functions of NumPy that drop a mask (``where``, ``concatenate``, ``stack``, ``broadcast_to``,
``einsum``, ``tril``, ...) are replaced by ``numpy.ma``'s or by masked versions here:
``namespace(*chunks)`` is the NumPy-style namespace a kernel uses when one of its chunks is
masked (``array.kernels.npx`` picks it).

``MaskedPartial`` is a reduction's partial result: there a masked element means "no element
reached it" (a fully masked slice of a block), not "a masked value". Combining partials with
an aggregation (add, multiply, maximum, minimum, fmax, fmin, logical or/and) skips absent
elements, so a fully masked block cannot mask the total: a result element is masked only when
every partial is. Any other operation gives a plain ``MaskedArray`` (the partial is finished).
"""

from __future__ import annotations

import numpy as np

_SKIP = ("add", "maximum", "minimum", "fmax", "fmin", "logical_or", "logical_and", "bitwise_or", "bitwise_and")


def is_masked(x) -> bool:
    return isinstance(x, np.ma.MaskedArray)


def any_masked(*chunks) -> bool:
    return any(isinstance(c, np.ma.MaskedArray) for c in chunks)


def refuse(chunk, what):
    """NotImplementedError for a masked chunk reaching a kernel that would lose its mask."""
    if isinstance(chunk, np.ma.MaskedArray):
        raise NotImplementedError(f"{what} of masked arrays is not supported by dask_tra yet (the mask would be lost)")


def plain(x):
    """``x`` as a plain ``MaskedArray`` (a finished partial), anything else as it is."""
    return x.view(np.ma.MaskedArray) if isinstance(x, MaskedPartial) else x


def sizeof(x) -> int:
    """Bytes of a masked chunk: its data and its mask (a boolean per element)."""
    if not isinstance(x, np.ma.MaskedArray):
        return int(np.asarray(x).nbytes)
    return int(x.data.nbytes) + int(np.ma.getmaskarray(x).nbytes)


class MaskedPartial(np.ma.MaskedArray):
    """A partial reduction: masked elements are absent (see the module's docstring)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = ufunc.__name__
        if method == "__call__" and len(inputs) == 2 and not kwargs:
            both = all(isinstance(v, MaskedPartial) for v in inputs)
            if name in _SKIP or (name == "multiply" and both):
                return _skip(ufunc, *inputs)
            if name == "multiply":  # a partial times weights (a scan's carry): absent stays absent
                out = ufunc(*[plain(v) for v in inputs])
                return out.view(MaskedPartial) if isinstance(out, np.ma.MaskedArray) else out
        return ufunc(*[plain(v) for v in inputs], **kwargs) if method == "__call__" else NotImplemented

    def __add__(self, other):
        return np.add(self, other)

    def __radd__(self, other):
        return np.add(other, self)

    def __mul__(self, other):
        return np.multiply(self, other)

    def __rmul__(self, other):
        return np.multiply(other, self)


def _skip(ufunc, a, b):
    """``ufunc(a, b)`` where absent elements (masked in a MaskedPartial) take the other operand;
    masked elements of a plain MaskedArray stay masked."""

    def parts(v):
        if isinstance(v, MaskedPartial):
            return np.ma.getdata(v), np.ma.getmaskarray(v), None
        if isinstance(v, np.ma.MaskedArray):
            return np.ma.getdata(v), None, np.ma.getmaskarray(v)
        return np.asarray(v), None, None

    (da, aa, ha), (db, ab, hb) = parts(a), parts(b)
    data = ufunc(da, db)
    if aa is not None:
        data = np.where(aa, db, data)
    if ab is not None:
        data = np.where(ab, da, data)
    absent = aa & ab if aa is not None and ab is not None else None
    data = np.asarray(data)
    if ha is None and hb is None:
        if absent is None:
            return data if (aa is None and ab is None) else np.ma.MaskedArray(data).view(MaskedPartial)
        return np.ma.MaskedArray(data, mask=absent).view(MaskedPartial)
    hard = ha if hb is None else (hb if ha is None else ha | hb)
    mask = hard if absent is None else hard | absent
    return np.ma.MaskedArray(data, mask=np.broadcast_to(mask, data.shape).copy())


# ---------------------------------------------------------------- the NumPy-style namespace


def _where(cond, x=None, y=None):
    if x is None and y is None:
        return np.nonzero(np.ma.filled(cond, False))
    return np.ma.where(cond, x, y)


def _broadcast_to(x, shape, subok=False):
    if not isinstance(x, np.ma.MaskedArray):
        return np.broadcast_to(x, shape)
    return np.ma.MaskedArray(
        np.broadcast_to(np.ma.getdata(x), shape), mask=np.broadcast_to(np.ma.getmaskarray(x), shape)
    )


def _concatenate(arrays, axis=0, **kw):
    return np.ma.concatenate([plain(a) for a in arrays], axis=axis)


def _stack(arrays, axis=0, **kw):
    return np.ma.stack([plain(a) for a in arrays], axis=axis)


def _einsum(subscripts, *operands, **kw):
    """``numpy.ma.dot``'s rule for a contraction: masked elements count as 0; an output element
    is masked when no product of unmasked elements reaches it."""
    data = np.einsum(subscripts, *[np.ma.filled(o, 0) if is_masked(o) else np.asarray(o) for o in operands], **kw)
    valid = np.einsum(
        subscripts,
        *[
            (~np.ma.getmaskarray(o)).astype(np.int64) if is_masked(o) else np.ones(np.shape(o), np.int64)
            for o in operands
        ],
    )
    return np.ma.MaskedArray(data, mask=np.asarray(valid) == 0)


def _triangle(which):
    def tri(x, k=0):
        out = getattr(np, which)(np.ma.getdata(x), k)
        if not is_masked(x):
            return out
        return np.ma.MaskedArray(out, mask=getattr(np, which)(np.ma.getmaskarray(x), k))

    tri.__name__ = which
    return tri


def _full_like(x, fill_value, dtype=None, **kw):
    out = np.full(np.shape(x), fill_value, dtype=dtype if dtype is not None else x.dtype)
    return np.ma.MaskedArray(out, mask=np.ma.getmaskarray(x).copy()) if is_masked(x) else out


def _astype(x, dtype, copy=True):
    return x.astype(np.dtype(dtype), copy=copy)


def _asarray(x, dtype=None, **kw):
    return np.ma.asarray(x, dtype=dtype) if is_masked(x) else np.asarray(x, dtype=dtype)


class MaskedNamespace:
    """NumPy's names for chunks of which one is masked: ``numpy.ma``'s function where NumPy's
    would drop the mask, NumPy's own (ufuncs, methods-backed functions) elsewhere."""

    _OWN = {
        "where": _where,
        "broadcast_to": _broadcast_to,
        "concatenate": _concatenate,
        "concat": _concatenate,
        "stack": _stack,
        "einsum": _einsum,
        "tril": _triangle("tril"),
        "triu": _triangle("triu"),
        "full_like": _full_like,
        "astype": _astype,
        "asarray": _asarray,
        "atleast_1d": np.ma.atleast_1d,
        "atleast_2d": np.ma.atleast_2d,
        "atleast_3d": np.ma.atleast_3d,
        "diagonal": np.ma.diagonal,
        "take_along_axis": np.take_along_axis,
    }

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = self._OWN.get(name)
        if value is None:
            value = getattr(np, name)
        self.__dict__[name] = value
        return value


NAMESPACE = MaskedNamespace()


def namespace(*chunks):
    """The NumPy-style namespace of chunks of which one is masked."""
    return NAMESPACE


__all__ = [
    "refuse",
    "MaskedPartial",
    "MaskedNamespace",
    "NAMESPACE",
    "namespace",
    "is_masked",
    "any_masked",
    "plain",
    "sizeof",
]

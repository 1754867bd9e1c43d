"""Shared plumbing of the array frontend: relations under construction, rekeys, parameter
relations, argument checks, chunk normalisation.

A ``Rel`` is a TRA expression plus the sources its inputs need; a ``RelArray`` is a Rel
whose expression is an array relation (key dim i counts blocks along axis i).
"""

from __future__ import annotations

import itertools
import math
import numbers
from typing import NamedTuple

import numpy as np
from dask.base import is_dask_collection
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..runtime.sources import Source, content_name
from ..tra import Input, ReKey, RelationType
from ..tra.kernels import Bound
from ..tra.keyfuncs import KeyMap, select_dims
from ..tra.relation import infer_axis
from ..tra.tasks import Data
from .core import RelArray

SUPPORTED_KINDS = "biufc"


class Rel(NamedTuple):
    """A TRA expression with the sources (Input name -> Source) it reads."""

    expr: object
    sources: dict


def rel_of(*arrays, extra: dict | None = None) -> dict:
    """The sources of several relations merged (plus ``extra``)."""
    out = {}
    for a in arrays:
        out.update(a.sources)
    out.update(extra or {})
    return out


def wrap(expr, *parents, extra=None):
    """A RelArray over ``expr`` reading the sources of ``parents``; of their RelArray subclass
    (the Array API namespace's ``Array``) when every array among them has it."""
    return _kind(parents)(expr, rel_of(*parents, extra=extra))


def _kind(parents) -> type:
    kind = RelArray
    for p in parents:
        if isinstance(p, RelArray):
            if p.__class__ is RelArray:
                return RelArray
            kind = p.__class__
    return kind


def wrap_source(source, name=None):
    """A RelArray reading one source (its ``input``), named ``name`` or after the source."""
    return RelArray(source.input, {source.input.name: source}, name=name)


def is_array(x) -> bool:
    return isinstance(x, RelArray)


def is_dask(x) -> bool:
    """A Dask collection (``dask.base.is_dask_collection``: a dask.array, a Delayed, ...) other
    than a RelArray. ``creation.from_dask`` takes the dask.arrays among them."""
    return not isinstance(x, RelArray) and is_dask_collection(x)


def auto_chunks(chunks, shape, dtype, previous=None):
    """dask's chunk normalisation, 'auto' included (ValueError if they do not fit the shape)."""
    from dask.array.core import normalize_chunks

    return normalize_chunks(chunks, tuple(shape), dtype=np.dtype(dtype), previous_chunks=previous)


def is_scalar(x) -> bool:
    return isinstance(x, (numbers.Number, np.generic)) or (isinstance(x, np.ndarray) and x.ndim == 0)


def reject_masked(*values, what="this operation"):
    """NotImplementedError if a value is a ``numpy.ma.MaskedArray`` (``np.ma.masked`` included):
    RelArrays hold no masks, so the mask would be lost. Every place a value enters a RelArray
    calls this (creation, elementwise operands, item assignment)."""
    for v in values:
        if isinstance(v, np.ma.MaskedArray):
            raise NotImplementedError(
                f"masked arrays are not supported by dask_tra yet: the mask would be lost ({what} got a "
                f"numpy.ma.{'masked' if v is np.ma.masked else 'MaskedArray'})"
            )


def check_dtype(dtype) -> np.dtype:
    """Bool, integer, floating and complex dtypes only (TypeError otherwise)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in SUPPORTED_KINDS or dtype.fields is not None:
        raise TypeError(
            f"dask_tra.array does not support dtype {dtype} (supported: bool, integer, floating and complex)"
        )
    return dtype


def axes_of(axis, ndim) -> tuple:
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes (numpy's AxisError)."""
    if axis is None:
        return tuple(range(ndim))
    for a in axis if isinstance(axis, (tuple, list)) else (axis,):
        _check_axis(a)
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def axis_of(axis, ndim) -> int:
    _check_axis(axis)
    return normalize_axis_index(axis, ndim)


def _check_axis(a):
    """NumPy's TypeError for an axis that is not an integer (``axis=1.5``)."""
    if isinstance(a, bool) or not isinstance(a, numbers.Integral):
        raise TypeError(f"'{type(a).__name__}' object cannot be interpreted as an integer (axis={a!r})")


def rekey(expr, positions):
    """ReKey: new key dim j is old key dim ``positions[j]``, or 0 where it is None (a new dim
    of extent 1). Old dims left out must have extent 1. No-op for the identity."""
    positions = tuple(positions)
    if positions == tuple(range(expr.type.key_arity)):
        return expr
    if None not in positions:
        return ReKey(expr, KeyMap.selecting(positions))
    name = "key[" + ",".join("0" if p is None else str(p) for p in positions) + "]"
    return ReKey(expr, KeyMap(Bound(select_dims, positions), name))


class ParamSource(Source):
    """A small relation of per-key parameters (offsets, index lists, masks): the data a chunk
    kernel needs about where its chunk sits, delivered by a join."""

    def __init__(self, chunks: dict, frontier, dtype=np.int64, what="param"):
        self.chunks = {tuple(k): np.asarray(v, dtype=dtype) for k, v in chunks.items()}
        rank = np.ndim(next(iter(self.chunks.values()))) if self.chunks else 0
        axes = tuple(infer_axis({k: c.shape[i] for k, c in self.chunks.items()}, frontier) for i in range(rank))
        items = sorted(self.chunks.items())
        values = [v for _, v in items]
        if values and all(v.shape == values[0].shape for v in values):  # hashed as two arrays
            contents: tuple = (np.array([k for k, _ in items], np.int64), np.stack(values))
        else:
            contents = (items,)
        self.input = Input(
            content_name(what, *contents, frontier, np.dtype(dtype)), RelationType(frontier, axes, np.dtype(dtype))
        )

    def task(self, key):
        return Data(self.chunks[tuple(key)])


def param_relation(chunks: dict, frontier, dtype=np.int64, what="param") -> Rel:
    """A parameter relation over the full key grid below ``frontier``."""
    src = ParamSource(chunks, frontier, dtype, what)
    return Rel(src.input, {src.input.name: src})


class BlockSource(Source):
    """Chunks made on their site by ``make(kind, shape, offsets, params)`` (arange, eye, ...),
    in the library of ``backend`` (made with NumPy, then converted: same values everywhere)."""

    def __init__(self, kind, shape, chunks, dtype, params=(), backend="numpy", device=None):
        self.kind, self.params, self.chunks = kind, tuple(params), chunks
        self.dtype = np.dtype(dtype)
        self.backend, self.device = backend, device
        name = content_name(kind, kind, chunks, self.dtype, self.params, backend, device)
        self.input = Input(name, RelationType.from_chunks(chunks, self.dtype, backend))

    def task(self, key):
        shape = tuple(c[i] for c, i in zip(self.chunks, key))
        offsets = tuple(sum(c[:i]) for c, i in zip(self.chunks, key))
        args = (make_block, self.kind, shape, offsets, self.dtype.str, self.params)
        return args if self.backend == "numpy" else args + (self.backend, self.device)


def make_block(kind, shape, offsets, dtype, params, backend="numpy", device=None):
    out = _make_block(kind, shape, offsets, dtype, params)
    if backend == "numpy":
        return out
    from .. import backends

    return backends.get(backend).from_numpy(np.ascontiguousarray(out), device)


def _make_block(kind, shape, offsets, dtype, params):
    if kind == "arange":
        return arange_values(*params, offsets[0] + np.arange(shape[0]), np.dtype(dtype))
    if kind == "linspace":
        start, stop, step, num, endpoint = params
        i = offsets[0] + np.arange(shape[0])
        out = i * step + start
        if endpoint and num > 1:
            out[i == num - 1] = stop
        return out.astype(dtype)
    if kind == "eye":
        (k,) = params
        return np.eye(shape[0], shape[1], k=k + offsets[0] - offsets[1], dtype=dtype)
    if kind == "template":
        return np.broadcast_to(np.zeros((), dtype), shape)
    raise ValueError(f"unknown block kind {kind!r}")


def arange_values(first, second, i, dtype):
    """Elements ``i`` of NumPy's ``arange`` whose first two elements are ``first`` and ``second``,
    as NumPy fills it: ``first + i * (second - first)`` in ``dtype`` (float16 in float32, complex
    part by part), with elements 0 and 1 as given."""
    if dtype.kind == "c":
        part = np.dtype(dtype.char.lower())  # complex64 -> float32
        out = np.empty(i.shape, dtype)
        out.real = arange_values(np.real(first), np.real(second), i, part)
        out.imag = arange_values(np.imag(first), np.imag(second), i, part)
        return out
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    a, b = work.type(first), work.type(second)
    with np.errstate(over="ignore"):
        delta = b - a  # integers wrap, as in NumPy's C fill
        out = a + i.astype(work) * delta
    out[i == 0], out[i == 1] = a, b
    return out.astype(dtype, copy=False)


def grid(frontier):
    return itertools.product(*(range(f) for f in frontier))


def offsets(chunks) -> np.ndarray:
    """Start of every block along one axis, plus the end."""
    return np.concatenate([[0], np.cumsum(chunks, dtype=np.int64)]).astype(np.int64)


def nbytes(x) -> int:
    return math.prod(x.shape) * x.dtype.itemsize


__all__ = [
    "Rel",
    "rel_of",
    "wrap",
    "wrap_source",
    "is_array",
    "is_dask",
    "auto_chunks",
    "is_scalar",
    "check_dtype",
    "reject_masked",
    "axes_of",
    "axis_of",
    "rekey",
    "param_relation",
    "BlockSource",
    "grid",
    "offsets",
]

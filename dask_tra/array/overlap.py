"""dask.array.overlap: blocks sharing their edges with their neighbours (halos).

Every function here is a lazy TRA expression built from gathers (``rechunk.take``: a
``Filter``/``ReKey``/``Join``/``Concat`` over a piece relation), ``concatenate`` and
``full``; nothing is computed at call time. ``map_overlap``, ``overlap``, ``trim_internal``
and the depth/boundary coercions live with the blockwise family (``blockwise.py``, where
``da.map_overlap`` and ``x.map_overlap`` come from) and are re-exported here under dask's
names; the boundary helpers (``periodic``, ``reflect``, ``nearest``, ``constant``,
``boundaries``), ``overlap_internal``, ``trim_overlap`` and dask's chunking of
``sliding_window_view`` are this module's.
"""

from __future__ import annotations

import math

import dask.array
import dask.array.overlap
import numpy as np
from dask.utils import derived_from

from .blockwise import (
    _pair,
    coerce_boundary,
    coerce_depth,
    ensure_minimum_chunksize,
    halos,
    map_overlap,
    overlap,
    trim_internal,
)
from .blockwise import sliding_window_view as _window_view
from .creation import asarray
from .fill import push
from .relations import axis_of


def overlap_internal(x, axes):
    """Every block extended by its neighbours' elements, none at the array's edges, as
    dask.array.overlap's ``overlap_internal``.

    Parameters
    ----------
    x : array_like
        The array.
    axes : int, tuple or dict
        A depth (``coerce_depth``; ``(before, after)`` pairs allowed).

    Returns
    -------
    RelArray
        ``x`` with each block grown by its neighbours' edges (a gather per axis).

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> y = da.overlap.overlap_internal(x, {0: 1})
    >>> y.chunks
    ((4, 4),)
    >>> y.compute()
    array([0, 1, 2, 3, 2, 3, 4, 5])
    """
    x = asarray(x)
    return halos(x, coerce_depth(x.ndim, axes), coerce_boundary(x.ndim, "none"))


def trim_overlap(x, depth, boundary=None):
    """``depth`` trimmed off both sides of every block, as dask.array.overlap's ``trim_overlap``.

    Parameters
    ----------
    x : RelArray
        The array, its blocks extended (``overlap``).
    depth : int, tuple or dict
        A depth (``coerce_depth``).
    boundary : str or dict, optional
        The boundary the blocks were extended with (``trim_internal``).

    Returns
    -------
    RelArray
        ``x`` with its blocks trimmed.

    See Also
    --------
    trim_internal

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> y = da.overlap.overlap(x, 1, "none")
    >>> da.overlap.trim_overlap(y, 1, "none").compute()
    array([0, 1, 2, 3, 4, 5])
    """
    x = asarray(x)
    return trim_internal(x, coerce_depth(x.ndim, depth), boundary)


def _pad_axis(x, axis, lo, hi, mode):
    """``x`` with ``lo`` elements before and ``hi`` after along ``axis`` taken by ``mode``, each
    side one new block (dask's chunks): a gather of the positions."""
    from .rechunk import take

    x = asarray(x)
    axis = axis_of(axis, x.ndim)
    n = x.shape[axis]
    if lo == hi == 0:
        return x
    if max(lo, hi) > n:
        raise ValueError(f"{mode}: depth {max(lo, hi)} is larger than the axis length {n} along axis {axis}")
    if mode == "periodic":
        left, right = np.arange(n - lo, n), np.arange(hi)
    elif mode == "reflect":
        left, right = np.arange(lo)[::-1], np.arange(n - hi, n)[::-1]
    else:  # nearest
        left, right = np.zeros(lo, dtype=int), np.full(hi, n - 1)
    src = np.concatenate([left, np.arange(n), right])
    sizes = (lo,) * bool(lo) + tuple(x.chunks[axis]) + (hi,) * bool(hi)
    return take(x, axis, src, sizes)


def periodic(x, axis, depth):
    """Axis ``axis`` of ``x`` extended on each side (dask.array.overlap's ``periodic``).

    ``depth`` elements of the other end copied to each side.

    Parameters
    ----------
    x : array_like
        The array.
    axis : int
        The axis extended.
    depth : int
        How many elements each side gains.

    Returns
    -------
    RelArray
        ``x`` with ``2 * depth`` more elements along ``axis``.

    See Also
    --------
    boundaries

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.overlap.periodic(x, 0, 1).compute()
    array([5, 0, 1, 2, 3, 4, 5, 0])
    """
    return _pad_axis(x, axis, depth, depth, "periodic")


def reflect(x, axis, depth):
    """Axis ``axis`` of ``x`` extended on each side (dask.array.overlap's ``reflect``).

    Each side extended by its own ``depth`` edge elements, mirrored (the edge
    element repeated, as NumPy's ``symmetric`` pad).

    Parameters
    ----------
    x : array_like
        The array.
    axis : int
        The axis extended.
    depth : int
        How many elements each side gains.

    Returns
    -------
    RelArray
        ``x`` with ``2 * depth`` more elements along ``axis``.

    See Also
    --------
    boundaries

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.overlap.reflect(x, 0, 1).compute()
    array([0, 0, 1, 2, 3, 4, 5, 5])
    """
    return _pad_axis(x, axis, depth, depth, "reflect")


def nearest(x, axis, depth):
    """Axis ``axis`` of ``x`` extended on each side (dask.array.overlap's ``nearest``).

    Each edge element repeated ``depth`` times outwards.

    Parameters
    ----------
    x : array_like
        The array.
    axis : int
        The axis extended.
    depth : int
        How many elements each side gains.

    Returns
    -------
    RelArray
        ``x`` with ``2 * depth`` more elements along ``axis``.

    See Also
    --------
    boundaries

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.overlap.nearest(x, 0, 1).compute()
    array([0, 0, 1, 2, 3, 4, 5, 5])
    """
    return _pad_axis(x, axis, depth, depth, "nearest")


def constant(x, axis, depth, value):
    """Axis ``axis`` of ``x`` extended on each side (dask.array.overlap's ``constant``).

    A block of ``depth`` elements of ``value`` on each side.

    Parameters
    ----------
    x : array_like
        The array.
    axis : int
        The axis extended.
    depth : int
        How many elements each side gains.
    value : scalar
        The value the new elements hold.

    Returns
    -------
    RelArray
        ``x`` with ``2 * depth`` more elements along ``axis``.

    See Also
    --------
    boundaries

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.overlap.constant(x, 0, 1, -1).compute()
    array([-1,  0,  1,  2,  3,  4,  5, -1])
    """
    from .creation import full
    from .stacking import concatenate

    x = asarray(x)
    axis = axis_of(axis, x.ndim)
    if depth == 0:
        return x
    chunks = x.chunks[:axis] + ((depth,),) + x.chunks[axis + 1 :]
    c = full(tuple(sum(b) for b in chunks), value, dtype=x.dtype, chunks=chunks)
    return concatenate([c, x, c], axis=axis)


def boundaries(x, depth=None, kind=None):
    """Each axis extended by ``depth`` elements of its boundary, as dask.array.overlap's
    ``boundaries``.

    Parameters
    ----------
    x : array_like
        The array.
    depth : int, tuple or dict
        Elements added on each side, per axis (``coerce_depth``).
    kind : str, scalar, tuple or dict
        The boundary per axis (``coerce_boundary``): ``"periodic"``, ``"reflect"``,
        ``"nearest"``, a constant; ``"none"`` or None adds nothing.

    Returns
    -------
    RelArray
        ``x`` with its edges extended.

    Raises
    ------
    NotImplementedError
        A constant boundary with different depths before and after.

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.overlap.boundaries(x, {0: 1}, {0: "periodic"}).compute()
    array([5, 0, 1, 2, 3, 4, 5, 0])
    """
    x = asarray(x)
    if isinstance(kind, dict):
        kind = {k: "none" if v is None else v for k, v in kind.items()}
    depth, kind = coerce_depth(x.ndim, depth), coerce_boundary(x.ndim, kind)
    for i in range(x.ndim):
        lo, hi = _pair(depth[i])
        if lo == hi == 0 or kind[i] == "none":
            continue
        if isinstance(kind[i], str):
            x = _pad_axis(x, i, lo, hi, kind[i])
        elif lo == hi:
            x = constant(x, i, lo, kind[i])
        else:
            raise NotImplementedError(f"boundaries: a constant boundary with an asymmetric depth {depth[i]}")
    return x


def add_dummy_padding(x, depth, boundary):
    """Padding of unspecified values along each axis with a ``"none"`` boundary, as dask.array.overlap's
    ``add_dummy_padding``.

    ``depth`` elements (``empty``) on each side, absorbed into the first and last blocks, so a
    function given extended blocks sees the same shape at the array's edges as inside.

    Parameters
    ----------
    x : array_like
        The array.
    depth : dict
        ``{axis: depth}`` (coerced, ``coerce_depth``).
    boundary : dict
        ``{axis: boundary}`` (coerced, ``coerce_boundary``); only ``"none"`` axes are padded.

    Returns
    -------
    RelArray
        ``x`` with ``2 * depth`` more elements along each padded axis.

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.overlap.add_dummy_padding(x, {0: 1}, {0: "none"}).chunks
    ((4, 4),)
    """
    from .creation import empty
    from .stacking import concatenate

    x = asarray(x)
    for k, v in boundary.items():
        d = _pair(depth.get(k, 0))[0]
        if isinstance(v, str) and v == "none" and d > 0:
            chunks = x.chunks[:k] + ((d,),) + x.chunks[k + 1 :]
            pad = empty(tuple(sum(c) for c in chunks), dtype=x.dtype, chunks=chunks)
            out = list(x.chunks[k])
            out[0] += d
            out[-1] += d
            x = concatenate([pad, x, pad], axis=k).rechunk(x.chunks[:k] + (tuple(out),) + x.chunks[k + 1 :])
    return x


def coerce_depth_type(ndim, depth):
    """The depth's entries as Python ints (dask's; ``coerce_depth`` does it too).

    Parameters
    ----------
    ndim : int
        The array's number of dimensions.
    depth : int, tuple or dict
        A depth (``coerce_depth``), maybe holding NumPy integers.

    Returns
    -------
    dict
        ``{axis: int or (before, after)}`` for every axis, with Python ints.

    Examples
    --------
    >>> da.overlap.coerce_depth_type(1, {0: np.int64(2)})
    {0: 2}
    """
    return coerce_depth(ndim, depth)


@derived_from(dask.array.overlap)
def sliding_window_view(x, window_shape, axis=None, automatic_rechunk=True):
    """dask.array.overlap.sliding_window_view (``numpy.lib.stride_tricks``'s): dask's chunks
    (every windowed axis made of chunks holding a window, the other axes split as dask does
    with ``automatic_rechunk``), then a gather of ``window - 1`` following elements per block
    and NumPy's windows per block."""
    from dask.array._shuffle import _calculate_new_chunksizes
    from numpy.lib.array_utils import normalize_axis_tuple

    x = asarray(x)
    window_shape = tuple(int(w) for w in window_shape) if np.iterable(window_shape) else (int(window_shape),)
    if any(w <= 0 for w in window_shape):
        raise ValueError("`window_shape` must contain values > 0")
    if axis is None:
        axis = tuple(range(x.ndim))
        if len(window_shape) != len(axis):
            raise ValueError(
                f"Since axis is `None`, must provide window_shape for all dimensions of `x`; "
                f"got {len(window_shape)} window_shape elements and `x.ndim` is {x.ndim}."
            )
    else:
        axis = normalize_axis_tuple(axis, x.ndim, allow_duplicate=True)
        if len(window_shape) != len(axis):
            raise ValueError(
                f"Must provide matching length window_shape and axis; got {len(window_shape)} "
                f"window_shape elements and {len(axis)} axes elements."
            )
    depths = [0] * x.ndim
    for ax, w in zip(axis, window_shape):
        depths[ax] += w - 1
    safe = [ensure_minimum_chunksize(d + 1, c) for d, c in zip(depths, x.chunks)]
    if automatic_rechunk:
        safe = [s if d else c for d, c, s in zip(depths, x.chunks, safe)] + [(w,) for w in window_shape]
        biggest = math.prod(max(c) for c in x.chunks)
        safe = _calculate_new_chunksizes(x.chunks, safe, {i for i, d in enumerate(depths) if d == 0}, biggest)
    chunks = tuple(tuple(c) for c in safe[: x.ndim])
    return _window_view(x if chunks == x.chunks else x.rechunk(chunks), window_shape, axis=axis)


__all__ = [
    "add_dummy_padding",
    "boundaries",
    "coerce_depth_type",
    "coerce_boundary",
    "coerce_depth",
    "constant",
    "ensure_minimum_chunksize",
    "map_overlap",
    "nearest",
    "overlap",
    "overlap_internal",
    "periodic",
    "push",
    "reflect",
    "sliding_window_view",
    "trim_internal",
    "trim_overlap",
]

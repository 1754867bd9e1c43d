"""Manipulation: flip, roll, repeat, tile (gathers, ``rechunk.take``), broadcast_to (a Join
with a template relation of the target shape), tril/triu (a Join with a relation of per-block
diagonal offsets), diff (slices and a subtraction)."""

from __future__ import annotations

import operator

import numpy as np
from dask.utils import derived_from
from numpy.lib.array_utils import normalize_axis_tuple

from ..tra import Join
from ..tra.vjp import register_partials
from .creation import asarray
from .elementwise import elementwise, subtract
from .kernels import Op, Triangle, npx
from .rechunk import run_chunks, take, unified_chunks
from .relations import BlockSource, auto_chunks, axes_of, axis_of, grid, offsets, param_relation, wrap, wrap_source
from .stacking import concatenate
from .structure import ravel, reshape


@derived_from(np)
def flip(m, axis=None):
    m = asarray(m)
    for d in axes_of(axis, m.ndim):
        m = take(m, d, np.arange(m.shape[d])[::-1])
    return m


@derived_from(np)
def roll(a, shift, axis=None):
    """numpy.roll: ``shift`` and ``axis`` broadcast against each other (NumPy's errors at call
    time); shifts of one axis add up; each rolled axis is one gather."""
    a = asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    pairs = np.broadcast(shift, normalize_axis_tuple(axis, a.ndim, allow_duplicate=True))
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = {}
    for s, d in pairs:
        shifts[int(d)] = shifts.get(int(d), 0) + int(s)
    for d, s in shifts.items():
        n = a.shape[d]
        if n:
            a = take(a, d, (np.arange(n) - s) % n, a.chunks[d])
    return a


@derived_from(np)
def repeat(a, repeats, axis=None):
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = axis_of(axis, a.ndim)
    return take(a, axis, np.repeat(np.arange(a.shape[axis]), repeats))


@derived_from(np)
def tile(A, reps):
    A = asarray(A)
    reps = (int(reps),) if np.ndim(reps) == 0 else tuple(int(r) for r in reps)
    if len(reps) > A.ndim:
        A = reshape(A, (1,) * (len(reps) - A.ndim) + A.shape)
    reps = (1,) * (A.ndim - len(reps)) + reps
    for d, r in enumerate(reps):
        if r != 1:
            src = np.tile(np.arange(A.shape[d]), r)
            A = take(A, d, src, run_chunks(src, A.chunks[d], max(max(A.chunks[d]), 1)))
    return A


@derived_from(np)
def broadcast_to(x, shape, chunks=None):
    x = asarray(x)
    shape = tuple(int(s) for s in shape)
    if len(shape) < x.ndim or np.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"cannot broadcast shape {x.shape} to shape {shape}")
    off = len(shape) - x.ndim
    if chunks is None:
        if shape == x.shape:
            return x
        chunks = tuple((s,) if d < off or x.shape[d - off] != s else x.chunks[d - off] for d, s in enumerate(shape))
    chunks = auto_chunks(chunks, shape, np.bool_)
    for old, new in zip(x.chunks, chunks[off:]):
        if old != new and old != (1,):  # as dask.array: broadcasting never rechunks
            raise ValueError(
                f"cannot broadcast chunks {x.chunks} to chunks {chunks}: new chunks must either be along a "
                "new dimension or a dimension of size 1"
            )
    if shape == x.shape:
        return x
    src = BlockSource("template", shape, chunks, np.bool_)
    template = wrap_source(src)
    return elementwise("broadcastTo", broadcast_like, x, template, dtype=x.dtype)


def broadcast_like(v, template):
    """``v`` broadcast to the shape of the chunk ``template`` (a copy)."""
    xp = npx(v)
    return xp.array(xp.broadcast_to(v, tuple(template.shape)))


register_partials(broadcast_like, (1, 0))


@derived_from(np)
def broadcast_arrays(*args, subok=False):
    """numpy.broadcast_arrays with dask's chunks: the arrays' chunks unified along the dims they
    share (as dask's ``unify_chunks``), and each broadcast dim chunked as the arrays that span it.
    ``subok`` is accepted for dask's signature."""
    arrays = [asarray(a) for a in args]
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    chunks = []
    for d, n in enumerate(shape):
        spans = [a.chunks[i] for a in arrays if (i := d - len(shape) + a.ndim) >= 0 and a.shape[i] == n != 1]
        chunks.append(unified_chunks(spans) if spans else (n,))
    out = []
    for a in arrays:
        own = tuple(chunks[len(shape) - a.ndim :])
        mine = tuple(c if n != 1 else (1,) for c, n in zip(own, a.shape))
        out.append(broadcast_to(a if mine == a.chunks else a.rechunk(mine), shape, chunks=tuple(chunks)))
    return tuple(out)


def _triangle(which):
    def tri(m, k=0):
        m = asarray(m)
        if m.ndim < 2:
            raise ValueError(f"{which} needs at least 2 dimensions, got {m.ndim}")
        n = m.ndim
        ro, co = offsets(m.chunks[-2]), offsets(m.chunks[-1])
        P = param_relation(
            {(i, j): [k + ro[i] - co[j]] for i, j in grid(m.numblocks[-2:])}, m.numblocks[-2:], what="diagonals"
        )
        return wrap(Join(m.expr, P.expr, (n - 2, n - 1), (0, 1), Triangle(which, m.dtype)), m, extra=P.sources)

    tri.__name__ = which
    return tri


tril = derived_from(np)(_triangle("tril"))
triu = _triangle("triu")
triu.__doc__ = """Upper triangle of an array: elements below the ``k``-th diagonal zeroed (``numpy.triu``).

    Parameters
    ----------
    m : array_like
        An array of at least two dimensions (a stack of matrices over the last two axes).
    k : int, optional
        The diagonal: 0 the main one, positive above it, negative below.

    Returns
    -------
    RelArray
        ``m`` with the elements below diagonal ``k`` set to zero (a Join of each block with
        its diagonal offset: no block is moved).

    See Also
    --------
    tril

    Examples
    --------
    >>> x = da.from_array(np.arange(9).reshape(3, 3), chunks=2)
    >>> da.triu(x).compute()
    array([[0, 1, 2],
           [0, 4, 5],
           [0, 0, 8]])
    >>> da.triu(x, 1).compute()
    array([[0, 1, 2],
           [0, 0, 5],
           [0, 0, 0]])
    """


@derived_from(np)
def diff(a, n=1, axis=-1, prepend=None, append=None):
    """numpy.diff: ``n == 0`` returns ``a`` unchanged (no prepend/append, as NumPy)."""
    a = asarray(a)
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    n = operator.index(n)  # NumPy's TypeError for a float n
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = axis_of(axis, a.ndim)
    ends = []
    for v in (prepend, append):
        if v is not None:
            v = asarray(v)
            if v.ndim == 0:
                v = broadcast_to(v, a.shape[:axis] + (1,) + a.shape[axis + 1 :])
        ends.append(v)
    if ends[0] is not None or ends[1] is not None:
        a = concatenate([v for v in (ends[0], a, ends[1]) if v is not None], axis=axis)
    for _ in range(n):
        hi = a[(slice(None),) * axis + (slice(1, None),)]
        lo = a[(slice(None),) * axis + (slice(None, -1),)]
        a = subtract(hi, lo) if a.dtype != np.bool_ else elementwise("notEqual", Op(np.not_equal), hi, lo)
    return a


__all__ = ["flip", "roll", "repeat", "tile", "broadcast_to", "broadcast_arrays", "tril", "triu", "diff"]

"""Functions whose output shape depends on the data: nonzero, argwhere, compress, extract,
unique, union1d, bincount, histogram.

TRA relation types carry exact chunk extents, so dask's unknown (``nan``) chunks have no
counterpart here. The choice: the *size* is found by an eager pass, then the rest stays a
lazy TRA expression with known chunks.

- nonzero/flatnonzero/argwhere: the boolean mask is computed (one byte per element reaches
  the client), the positions become a RelArray.
- compress/extract (and ``x[mask]`` with a RelArray mask): only the condition is computed;
  the data is gathered lazily (``rechunk.gather``) by the positions found.
- bincount: one max-reduction finds the length; then ``Transform(bincount)`` per chunk and
  an ``Aggregate`` (add) over all blocks. histogram: bin edges as dask requires them (a
  range with integer bins; else one min/max pass), then the same Transform + Aggregate.
- unique/union1d: computed (the values are the output), then wrapped.
"""

from __future__ import annotations

import numpy as np
from dask.utils import derived_from

from ..tra import Aggregate, Join, Transform
from ..tra import kernels as K
from ..tra.relation import ChunkAxis
from . import reductions
from .creation import asarray, from_array
from .linalg.kernels import FieldsKernel
from .rechunk import rechunk
from .relations import axis_of, rekey, wrap
from .stacking import concatenate, stack
from .structure import ravel


def _mask(a):
    """The computed truth of ``a`` (a NumPy bool array)."""
    a = asarray(a)
    return np.asarray(a if a.dtype == np.bool_ else a != 0)


def _wrap_np(values):
    return from_array(np.asarray(values))


@derived_from(np)
def nonzero(a):
    return tuple(_wrap_np(i) for i in np.nonzero(_mask(a)))


@derived_from(np)
def flatnonzero(a):
    return _wrap_np(np.flatnonzero(_mask(a)))


@derived_from(np)
def argwhere(a):
    return _wrap_np(np.argwhere(_mask(a)))


@derived_from(np)
def compress(condition, a, axis=None):
    """The slices of ``a`` along ``axis`` where ``condition`` holds (only the condition computes)."""
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = axis_of(axis, a.ndim)
    cond = np.asarray(condition, dtype=bool)
    if cond.ndim != 1:
        raise ValueError("Condition must be one dimensional")
    if len(cond) > a.shape[axis]:
        raise IndexError(f"condition of length {len(cond)} is longer than axis {axis} of length {a.shape[axis]}")
    return a[(slice(None),) * axis + (np.flatnonzero(cond),)]


@derived_from(np)
def extract(condition, arr):
    return compress(np.ravel(_mask(condition)), ravel(asarray(arr)))


@derived_from(np)
def unique(ar, return_index=False, return_inverse=False, return_counts=False):
    out = np.unique(
        np.asarray(asarray(ar)), return_index=return_index, return_inverse=return_inverse, return_counts=return_counts
    )
    return tuple(_wrap_np(v) for v in out) if isinstance(out, tuple) else _wrap_np(out)


@derived_from(np)
def union1d(ar1, ar2):
    return unique(concatenate([ravel(asarray(ar1)), ravel(asarray(ar2))]))


class Counts(FieldsKernel):
    """Per chunk: ``bincount`` into ``n`` bins, ``histogram`` with ``edges``, or (``dd``) a
    ``histogramdd`` of a (points, D) chunk with a tuple of edges per dimension; weighted when
    joined with a weights chunk."""

    def __init__(self, n, edges, weighted, dtype, dd=False):
        self.n, self.weighted, self.dd = tuple(np.atleast_1d(n).astype(int).tolist()), bool(weighted), bool(dd)
        self.edges = None if edges is None else (tuple(tuple(e) for e in edges) if dd else tuple(edges))
        self.arity, self.dtype = 1 + self.weighted, np.dtype(dtype)
        self.name = "bincount" if edges is None else ("histogramdd" if dd else "histogram")

    def __call__(self, chunk, weights=None):
        w = None if weights is None else np.ravel(np.asarray(weights))
        if self.dd:
            return np.histogramdd(np.asarray(chunk), [np.asarray(e) for e in self.edges], weights=w)[0].astype(
                self.dtype
            )
        x = np.ravel(np.asarray(chunk))
        if self.edges is None:
            return np.bincount(x, w, minlength=self.n[0]).astype(self.dtype)
        return np.histogram(x, np.asarray(self.edges), weights=w)[0].astype(self.dtype)

    def out_axes(self, frontier, *axes):
        return tuple(ChunkAxis.const(n) for n in self.n)


def _counted(x, weights, kernel):
    """Counts of every chunk summed over all blocks: a 1-d single-block RelArray."""
    if weights is None:
        expr = Transform(x.expr, kernel)
        parents = (x,)
    else:
        w = asarray(weights)
        w = rechunk(w, x.chunks[: w.ndim])
        keys = list(range(w.ndim))
        expr, parents = Join(x.expr, w.expr, keys, keys, kernel), (x, w)
    return wrap(rekey(Aggregate(expr, [], K.add), [None] * len(kernel.n)), *parents)


@derived_from(np)
def bincount(x, weights=None, minlength=0):
    """numpy.bincount: the length comes from one max-reduction, the counts from the TRA."""
    x = asarray(x)
    if x.ndim != 1 or x.dtype.kind not in "iub":
        raise ValueError("bincount: x must be a 1-d array of non-negative integers")
    if minlength < 0:
        raise ValueError("minlength must be non-negative")
    if x.size and int(reductions.min(x).compute()) < 0:
        raise ValueError("'list' argument must have no negative elements")
    n = max(int(reductions.max(x).compute()) + 1 if x.size else 0, minlength)
    dtype = np.intp if weights is None else np.result_type(asarray(weights).dtype, np.float64)
    return _counted(x, weights, Counts(n, None, weights is not None, dtype))


def _edges(a, bins, range):
    if bins is None or np.ndim(bins) > 1:
        raise (TypeError if bins is None else ValueError)(
            f"bins must be an integer or a 1-dimensional sequence of edges, got {bins!r}"
        )
    if np.ndim(bins) == 1:
        return np.asarray(bins, dtype=float)
    if range is not None:
        if np.ndim(range) == 0:
            raise TypeError(f"Expected a sequence or array for range, not {range!r}")
        if np.shape(range) != (2,):
            raise ValueError(f"range must be a sequence or array of two items, but got one of shape {np.shape(range)}")
    if range is None:
        range = (float(reductions.min(a).compute()), float(reductions.max(a).compute())) if a.size else (0.0, 1.0)
    return np.histogram_bin_edges(np.empty(0), int(bins), range=range)


@derived_from(np)
def histogram(a, bins=10, range=None, normed=False, weights=None, density=None):
    """numpy.histogram: ``(counts, bin_edges)``; counts summed over chunks in the TRA."""
    a = asarray(a)
    if normed:
        raise ValueError("normed is deprecated; use density")
    edges = _edges(a, bins, range)
    w = None if weights is None else asarray(weights)
    if w is not None and w.dtype == np.bool_:
        raise TypeError("histogram: boolean weights are not supported (NumPy cannot sum them into bool counts)")
    dtype = np.intp if w is None else w.dtype  # NumPy's and dask's: the counts have the weights' dtype
    counts = _counted(a, w, Counts(len(edges) - 1, edges, w is not None, dtype))
    if density:
        counts = counts / np.diff(edges).astype(float) / counts.sum()  # NumPy's n / db / n.sum()
    return counts, edges


@derived_from(np)
def histogramdd(sample, bins=10, range=None, normed=None, weights=None, density=None):
    """numpy.histogramdd of a (points, D) array or a sequence of D 1-d arrays: ``(counts, edges)``.
    ``normed`` is an alias of ``density`` (dask's); giving both is a TypeError."""
    if normed is not None:
        if density is not None:
            raise TypeError("Cannot specify both 'normed' and 'density'")
        density = normed
    if isinstance(sample, (list, tuple)):
        sample = stack([ravel(asarray(s)) for s in sample], axis=1)
    sample = asarray(sample)
    if sample.ndim != 2:
        raise ValueError(
            "Single array input to histogramdd should be columnar: (points, D), or pass a sequence of D arrays"
        )
    d = sample.shape[1]
    bins = list(bins) if isinstance(bins, (list, tuple)) or np.ndim(bins) else [bins] * d  # edges may be ragged
    if len(bins) != d:
        raise ValueError("The dimension of bins must be equal to the dimension of the sample.")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError("range argument requires one entry, a min max pair, per dimension.")
    if not all(r is None or np.shape(r) == (2,) for r in ranges):
        raise ValueError("range argument should be a sequence of pairs")
    edges = [_edges(sample[:, i], b, r) for i, (b, r) in enumerate(zip(bins, ranges))]
    sample = rechunk(sample, {1: (d,)})
    w = None if weights is None else asarray(weights)
    counts = _counted(sample, w, Counts([len(e) - 1 for e in edges], edges, w is not None, np.float64, dd=True))
    if density:  # NumPy's: divided by each dimension's bin widths, then by the total
        total = counts.sum()
        for i, e in enumerate(edges):
            counts = counts / np.diff(e).reshape(tuple(np.where(np.arange(d) == i, -1, 1)))
        counts = counts / total
    return counts, edges


@derived_from(np)
def histogram2d(x, y, bins=10, range=None, normed=None, weights=None, density=None):
    """numpy.histogram2d: ``(counts, xedges, yedges)``."""
    counts, (ex, ey) = histogramdd([x, y], bins, range, normed=normed, weights=weights, density=density)
    return counts, ex, ey


__all__ = [
    "argwhere",
    "bincount",
    "compress",
    "extract",
    "flatnonzero",
    "histogram",
    "histogram2d",
    "histogramdd",
    "nonzero",
    "union1d",
    "unique",
]

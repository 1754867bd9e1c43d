"""numpy.pad, axis by axis (as NumPy pads: later axes pad the corners earlier ones made).

- "edge", "reflect", "symmetric", "wrap": the padded axis is a gather (``rechunk.take``) of
  positions NumPy's own ``pad`` computes for ``arange(n)``; the padding becomes its own block
  at each end (dask's chunks).
- "constant", "empty": blocks of the value (0 for empty) concatenated at each end.
- "maximum", "minimum", "mean": the statistic over the axis (``stat_length`` None),
  broadcast to the padding and concatenated.
"""

from __future__ import annotations

import numpy as np
from dask.utils import derived_from

from .creation import asarray
from .rechunk import take

_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")
_STAT_MODES = {"maximum": "max", "minimum": "min", "mean": "mean"}


def _pairs(value, ndim, what):
    v = np.asarray(value, dtype=object if what == "constant_values" else np.int64)
    try:
        v = np.broadcast_to(v, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: {what} {value!r} cannot be broadcast to ({ndim}, 2)") from None
    return [tuple(p) for p in v.tolist()]


@derived_from(np)
def pad(array, pad_width, mode="constant", **kwargs):
    """numpy.pad for modes constant, empty, edge, reflect, symmetric, wrap, maximum, minimum, mean."""
    from . import reductions
    from .creation import full
    from .stacking import concatenate

    x = asarray(array)
    if callable(mode):
        raise NotImplementedError("pad with a function as mode is not supported")
    widths = _pairs(pad_width, x.ndim, "pad_width")
    if any(w < 0 for p in widths for w in p):
        raise ValueError("index can't contain negative values")
    if mode == "reflect" and kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("pad(mode='reflect', reflect_type='odd') is not supported")
    if mode in _STAT_MODES and kwargs.get("stat_length") is not None:
        raise NotImplementedError("pad stat_length= is not supported")
    if mode not in ("constant", "empty") + _INDEX_MODES + tuple(_STAT_MODES):
        raise NotImplementedError(f"pad mode {mode!r} is not supported")
    values = _pairs(kwargs.get("constant_values", 0), x.ndim, "constant_values")
    for axis, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        n = x.shape[axis]
        if mode in _INDEX_MODES:
            if n == 0:
                raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
            src = np.pad(np.arange(n), (before, after), mode=mode)
            chunks = ((before,) if before else ()) + x.chunks[axis] + ((after,) if after else ())
            x = take(x, axis, src, chunks)
            continue
        parts = []
        for k, width in enumerate((before, after)):
            if not width:
                parts.append(None)
                continue
            shape = x.shape[:axis] + (width,) + x.shape[axis + 1 :]
            chunks = x.chunks[:axis] + ((width,),) + x.chunks[axis + 1 :]
            if mode in _STAT_MODES:
                stat = getattr(reductions, _STAT_MODES[mode])(x, axis=axis, keepdims=True)
                if mode == "mean" and x.dtype.kind in "iu":
                    # NumPy rounds an integer mean; a bool mean is cast (True where nonzero)
                    stat = stat.round().astype(x.dtype)
                from .manipulation import broadcast_to

                parts.append(broadcast_to(stat.astype(x.dtype), shape, chunks=chunks))
            else:
                value = 0 if mode == "empty" else values[axis][k]
                parts.append(full(shape, np.asarray(value).astype(x.dtype), dtype=x.dtype, chunks=chunks))
        x = concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis=axis)
    return x


__all__ = ["pad"]

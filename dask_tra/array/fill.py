"""``push``: forward fill of NaNs along an axis (dask.array's ``push``, bottleneck's ``push``
semantics; bottleneck is not needed).

Lowering: NumPy's forward fill on every block (``map_blocks``); the last element of each filled
block is gathered (a ``take`` of one position per block), those few slabs are made one block
and filled again (a carry: the last valid value up to the end of each block); each block's
carry from the block before it is gathered back to the block's length (a ``take``) and fills
what is still NaN (``where``). A limit ``n`` is dask's: positions further than ``n`` from the
last valid one are NaN again (a fill of the valid positions' ``arange``)."""

from __future__ import annotations

import numpy as np

from .creation import asarray
from .relations import axis_of, offsets


def ffill_block(block, axis):
    """NumPy forward fill of ``block`` along ``axis``."""
    if block.dtype.kind not in "fc" or block.shape[axis] == 0:
        return block
    shape = [1] * block.ndim
    shape[axis] = block.shape[axis]
    idx = np.where(np.isnan(block), 0, np.arange(block.shape[axis]).reshape(shape))
    np.maximum.accumulate(idx, axis=axis, out=idx)
    return np.take_along_axis(block, idx, axis=axis)


def _ffill(x, axis):
    from . import creation, elementwise, stacking
    from .blockwise import map_blocks
    from .rechunk import take

    local = map_blocks(ffill_block, x, axis=axis, dtype=x.dtype, token="ffill")
    p = x.numblocks[axis]
    if p == 1 or x.dtype.kind not in "fc":
        return local
    ends = offsets(x.chunks[axis])[1:] - 1
    last = take(local, axis, ends, (1,) * p).rechunk({axis: -1})
    carry = map_blocks(ffill_block, last, axis=axis, dtype=x.dtype, token="ffill")
    slab_shape = tuple(1 if d == axis else n for d, n in enumerate(x.shape))
    slab_chunks = tuple((1,) if d == axis else c for d, c in enumerate(carry.chunks))
    before = stacking.concatenate(
        [creation.full(slab_shape, np.nan, dtype=x.dtype, chunks=slab_chunks), carry], axis=axis
    )
    src = np.repeat(np.arange(p), x.chunks[axis])  # block k takes the carry of the blocks before it
    fill = take(before, axis, src, x.chunks[axis])
    return elementwise.where(elementwise.isnan(local), fill, local)


def push(array, n, axis):
    """Forward-fill NaNs along ``axis``, as dask.array's ``push``.

    Each NaN takes the last valid value before it, at most ``n`` positions past it.

    Parameters
    ----------
    array : array_like
        The array.
    n : int or None
        The most positions filled after a valid value; None: no limit.
    axis : int
        The axis filled along.

    Returns
    -------
    RelArray
        ``array`` with its NaNs filled.

    Examples
    --------
    >>> x = da.from_array(np.array([1.0, np.nan, np.nan, 4.0]), chunks=2)
    >>> da.push(x, None, 0).compute()
    array([1., 1., 1., 4.])
    >>> da.push(x, 1, 0).compute()
    array([ 1.,  1., nan,  4.])
    """
    from . import creation, elementwise, manipulation, structure
    from .routines import notnull

    x = asarray(array)
    if x.ndim == 0:
        raise ValueError("push: needs an array of at least one dimension")
    axis = axis_of(axis, x.ndim)
    if n is not None and not isinstance(n, (int, np.integer)):
        raise TypeError(f"push: n must be an integer or None, got {n!r}")
    if n is not None and 0 < n < x.shape[axis] - 1:
        shape = tuple(s if d == axis else 1 for d, s in enumerate(x.shape))
        pos = structure.reshape(creation.arange(x.shape[axis], chunks=x.chunks[axis], dtype=x.dtype), shape)
        pos = manipulation.broadcast_to(pos, x.shape, x.chunks)
        valid_pos = elementwise.where(notnull(x), pos, np.nan)
        within = (pos - _ffill(valid_pos, axis)) <= n
        return elementwise.where(within, _ffill(x, axis), np.nan)
    return _ffill(x, axis)


__all__ = ["push"]

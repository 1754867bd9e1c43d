"""``x[index]``: basic slicing, integer and boolean indexing where the result shape is known.

Every axis an index touches is a gather (``rechunk.gather``: Filter the blocks used,
Join with a piece relation, ReKey to renumber, Concat): a slice keeps the blocks it
crosses, an integer keeps one element (then the axis is squeezed), an integer array picks
its positions (then the axis is reshaped to the index's shape), a boolean array picks its
true positions (a k-d mask first merges its k axes with a reshape). ``None`` adds axes.
At most one array index per call; a lazy (RelArray) index or mask is computed first (the
result's shape depends on it; see "Data-dependent shapes" in docs/api.md).
"""

from __future__ import annotations

import numpy as np

from .lazy import narrow
from .rechunk import take
from .relations import is_array

INVALID = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)


def _entries(x, index):
    """The index as a list of (kind, value, axes consumed)."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for v in index:
        if is_array(v):  # a lazy index: computed first (the output shape depends on it)
            v = np.asarray(v)
        if v is None:
            out.append(("new", None, 0))
        elif v is Ellipsis:
            out.append(("ellipsis", None, 0))
        elif isinstance(v, slice):
            out.append(("slice", v, 1))
        elif isinstance(v, (bool, np.bool_)):
            raise NotImplementedError("indexing with a scalar boolean is not supported")
        elif isinstance(v, (int, np.integer)):
            out.append(("int", int(v), 1))
        else:
            arr = np.asarray(v)
            if arr.dtype == np.bool_:
                out.append(("mask", arr, arr.ndim))
            elif arr.dtype.kind in "iu" or (arr.size == 0 and arr.dtype.kind == "f"):
                out.append(("array", arr.astype(np.int64), 1))
            else:
                raise IndexError(INVALID)
    used = sum(e[2] for e in out)
    if used > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {used} were indexed")
    if sum(e[0] == "ellipsis" for e in out) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    fill = [("slice", slice(None), 1)] * (x.ndim - used)
    at = next((i for i, e in enumerate(out) if e[0] == "ellipsis"), len(out))
    return [e for e in out[:at] + fill + out[at + 1 :] if e[0] != "ellipsis"]


def getitem(x, index):
    from .structure import expand_dims, moveaxis, reshape

    entries = _entries(x, index)
    x, entries = narrow(x, entries)  # a lazily read input reads only the blocks the index touches
    arrays = [e for e in entries if e[0] in ("array", "mask")]
    if len(arrays) > 1:
        raise NotImplementedError("at most one integer or boolean array index per indexing operation")
    starts, axis = [], 0
    for kind, v, k in entries:
        starts.append(axis)
        axis += k
    for (kind, v, k), ax in reversed(list(zip(entries, starts))):  # right to left: axes stay put
        if kind == "new" or (kind == "slice" and v == slice(None)):
            continue
        if kind == "mask":
            for d in range(k):
                if v.shape[d] != x.shape[ax + d]:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {ax + d}; "
                        f"size of axis is {x.shape[ax + d]} but size of corresponding "
                        f"boolean axis is {v.shape[d]}"
                    )
            if k != 1:
                x = reshape(x, x.shape[:ax] + (-1,) + x.shape[ax + k :])
            x = take(x, ax, np.flatnonzero(v))
            continue
        n = x.shape[ax]
        if kind == "slice":
            x = take(x, ax, np.arange(n)[v])
            continue
        idx = np.asarray(v)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = idx.min() if idx.min() < -n else idx.max()
            raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
        x = take(x, ax, np.where(idx < 0, idx + n, idx).ravel())
        if kind == "int" or idx.ndim != 1:
            x = reshape(x, x.shape[:ax] + idx.shape + x.shape[ax + 1 :])
    pos, adv, new_axes = 0, None, []
    for kind, v, k in entries:  # output positions: of the array index's dims, of new axes
        if kind == "new":
            new_axes.append(pos + len(new_axes))
        elif kind in ("array", "mask"):
            adv, pos = pos, pos + (v.ndim if kind == "array" else 1)
        elif kind == "slice":
            pos += 1
    if arrays and _split_advanced(entries) and adv:
        if new_axes:
            raise NotImplementedError("None together with non-adjacent advanced indices")
        nd = arrays[0][1].ndim if arrays[0][0] == "array" else 1
        x = moveaxis(x, list(range(adv, adv + nd)), list(range(nd)))
    return expand_dims(x, new_axes) if new_axes else x


def _split_advanced(entries):
    """NumPy moves advanced-index dims first when the advanced indices (with integers) are not adjacent."""
    pos = [i for i, e in enumerate(entries) if e[0] in ("array", "mask", "int")]
    return bool(pos) and pos[-1] - pos[0] + 1 != len(pos)


__all__ = ["getitem"]

"""Tensor-relation metadata: key arity, frontier, per-axis chunk extents, dtype, backend.

A tensor relation is a set of (key, chunk) pairs. Its *type* says everything the
optimizer needs without touching data: the frontier (keys are the integer vectors
below it), and for every chunk axis how long it is at each key. Ragged chunks (as
in dask) make an axis' extent depend on key dims; a ``ChunkAxis`` stores those
extents as a small integer array indexed by the key dims it depends on.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .errors import ChunkShapeError, IntegrityError, TRAError, fmt_key

Key = tuple[int, ...]


class ChunkAxis:
    """The extent of one chunk axis as a function of some key dims.

    ``sizes`` has one array dim per entry of ``key_dims``; ``sizes[key[d0], key[d1], ...]``
    is the axis' extent in the chunk at ``key``. An axis of constant extent has no key dims.
    """

    __slots__ = ("key_dims", "sizes", "_table", "_const")

    def __init__(self, key_dims: Iterable[int], sizes: ArrayLike):
        sizes = np.asarray(sizes, dtype=np.int64)
        key_dims = tuple(int(d) for d in key_dims)
        if sizes.ndim != len(key_dims):
            raise TRAError(f"ChunkAxis: {len(key_dims)} key dims but sizes of rank {sizes.ndim}")
        if sizes.ndim == 0:  # the common constant axis, checked and stored without array calls
            if int(sizes) < 0:
                raise TRAError("ChunkAxis: negative extent")
        elif sizes.size and sizes.min() < 0:
            raise TRAError("ChunkAxis: negative extent")
        if any(a >= b for a, b in zip(key_dims, key_dims[1:])):  # not strictly increasing: sort
            if len(set(key_dims)) != len(key_dims):
                raise TRAError(f"ChunkAxis: repeated key dims {key_dims}")
            order = np.argsort(key_dims, kind="stable")
            key_dims = tuple(key_dims[i] for i in order)
            sizes = np.transpose(sizes, order)
        self.key_dims = key_dims
        if sizes.flags.writeable:
            sizes.setflags(write=False)
        self.sizes = sizes
        self._table: Any = None  # ``sizes`` as nested Python lists, made when first read
        self._const: Any = _UNREAD  # ``constant``, read once (typing asks it of every axis it meets)

    @classmethod
    def const(cls, n: int) -> "ChunkAxis":
        """The axis of extent ``n`` at every key: one shared object per extent (axes are
        immutable), so types built again compare by identity first."""
        n = int(n)  # an extent given as a NumPy scalar or 0-d array too
        found = _CONSTANT.get(n)
        if found is None:
            found = cls((), np.int64(n))
            if len(_CONSTANT) < 4096:
                _CONSTANT[n] = found
        return found

    @classmethod
    def along(cls, key_dim: int, sizes: Iterable[int]) -> "ChunkAxis":
        """An axis whose extent follows one key dim (a dask chunk tuple); constant when every
        block has one extent (what ``simplified`` makes of it, without arrays)."""
        sizes = tuple(sizes)
        if sizes and all(n == sizes[0] for n in sizes):
            return cls.const(sizes[0])
        return cls((key_dim,), sizes)

    def size_at(self, key: Sequence[int]) -> int:
        table = self._table
        if table is None:
            table = self._table = self.sizes.tolist()  # Python ints: emission asks once per task
        for d in self.key_dims:
            table = table[key[d]]
        return table

    @property
    def constant(self) -> int | None:
        """The extent when it is the same at every key, else None."""
        found = self._const
        if found is _UNREAD:
            sizes = self.sizes
            if sizes.size == 0:
                found = None
            else:
                first = sizes.flat[0]
                found = int(first) if not self.key_dims or (sizes == first).all() else None
            self._const = found
        return found

    def simplified(self) -> "ChunkAxis":
        """Drop key dims along which the extent does not vary."""
        dims, sizes = list(self.key_dims), self.sizes
        for i in reversed(range(len(dims))):
            if sizes.shape[i] and (sizes == sizes.take([0], axis=i)).all():
                sizes = sizes.take(0, axis=i)
                del dims[i]
        return self if len(dims) == len(self.key_dims) else ChunkAxis(dims, sizes)

    def relabel(self, mapping: Mapping[int, int]) -> "ChunkAxis":
        """Rename key dims (old -> new); two old dims mapped to one new dim take their diagonal."""
        if not self.key_dims:  # a constant axis: itself (immutable)
            return self
        new = [mapping[d] for d in self.key_dims]
        if len(set(new)) == len(new):
            if all(a < b for a, b in zip(new, new[1:])):  # still in order: the same extents
                return ChunkAxis._checked(tuple(new), self.sizes)
            return ChunkAxis(new, self.sizes)
        uniq = sorted(set(new))
        sub = "".join(chr(97 + uniq.index(n)) for n in new)
        out = "".join(chr(97 + i) for i in range(len(uniq)))
        return ChunkAxis(uniq, np.einsum(f"{sub}->{out}", self.sizes))

    def dense(self, frontier: Sequence[int]) -> np.ndarray:
        """Extents broadcast to the full key grid (shape == frontier)."""
        return np.broadcast_to(self.gridded(len(frontier)), tuple(frontier))

    def gridded(self, arity: int) -> np.ndarray:
        """Extents shaped to broadcast over a key grid of ``arity`` dims (1 along other dims)."""
        shape = [1] * arity
        for d, n in zip(self.key_dims, self.sizes.shape):
            shape[d] = n
        return self.sizes.reshape(shape)

    def truncate(self, frontier: Sequence[int]) -> "ChunkAxis":
        """Restrict to keys below a (smaller) frontier."""
        if not self.key_dims or all(frontier[d] >= n for d, n in zip(self.key_dims, self.sizes.shape)):
            return self  # nothing cut: the same axis (immutable)
        idx = tuple(slice(0, frontier[d]) for d in self.key_dims)
        return ChunkAxis._checked(self.key_dims, self.sizes[idx])

    @classmethod
    def _checked(cls, key_dims: tuple[int, ...], sizes: np.ndarray) -> "ChunkAxis":
        """An axis from key dims and extents already checked (a view of another axis' extents)."""
        out = object.__new__(cls)
        out.key_dims, out.sizes, out._table, out._const = key_dims, sizes, None, _UNREAD
        return out

    def __eq__(self, other: object) -> bool:
        if self is other or self.sizes is getattr(other, "sizes", None):  # one array: the rewrites share them
            return isinstance(other, ChunkAxis) and self.key_dims == other.key_dims
        return (
            isinstance(other, ChunkAxis)
            and self.key_dims == other.key_dims
            and self.sizes.shape == other.sizes.shape
            and self.sizes.tobytes() == other.sizes.tobytes()
        )

    def __hash__(self) -> int:
        return hash((self.key_dims, self.sizes.tobytes()))

    def __repr__(self) -> str:
        if not self.key_dims:
            return f"ChunkAxis({int(self.sizes)})"
        return f"ChunkAxis(key_dims={self.key_dims}, sizes={self.sizes.tolist()})"


_UNREAD = object()  # a ``ChunkAxis`` whose ``constant`` is not read yet
_CONSTANT: dict[int, ChunkAxis] = {}  # extent -> its constant axis (``ChunkAxis.const``)


def unify_axes(a: ChunkAxis, b: ChunkAxis, frontier: Sequence[int], what: str) -> ChunkAxis:
    """The common axis of two axes that must agree at every key, else ChunkShapeError."""
    if a == b:
        return a
    da, db = a.dense(frontier), b.dense(frontier)
    bad = np.argwhere(da != db)
    if len(bad):
        k = tuple(bad[0])
        raise ChunkShapeError(f"{what}: chunk extents disagree at key {fmt_key(k)} ({int(da[k])} vs {int(db[k])})")
    return a if len(a.key_dims) <= len(b.key_dims) else b


def infer_axis(sizes_by_key: Mapping[Key, int], frontier: Sequence[int]) -> ChunkAxis:
    """The simplest ChunkAxis that reproduces given per-key extents (keys may be sparse)."""
    keys = list(sizes_by_key)
    arity = len(frontier)
    for r in range(arity + 1):
        for dims in itertools.combinations(range(arity), r):
            table = np.zeros(tuple(frontier[d] for d in dims), dtype=np.int64)
            seen: dict[Key, int] = {}
            ok = True
            for k in keys:
                sub = tuple(k[d] for d in dims)
                v = sizes_by_key[k]
                if seen.setdefault(sub, v) != v:
                    ok = False
                    break
                table[sub] = v
            if ok:
                return ChunkAxis(dims, table)
    raise TRAError("chunk extents are not a function of the key")  # unreachable: all dims work


@dataclass(frozen=True, eq=False)
class RelationType:
    """Metadata of a tensor relation.

    ``keys`` is None for a relation that satisfies continuity (every key below the
    frontier is present); a Filter or ReKey can produce an explicit, sparse key set.
    """

    frontier: tuple[int, ...]
    axes: tuple[ChunkAxis, ...]
    dtype: np.dtype
    backend: str = "numpy"
    keys: frozenset[Key] | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        frontier = self.frontier
        if type(frontier) is not tuple or not all(type(f) is int for f in frontier):
            frontier = tuple(int(f) for f in frontier)
            object.__setattr__(self, "frontier", frontier)
        if type(self.axes) is not tuple:
            object.__setattr__(self, "axes", tuple(self.axes))
        if not isinstance(self.dtype, np.dtype):
            object.__setattr__(self, "dtype", np.dtype(self.dtype))
        if frontier and min(frontier) < 0:
            raise TRAError(f"negative frontier {frontier}")
        for ax in self.axes:
            if not ax.key_dims:  # a constant axis: nothing to match
                continue
            for d in ax.key_dims:
                if d >= len(frontier):
                    raise TRAError(f"chunk axis depends on key dim {d} of a {self.key_arity}-key relation")
            if ax.sizes.shape != tuple([frontier[d] for d in ax.key_dims]):
                raise TRAError(f"chunk axis {ax!r} does not match frontier {frontier}")

    @classmethod
    def from_chunks(cls, chunks: Sequence[Sequence[int]], dtype: Any, backend: str = "numpy") -> "RelationType":
        """The type of an array blocked dask-style: key dim i counts blocks along axis i."""
        chunks = tuple(tuple(int(c) for c in cs) for cs in chunks)
        return cls(
            tuple(len(c) for c in chunks), tuple(ChunkAxis.along(i, c) for i, c in enumerate(chunks)), dtype, backend
        )

    @property
    def key_arity(self) -> int:
        return len(self.frontier)

    @property
    def rank(self) -> int:
        return len(self.axes)

    @property
    def dense(self) -> bool:
        return self.keys is None

    def iter_keys(self) -> Iterator[Key]:
        if self.keys is not None:
            return iter(sorted(self.keys))
        return itertools.product(*(range(f) for f in self.frontier))

    @property
    def n_tuples(self) -> int:
        return len(self.keys) if self.keys is not None else math.prod(self.frontier)

    def chunk_shape(self, key: Sequence[int]) -> tuple[int, ...]:
        return tuple(ax.size_at(key) for ax in self.axes)

    def elements(self) -> int:
        """Total number of array elements over all tuples (exact, from metadata)."""
        if "elements" not in self._cache:
            if self.keys is not None:
                n = sum(math.prod(self.chunk_shape(k)) for k in self.keys)
            else:
                n = _grid_product_sum([ax for ax in self.axes], self.frontier)
            self._cache["elements"] = int(n)
        return self._cache["elements"]

    @property
    def nbytes(self) -> int:
        return self.elements() * self.dtype.itemsize

    def chunk_elements(self) -> np.ndarray:
        """Elements per tuple over the key grid (dense relations)."""
        out = np.ones(self.frontier, dtype=np.int64)
        for ax in self.axes:
            out = out * ax.gridded(len(self.frontier))
        return out

    def array_chunks(self) -> tuple[tuple[int, ...], ...] | None:
        """dask-style chunks when axis i follows key dim i alone (an array relation), else None
        (kept: the array layer asks for them at every operation)."""
        if "array_chunks" not in self._cache:
            self._cache["array_chunks"] = self._array_chunks()
        return self._cache["array_chunks"]

    def _array_chunks(self) -> tuple[tuple[int, ...], ...] | None:
        if self.rank != self.key_arity or self.keys is not None:
            return None
        out = []
        for i, ax in enumerate(self.axes):
            if ax.key_dims == (i,):
                out.append(tuple(ax.sizes.tolist()))
            elif not ax.key_dims:
                out.append((int(ax.sizes),) * self.frontier[i])
            else:
                return None
        return tuple(out)

    def require_continuity(self, consumer: str, producer: str) -> None:
        """Raise IntegrityError naming both operators if the relation has holes."""
        if self.keys is None:
            return
        missing = [k for k in itertools.product(*(range(f) for f in self.frontier)) if k not in self.keys][:5]
        raise IntegrityError(
            f"{consumer}: its input from {producer} breaks continuity: keys "
            f"{', '.join(fmt_key(k) for k in missing)} are missing below frontier {fmt_key(self.frontier)}"
        )

    def identical(self, other: "RelationType") -> bool:
        """Whether ``other`` is written exactly as this type (every axis too): what a constructor
        derives from one it derives from the other."""
        return self is other or (
            self.frontier == other.frontier
            and self.axes == other.axes
            and self.dtype == other.dtype
            and self.backend == other.backend
            and self.keys == other.keys
        )

    def same_as(self, other: "RelationType") -> bool:
        """Whether ``other`` describes the same relation: keys, chunk shapes, dtype and backend
        (types compare by identity otherwise). An axis is compared by its extents, however it
        is written (along a key dim that has one value, or constant)."""
        return (
            self.frontier == other.frontier
            and (
                self.axes == other.axes
                or all(a.simplified() == b.simplified() for a, b in zip(self.axes, other.axes, strict=True))
            )
            and self.dtype == other.dtype
            and self.backend == other.backend
            and self.keys == other.keys
        )

    def with_(self, **changes: Any) -> "RelationType":
        kw: dict[str, Any] = dict(
            frontier=self.frontier, axes=self.axes, dtype=self.dtype, backend=self.backend, keys=self.keys
        )
        kw.update(changes)
        return RelationType(**kw)

    def __repr__(self) -> str:
        keys = "" if self.keys is None else f", {len(self.keys)} keys"
        return (
            f"RelationType(frontier={self.frontier}, chunk_rank={self.rank}, "
            f"dtype={self.dtype}, backend={self.backend}{keys})"
        )


def _grid_product_sum(axes: Sequence[ChunkAxis], frontier: tuple) -> int:
    """sum over the key grid of the product of axis extents, without materialising the grid."""
    dims = [ax.key_dims for ax in axes]
    if all(len(kd) <= 1 for kd in dims) and len({kd for kd in dims if kd}) == sum(1 for kd in dims if kd):
        # each key dim read by one axis at most (an array's usual layout): a product of sums
        covered = {kd[0] for kd in dims if kd}
        product = math.prod(int(ax.sizes.sum()) if ax.key_dims else int(ax.sizes) for ax in axes)
        return product * math.prod(f for d, f in enumerate(frontier) if d not in covered)
    letters = "abcdefghijklmnopqrstuvwxyz"
    operands, subs = [], []
    for ax in axes:
        operands.append(ax.sizes.astype(np.float64))
        subs.append("".join(letters[d] for d in ax.key_dims))
    covered = set().union(*(set(ax.key_dims) for ax in axes))
    extra = math.prod(f for d, f in enumerate(frontier) if d not in covered)
    total = np.einsum(",".join(subs) + "->", *operands) if operands else 1.0
    return int(round(float(total))) * extra

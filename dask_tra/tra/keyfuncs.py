"""Key functions for ReKey and key predicates for Filter.

They are callables with a name for display, plus optional structure that rules can use: a
key map that only selects/permutes dims, or a predicate that reads only some dims. The
functions inside are module-level (with constants bound by ``Bound``: dim lists, lookup
tables), so key maps and predicates pickle and compare by value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from .kernels import Bound


@dataclass(frozen=True)
class KeyMap:
    """key -> key. ``select`` is set when the map only picks dims: ``key -> key[select]``.
    ``copies`` is set when some output dims are input dims unchanged: output dim d is input dim
    ``copies[d]``, or computed where it is None (a rewrite reads a predicate through them)."""

    fn: Callable
    name: str
    select: tuple | None = None
    copies: tuple | None = None
    renumbers: int | None = None  # set by ``renumbering``: the one dim it changes, by a table

    @classmethod
    def renumbering(cls, axis: int, table: Any, arity: int) -> "KeyMap":
        """Key dim ``axis`` renumbered by ``table`` (old index -> new), the other dims copied."""
        copies = tuple(None if d == axis else d for d in range(arity))
        return cls(Bound(replace_dim, axis, table), f"renumber[{axis}]", copies=copies, renumbers=axis)

    def renumbered_at(self, dim: int, arity: int) -> "KeyMap":
        """This renumbering applied to key dim ``dim`` of ``arity``-dim keys."""
        if self.renumbers is None or not isinstance(self.fn, Bound):
            raise ValueError(f"{self} is not a renumbering")
        return KeyMap.renumbering(dim, self.fn.params[1], arity)

    def kept(self) -> tuple:
        """A renumbering's kept indices (old numbers), in their new order."""
        if self.renumbers is None or not isinstance(self.fn, Bound):
            raise ValueError(f"{self} is not a renumbering")
        table = self.fn.params[1]
        return tuple(sorted(table, key=table.__getitem__))

    def copied(self, dims: Iterable[int]) -> frozenset | None:
        """The input dims that output ``dims`` copy (a selected None dim reads 0: no input dim);
        None when one of them is computed, or the map is not known."""
        if self.select is not None:
            return frozenset(self.select[d] for d in dims if self.select[d] is not None)
        if self.copies is None or any(self.copies[d] is None for d in dims):
            return None
        return frozenset(self.copies[d] for d in dims)

    def __call__(self, key: tuple) -> tuple:
        return tuple(int(k) for k in self.fn(key))

    @classmethod
    def selecting(cls, dims: Iterable[int]) -> "KeyMap":
        dims = tuple(int(d) for d in dims)
        return cls(Bound(select_dims, dims), f"key{list(dims)}", dims)

    @classmethod
    def table(cls, table: dict, name: str) -> "KeyMap":
        """The map given by its table {key: new key} (keys as tuples)."""
        return cls(Bound(lookup, table), name)

    @classmethod
    def compose(cls, outer: "KeyMap", inner: "KeyMap") -> "KeyMap":
        """``key -> outer(inner(key))``; a selection when both are."""
        select = None if outer.select is None or inner.select is None else tuple(inner.select[d] for d in outer.select)
        inner_copies = inner.select if inner.select is not None else inner.copies
        outer_copies = outer.select if outer.select is not None else outer.copies
        copies = None
        if inner_copies is not None and outer_copies is not None:
            copies = tuple(None if d is None else inner_copies[d] for d in outer_copies)
        return cls(Bound(composed, outer, inner), f"{outer}∘{inner}", select, copies)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class KeyPred:
    """key -> bool. ``dims`` lists the key dims it reads (None: unknown, assume all)."""

    fn: Callable
    name: str
    dims: frozenset | None = None

    def __call__(self, key: tuple) -> bool:
        return bool(self.fn(key))

    @classmethod
    def blocks_in(cls, dim: int, blocks: frozenset, name: str) -> "KeyPred":
        """``key[dim] in blocks``."""
        return cls(Bound(dims_in, (dim,), frozenset(blocks)), name, frozenset({dim}))

    def block_set(self) -> tuple | None:
        """(dim, blocks) when this predicate is ``key[dim] in blocks``, else None."""
        found = self.tuple_set()
        return (found[0][0], found[1]) if found is not None and len(found[0]) == 1 else None

    def tuple_set(self) -> tuple | None:
        """(dims, allowed) when this predicate is ``dims_in(dims, allowed)`` over a frozenset (one
        dim: ``key[dim] in allowed``; several: ``tuple(key[d] for d in dims) in allowed``)."""
        fn = self.fn
        if isinstance(fn, Bound) and fn.fn is dims_in and isinstance(fn.params[1], frozenset):
            return tuple(fn.params[0]), fn.params[1]
        return None

    @classmethod
    def conjunction(cls, first: "KeyPred", then: "KeyPred") -> "KeyPred":
        """``then(k) and first(k)``: ``then`` is tested first, as when it was the inner filter.
        Block sets are kept in one form, one per dim in dim order (``canonical``), so that equal
        slices reached by different paths compare equal."""
        merged = cls.canonical(then.conjuncts() + first.conjuncts())
        if merged is not None:
            return merged
        dims = None if first.dims is None or then.dims is None else first.dims | then.dims
        return cls(Bound(both, first, then), f"{first}∧{then}", dims)

    @classmethod
    def canonical(cls, parts: Sequence["KeyPred"]) -> "KeyPred | None":
        """The conjunction of ``parts`` when each is a block set: one block set per dim (the
        parts on a dim intersected), in dim order; None when some part is another predicate."""
        by_dim: dict = {}
        for p in parts:
            one = p.block_set()
            if one is None:
                return None
            by_dim.setdefault(one[0], []).append((one[1], p.name))
        out: KeyPred | None = None
        dims: frozenset = frozenset()
        for d in sorted(by_dim):
            sets = by_dim[d]
            kept = frozenset.intersection(*(b for b, _ in sets))
            part = cls.blocks_in(d, kept, sets[0][1] if len(sets) == 1 else f"inBlocks{sorted(kept)}")
            dims |= {d}
            out = part if out is None else cls(Bound(both, part, out), f"{out}∧{part}", dims)
        return out

    def read_dims(self, source: Callable[[int], int | None]) -> "KeyPred | None":
        """This predicate read where dim d of the key it tests is dim ``source(d)`` of another
        key, in closed form, when it is a conjunction of block sets, or one ``tuple_set``, and
        every dim it reads has a source; else None."""
        found = self.tuple_set()
        if found is not None and len(found[0]) > 1:
            read = tuple(source(d) for d in found[0])
            if any(s is None for s in read):
                return None
            return KeyPred(Bound(dims_in, read, found[1]), self.name, frozenset(read))
        parts = []
        for p in self.conjuncts():
            one = p.block_set()
            s = None if one is None else source(one[0])
            if s is None:
                return None
            parts.append(KeyPred.blocks_in(s, one[1], p.name))
        return KeyPred.canonical(parts)

    def conjuncts(self) -> tuple:
        """The predicates this one is the conjunction of, in the order they are tested (itself
        alone when it is no conjunction)."""
        if isinstance(self.fn, Bound) and self.fn.fn is both:
            first, then = self.fn.params
            return then.conjuncts() + first.conjuncts()
        return (self,)

    @classmethod
    def reindexed(cls, pred: "KeyPred", source: dict, arity: int) -> "KeyPred":
        """``pred`` read through a dim map: it sees a key of ``arity`` dims whose dim d is
        ``key[source[d]]``. Dims outside ``source`` read 0, so ``pred`` must not read them."""
        direct = pred.read_dims(source.get)
        if direct is not None:
            return direct
        dims = None if pred.dims is None else frozenset(source[d] for d in pred.dims)
        return cls(Bound(read_through, pred, source, arity), pred.name, dims)

    def __str__(self) -> str:
        return self.name


# ---------------------------------------------------------------- the functions inside


def select_dims(dims: Sequence[int], key: tuple) -> tuple:
    """``key[dims]``; a None dim gives 0 (a new dim of extent 1)."""
    return tuple(0 if d is None else key[d] for d in dims)


def lookup(table: dict, key: tuple) -> tuple:
    """``table[key]``."""
    return table[tuple(key)]


def replace_dim(axis: int, table: Any, key: tuple) -> tuple:
    """``key`` with dim ``axis`` replaced by ``table[key[axis]]``."""
    return key[:axis] + (table[key[axis]],) + key[axis + 1 :]


def composed(outer: KeyMap, inner: KeyMap, key: tuple) -> tuple:
    return outer(inner(key))


def dims_equal(pairs: Iterable[tuple[int, int]], key: tuple) -> bool:
    """``key[d] == key[e]`` for every (d, e) in ``pairs``."""
    return all(key[d] == key[e] for d, e in pairs)


def dims_in(dims: Sequence[int], allowed: Any, key: tuple) -> bool:
    """``key[dims]`` (one dim: ``key[dim]``) is one of ``allowed``."""
    return (key[dims[0]] if len(dims) == 1 else tuple(key[d] for d in dims)) in allowed


def both(first: KeyPred, then: KeyPred, key: tuple) -> bool:
    return then(key) and first(key)


def read_through(pred: KeyPred, source: dict, arity: int, key: tuple) -> bool:
    full = [0] * arity
    for d, s in source.items():
        full[d] = key[s]
    return pred(tuple(full))


is_eq = KeyPred(Bound(dims_equal, ((0, 1),)), "isEq", frozenset({0, 1}))
get_key0 = KeyMap.selecting((0,))

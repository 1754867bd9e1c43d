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
    def conjunction(cls, first: "KeyPred", then: "KeyPred") -> "KeyPred":
        """``then(k) and first(k)``: ``then`` is tested first, as when it was the inner filter."""
        dims = None if first.dims is None or then.dims is None else first.dims | then.dims
        return cls(Bound(both, first, then), f"{first}∧{then}", dims)

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

"""Key functions for ReKey and key predicates for Filter.

They are plain callables with a name for display, plus optional structure that
rules can use: a key map that only selects/permutes dims, or a predicate that
reads only some dims.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class KeyMap:
    """key -> key. ``select`` is set when the map only picks dims: ``key -> key[select]``."""

    fn: Callable
    name: str
    select: tuple | None = None

    def __call__(self, key):
        return tuple(int(k) for k in self.fn(key))

    @classmethod
    def selecting(cls, dims) -> "KeyMap":
        dims = tuple(int(d) for d in dims)
        return cls(lambda k: tuple(k[d] for d in dims), f"key{list(dims)}", dims)

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class KeyPred:
    """key -> bool. ``dims`` lists the key dims it reads (None: unknown, assume all)."""

    fn: Callable
    name: str
    dims: frozenset | None = None

    def __call__(self, key) -> bool:
        return bool(self.fn(key))

    def __str__(self):
        return self.name


is_eq = KeyPred(lambda k: k[0] == k[1], "isEq", frozenset({0, 1}))
get_key0 = KeyMap.selecting((0,))

"""Errors raised by the TRA layer. Each names the operator and, where one exists, the key."""

from __future__ import annotations

from typing import Any, Iterable


class TRAError(ValueError):
    """An expression is ill-formed: wrong arity, extents that disagree, bad parameters."""


class IntegrityError(TRAError):
    """A tensor relation broke key uniqueness or continuity (no holes below the frontier)."""


class ChunkShapeError(TRAError):
    """A chunk's shape disagrees with what the metadata says it must be."""


class KernelError(RuntimeError):
    """A kernel raised while an operator applied it to a chunk (the cause is chained)."""


def fmt_key(key: Iterable[Any]) -> str:
    """Render a key the way the papers do: <0,1,0>."""
    return "<" + ",".join(str(int(k)) for k in key) + ">"

"""What a source's task can be besides a computation: a chunk given as data, and the one
identity function (copies, keeps and data tasks all use it)."""

from __future__ import annotations

from typing import Any


def identity(x: Any) -> Any:
    """The value itself."""
    return x


class Data(tuple):
    """A source's task for a chunk it holds as data: the task tuple ``(identity, chunk)``,
    marked by its type, so emission can put the chunk in the graph as data (a ``DataNode``)
    and anything running task tuples still gets the chunk."""

    __slots__ = ()

    def __new__(cls, chunk: Any) -> Data:
        return super().__new__(cls, (identity, chunk))

    @property
    def value(self) -> Any:
        return self[1]

    def __getnewargs__(self) -> tuple[Any]:
        return (self[1],)


__all__ = ["identity", "Data"]

"""RelArray: a chunked array held as a tensor relation, with a lazy TRA expression behind it."""

from __future__ import annotations

import math

from ..dask.collection import DaskCollection
from ..dask.sources import PersistedSource, fresh_name
from ..tra import TRAError
from .methods import ArrayMethods


class RelArray(ArrayMethods, DaskCollection):
    """A lazy blocked array. ``expr`` is its TRA expression; ``sources`` bind the expression's
    inputs (by name) to data. Operations build new expressions; nothing runs until compute."""

    __array_priority__ = 20

    def __init__(self, expr, sources: dict, name: str | None = None):
        chunks = expr.type.array_chunks()
        if chunks is None:
            raise TRAError(f"{expr.describe()} does not hold an array (chunk axis i must follow key dim i)")
        self.expr = expr
        needed = {n.name for n in expr.walk() if not n.children and hasattr(n, "name")}
        self.sources = {k: v for k, v in sources.items() if k in needed}
        self.name = name or fresh_name("tra-output")
        self.chunks = chunks
        self._plans = {}
        self._last_explain = None

    @property
    def shape(self):
        return tuple(sum(c) for c in self.chunks)

    @property
    def dtype(self):
        return self.expr.type.dtype

    @property
    def ndim(self):
        return len(self.chunks)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def numblocks(self):
        return tuple(len(c) for c in self.chunks)

    @property
    def npartitions(self):
        return math.prod(self.numblocks)

    def explain(self, sites=None):
        """The plan report: chosen strategies, candidates with predicted bytes, peak memory,
        and bytes measured if the array was computed inside ``dask_tra.diagnostics.measure()``."""
        if sites is None and self._last_explain is not None:
            return self._last_explain
        return self.planned(sites)[0].explain

    @classmethod
    def _from_persisted(cls, dsk, type_, name, device=None, lineage=None, rename=None):
        futures = {k: dsk[(name,) + k] for k in type_.iter_keys()}
        src = PersistedSource(type_, futures, lineage=lineage)
        src.device = device  # where the persisted chunks are (RelArray.device)
        return cls(src.input, {src.input.name: src}, name=name)

    def __repr__(self):
        ops = sum(1 for n in self.expr.walk() if n.children)
        return (
            f"dask_tra.RelArray<{self.name}, shape={self.shape}, dtype={self.dtype}, "
            f"chunksize={tuple(max(c) if c else 0 for c in self.chunks)}, tra_ops={ops}>"
        )


__all__ = ["RelArray"]

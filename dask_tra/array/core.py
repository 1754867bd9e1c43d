"""RelArray: a chunked array held as a tensor relation, with a lazy TRA expression behind it."""

from __future__ import annotations

import math

from dask.array.core import PerformanceWarning  # noqa: F401 (dask's class, as dask.array.core has it)

from ..runtime.collection import DaskCollection
from ..runtime.sources import DaskSource, PersistedSource
from ..tra import TRAError
from .methods import ArrayMethods
from .naming import array_name
from .planview import explain_of
from .zerofill import assemble_held, densify, fill_missing


class RelArray(ArrayMethods, DaskCollection):
    """A lazy blocked array (``dask_tra.array.Array``), as dask.array's ``Array``.

    ``sparse_expr`` is its TRA expression (block-sparse: it may hold only some keys, a missing
    block being zeros; what is planned and computed); ``expr`` its dense view (the same over
    zero-filled inputs; ``zerofill``), what operations that cannot skip missing blocks build on.
    ``sources`` bind the inputs of both (by name) to data. Operations build new expressions;
    nothing runs until compute.

    Parameters
    ----------
    expr : tra.Expr or dask graph
        The TRA expression of the array's blocks, or, as dask.array's constructor takes them,
        a dask graph (``Array(graph, name, chunks, dtype=...)``), wrapped lazily.
    sources : dict
        Input name -> its data (``runtime.sources.Source``); with a dask graph, its name.
    name : str, optional
        The array's name (its result keys' first element); by default a token of what it
        computes, so equal pipelines on equal data have equal names.
    **dask_array_args
        With a dask graph: dask.array's ``chunks``, ``dtype``, ``meta``, ``shape``.

    Build one through ``from_array``, ``asarray``, ``zeros``, ``random`` and the other
    constructors, or an operation on arrays; computing it gives a NumPy (or CuPy, torch) array.

    Examples
    --------
    >>> x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
    >>> y = (x + x.T[:4, :3].T).sum(axis=0)
    >>> y.shape, y.chunks
    ((4,), ((2, 2),))
    >>> y.compute()
    array([24., 30., 36., 42.])
    """

    __array_priority__ = 20

    def __init__(self, expr, sources: dict, name: str | None = None, **dask_array_args):
        if not hasattr(expr, "type"):  # dask.array's constructor, Array(graph, name, chunks, dtype, meta, shape)
            self.__dict__.update(_from_dask_graph(expr, sources, name, dask_array_args).__dict__)
            return
        t = expr.type
        chunks = (t if t.keys is None else t.with_(keys=None)).array_chunks()
        if chunks is None:
            raise TRAError(f"{expr.describe()} does not hold an array (chunk axis i must follow key dim i)")
        self._dense, extra = densify(expr, sources)
        self.sparse_expr = expr
        self.sources = _needed({**sources, **extra}, expr, self.expr)
        self.name = name or array_name(expr)
        self._chunk_sizes = chunks
        self._plans = {}
        self._last_entry = None

    @property
    def expr(self):
        return self._dense

    @expr.setter
    def expr(self, value):
        """A new expression replaces both views (``__setitem__`` assigns a dense one)."""
        self._dense = self.sparse_expr = value

    @property
    def nnzblocks(self) -> int:
        """Blocks held (the others are zeros), from metadata."""
        return self.sparse_expr.type.n_tuples

    @property
    def roots(self) -> tuple:
        """What is planned: the block-sparse expression (missing blocks are skipped)."""
        return (self.sparse_expr,)

    def _graph_now(self):
        """The plan's graph; a block-sparse array's missing blocks are added as zero tasks (for
        ``to_dask``, ``to_delayed``), which compute and persist do not ask for."""
        graph = super()._graph_now()
        t = self.sparse_expr.type
        return graph if t.keys is None else fill_missing(graph, self.name, t)

    def __dask_keys__(self):
        """A block-sparse array's held blocks, flat (compute assembles them with zeros)."""
        t = self.sparse_expr.type
        if t.keys is None:
            return super().__dask_keys__()
        return [(self.name,) + k for k in sorted(t.keys)]

    def _finalizer(self) -> tuple:
        t = self.sparse_expr.type
        if t.keys is None:
            return super()._finalizer()
        return assemble_held, (sorted(t.keys), self.chunks, self.dtype, t.backend)

    def _rebuilder(self) -> tuple:
        rebuild = super()._rebuilder()
        if self.sparse_expr.type.keys is None:
            return rebuild
        return rebuild[0], (self.sparse_expr.type,) + rebuild[1][1:]  # persisted block-sparse

    @property
    def chunks(self):
        return self._chunk_sizes

    @chunks.setter
    def chunks(self, value):
        """dask.array's chunks are read-only: a new chunking is a new array (``rechunk``)."""
        raise TypeError(
            "Can not set chunks directly\n\nPlease use the rechunk method instead:\n"
            f"  x.rechunk({value})\n\nIf trying to avoid unknown chunks, use\n  x.compute_chunk_sizes()"
        )

    @property
    def _name(self):
        """dask.array's ``_name``: the array's name (its result keys' first element)."""
        return self.name

    @_name.setter
    def _name(self, value):
        self.name = value

    @property
    def shape(self):
        chunks = self._chunk_sizes
        found = self.__dict__.get("_shape")
        if found is None or found[0] is not chunks:  # kept with the chunks it was summed from
            found = self.__dict__["_shape"] = (chunks, tuple(sum(c) for c in chunks))
        return found[1]

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

    def explain(self, sites=None, detail=None, full=None):
        """The plan report: chosen strategies, candidates with predicted bytes, peak memory,
        and bytes measured if the array was computed inside ``dask_tra.diagnostics.measure()``.
        ``detail="algebra"``: in the algebra's terms; ``full=True``: every step and alternative."""
        return explain_of(self, sites, detail, full)

    @classmethod
    def _from_persisted(cls, dsk, type_, name, device=None, lineage=None, rename=None):
        futures = {k: dsk[(name,) + k] for k in type_.iter_keys()}
        src = PersistedSource(type_, futures, lineage=lineage)
        src.device = device  # where the persisted chunks are (RelArray.device)
        return cls(src.input, {src.input.name: src}, name=name)

    _repr_name = "dask_tra.RelArray"  # where users find the class (a subclass names its own)

    def __repr__(self):
        ops = sum(1 for n in self.expr.walk() if n.children)
        meta = type(self._meta)
        return (
            f"{self._repr_name}<{self.name}, shape={self.shape}, dtype={self.dtype}, "
            f"chunksize={tuple(max(c) if c else 0 for c in self.chunks)}, "
            f"chunktype={meta.__module__.split('.')[0]}.{meta.__name__}, tra_ops={ops}>"
        )


__all__ = ["RelArray"]


def _needed(sources: dict, expr, dense) -> dict:
    """The ``sources`` that ``expr`` and its dense view read, from the input names kept on their
    nodes (no walk: an operation costs the same however deep its expression)."""
    needed = expr.input_names if dense is expr else expr.input_names | dense.input_names
    return sources if sources.keys() <= needed else {k: v for k, v in sources.items() if k in needed}


def _from_dask_graph(graph, name, chunks, kwargs) -> RelArray:
    """``da.Array(graph, name, chunks, dtype=, meta=, shape=)`` as dask.array builds it from a
    task graph, wrapped lazily (as ``from_dask``: its blocks are the graph's keys, and the array
    keeps a name of its own, so its result keys never collide with the graph's)."""
    import dask.array as dask_array

    if chunks is None:
        chunks = kwargs.pop("chunks", None)
    x = dask_array.Array(graph, name, chunks, **kwargs)
    if any(c != c for cs in x.chunks for c in cs):
        raise ValueError("da.Array needs known chunk sizes")
    src = DaskSource(x)
    return RelArray(src.input, {src.input.name: src})

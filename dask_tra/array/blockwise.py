"""The blockwise family: a user's block function as an opaque TRA kernel.

``blockwise(func, out_ind, x, ind_x, y, ind_y, ...)`` lowers like an elementwise operation
whose kernel is ``func``: every array is rechunked so that blocks line up along each index
(dask's ``unify_chunks``: the common refinement; an index an array does not keep in the
output is concatenated into one block, as with dask's ``concatenate=True``), ReKeyed to its
loop indices (an index with one block of extent 1 is broadcast: its key dim is dropped), and
the arrays are joined on their common indices. One array: ``Transform(BlockFunction)``; two:
``Join(..., BlockFunction)``; more: each Join but the last bundles its blocks into a tuple
(``Bundle``), the last calls the function. ``block_info``/``block_id`` reach the function
through one more Join with a relation holding each block's location. The output chunks are
declared (dask's ``chunks=``/``adjust_chunks``/``new_axes``), so the optimizer places the
kernel like any other; a block of another shape is an error naming the block.

Built on it: ``map_blocks`` (dask's index conventions), ``map_overlap`` (halos are a gather
from the neighbouring blocks, boundaries an index map or constant padding; then trimmed by a
gather), ``apply_along_axis``; ``.blocks`` and ``.vindex`` are gathers (``apply_gufunc``:
``gufuncs.py``).
"""

from __future__ import annotations

import copy
import inspect
import math
from numbers import Integral

import numpy as np
from dask.utils import derived_from

from .. import backends
from ..runtime.sources import Ref, Source, fresh_name, is_future
from ..tra import Input, Join, RelationType, Transform
from ..tra.kernels import Kernel
from ..tra.relation import ChunkAxis
from .relations import (
    axis_of,
    check_dtype,
    is_array,
    offsets,
    param_relation,
    rekey,
    wrap,
)

# ---------------------------------------------------------------- kernels


class Bundle(tuple):
    """Several blocks travelling together between the Joins of a blockwise call."""

    @property
    def shape(self):
        """The first block's (what the reference executor checks a Join's chunk by)."""
        return self[0].shape


class BundleBlocks(Kernel):
    """Join kernel: the blocks so far (a Bundle, or one block) and the next one, bundled."""

    arity = 2
    name = "bundle"

    def __call__(self, a, b):
        return Bundle((tuple(a) if isinstance(a, Bundle) else (a,)) + (b,))

    def out_axes(self, frontier, a, b):
        return tuple(a)

    def out_dtype(self, *dtypes):
        return np.result_type(*dtypes)


class BlockFunction(Kernel):
    """A user's block function. Its inputs are the array blocks (maybe bundled) and, with
    ``info``, the block's location; ``template`` holds the call's arguments with ``None`` where
    an array block goes (positions ``slots``). ``out`` is the declared output: (key dim or None,
    block sizes) per output axis, in the key numbering of the operator that applies it."""

    def __init__(self, func, name, template, slots, kwargs, out, dtype, arity, info=None, backend=None):
        self.func, self.name, self.arity, self.backend = func, name, arity, backend
        self.template, self.slots, self.kwargs = tuple(template), tuple(slots), dict(kwargs)
        self.out, self.dtype, self.info = tuple(out), np.dtype(dtype), info

    def __call__(self, *chunks):
        chunks = list(chunks)
        loc = chunks.pop() if self.info is not None else None
        blocks = []
        for c in chunks:
            blocks.extend(c if isinstance(c, Bundle) else (c,))
        args = list(self.template)
        for i, b in zip(self.slots, blocks):
            args[i] = b
        kwargs = dict(self.kwargs)
        if loc is not None:
            kwargs.update(self.info.keywords(tuple(int(v) for v in np.asarray(loc).ravel()), self.dtype))
        try:
            out = self.func(*args, **kwargs)
        except TypeError as e:  # NumPy's dispatch found no implementation for a chunk type
            if not str(e).startswith("no implementation found for"):
                raise
            raise backends.UnsupportedOperation(f"{self.name} on these chunks: {e}") from None
        return self._checked(out, loc)

    def _checked(self, out, loc):
        b = backends.backend_of(out) if hasattr(out, "shape") else backends.NUMPY
        if not hasattr(out, "shape"):
            out = np.asarray(out)
        if b is backends.NUMPY:
            out = out if isinstance(out, np.ma.MaskedArray) else np.asarray(out)  # a mask is kept
            if out.dtype != self.dtype:
                out = out.astype(self.dtype)
        elif backends.dtype_of(out) != self.dtype:
            out = b.coerce(out, self.dtype)
        if out.ndim != len(self.out):
            raise ValueError(
                f"Dimension mismatch: {self.name}: the function returned a block of {out.ndim} dimensions, "
                f"expected {len(self.out)} (pass drop_axis/new_axis/chunks)"
            )
        return out

    def out_axes(self, frontier, *in_axes):
        return tuple(ChunkAxis.const(sizes[0]) if d is None else ChunkAxis.along(d, sizes) for d, sizes in self.out)

    def restricted(self, dim, kept):
        """The declared output sizes along key dim ``dim`` cut to the blocks kept (``block_info``
        reads a block's place from its parameter chunk, which keeps it)."""
        out = tuple((d, tuple(sizes[i] for i in kept) if d == dim else sizes) for d, sizes in self.out)
        if out == self.out:
            return self
        new = copy.copy(self)
        new.out = out
        return new

    def out_dtype(self, *dtypes):
        return self.dtype

    def out_backend(self, *in_backends):
        return self.backend or super().out_backend(*in_backends)


class BlockInfo:
    """What ``block_info``/``block_id`` tell a block function, from the block's location (one
    entry per key dim of the operator applying it)."""

    def __init__(self, dims, out_ind, out_chunks, arrays, want_info, want_id):
        self.dims, self.out_ind = tuple(dims), tuple(out_ind)
        self.out_chunks = tuple(out_chunks)
        self.arrays = tuple(arrays)  # (arg position, shape, chunks, index letters)
        self.want_info, self.want_id = want_info, want_id

    def keywords(self, loc, dtype):
        at = {l: loc[i] for i, l in enumerate(self.dims)}
        out_loc = tuple(at.get(l, 0) for l in self.out_ind)
        kw = {}
        if self.want_id:
            kw["block_id"] = out_loc
        if self.want_info:
            info = {}
            for pos, shape, chunks, ind in self.arrays:
                cl = tuple(at.get(l, 0) if len(c) > 1 else 0 for l, c in zip(ind, chunks))
                info[pos] = {
                    "shape": shape,
                    "num-chunks": tuple(len(c) for c in chunks),
                    "array-location": _locations(chunks, cl),
                    "chunk-location": cl,
                }
            out_shape = tuple(sum(c) for c in self.out_chunks)
            info[None] = {
                "shape": out_shape,
                "num-chunks": tuple(len(c) for c in self.out_chunks),
                "array-location": _locations(self.out_chunks, out_loc),
                "chunk-location": out_loc,
                "chunk-shape": tuple(c[i] for c, i in zip(self.out_chunks, out_loc)),
                "dtype": dtype,
            }
            kw["block_info"] = info
        return kw


def _locations(chunks, loc):
    out = []
    for c, i in zip(chunks, loc):
        start = int(sum(c[:i]))
        out.append((start, start + int(c[i])))
    return out


# ---------------------------------------------------------------- blockwise


class DelayedSource(Source):
    """One block: the value of a ``dask.delayed`` object (its graph joins the plan's): the
    source of ``from_delayed`` (io.py) and of a Delayed argument of a block function."""

    def __init__(self, value, shape, dtype, name=None, backend="numpy"):
        self.value = value
        self.graph = dict(value.__dask_graph__())
        t = RelationType.from_chunks(tuple((int(s),) for s in shape), dtype, backend)
        self.input = Input(name or fresh_name("from-delayed"), t)

    def task(self, key):
        return Ref(self.value.key)

    def chunk(self, key):
        # a graph holding Futures (``from_delayed(future)``) is computed where they are
        held = any(is_future(v) for v in self.graph.values())
        return self.value.compute(scheduler=None if held else "sync")

    def held_keys(self):
        return {self.value.key: (0,) * len(self.type.frontier)}


class Whole:
    """A value passed whole to block functions (a Delayed argument), as a 0-d block: what the
    reference executor, which checks block shapes, holds; the block function gets ``value``."""

    shape = ()

    def __init__(self, value):
        self.value = value


class DelayedArgument(DelayedSource):
    """A ``dask.delayed`` argument of a block function: a 0-d input whose block is its value,
    whatever it is (the declared dtype is a placeholder)."""

    def __init__(self, value):
        from dask.base import tokenize

        # named by the Delayed's key (its value's name in dask): the same argument, the same keys
        super().__init__(value, (), np.dtype(np.float64), f"delayed-argument-{tokenize(value.key)}")

    def chunk(self, key):
        return Whole(super().chunk(key))


class _Lazy:
    """Where the ``i``-th lazy array argument goes, inside a non-array argument or keyword."""

    def __init__(self, i):
        self.i = i


def _is_lazy(v) -> bool:
    return is_array(v) or hasattr(v, "__dask_graph__")


def _swap(v, fn):
    """``v`` with every lazy array inside it (lists, tuples, dict values) replaced by ``fn(v)``."""
    if _is_lazy(v) or isinstance(v, _Lazy):
        return fn(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_swap(u, fn) for u in v)
    if isinstance(v, dict):
        return {k: _swap(u, fn) for k, u in v.items()}
    return v


class _WithLazyArgs:
    """``func`` called with its lazy (RelArray or dask) arguments back in place: they arrive whole
    as the last ``n`` positional arguments (dask computes such arguments and passes them whole)."""

    def __init__(self, func, n):
        self.func, self.n, self.__wrapped__ = func, n, func
        self.__name__ = getattr(func, "__name__", "func")

    def __call__(self, *args, **kwargs):
        args, lazy = args[: len(args) - self.n], args[len(args) - self.n :]

        def put(v):
            return lazy[v.i].value if isinstance(lazy[v.i], Whole) else lazy[v.i]

        return self.func(*_swap(list(args), put), **_swap(kwargs, put))


def _lift_lazy(func, args, kwargs):
    """dask's semantics for a lazy array inside a non-array argument or keyword (``fargs=(lhs,)``):
    it is passed whole to every call. It becomes one more array argument whose indices are in no
    output, so it is made one block and joined with every block (what the optimizer broadcasts)."""
    lifted = []

    def take(v):
        lifted.append(v)
        return _Lazy(len(lifted) - 1)

    plain = [v if ind is not None else _swap(v, take) for v, ind in zip(args[::2], args[1::2])]
    kwargs = _swap(kwargs, take)
    if not lifted:
        return func, args, kwargs
    from .creation import asarray as _asarray

    out = [x for pair in zip(plain, args[1::2]) for x in pair]
    for k, v in enumerate(lifted):
        v = _delayed_value(v) if is_delayed(v) else _asarray(v)
        out += [v, tuple(f"_whole{k}_{d}" for d in range(v.ndim))]
    return _WithLazyArgs(func, len(lifted)), tuple(out), kwargs


def is_delayed(v) -> bool:
    """A ``dask.delayed`` object (not an array collection)."""
    from dask.delayed import Delayed

    return isinstance(v, Delayed)


def _delayed_value(v):
    """A Delayed argument as dask passes it: its computed value, whole, to every call. It is a
    0-d one-block input bound to the Delayed's key (its graph joins the plan's); the block (any
    Python object) reaches the function untouched."""
    from .relations import wrap_source

    return wrap_source(DelayedArgument(v))


def _takes(func, word):
    try:
        return word in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _common_chunks(all_chunks):
    """dask's unify_chunks along one index: the common refinement of the chunkings."""
    from .rechunk import common_chunks

    return common_chunks(all_chunks)


def blockwise(func, out_ind, *args, **kwargs):
    """``func`` applied to aligned blocks, as dask.array's ``blockwise``.

    ``args`` alternate values and their index strings (``None`` for a value passed as is); the
    output's blocks are laid out by ``out_ind``. An index that is in an input but not in
    ``out_ind`` is contracted: its blocks are passed together (as a list, or concatenated with
    ``concatenate=True``). See the module doc for how it is lowered to TRA operators.

    Parameters
    ----------
    func : callable
        Applied to the blocks of each output block.
    out_ind : iterable of hashable
        The output's index, one entry per output axis (e.g. ``"ij"``).
    *args : array_like, index, ...
        Pairs of an argument and its index (a string or tuple, one entry per axis; ``None`` for
        an argument passed whole).
    name, token : str, optional
        The output's name, or a prefix for it.
    dtype : dtype, optional
        The output's dtype (inferred by calling ``func`` on small arrays if not given).
    adjust_chunks : dict, optional
        ``{index: int, tuple or callable}``: the output's block sizes along that index.
    new_axes : dict, optional
        ``{index: size or sizes}`` for output indices no input has.
    align_arrays : bool, optional
        Rechunk the inputs to common chunks along each index (default True).
    concatenate : bool, optional
        Concatenate the blocks of a contracted index before calling ``func``.
    meta : array, optional
        An empty array of the output's type and dtype.
    **kwargs
        Passed to ``func``.

    Returns
    -------
    RelArray
        The lazy result.

    See Also
    --------
    map_blocks

    Examples
    --------
    >>> x = da.arange(4, chunks=2)
    >>> y = da.ones(4, chunks=2)
    >>> da.blockwise(np.add, "i", x, "i", y, "i", dtype=float).compute()
    array([1., 2., 3., 4.])
    >>> z = da.blockwise(np.outer, "ij", x, "i", y, "j", dtype=float)
    >>> z.shape
    (4, 4)
    """
    if len(set(out_ind)) != len(out_ind):  # as dask.array (gufuncs' repeated core dims: _blockwise)
        raise ValueError(f"blockwise: repeated index in the output {tuple(out_ind)}")
    return _blockwise(func, out_ind, *args, **kwargs)


def _blockwise(
    func,
    out_ind,
    *args,
    name=None,
    token=None,
    dtype=None,
    adjust_chunks=None,
    new_axes=None,
    align_arrays=True,
    concatenate=None,
    meta=None,
    **kwargs,
):
    """dask.array.blockwise: ``func`` applied to aligned blocks; ``args`` alternate values and
    their index (``None`` for a value passed as is). See the module doc for the lowering."""
    from .creation import asarray as _asarray
    from .rechunk import rechunk_axes

    if len(args) % 2:
        raise ValueError("blockwise: arguments must alternate arrays and their indices")
    out_ind = tuple(out_ind)
    new_axes = dict(new_axes or {})
    if all(ind is None for ind in args[1::2]):  # no array: the blocks are laid out by new_axes alone
        missing = [l for l in out_ind if l not in new_axes]
        if missing:
            raise ValueError(f"blockwise: unknown dimension {missing[0]!r}: no array argument and not in new_axes")
        from .creation import empty

        given = {l: (int(c),) if isinstance(c, Integral) else tuple(int(v) for v in c) for l, c in new_axes.items()}
        layout = tuple(given[l] for l in out_ind)
        placeholder = empty(tuple(sum(c) for c in layout), dtype=bool, chunks=layout)
        return blockwise(
            _WithoutPlaceholder(func), out_ind, placeholder, out_ind, *args, name=name, token=token, dtype=dtype,
            adjust_chunks=adjust_chunks, align_arrays=align_arrays, concatenate=concatenate, meta=meta, **kwargs,
        )  # fmt: skip
    func, args, kwargs = _lift_lazy(func, args, kwargs)
    pairs = []
    for value, ind in zip(args[::2], args[1::2]):
        if ind is None:
            pairs.append((value, None))
            continue
        a = _asarray(value)
        ind = tuple(ind)
        if len(ind) != a.ndim:
            raise ValueError(f"blockwise: index {ind} has {len(ind)} entries for an array of {a.ndim} dimensions")
        if len(set(ind)) != len(ind):
            raise NotImplementedError(f"blockwise: a repeated index in one array ({ind}) is not supported")
        pairs.append((a, ind))
    arrays = [(i, a, ind) for i, (a, ind) in enumerate(pairs) if ind is not None]
    if not arrays:
        raise ValueError("blockwise needs at least one array argument")
    unified, chunks, positional = _resolve_indices(arrays, out_ind, align_arrays)
    for l in unified:
        whole = isinstance(l, str) and l.startswith("_whole")
        if l not in out_ind and concatenate is False and not whole and any(len(c) > 1 for c in chunks[l]):
            raise NotImplementedError(
                f"blockwise: index {l!r} is contracted over several blocks; pass concatenate=True"
            )
    for l in out_ind:
        if l not in unified and l not in new_axes:
            if any(l in ind for _, _, ind in arrays):
                unified[l] = (1,)  # every array broadcasts along it
            else:
                raise ValueError(
                    f"blockwise: unknown dimension {l!r} in the output index: in no input array and not in new_axes"
                )
    parts, extra, infos, sources = [], {}, [], []
    for pos, a, ind in arrays:
        target = {}
        for d, l in enumerate(ind):
            if l not in out_ind:
                target[d] = (a.shape[d],)  # concatenated (concatenate=True), whatever the others' extent
            elif a.shape[d] == 1 and len(a.chunks[d]) == 1:
                continue  # broadcast
            elif l in positional:
                if len(a.chunks[d]) > 1:  # its own blocks, by position; one block: passed to every call
                    target[d] = tuple(a.chunks[d])
            elif l in unified:
                target[d] = unified[l]
        r = rechunk_axes(a, target)
        kept = [d for d, l in enumerate(ind) if l in out_ind and len(unified[l]) > 1 and d in target]
        parts.append((rekey(r.expr, kept), [ind[d] for d in kept]))
        extra.update(r.sources)
        sources.append(a)
        infos.append((pos, a.shape, tuple(target.get(d, c) for d, c in enumerate(a.chunks)), ind))
    out_chunks = []
    for l in out_ind:
        c = unified[l] if l not in new_axes else _new_axis_chunks(new_axes[l])
        if adjust_chunks and l in adjust_chunks:
            c = _adjusted(adjust_chunks[l], c)
        out_chunks.append(tuple(int(v) for v in c))
    out_chunks = tuple(out_chunks)
    template = [a if ind is None else None for a, ind in pairs]
    slots = [pos for pos, _, _ in arrays]
    out_backend = None  # the chunk library of the output: the inputs' unless meta or the probe tells
    if meta is not None and hasattr(meta, "dtype"):
        dtype = meta.dtype if dtype is None else dtype
        out_backend = backends.backend_of_type(meta) if hasattr(meta, "shape") else None
    else:
        probed = _infer_meta(func, template, slots, [a for _, a, _ in arrays], kwargs, quiet=dtype is not None)
        if probed is not None:
            dtype = probed.dtype if dtype is None else dtype
            out_backend = backends.backend_of_type(probed) if hasattr(probed, "shape") else None
    if out_backend == "numpy":
        out_backend = None
    dtype = check_dtype(dtype)
    want_info, want_id = _takes(func, "block_info"), _takes(func, "block_id")
    expr, dims = parts[0]
    items = parts[1:]
    if want_info or want_id:
        frontier_dims = _joined_dims([d for _, d in parts])
        nb = {l: len(unified[l]) for l in frontier_dims}
        loc = param_relation(
            {k: list(k) for k in np.ndindex(*[nb[l] for l in frontier_dims])},
            tuple(nb[l] for l in frontier_dims),
            what="blocks",
        )
        items = items + [(loc.expr, list(frontier_dims))]
        extra.update(loc.sources)
    fname = name or getattr(func, "__name__", "func")
    fname = "".join(ch for ch in str(fname) if ch.isalpha()) or "func"
    info = BlockInfo if want_info or want_id else None
    for step, (rexpr, rdims) in enumerate(items, start=1):
        common = [l for l in dims if l in rdims]
        joined = dims + [l for l in rdims if l not in dims]
        if step < len(items):
            kernel = BundleBlocks()
        else:
            kernel = _function(
                func,
                fname,
                template,
                slots,
                kwargs,
                out_ind,
                out_chunks,
                joined,
                dtype,
                2,
                info and info(joined, out_ind, out_chunks, infos, want_info, want_id),
                out_backend,
            )
        expr = Join(expr, rexpr, [dims.index(l) for l in common], [rdims.index(l) for l in common], kernel)
        dims = joined
    if not items:
        kernel = _function(func, fname, template, slots, kwargs, out_ind, out_chunks, dims, dtype, 1, None, out_backend)
        expr = Transform(expr, kernel)
    expr = rekey(expr, [dims.index(l) if l in dims else None for l in out_ind])
    return wrap(expr, *sources, extra=extra)


def _resolve_indices(arrays, out_ind, align_arrays):
    """Each index's output chunks, as dask.array's blockwise: an array of extent 1 in one block
    along an index broadcasts along it. ``align_arrays=True``: the other arrays must agree on the
    index's extent and are rechunked to their common refinement (``unify_chunks``).
    ``align_arrays=False``: blocks are paired by position (dask's ``map_blocks``): an array of one
    block along the index is passed whole to every call, the others must have as many blocks as
    each other; the output takes the chunks of the first with the most blocks.
    ``align_arrays="sizes"`` (``map_blocks``): by position along an index whose extents differ,
    aligned where they agree. A contracted index (in no output) is concatenated per array.
    Returns (chunks per index, every array's chunks per index, the indices paired by position)."""
    entries = {}
    for _, a, ind in arrays:
        for l, n, c in zip(ind, a.shape, a.chunks):
            entries.setdefault(l, []).append((int(n), tuple(c)))
    unified, chunks, positional = {}, {}, set()
    for l, es in entries.items():
        real = [(n, c) for n, c in es if not (n == 1 and len(c) == 1)]
        if not real:
            continue  # every array broadcasts along it
        extents = list(dict.fromkeys(n for n, _ in real))
        chunks[l] = [c for _, c in real]
        by_position = align_arrays is False or (align_arrays == "sizes" and len(extents) > 1)
        if l not in out_ind:
            if len(extents) > 1 and not by_position:
                raise ValueError(
                    f"blockwise: index {l!r} has size {extents[0]} in one array and {extents[1]} in another"
                )
            unified[l] = (max(extents),)
            continue
        if not by_position:
            if len(extents) > 1:
                raise ValueError(
                    f"blockwise: index {l!r} has size {extents[0]} in one array and {extents[1]} in another"
                )
            unified[l] = _common_chunks(chunks[l])
            continue
        several = list(dict.fromkeys(len(c) for _, c in es if len(c) > 1))
        if len(several) > 1:
            raise ValueError(
                f"blockwise: index {l!r} has {several[0]} blocks in one array and {several[1]} in another "
                "(blocks are paired by position: the arrays must have as many blocks, or one)"
            )
        unified[l] = max((c for _, c in es), key=len)  # the first with the most blocks
        positional.add(l)
    return unified, chunks, positional


def _joined_dims(dim_lists):
    out = []
    for ds in dim_lists:
        out += [l for l in ds if l not in out]
    return out


def _function(func, name, template, slots, kwargs, out_ind, out_chunks, dims, dtype, arity, info, backend=None):
    out = []
    for l, c in zip(out_ind, out_chunks):
        if l in dims:
            out.append((dims.index(l), c))
        else:
            if len(c) != 1:
                raise NotImplementedError(
                    f"blockwise: output index {l!r} has several blocks but no array runs along it"
                )
            out.append((None, c))
    return BlockFunction(func, name, template, slots, kwargs, out, dtype, arity, info, backend)


def _new_axis_chunks(v):
    if isinstance(v, Integral):
        return (int(v),)
    v = tuple(v)
    if len(v) != 1:
        raise NotImplementedError("a new axis made by a block function has one block")
    return v


def _adjusted(adjust, c):
    if callable(adjust):
        return tuple(int(adjust(v)) for v in c)
    if isinstance(adjust, Integral):
        return (int(adjust),) * len(c)
    adjust = tuple(adjust)
    if len(adjust) != len(c):
        raise ValueError(f"adjust_chunks {adjust} has {len(adjust)} blocks, the axis has {len(c)}")
    return adjust


def _infer_meta(func, template, slots, arrays, kwargs, quiet=False):
    """dask's inference: the function on one-element arrays of the inputs' dtypes, in the
    inputs' library where its backend asks for it (``Backend.probe``). Returns the output (an
    array of the output's library and dtype), or None when it fails and ``quiet``."""
    args = list(template)
    for i, a in zip(slots, arrays):
        ones = np.ones((1,) * a.ndim, dtype=a.dtype)
        b = backends.get(a.sparse_expr.type.backend)
        args[i] = b.probe(ones) if b is not backends.NUMPY else ones
    kw = dict(kwargs)
    for word in ("block_info", "block_id"):
        if _takes(func, word):
            kw[word] = None
    try:
        with np.errstate(all="ignore"):
            out = func(*args, **kw)
        if hasattr(out, "dtype") and hasattr(out, "shape"):
            return out if isinstance(out, np.ndarray) or backends.backend_of_type(out) != "numpy" else np.asarray(out)
        return np.asarray(out)
    except Exception as e:
        if quiet:
            return None
        raise ValueError(
            f"dtype inference failed in {getattr(func, '__name__', 'func')}: {e!r}. "
            f"Please specify the dtype explicitly (dtype=)."
        ) from e


def atop(*args, **kwargs):
    """dask's old name for ``blockwise``; it warns, as dask does.

    Parameters
    ----------
    *args, **kwargs
        ``blockwise``'s.

    Returns
    -------
    RelArray
        ``blockwise(*args, **kwargs)``.

    Examples
    --------
    >>> import warnings
    >>> x = da.arange(4, chunks=2)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     da.atop(np.add, "i", x, "i", x, "i", dtype=int).compute()
    array([0, 2, 4, 6])
    """
    import warnings

    warnings.warn("The da.atop function has moved to da.blockwise", stacklevel=2)
    return blockwise(*args, **kwargs)


# ---------------------------------------------------------------- map_blocks


def map_blocks(
    func,
    *args,
    name=None,
    token=None,
    dtype=None,
    chunks=None,
    drop_axis=None,
    new_axis=None,
    enforce_ndim=False,
    meta=None,
    **kwargs,
):
    """``func`` applied to every block, as dask.array's ``map_blocks``.

    Array arguments are aligned by their trailing axes (broadcast block by block). ``func``
    may ask for ``block_info=`` or ``block_id=`` (each block's location), as in dask.

    Parameters
    ----------
    func : callable
        Called once per output block with the corresponding blocks of the array arguments
        (other arguments passed as they are).
    *args : array_like or any
        RelArrays, dask arrays or other values.
    name : str, optional
        The output's name (``token=``: a prefix for a generated one).
    dtype : dtype, optional
        The output's dtype (inferred by calling ``func`` on small arrays if not given).
    chunks : tuple, optional
        The output's chunks when ``func`` changes the block shape.
    drop_axis : int or list of int, optional
        Axes ``func`` removes.
    new_axis : int or list of int, optional
        Axes ``func`` adds.
    enforce_ndim : bool, optional
        Check that every block returned has the declared number of dimensions.
    meta : array, optional
        An empty array of the output's type and dtype.
    **kwargs
        Passed to ``func``.

    Returns
    -------
    RelArray
        The lazy result.

    See Also
    --------
    blockwise, map_overlap

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> da.map_blocks(lambda b: b + 1, x).compute()
    array([1, 2, 3, 4, 5, 6])
    >>> x.map_blocks(lambda b: b[:1], chunks=((1, 1),)).compute()
    array([0, 3])
    """
    if not callable(func):
        raise TypeError(f"map_blocks: first argument must be callable, got {type(func).__name__}")
    from .creation import asarray as _asarray

    # a dask array joins blockwise; a Delayed is passed whole (blockwise lifts it, as dask)
    args = [_asarray(a) if is_array(a) or (hasattr(a, "dask") and not is_delayed(a)) else a for a in args]
    arrs = [a for a in args if is_array(a)]
    if not arrs:
        if chunks is None:
            raise ValueError("map_blocks needs at least one dask_tra array argument, or chunks=")
        # dask.array: the blocks are laid out by chunks= alone; a placeholder array of that
        # layout drives the blocks, and the function never sees it
        from .creation import empty

        layout = tuple((int(c),) if isinstance(c, Integral) else tuple(int(v) for v in c) for c in chunks)
        placeholder = empty(tuple(sum(c) for c in layout), dtype=bool, chunks=layout)
        out = map_blocks(
            _WithoutPlaceholder(func), placeholder, *args, dtype=dtype, chunks=chunks, meta=meta,
            enforce_ndim=enforce_ndim, **kwargs,
        )  # fmt: skip
        return _named(out, name, token or getattr(func, "__name__", None))
    ndim = max(a.ndim for a in arrs)
    out_ind = list(range(ndim))[::-1]
    drops = [] if drop_axis is None else [int(d) for d in np.atleast_1d(drop_axis)]
    if any(not -ndim <= d < ndim for d in drops):
        raise ValueError(f"drop_axis out of range (drop_axis={drops}, but output is {ndim}d).")
    drop = [d % ndim for d in drops]
    out_ind = [l for i, l in enumerate(out_ind) if i not in drop]
    new = {}
    if new_axis is not None:
        n_out = len(out_ind) + len(np.atleast_1d(new_axis))
        if any(not -n_out <= int(a) < n_out for a in np.atleast_1d(new_axis)):
            raise ValueError("New_axis values do not fill in all dimensions")
        for ax in sorted(int(a) % n_out for a in np.atleast_1d(new_axis)):
            letter = len(out_ind) + len(drop)  # a fresh index, as in dask
            while letter in out_ind or letter < ndim:
                letter += 1
            out_ind.insert(ax, letter)
            new[letter] = 1
    adjust = None
    if chunks is not None:
        if len(chunks) != len(out_ind):
            raise ValueError(
                f"map_blocks: chunks {chunks} have {len(chunks)} entries, the output has {len(out_ind)} dimensions"
            )
        adjust = {}
        for l, c in zip(out_ind, chunks):
            if l in new:
                new[l] = c if isinstance(c, Integral) else tuple(c)
            else:
                adjust[l] = c
    argpairs = []
    for a in args:
        argpairs += [a, tuple(range(a.ndim))[::-1]] if is_array(a) else [a, None]
    out = blockwise(
        func,
        out_ind,
        *argpairs,
        name=name,
        dtype=dtype,
        adjust_chunks=adjust,
        new_axes=new,
        concatenate=True,
        align_arrays="sizes",
        meta=meta,
        **kwargs,
    )
    return _named(out, name, token)


def _named(x, name, token):
    """dask.array's naming of a map_blocks result: ``name=`` is the array's name itself,
    ``token=`` its prefix (before the expression's hash)."""
    if name:
        x.name = str(name)
    elif token:
        x.name = f"{token}-{x.name.rsplit('-', 1)[-1]}"
    return x


class _WithoutPlaceholder:
    """A map_blocks function called without the placeholder array that lays out its blocks
    (``map_blocks(func, chunks=...)`` with no array argument): ``block_info`` keeps only the
    output's entry (``None``), as dask.array gives it."""

    def __init__(self, func):
        self.func = func
        self.__name__ = getattr(func, "__name__", "func")
        self.info, self.id = _takes(func, "block_info"), _takes(func, "block_id")

    def __call__(self, _placeholder, *args, block_info=None, block_id=None, **kwargs):
        if self.info:
            kwargs["block_info"] = {None: block_info[None]} if block_info else block_info
        if self.id:
            kwargs["block_id"] = block_id
        return self.func(*args, **kwargs)


# ---------------------------------------------------------------- map_overlap

_MODES = ("reflect", "periodic", "nearest", "none")


def _axis_keys(spec, ndim):
    """A per-axis dict with negative axes made positive (and checked)."""
    return {axis_of(k, ndim): v for k, v in spec.items()}


def coerce_depth(ndim, depth):
    """``depth`` as a depth for every axis, as dask's ``coerce_depth``.

    Parameters
    ----------
    ndim : int
        The array's number of dimensions.
    depth : int, tuple or dict
        One depth for every axis, one per axis, or ``{axis: depth}`` (missing axes: 0); a
        depth may be a ``(before, after)`` pair.

    Returns
    -------
    dict
        ``{axis: int or (before, after)}`` for every axis, with Python ints.

    Examples
    --------
    >>> da.overlap.coerce_depth(2, 1)
    {0: 1, 1: 1}
    >>> da.overlap.coerce_depth(2, {1: (1, 2)})
    {0: 0, 1: (1, 2)}
    """
    if depth is None:
        depth = 0
    if isinstance(depth, Integral):
        depth = (depth,) * ndim
    if isinstance(depth, (tuple, list)):
        if len(depth) != ndim:
            raise ValueError(f"depth {tuple(depth)} has {len(depth)} entries for {ndim} dimensions")
        depth = dict(enumerate(depth))
    if not isinstance(depth, dict):
        raise TypeError(f"depth must be an int, a tuple or a dict, not {type(depth).__name__}")
    depth = _axis_keys(depth, ndim)
    out = {}
    for ax in range(ndim):
        d = depth.get(ax, 0)
        d = tuple(int(v) for v in d) if isinstance(d, (tuple, list)) else int(d)
        if min(_pair(d)) < 0 or (isinstance(d, tuple) and len(d) != 2):
            raise ValueError(f"depth along axis {ax} must be a non-negative int or a (before, after) pair, got {d}")
        out[ax] = d
    return out


def coerce_boundary(ndim, boundary):
    """``boundary`` as a boundary for every axis, as dask's ``coerce_boundary``.

    Parameters
    ----------
    ndim : int
        The array's number of dimensions.
    boundary : str, scalar, tuple or dict
        One boundary for every axis, one per axis, or ``{axis: boundary}``: ``"reflect"``,
        ``"periodic"``, ``"nearest"``, ``"none"`` or a constant (None: ``"none"``, dask's
        default).

    Returns
    -------
    dict
        ``{axis: boundary}`` for every axis.

    Examples
    --------
    >>> da.overlap.coerce_boundary(2, "periodic")
    {0: 'periodic', 1: 'periodic'}
    """
    if boundary is None:
        boundary = "none"
    if not isinstance(boundary, (tuple, dict)):
        boundary = (boundary,) * ndim
    if isinstance(boundary, tuple):
        boundary = dict(enumerate(boundary))
    boundary = _axis_keys(boundary, ndim)
    out = {ax: boundary.get(ax, "none") for ax in range(ndim)}
    for b in out.values():
        if isinstance(b, str) and b not in _MODES:
            raise ValueError(f"unknown boundary {b!r}: one of {_MODES} or a constant")
    return out


def _pair(d):
    return tuple(d) if isinstance(d, tuple) else (d, d)


def ensure_minimum_chunksize(size, chunks):
    """Chunks along one axis with every chunk holding at least ``size`` elements (dask's).

    Too-small chunks are merged into their neighbours.

    Parameters
    ----------
    size : int
        The smallest chunk allowed.
    chunks : tuple of int
        The chunks along the axis.

    Returns
    -------
    tuple of int
        The new chunks, with the same sum.

    Raises
    ------
    ValueError
        The axis is shorter than ``size``.

    Examples
    --------
    >>> da.overlap.ensure_minimum_chunksize(2, (1, 3, 3))
    (4, 3)
    """
    chunks = tuple(int(c) for c in chunks)
    if size <= min(chunks):
        return chunks
    output, new = [], 0
    for c in chunks:
        if c < size:
            if new > size + (size - c):
                output.append(new - (size - c))
                new = size
            else:
                new += c
        if new >= size:
            output.append(new)
            new = 0
        if c >= size:
            new += c
    if new >= size:
        output.append(new)
    elif output:
        output[-1] += new
    else:
        raise ValueError(f"The overlapping depth {size} is larger than your array {sum(chunks)}.")
    return tuple(output)


def _fit(depth, chunks, allow_rechunk):
    """Chunks along one axis holding at least ``depth`` elements each (dask's rechunk), or the
    error dask raises without ``allow_rechunk``."""
    if allow_rechunk:
        return ensure_minimum_chunksize(depth, chunks)
    if depth > min(chunks):
        raise ValueError(
            "Overlap depth is larger than smallest chunksize.\n"
            "Please set allow_rechunk=True to rechunk automatically.\n"
            f"Overlap depth required: {depth}\nInput chunks: {chunks}\n"
        )
    return tuple(chunks)


def _source_positions(n, lo, hi, mode, chunks):
    """Per output block: positions in the (maybe padded) axis, and the block sizes."""
    cuts = offsets(chunks)
    pos, sizes = [], []
    for i in range(len(chunks)):
        a, b = int(cuts[i]) - lo, int(cuts[i + 1]) + hi
        if mode == "none":
            a, b = max(a, 0), min(b, n)
        p = np.arange(a, b)
        if mode == "reflect":
            p = np.where(p < 0, -p - 1, np.where(p >= n, 2 * n - 1 - p, p))
        elif mode == "periodic":
            p = p % n
        elif mode == "nearest":
            p = np.clip(p, 0, n - 1)
        elif mode != "none":
            p = p + lo  # constant: positions in the padded axis
        pos.append(p)
        sizes.append(len(p))
    return np.concatenate(pos) if pos else np.arange(0), tuple(sizes)


def halos(x, depth, boundary):
    """Every block extended by ``depth`` (coerced) elements of its neighbours, or of the
    boundary at the array's edges (none at an edge with boundary "none"): one gather per axis
    (boundary modes are index maps; a constant pads the axis first)."""
    from .creation import full
    from .rechunk import take
    from .stacking import concatenate

    for axis in range(x.ndim):
        (lo, hi), mode = _pair(depth[axis]), boundary[axis]
        if lo == hi == 0:
            continue
        n = x.shape[axis]
        if mode in _MODES[:3] and (lo > n or hi > n):
            raise ValueError(f"depth {max(lo, hi)} exceeds the axis length {n} along axis {axis}")
        src, sizes = _source_positions(n, lo, hi, mode, x.chunks[axis])
        base = x
        if not isinstance(mode, str):  # constant boundary: pad with the value first
            pads = [
                full(
                    x.shape[:axis] + (k,) + x.shape[axis + 1 :],
                    mode,
                    dtype=x.dtype,
                    chunks=x.chunks[:axis] + ((k,),) + x.chunks[axis + 1 :],
                )
                for k in (lo, hi)
            ]
            base = concatenate([pads[0]] * bool(lo) + [x] + [pads[1]] * bool(hi), axis=axis)
        x = take(base, axis, src, sizes)
    return x


def overlap(x, depth, boundary, *, allow_rechunk=True):
    """Every block extended by its neighbours' edges (halos), as dask.array.overlap's ``overlap``.

    Chunks smaller than the depth are first merged into their neighbours (``allow_rechunk``).
    ``trim_internal`` undoes it.

    Parameters
    ----------
    x : RelArray
        The array.
    depth : int, tuple or dict
        Elements taken from each neighbour, per axis (``coerce_depth``).
    boundary : str, scalar, tuple or dict
        What extends the array's edges (``coerce_boundary``): ``"reflect"``, ``"periodic"``,
        ``"nearest"``, ``"none"`` or a constant.
    allow_rechunk : bool, optional
        Merge chunks smaller than ``depth`` first (default True); otherwise they raise.

    Returns
    -------
    RelArray
        ``x`` with every block grown by the halos.

    See Also
    --------
    map_overlap, trim_internal

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> y = da.overlap.overlap(x, depth=1, boundary="reflect")
    >>> y.chunks
    ((5, 5),)
    >>> y.compute()
    array([0, 0, 1, 2, 3, 2, 3, 4, 5, 5])
    """
    from .creation import asarray as _asarray

    x = _asarray(x)
    depth, boundary = coerce_depth(x.ndim, depth), coerce_boundary(x.ndim, boundary)
    chunks = tuple(_fit(max(_pair(depth[d])), c, allow_rechunk) for d, c in enumerate(x.chunks))
    return halos(x if chunks == x.chunks else x.rechunk(chunks), depth, boundary)


def trim_internal(x, axes, boundary=None):
    """``axes`` elements cut off both sides of every block, as dask.array.overlap's
    ``trim_internal``.

    Not cut at the array's edges along a ``"none"`` boundary. The cut is read from the declared
    chunks (a gather); it undoes ``overlap``.

    Parameters
    ----------
    x : RelArray
        The array.
    axes : int, tuple or dict
        A depth (``coerce_depth``).
    boundary : str or dict, optional
        The boundary ``overlap`` used: along a ``"none"`` boundary (the default) the array's
        edges were not extended, so nothing is cut there.

    Returns
    -------
    RelArray
        ``x`` with its blocks trimmed.

    Raises
    ------
    ValueError
        A block is shorter than what is cut.

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> y = da.overlap.overlap(x, depth=1, boundary="reflect")
    >>> da.overlap.trim_internal(y, {0: 1}, boundary="reflect").compute()
    array([0, 1, 2, 3, 4, 5])
    """
    from .rechunk import take

    axes, boundary = coerce_depth(x.ndim, axes), coerce_boundary(x.ndim, boundary)
    for axis in range(x.ndim):
        lo, hi = _pair(axes[axis])
        if lo == hi == 0:
            continue
        chunks, cuts, none = x.chunks[axis], offsets(x.chunks[axis]), boundary[axis] == "none"
        keep, sizes = [], []
        for j, c in enumerate(chunks):
            a = 0 if none and j == 0 else lo
            b = 0 if none and j == len(chunks) - 1 else hi
            if c < a + b:
                raise ValueError(
                    f"cannot trim {a} + {b} elements off block {j} of {c} elements along axis {axis} "
                    f"(chunks {chunks}); declare the function's output chunks (chunks=) or pass trim=False"
                )
            keep.append(int(cuts[j]) + a + np.arange(c - a - b))
            sizes.append(c - a - b)
        x = take(x, axis, np.concatenate(keep), tuple(sizes))
    return x


def _aligned(arrays, depths, align_arrays, allow_rechunk):
    """The arrays (aligned by their trailing axes, as ``map_blocks``) rechunked alike: the
    common refinement along each axis (``align_arrays``), then chunks holding the deepest halo
    any array asks for along that axis (``allow_rechunk``)."""
    targets = [list(a.chunks) for a in arrays]
    for k in range(1, max(a.ndim for a in arrays) + 1):
        axes = [(i, a.ndim - k) for i, a in enumerate(arrays) if a.ndim >= k]
        members = [(i, d) for i, d in axes if not (arrays[i].shape[d] == 1 and len(arrays[i].chunks[d]) == 1)]
        if len({arrays[i].shape[d] for i, d in members}) > 1:
            raise ValueError(f"map_overlap: the arrays' shapes {[a.shape for a in arrays]} do not broadcast")
        found = [arrays[i].chunks[d] for i, d in members]
        if not align_arrays and len(set(found)) > 1:
            raise ValueError(f"Shapes do not align: chunks {found} (pass align_arrays=True)")
        common = _common_chunks(found) if found else None
        need = max((max(_pair(depths[i][d])) for i, d in members), default=0)
        for i, d in axes:
            if (i, d) in members:
                targets[i][d] = _fit(need, common, allow_rechunk)
            else:  # a broadcast axis of length 1
                targets[i][d] = _fit(max(_pair(depths[i][d])), arrays[i].chunks[d], allow_rechunk)
    return [a if tuple(t) == a.chunks else a.rechunk(tuple(t)) for a, t in zip(arrays, targets)]


def _trim_spec(depth, boundary, ndim, n_out, drop_axis, new_axis):
    """The depth and boundary of the output's axes: ``drop_axis`` removed, ``new_axis`` (no halo)
    inserted where ``map_blocks`` puts them."""
    drop = [] if drop_axis is None else [int(d) % ndim for d in np.atleast_1d(drop_axis)]
    kept = [ax for ax in range(ndim) if ax not in drop]
    depth, boundary = [depth[ax] for ax in kept], [boundary[ax] for ax in kept]
    if new_axis is not None:
        for ax in sorted(int(a) % n_out for a in np.atleast_1d(new_axis)):
            depth.insert(ax, 0)
            boundary.insert(ax, "none")
    return dict(enumerate(depth)), dict(enumerate(boundary))


def map_overlap(func, *args, depth=None, boundary=None, trim=True, align_arrays=True, allow_rechunk=True, **kwargs):
    """``func`` applied to blocks extended by their neighbours' edges, as dask.array's
    ``map_overlap``.

    Every block is extended by ``depth`` elements of its neighbours (the array's edges by
    ``boundary``), ``func`` runs on it, and ``depth`` is trimmed off each output block
    (``trim``). A function may change the block shape, declared with ``chunks=``/``drop_axis``/
    ``new_axis`` as in ``map_blocks``.

    Parameters
    ----------
    func : callable
        Called on each extended block (of each array argument).
    *args : array_like
        The arrays (and other arguments, passed as they are).
    depth : int, tuple or dict, optional
        Elements taken from each neighbour, per axis; ``(before, after)`` pairs allowed; may be
        a list, one per array.
    boundary : str, scalar or dict, optional
        What extends the array's edges: ``"reflect"``, ``"periodic"``, ``"nearest"``,
        ``"none"`` (nothing) or a constant; per axis as a dict; may be a list, one per array.
    trim : bool, optional
        Trim ``depth`` off each output block (default True).
    align_arrays : bool, optional
        Rechunk the arrays to common chunks first (default True).
    allow_rechunk : bool, optional
        Merge chunks smaller than ``depth`` into their neighbours first (default True).
    **kwargs
        ``map_blocks``' keywords (``dtype``, ``chunks``, ``drop_axis``, ``new_axis``, ``meta``)
        and keywords passed to ``func``.

    Returns
    -------
    RelArray
        The lazy result.

    See Also
    --------
    overlap.overlap, map_blocks

    Examples
    --------
    >>> x = da.from_array(np.array([1, 2, 4, 7, 11, 16]), chunks=3)
    >>> da.map_overlap(lambda b: np.gradient(b), x, depth=1, boundary="none", dtype=float).compute()
    array([1. , 1.5, 2.5, 3.5, 4.5, 5. ])
    """
    import warnings

    from .creation import asarray as _asarray

    if _is_lazy(func) and args and callable(args[0]):  # dask's deprecated (x, func, depth, boundary, trim)
        warnings.warn(
            "The use of map_overlap(array, func, **kwargs) is deprecated since dask 2.17.0 and will be an "
            "error in a future release. To silence this warning, use the syntax "
            "map_overlap(func, array0,[ array1, ...,] **kwargs) instead.",
            FutureWarning,
            stacklevel=2,
        )
        rest = args[1:]
        depth, boundary, trim = (rest + (depth, boundary, trim)[len(rest) :])[:3]
        func, args = args[0], (func,)
    if not callable(func):
        raise TypeError(f"First argument must be callable function, not {type(func).__name__}")
    if not args or not all(_is_lazy(a) for a in args):
        raise TypeError(f"All variadic arguments must be arrays, not {[type(a).__name__ for a in args]}")
    arrays = [_asarray(a) for a in args]

    def each(spec, coerce):
        specs = spec if isinstance(spec, list) else [spec] * len(arrays)
        if len(specs) != len(arrays):
            raise ValueError(f"map_overlap: {len(specs)} depths/boundaries for {len(arrays)} arrays")
        return [coerce(a.ndim, s) for a, s in zip(arrays, specs)]

    depths, bounds = each(depth, coerce_depth), each(boundary, coerce_boundary)
    arrays = _aligned(arrays, depths, align_arrays, allow_rechunk)
    if all(v == 0 for d in depths for v in d.values()):
        return map_blocks(func, *arrays, **kwargs)
    if not trim and "chunks" not in kwargs:  # the function trims its halos itself
        kwargs["chunks"] = arrays[0].chunks
    over = [halos(a, d, b) for a, d, b in zip(arrays, depths, bounds)]
    for k in range(1, max(a.ndim for a in over) + 1):
        lengths = {a.shape[-k] for a, b in zip(over, arrays) if b.ndim >= k and b.shape[-k] > 1}
        if len(lengths) > 1 or (lengths and any(a.ndim >= k and a.shape[-k] not in lengths | {1} for a in over)):
            raise NotImplementedError(
                f"map_overlap: the arrays' extended blocks differ in length along their axis {-k} "
                f"(halos of other depths, or a halo on a broadcast axis of length 1)"
            )
    out = map_blocks(func, *over, **kwargs)
    if not trim:
        return out
    i = max(range(len(arrays)), key=lambda k: (arrays[k].ndim, -k))  # the highest rank, first on ties
    ndim = max(a.ndim for a in arrays)
    n_out = ndim - len(np.atleast_1d(kwargs.get("drop_axis", []))) + len(np.atleast_1d(kwargs.get("new_axis", [])))
    depth, boundary = _trim_spec(
        depths[i], bounds[i], arrays[i].ndim, n_out, kwargs.get("drop_axis"), kwargs.get("new_axis")
    )
    if len(depth) != out.ndim:
        raise ValueError(
            f"map_overlap: the output has {out.ndim} dimensions, the trimmed depth covers {len(depth)} "
            f"(pass drop_axis/new_axis, or trim=False)"
        )
    return trim_internal(out, depth, boundary)


def window_block(block, axis, window):
    """NumPy's sliding windows of one block (halo included) along ``axis``."""
    return np.lib.stride_tricks.sliding_window_view(block, window, axis=axis)


def sliding_window_view(x, window_shape, axis=None, automatic_rechunk=True, **kwargs):
    """A sliding window view of ``x``, as ``numpy.lib.stride_tricks.sliding_window_view``, over
    ``x``'s own chunks (``da.sliding_window_view`` is ``overlap.sliding_window_view``, which
    rechunks as dask does, then calls this).

    The window dimensions come last. Each output block reads its block plus ``window - 1``
    following elements (a gather), then NumPy makes the windows on it (``blockwise``).

    Parameters
    ----------
    x : array_like
        The array.
    window_shape : int or tuple of int
        The window's size along each axis in ``axis``.
    axis : int or tuple of int, optional
        The axes the window slides along; None: all.
    automatic_rechunk : bool, optional
        Accepted for dask's signature (blocks shorter than a window are always merged).
    **kwargs
        NumPy's ``subok``/``writeable`` are accepted and ignored (the result is a new array).

    Returns
    -------
    RelArray
        Shape ``x.shape`` with each windowed axis shortened by ``window - 1``, then the window
        axes.

    Examples
    --------
    >>> x = da.arange(6, chunks=3)
    >>> w = da.sliding_window_view(x, 3)
    >>> w.shape
    (4, 3)
    >>> w.compute()[1]
    array([1, 2, 3])
    """
    from .creation import asarray as _asarray
    from .rechunk import take

    x = _asarray(x)
    window_shape = tuple(int(w) for w in np.atleast_1d(window_shape))
    axes = tuple(range(x.ndim)) if axis is None else tuple(axis_of(a, x.ndim) for a in np.atleast_1d(axis))
    if len(axes) != len(window_shape):
        raise ValueError(
            f"Since axis is {'None' if axis is None else 'given'}, must provide window_shape for "
            f"{'all dimensions of x' if axis is None else 'every axis'}; got {len(window_shape)} "
            f"window_shape elements and {len(axes)} axes"
        )
    if any(w < 0 for w in window_shape):
        raise ValueError("`window_shape` cannot contain negative values")
    for ax, w in zip(axes, window_shape):
        n = x.shape[ax]
        if w > n:
            raise ValueError("window shape cannot be larger than input array shape")
        m = n - w + 1
        cuts = np.minimum(offsets(x.chunks[ax]), m)
        out = tuple(int(c) for c in np.diff(cuts) if c) or (0,)
        src = np.concatenate([np.arange(s, s + c + w - 1) for s, c in zip(offsets(out), out)])
        over = take(x, ax, src, tuple(c + w - 1 for c in out))
        chunks = over.chunks[:ax] + (out,) + over.chunks[ax + 1 :] + ((w,),)
        x = map_blocks(
            window_block, over, axis=ax, window=w, new_axis=x.ndim, chunks=chunks, dtype=x.dtype, token="slidingwindow"
        )
    return x


# ---------------------------------------------------------------- apply_along_axis


def _along_axis(block, func1d, axis, fargs, fkwargs):
    return np.apply_along_axis(func1d, axis, block, *fargs, **fkwargs)


@derived_from(np)
def apply_along_axis(func1d, axis, arr, *args, dtype=None, shape=None, **kwargs):
    """dask.array.apply_along_axis: ``func1d`` on every 1-d slice along ``axis`` (that axis is
    first made one block)."""
    from .creation import asarray as _asarray

    arr = _asarray(arr)
    axis = axis_of(axis, arr.ndim)
    if shape is None or dtype is None:
        test = np.asarray(func1d(np.ones((arr.shape[axis],), dtype=arr.dtype), *args, **kwargs))  # a real line
        shape = test.shape if shape is None else shape
        dtype = test.dtype if dtype is None else dtype
    shape = tuple(shape)
    arr = arr.rechunk({axis: -1})
    chunks = arr.chunks[:axis] + tuple((s,) for s in shape) + arr.chunks[axis + 1 :]
    return map_blocks(
        _along_axis,
        arr,
        func1d=func1d,
        axis=axis,
        fargs=args,
        fkwargs=kwargs,
        drop_axis=axis,
        new_axis=list(range(axis, axis + len(shape))),
        chunks=chunks,
        dtype=dtype,
        name=getattr(func1d, "__name__", "alongaxis"),
    )


# ---------------------------------------------------------------- .blocks and .vindex


class BlockView:
    """``x.blocks[index]``: the array made of the blocks ``index`` selects (ints keep their axis)."""

    def __init__(self, x):
        self.x = x

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        if any(i is None for i in index):
            raise ValueError("Slicing with np.newaxis or None is not supported")
        if sum(not isinstance(i, (slice, Integral)) and i is not Ellipsis for i in index) > 1:
            raise ValueError("Slicing blocks with more than one list (or array) is not supported")
        return self.outer(index)

    def outer(self, index):
        """The blocks ``index`` selects, each list (or array) along its own axis (outer indexing;
        ``__getitem__`` refuses several lists, as dask.array does)."""
        from .rechunk import take

        x = self.x
        index = index if isinstance(index, tuple) else (index,)
        if sum(i is not Ellipsis for i in index) > x.ndim:
            raise IndexError(f"too many indices for {x.ndim}-d blocks")
        if any(i is Ellipsis for i in index):
            at = next(j for j, i in enumerate(index) if i is Ellipsis)
            index = index[:at] + (slice(None),) * (x.ndim - len(index) + 1) + index[at + 1 :]
        index = index + (slice(None),) * (x.ndim - len(index))
        for axis, sel in enumerate(index):
            chunks = x.chunks[axis]
            nb = len(chunks)
            if isinstance(sel, slice):
                picked = list(range(nb))[sel]
            elif isinstance(sel, Integral):
                if not -nb <= sel < nb:
                    raise IndexError(f"block index {sel} out of range for {nb} blocks along axis {axis}")
                picked = [sel % nb]
            else:
                picked = [int(i) % nb for i in np.asarray(sel).ravel()]
            if picked == list(range(nb)):
                continue
            cuts = offsets(chunks)
            src = np.concatenate([np.arange(cuts[i], cuts[i + 1]) for i in picked]) if picked else np.arange(0)
            x = take(x, axis, src, tuple(chunks[i] for i in picked) or (0,))
        return x

    @property
    def shape(self):
        return self.x.numblocks

    @property
    def size(self):
        return math.prod(self.x.numblocks)

    @property
    def ndim(self):
        return self.x.ndim

    def ravel(self):
        return [self[k] for k in np.ndindex(*self.x.numblocks)]


class VIndex:
    """``x.vindex[...]``: point-wise indexing; the broadcast index arrays' dims come first."""

    def __init__(self, x):
        self.x = x

    def __getitem__(self, index):
        from .rechunk import take
        from .structure import moveaxis, reshape

        x = self.x
        index = index if isinstance(index, tuple) else (index,)
        if any(i is None for i in index):
            raise IndexError(f"vindex does not support indexing with None (np.newaxis), got {index}")
        if any(i is Ellipsis for i in index):
            raise NotImplementedError("vindex with Ellipsis is not supported")
        if any(hasattr(i, "__dask_graph__") and not is_array(i) for i in index):  # a RelArray is computed
            raise IndexError(
                "vindex does not support indexing with dask objects. Call compute on the indexer first "
                f"to get an evaluated array. Got: {index}"
            )
        if len(index) > x.ndim:
            raise IndexError(f"too many indices for array: {x.ndim}-dimensional, {len(index)} indexed")
        if all(isinstance(i, slice) for i in index):  # as dask.array: x itself, or an error
            if all(i.indices(n) == slice(0, n).indices(n) for i, n in zip(index, x.shape)):
                return x
            raise IndexError(
                "vindex requires at least one non-slice to vectorize over when the slices are not over "
                f"the entire array (i.e, x[:]). Use normal slicing instead when only using slices. Got: {index}"
            )
        index = index + (slice(None),) * (x.ndim - len(index))
        arr_axes = [d for d, i in enumerate(index) if not isinstance(i, slice)]
        basic = tuple(i if isinstance(i, slice) else slice(None) for i in index)
        x = x[basic]
        idx = [np.asarray(index[d]) for d in arr_axes]
        idx = [i.astype(np.intp) if i.size == 0 and i.dtype.kind == "f" else i for i in idx]  # [] indexes nothing
        if any(i.dtype.kind not in "iu" for i in idx):
            raise IndexError("vindex takes integer arrays (and slices)")
        try:
            bshape = np.broadcast_shapes(*[i.shape for i in idx])
        except ValueError as e:
            raise IndexError(f"vindex: shape mismatch: indexing arrays could not be broadcast together: {e}") from None
        dims = [x.shape[d] for d in arr_axes]
        for i, n, d in zip(idx, dims, arr_axes):
            if i.size and (i.min() < -n or i.max() >= n):
                raise IndexError(f"vindex: index out of bounds for axis {d} with size {n}")
        flat = np.ravel_multi_index(
            [np.broadcast_to(np.where(i < 0, i + n, i), bshape).ravel() for i, n in zip(idx, dims)], dims
        )
        x = moveaxis(x, arr_axes, list(range(len(arr_axes))))
        x = reshape(x, (math.prod(dims),) + tuple(x.shape[len(arr_axes) :]))
        x = take(x, 0, flat)
        shape = tuple(bshape) + tuple(x.shape[1:])
        return x if shape == x.shape else reshape(x, shape)


__all__ = ["apply_along_axis", "atop", "blockwise", "map_blocks", "map_overlap"]

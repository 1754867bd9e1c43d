"""Array methods, operators and protocols of RelArray (NumPy / dask.array / Array API style).

Every method builds a TRA expression through the namespace functions; only the
conversions to Python scalars (``bool(x)``, ``float(x)``, ...) and ``__array__`` compute.
"""

from __future__ import annotations

import warnings
from functools import partial
from types import ModuleType

import numpy as np


class _Unbound:
    """A module above the array core until ``bind`` puts it in place."""

    __slots__ = ("module",)

    def __init__(self, module):
        self.module = module

    def __getattr__(self, attr):
        raise RuntimeError(
            f"{self.module} is not bound yet: RelArray's methods reach it once dask_tra/array/__init__.py "
            "has imported every function family (methods.bind)"
        )


# The modules above the array core that RelArray's methods call: the function families build
# RelArrays, so they import the core, and the core imports none of them. dask_tra/array/__init__.py
# binds them here once it has imported them all (``bind``); since it is the parent package of every
# array module, it has run before any RelArray exists. ``da`` is the namespace, dask_tra.array.
ABOVE = ("da", "blockwise", "creation", "dispatch", "indexing", "namespace", "rechunk", "relations", "structure")
da = _Unbound("dask_tra.array")
blockwise = creation = dispatch = indexing = namespace = rechunk = relations = structure = _Unbound("an array module")


def bind(**modules) -> None:
    """Put modules of ``ABOVE`` in place, by name (``dask_tra/array/__init__.py`` calls this once
    it has imported them): ``bind(da=dask_tra.array, indexing=..., ...)``."""
    unknown = sorted(set(modules) - set(ABOVE))
    if unknown:
        raise TypeError(f"bind takes the modules {', '.join(ABOVE)}; got {', '.join(unknown)}")
    if not all(isinstance(m, ModuleType) for m in modules.values()):
        raise TypeError(
            f"bind takes modules: {', '.join(n for n, m in modules.items() if not isinstance(m, ModuleType))}"
        )
    globals().update(modules)


def chunk_device(expr, sources) -> str:
    """The device of ``expr``'s chunks, from metadata: an input's is its source's (the library's
    default when the source names none), a ``to_backend`` conversion names its own, and every
    other operator keeps that of its first input of its own library (kernels run on the device
    of their input chunks)."""
    from .. import backends
    from .kernels import ToBackend

    dev = {}
    for node in expr.walk():
        b = backends.get(node.type.backend)
        kernel = getattr(node, "kernel", None)
        if isinstance(kernel, ToBackend):
            dev[id(node)] = b.device_name(kernel.device)
        elif not node.children:
            dev[id(node)] = b.device_name(getattr(sources.get(getattr(node, "name", None)), "device", None))
        else:
            same = [dev[id(c)] for c in node.children if c.type.backend == node.type.backend]
            dev[id(node)] = same[0] if same else b.device_name()
    return dev[id(expr)]


def normalize_out(out):
    """dask.array's ``out=``: None, a RelArray, or a tuple holding one (NumPy's ufunc form)."""

    if isinstance(out, tuple):
        if len(out) > 1:
            raise NotImplementedError("The out parameter is not fully supported: only one output array")
        out = out[0] if out else None
    if out is not None and not relations.is_array(out):
        raise NotImplementedError(
            f"The out parameter is not fully supported. Received type {type(out).__name__}, expected a dask_tra Array"
        )
    return out


def handle_out(out, result):
    """``result``, or, with ``out=`` a RelArray of its shape, ``out`` rebound to it (as dask.array:
    arrays are immutable, so ``out`` takes the result's expression, chunks and dtype)."""
    out = normalize_out(out)
    if out is None:
        return result
    if out.shape != result.shape:
        raise ValueError(f"Mismatched shapes between result and out parameter. out={out.shape}, result={result.shape}")
    out._become(result)
    return out


def defers_to(y) -> bool:
    """Whether a binary operator of a RelArray defers to the other operand ``y`` (NEP 13: its
    type answers): neither a type RelArrays know nor a dask collection."""
    return not dispatch._known(y) and not hasattr(y, "dask")


def _operate(name, x, y, reflected=False):
    """``dask_tra.array.<name>(x, y)`` (``(y, x)`` when ``reflected``) for a binary operator of
    ``x``; NotImplemented for an operand that RelArrays defer to (``defers_to``)."""

    if defers_to(y):
        return NotImplemented
    f = getattr(da, name)
    return f(y, x) if reflected else f(x, y)


def _to_scalar(x, convert):
    """``convert`` (bool, int, float, complex) of a one-element array's value, computed."""
    if x.size != 1 and convert is bool:  # NumPy's exception types
        raise ValueError(
            f"The truth value of an array with more than one element is ambiguous "
            f"(size {x.size}). Use a.any() or a.all()"
        )
    if x.size != 1:
        raise TypeError(f"only arrays of size 1 can be converted to Python scalars (size {x.size})")
    return convert(x.compute().reshape(()).item())


def _cast(value, dtype):
    """``value`` cast to ``dtype`` as NumPy's item assignment does (unsafe casting; NumPy's errors,
    e.g. for NaN into integers or Python ints out of range); a RelArray or dask array stays lazy."""

    relations.reject_masked(value, what="item assignment")  # np.ma.masked included
    if relations.is_array(value) or hasattr(value, "dask"):
        return creation.asarray(value).astype(dtype)
    out = np.empty(np.shape(value), dtype)
    out[...] = value
    return out


def _fitted(value, shape, what, hint=""):
    """``value`` (cast) with leading unit dims beyond ``len(shape)`` dropped, as NumPy does; ValueError
    unless it broadcasts to ``shape``."""
    vs = tuple(value.shape)
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
    try:
        ok = len(vs) <= len(shape) and np.broadcast_shapes(vs, shape) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"could not broadcast input array from shape {tuple(value.shape)} into shape {tuple(shape)} ({what}){hint}"
        )
    return value if vs == tuple(value.shape) else value.reshape(vs)


def _key_items(key):
    """The index's items, with 0-d NumPy arrays as scalars; an array-valued item classified:
    ``("mask", m)`` for a boolean one, ``("index", i)`` for an integer one (RelArray or NumPy);
    a lazy index of another dtype is a mask (its truth values, as dask's ``where``)."""

    items = []
    for k in key if isinstance(key, tuple) else (key,):
        if isinstance(k, np.ndarray) and k.ndim == 0:
            k = k[()]
        if hasattr(k, "dask") and not relations.is_array(k):
            k = da.asarray(k)
        if relations.is_array(k) or isinstance(k, (list, np.ndarray)):
            arr = k if relations.is_array(k) else np.asarray(k)
            if arr.ndim == 0 and arr.dtype == np.bool_:  # a lazy 0-d mask: kept (see _assigned)
                items.append(k)
                continue
            if arr.dtype == np.bool_:
                k = ("mask", arr)
            elif arr.dtype.kind in "iu" or (not relations.is_array(k) and arr.size == 0):
                k = ("index", arr if relations.is_array(k) else arr.astype(np.int64))
            elif relations.is_array(k):
                k = ("mask", arr.astype(bool))  # dask: where(key, value, x)
            else:
                raise IndexError(indexing.INVALID)
        items.append(k)
    return items


def _is_bool0(k):
    """A 0-d boolean index item: Python's or NumPy's bool, or a 0-d boolean RelArray."""

    return isinstance(k, (bool, np.bool_)) or (relations.is_array(k) and k.ndim == 0 and k.dtype == np.bool_)


def _count_is(expected, total):
    """0 (of ``total``'s shape) when the lazy mask's count of true values is ``expected``."""
    if int(np.asarray(total).sum()) != expected:
        raise ValueError(
            f"could not broadcast input array of {expected} values along the masked axis into "
            f"{int(np.asarray(total).sum())} selected positions"
        )
    return np.zeros(np.shape(total), np.int64)


def _count_is_not(length, total):
    """0 unless the lazy mask holds ``length`` true values (see ``_where_mask``)."""
    if int(np.asarray(total).sum()) == length:
        raise ValueError(
            f"ambiguous item assignment: the mask holds {length} true values, so NumPy would assign the "
            f"value's {length} entries one per true element, while x[mask] = v here broadcasts v to x's shape"
        )
    return np.zeros(np.shape(total), np.int64)


def _in_bounds(n, bad):
    if np.asarray(bad).any():
        raise IndexError(f"an index of the item assignment is out of bounds for an axis of size {n}")
    return np.zeros(np.shape(bad), np.int64)


def _where_mask(x, m, value, items):
    """``x[mask] = value`` with a mask over ``x``'s shape or its leading axes: ``where``."""

    if items[1:] not in ([], [Ellipsis]):  # x[mask] or x[mask, ...]
        raise IndexError(
            f"item assignment with a {m.ndim}-d boolean index together with other indices is not supported"
        )
    if m.ndim > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {m.ndim} were indexed")
    for d in range(m.ndim):
        if m.shape[d] != x.shape[d]:
            raise IndexError(
                f"boolean index did not match indexed array along axis {d}; size of axis is "
                f"{x.shape[d]} but size of corresponding boolean axis is {m.shape[d]}"
            )
    v = _fitted(
        _cast(value, x.dtype),
        x.shape,
        "the value of x[mask] = v must broadcast to x's shape",
        "; NumPy's form, v with one value per true element of the mask, is not supported",
    )
    vs = (1,) * (x.ndim - v.ndim) + tuple(v.shape)
    length = vs[m.ndim - 1]  # v's extent where NumPy's form would put one value per true element
    if v.size > 1 and length > 1 and all(n == 1 for n in vs[: m.ndim - 1]):
        # where(mask, v, x) differs from NumPy's assignment when the mask holds `length` true values
        if relations.is_array(m):
            check = da.map_blocks(partial(_count_is_not, length), m.astype(np.int64).sum(), dtype=np.int64)
            v = da.asarray(v) + check.astype(v.dtype)
        elif int(np.count_nonzero(m)) == length:
            raise ValueError(
                f"ambiguous item assignment: the mask holds {length} true values, so NumPy would assign "
                f"the value's {length} entries one per true element, while x[mask] = v here (as in dask) "
                f"broadcasts v to x's shape; assign where(mask, v, x) or v[mask] instead"
            )
    m = m.reshape(m.shape + (1,) * (x.ndim - m.ndim))
    return da.where(m, v, x)


def _assigned(x, key, value):
    """The RelArray ``x`` becomes with ``x[key] = value`` (see ``__setitem__``), or None when
    the selection is empty. The mask is built lazily: a boolean index over ``x``'s shape as
    given; otherwise one boolean vector per axis (with ``x``'s chunks: NumPy positions, a lazy
    1-d mask, or ``isin`` of a lazy integer index) combined by broadcasting ``&``. An array
    ``value`` is placed into ``x``'s shape by a gather along each axis it spans, mapping every
    position to its (last) index in the selection: ``take`` with NumPy positions; for a lazy
    integer index a stable ``argsort`` and a right ``searchsorted``; for a lazy mask its
    ``cumsum``. Nothing is computed here."""

    items = _key_items(key)
    flags = [k for k in items if _is_bool0(k)]
    if flags:
        # a 0-d boolean is NumPy's new axis of length 1 (True) or 0 (False): with True the
        # assignment is that of None there; with False nothing changes (the value still has to
        # fit); a lazy one picks between the two with where
        y = _assigned(x, tuple(None if _is_bool0(k) else k for k in items), value)
        if y is None or not all(bool(k) for k in flags if not relations.is_array(k)):
            return None
        for k in flags:
            if relations.is_array(k):
                y = da.where(k, y, x)
        return y
    arrays = [(i, k) for i, k in enumerate(items) if isinstance(k, tuple)]
    if len(arrays) > 1:
        raise NotImplementedError("item assignment with more than one integer or boolean array index is not supported")
    if arrays:
        at, (kind, arr) = arrays[0]
        if kind == "mask" and (arr.ndim > 1 or (relations.is_array(arr) and arr.ndim == x.ndim) or x.ndim == 0):
            if at != 0:
                raise IndexError(
                    f"item assignment with a {arr.ndim}-d boolean index together with other indices is not supported"
                )
            y = _where_mask(x, arr, value, items)
            y = y.astype(x.dtype)
            return y if y.chunks == x.chunks else y.rechunk(x.chunks)
        if arr.ndim != 1:
            raise IndexError(f"item assignment with a {arr.ndim}-d integer array index is not supported (dask)")
        items[at] = np.zeros(0, np.int64)  # a placeholder: its axis is found below
    entries = indexing._entries(x, tuple(items))
    sel, axes = [], []  # the selection's shape; per axis of x: (kind, selected positions or lazy index)
    for kind, k, _ in entries:
        if kind == "new":
            sel.append(1)
            continue
        ax, n = len(axes), x.shape[len(axes)]
        if kind == "int":
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {ax} with size {n}")
            idx = np.array([k % n])
        elif kind == "array":
            kind, k = arrays[0][1]
            if kind == "mask":
                if k.shape[0] != n:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {ax}; size of axis is {n} "
                        f"but size of corresponding boolean axis is {k.shape[0]}"
                    )
                if relations.is_array(k):
                    kind, idx = "lazymask", k
                else:
                    kind, idx = "array", np.flatnonzero(k)
            elif relations.is_array(k):
                kind, idx = "lazyindex", k
            else:
                if k.size and (k.min() < -n or k.max() >= n):
                    bad = k.min() if k.min() < -n else k.max()
                    raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
                kind, idx = "array", np.where(k < 0, k + n, k)
            sel.append(None if kind == "lazymask" else int(idx.shape[0]))
        else:
            idx = np.arange(*k.indices(n))
            sel.append(len(idx))
        axes.append((kind, idx))
    lazy_at = sel.index(None) if None in sel else None
    v = _cast(value, x.dtype)
    if lazy_at is not None:  # the lazy mask's count is unknown: v's extent there (or 1) is checked when computed
        vs = tuple(v.shape)
        while len(vs) > len(sel) and vs[0] == 1:
            vs = vs[1:]
        k = len(sel) - len(vs)
        sel[lazy_at] = vs[lazy_at - k] if lazy_at >= k else 1
    v = _fitted(v, tuple(sel), "the selection's shape")
    if 0 in sel:
        return None
    mask = None
    for ax, (kind, idx) in enumerate(axes):
        n = x.shape[ax]
        if kind == "lazymask":
            vec = idx.rechunk((x.chunks[ax],))
        elif kind == "lazyindex":
            grid = da.arange(n, chunks=(x.chunks[ax],))
            check = da.map_blocks(partial(_in_bounds, n), ((idx < -n) | (idx >= n)).any(), dtype=np.int64)
            vec = da.isin(grid + check, da.where(idx < 0, idx + n, idx))
        elif len(idx) == n:  # every position
            continue
        else:
            vec = np.zeros(n, np.bool_)
            vec[idx] = True
            vec = da.from_array(vec, chunks=(x.chunks[ax],))
        m = structure.reshape(vec, (1,) * ax + (n,) + (1,) * (x.ndim - ax - 1))
        mask = m if mask is None else mask & m
    if v.ndim:  # an array value: placed into x's shape (its unit dims broadcast in where)
        vs = (1,) * (len(sel) - v.ndim) + tuple(v.shape)
        at, placed = 0, []  # v's extent on each axis of x (None's axes dropped, integers' added)
        for kind, _, _ in entries:
            if kind != "int":
                at += 1
            if kind != "new":
                placed.append(1 if kind == "int" else vs[at - 1])
        v = structure.reshape(da.asarray(v), tuple(placed))
        for ax, (kind, idx) in enumerate(axes):
            n = x.shape[ax]
            if v.shape[ax] == 1:
                continue
            if kind == "lazymask":
                count = idx.astype(np.int64).sum()
                check = da.map_blocks(partial(_count_is, v.shape[ax]), count, dtype=np.int64)
                src = da.clip(da.cumsum(idx.rechunk((x.chunks[ax],)).astype(np.int64)) - 1 + check, 0, None)
                v = da.take(v, src, axis=ax)
            elif kind == "lazyindex":
                k = idx.shape[0]
                norm = da.where(idx < 0, idx + n, idx)
                order = da.argsort(norm)  # stable: equal positions keep their order, the last wins
                at = da.searchsorted(da.take(norm, order), da.arange(n, chunks=(x.chunks[ax],)), side="right")
                v = da.take(v, da.take(order, da.clip(at - 1, 0, k - 1)), axis=ax)
            elif not np.array_equal(idx, np.arange(n)):
                order = np.sort(idx)
                src = np.zeros(n, np.int64)
                src[idx] = np.arange(len(idx))  # a repeated position: its last value, as NumPy
                near = np.searchsorted(order, np.arange(n)).clip(max=len(idx) - 1)  # unselected: a neighbour
                v = rechunk.take(v, ax, src[order[near]], out_chunks=x.chunks[ax])
    y = da.where(True if mask is None else mask, v, x)
    y = y.astype(x.dtype)
    return y if y.chunks == x.chunks else y.rechunk(x.chunks)


def view_block(x, dtype, order="C"):
    """dask's ``chunk.view``: a block reinterpreted as ``dtype`` (C or Fortran order)."""
    if order == "C":
        return np.ascontiguousarray(x).view(dtype)
    return np.asfortranarray(x).T.view(dtype).T


class ArrayMethods:
    __hash__ = object.__hash__

    def __index__(self):
        """``operator.index(self)`` of a one-element integer array (computes it)."""
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return _to_scalar(self, int)

    def flatten(self):
        """``self`` flattened to one dimension: ``dask_tra.array.ravel``."""
        return da.ravel(self)

    def nonzero(self):
        """The indices of the non-zero elements, one array per axis: ``dask_tra.array.nonzero``."""
        return da.nonzero(self)

    def transpose(self, *axes):
        """``self`` with its axes permuted (reversed without ``axes``): ``dask_tra.array.transpose``."""
        if len(axes) == 1 and (axes[0] is None or np.ndim(axes[0]) == 1):
            axes = axes[0]
        return da.transpose(self, axes or None)

    def reshape(self, *shape, order="C", merge_chunks=True, limit=None, copy=None):
        """``self`` with shape ``shape`` (a tuple or integers): ``dask_tra.array.reshape``."""
        if len(shape) == 1 and np.ndim(shape[0]) == 1:
            shape = shape[0]
        return da.reshape(self, shape, order=order, merge_chunks=merge_chunks, limit=limit, copy=copy)

    @property
    def T(self):
        return da.transpose(self)

    @property
    def mT(self):
        return da.matrix_transpose(self)

    @property
    def real(self):
        return da.real(self)

    @property
    def imag(self):
        return da.imag(self)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def chunksize(self):
        return tuple(max(c) if c else 0 for c in self.chunks)

    @property
    def _meta(self):
        """dask.array's ``_meta``: an empty array of the chunks' library, dimension and dtype
        (xarray and dask code read it to learn the chunk type without computing)."""
        from .. import backends

        return backends.get(self.sparse_expr.type.backend).empty((0,) * self.ndim, self.dtype)

    @property
    def device(self):
        """Where the chunks live: ``"cpu"``, ``"cuda:0"``, ``"cuda"`` (each worker's own GPU), read
        from the metadata (``chunk_device``), never by computing."""
        return chunk_device(self.expr, self.sources)

    def to_device(self, device, /, *, stream=None):
        """``self`` (Array API): its chunks already live on ``self.device``; another device raises."""
        if device is not None and device != self.device:
            raise ValueError(
                f"unsupported device {device!r} for chunks on {self.device!r}; convert with to_backend(backend, device)"
            )
        return self

    def copy(self):
        """A new array object over the same expression (item assignment rebinds only its target)."""
        return type(self)(self.expr, self.sources)

    def compute_chunk_sizes(self):
        """``self``: a RelArray's chunks are always known (its relation type carries them), so
        there is nothing to compute (dask.array's method for unknown, ``nan``, chunks)."""
        return self

    def __len__(self):
        """The length of the first axis."""
        if not self.ndim:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        """The sub-arrays ``self[0]``, ``self[1]``, ... along the first axis."""
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, index):
        """``self[index]``: basic, integer-array and boolean indexing (``dask_tra.array.indexing``)."""

        return indexing.getitem(self, index)

    def __setitem__(self, index, value):
        """``x[index] = value``, as dask.array does it: ``x`` (this object) is rebound to a new lazy
        expression, ``where(mask, value, x)`` cast to ``x.dtype``; arrays derived from ``x`` before
        keep the old values. ``index``: a boolean mask (RelArray or NumPy) over ``x``'s shape or
        its leading axes, with ``value`` broadcastable to ``x.shape`` (dask's semantics, not
        NumPy's ``value`` of length ``mask.sum()``); or a basic index (integers, slices, ``...``,
        ``None``) with ``value`` broadcastable to the selection. Errors are raised here, before
        anything changes."""
        y = _assigned(self, index, value)
        if y is None:  # an empty selection
            return
        self._become(y)

    def _become(self, y):
        """This object now holds ``y``'s expression (item assignment, ``out=``)."""
        self.expr, self.sources, self._chunk_sizes, self.name = y.expr, y.sources, y.chunks, y.name  # y's name is fresh
        self._plans, self._last_entry = {}, None  # plans of the old expression

    def __array__(self, dtype=None, copy=None):
        """The computed array, as NumPy's (``np.asarray(self)``)."""
        from ..backends import to_numpy

        if copy is False:  # as dask.array: the result is a fresh array, never a view of ours
            warnings.warn(
                "Can't acquire a memory view of a Dask array. This will raise in the future.",
                FutureWarning,
                stacklevel=2,
            )

        out = to_numpy(self.compute())  # CuPy/torch results: the explicit copy to host
        return out if dtype is None else out.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy's ufuncs on RelArrays build lazy expressions (NEP 13; ``dispatch.array_ufunc``)."""

        return dispatch.array_ufunc(ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy's functions on RelArrays call the namespace's (NEP 18; ``dispatch.array_function``)."""

        return dispatch.array_function(func, types, args, kwargs)

    def __array_namespace__(self, *, api_version=None):
        """The Array API namespace, ``dask_tra.array.namespace``."""
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"unsupported Array API version {api_version!r}")
        return namespace

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The computed array's DLPack capsule (on the host)."""
        kwargs = {
            k: v
            for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device), ("copy", copy))
            if v is not None
        }
        return np.asarray(self).__dlpack__(**kwargs)

    def __dlpack_device__(self):
        """DLPack's device of ``__dlpack__``: the CPU."""
        return (1, 0)

    @property
    def blocks(self):
        """``x.blocks[i, j]``: the array made of the selected blocks."""

        return blockwise.BlockView(self)

    @property
    def partitions(self):
        """dask.array's alias of ``blocks``."""
        return self.blocks

    @property
    def A(self):
        """dask.array's ``A``: the array itself (NumPy matrix's ``A`` gives the ndarray)."""
        return self

    def view(self, dtype=None, order="C"):
        """dask.array's ``view``: each block reinterpreted as ``dtype`` (``order="C"``: along the
        last axis, ``"F"``: along the first), so that axis's blocks must hold whole elements of
        ``dtype``."""
        from .. import backends

        dtype = self.dtype if dtype is None else np.dtype(dtype)
        if order not in ("C", "F"):
            raise ValueError("Order must be one of 'C' or 'F'")
        if self.sparse_expr.type.backend != "numpy":
            raise backends.UnsupportedOperation(
                f"view: only NumPy chunks can be reinterpreted, these are {self.sparse_expr.type.backend}"
            )
        if not self.ndim:
            if dtype.itemsize != self.dtype.itemsize:
                raise ValueError(f"view: a 0-d array of {self.dtype} cannot be viewed as {dtype}")
            return self.map_blocks(view_block, dtype, order=order, dtype=dtype)
        axis = -1 if order == "C" else 0
        sizes = []
        for c in self.chunks[axis]:
            n, r = divmod(c * self.dtype.itemsize, dtype.itemsize)
            if r:
                raise ValueError(
                    f"view: a block of {c} elements of {self.dtype} along axis {axis % self.ndim} "
                    f"is not a whole number of {dtype} elements (rechunk first)"
                )
            sizes.append(n)
        chunks = list(self.chunks)
        chunks[axis] = tuple(sizes)
        return self.map_blocks(view_block, dtype, order=order, dtype=dtype, chunks=tuple(chunks))

    @property
    def vindex(self):
        """``x.vindex[rows, cols]``: point-wise indexing with broadcast integer arrays."""

        return blockwise.VIndex(self)

    def shuffle(self, indexer, axis, chunks="auto"):
        """dask.array's ``x.shuffle``: see ``dask_tra.array.shuffle``."""
        return da.shuffle(self, indexer, axis, chunks=chunks)

    def map_blocks(self, func, *args, **kwargs):
        """``func`` applied to each block: ``dask_tra.array.map_blocks``."""
        return da.map_blocks(func, self, *args, **kwargs)

    def map_overlap(self, func, depth, boundary=None, trim=True, **kwargs):
        """``func`` applied to each block with ``depth`` neighbouring elements: ``dask_tra.array.map_overlap``."""
        return da.map_overlap(func, self, depth=depth, boundary=boundary, trim=trim, **kwargs)

    def store(self, target, **kwargs):
        """The values written into ``target``: ``dask_tra.array.store``."""
        return da.store(self, target, **kwargs)

    def to_zarr(
        self,
        url,
        component=None,
        storage_options=None,
        overwrite=False,
        region=None,
        compute=True,
        return_stored=False,
        zarr_format=None,
        complete_attr=None,
        **kwargs,
    ):
        """The values written to the Zarr array at ``url``: ``dask_tra.array.to_zarr``."""
        return da.to_zarr(
            self,
            url,
            component,
            storage_options,
            overwrite,
            region,
            compute,
            return_stored,
            zarr_format,
            complete_attr,
            **kwargs,
        )

    def to_hdf5(self, filename, datapath, **kwargs):
        """The values written to dataset ``datapath`` of HDF5 file ``filename``: ``dask_tra.array.to_hdf5``."""
        return da.to_hdf5(filename, datapath, self, **kwargs)

    def to_delayed(self, optimize_graph=True):
        """The blocks as an array of Delayed objects: ``dask_tra.array.to_delayed``."""
        return da.to_delayed(self, optimize_graph)

    def _repr_html_(self):
        """The notebook's view: a table of the array's attributes and a chunk diagram."""
        from .display import repr_html

        return repr_html(self)

    # ---------------------------------------------------------------- operators (NumPy's semantics)

    def __add__(self, other):
        """``self + other``: ``dask_tra.array.add``."""
        return _operate("add", self, other)

    def __radd__(self, other):
        """``other + self``: ``dask_tra.array.add``."""
        return _operate("add", self, other, reflected=True)

    def __sub__(self, other):
        """``self - other``: ``dask_tra.array.subtract``."""
        return _operate("subtract", self, other)

    def __rsub__(self, other):
        """``other - self``: ``dask_tra.array.subtract``."""
        return _operate("subtract", self, other, reflected=True)

    def __mul__(self, other):
        """``self * other``: ``dask_tra.array.multiply``."""
        return _operate("multiply", self, other)

    def __rmul__(self, other):
        """``other * self``: ``dask_tra.array.multiply``."""
        return _operate("multiply", self, other, reflected=True)

    def __truediv__(self, other):
        """``self / other``: ``dask_tra.array.true_divide``."""
        return _operate("true_divide", self, other)

    def __rtruediv__(self, other):
        """``other / self``: ``dask_tra.array.true_divide``."""
        return _operate("true_divide", self, other, reflected=True)

    def __floordiv__(self, other):
        """``self // other``: ``dask_tra.array.floor_divide``."""
        return _operate("floor_divide", self, other)

    def __rfloordiv__(self, other):
        """``other // self``: ``dask_tra.array.floor_divide``."""
        return _operate("floor_divide", self, other, reflected=True)

    def __mod__(self, other):
        """``self % other``: ``dask_tra.array.remainder``."""
        return _operate("remainder", self, other)

    def __rmod__(self, other):
        """``other % self``: ``dask_tra.array.remainder``."""
        return _operate("remainder", self, other, reflected=True)

    def __pow__(self, other):
        """``self ** other``: ``dask_tra.array.power``."""
        return _operate("power", self, other)

    def __rpow__(self, other):
        """``other ** self``: ``dask_tra.array.power``."""
        return _operate("power", self, other, reflected=True)

    def __and__(self, other):
        """``self & other``: ``dask_tra.array.bitwise_and``."""
        return _operate("bitwise_and", self, other)

    def __rand__(self, other):
        """``other & self``: ``dask_tra.array.bitwise_and``."""
        return _operate("bitwise_and", self, other, reflected=True)

    def __or__(self, other):
        """``self | other``: ``dask_tra.array.bitwise_or``."""
        return _operate("bitwise_or", self, other)

    def __ror__(self, other):
        """``other | self``: ``dask_tra.array.bitwise_or``."""
        return _operate("bitwise_or", self, other, reflected=True)

    def __xor__(self, other):
        """``self ^ other``: ``dask_tra.array.bitwise_xor``."""
        return _operate("bitwise_xor", self, other)

    def __rxor__(self, other):
        """``other ^ self``: ``dask_tra.array.bitwise_xor``."""
        return _operate("bitwise_xor", self, other, reflected=True)

    def __lshift__(self, other):
        """``self << other``: ``dask_tra.array.left_shift``."""
        return _operate("left_shift", self, other)

    def __rlshift__(self, other):
        """``other << self``: ``dask_tra.array.left_shift``."""
        return _operate("left_shift", self, other, reflected=True)

    def __rshift__(self, other):
        """``self >> other``: ``dask_tra.array.right_shift``."""
        return _operate("right_shift", self, other)

    def __rrshift__(self, other):
        """``other >> self``: ``dask_tra.array.right_shift``."""
        return _operate("right_shift", self, other, reflected=True)

    def __divmod__(self, other):
        """``divmod(self, other)``: ``dask_tra.array.divmod``."""
        return _operate("divmod", self, other)

    def __rdivmod__(self, other):
        """``divmod(other, self)``: ``dask_tra.array.divmod``."""
        return _operate("divmod", self, other, reflected=True)

    def __matmul__(self, other):
        """``self @ other``: ``dask_tra.array.matmul``."""
        return _operate("matmul", self, other)

    def __rmatmul__(self, other):
        """``other @ self``: ``dask_tra.array.matmul``."""
        return _operate("matmul", self, other, reflected=True)

    def __eq__(self, other):
        """``self == other``: ``dask_tra.array.equal`` (a lazy boolean array)."""
        return _operate("equal", self, other)

    def __ne__(self, other):
        """``self != other``: ``dask_tra.array.not_equal`` (a lazy boolean array)."""
        return _operate("not_equal", self, other)

    def __lt__(self, other):
        """``self < other``: ``dask_tra.array.less`` (a lazy boolean array)."""
        return _operate("less", self, other)

    def __le__(self, other):
        """``self <= other``: ``dask_tra.array.less_equal`` (a lazy boolean array)."""
        return _operate("less_equal", self, other)

    def __gt__(self, other):
        """``self > other``: ``dask_tra.array.greater`` (a lazy boolean array)."""
        return _operate("greater", self, other)

    def __ge__(self, other):
        """``self >= other``: ``dask_tra.array.greater_equal`` (a lazy boolean array)."""
        return _operate("greater_equal", self, other)

    def __neg__(self):
        """``-self``: ``dask_tra.array.negative``."""
        return da.negative(self)

    def __pos__(self):
        """``+self``: ``dask_tra.array.positive``."""
        return da.positive(self)

    def __abs__(self):
        """``abs(self)``: ``dask_tra.array.absolute``."""
        return da.absolute(self)

    def __invert__(self):
        """``~self``: ``dask_tra.array.invert``."""
        return da.invert(self)

    # ---------------------------------------------------------------- conversions to Python scalars (compute)

    def __bool__(self):
        """``bool(self)`` of a one-element array (computes it)."""
        return _to_scalar(self, bool)

    def __int__(self):
        """``int(self)`` of a one-element array (computes it)."""
        return _to_scalar(self, int)

    def __float__(self):
        """``float(self)`` of a one-element array (computes it)."""
        return _to_scalar(self, float)

    def __complex__(self):
        """``complex(self)`` of a one-element array (computes it)."""
        return _to_scalar(self, complex)

    # ---------------------------------------------------------------- methods of the namespace's functions

    def astype(self, dtype, casting="unsafe", copy=True, **kwargs):
        """``self`` cast to ``dtype`` (``order=`` is ignored, as dask does): ``dask_tra.array.astype``."""
        return da.astype(self, dtype, casting=casting, copy=copy, **kwargs)

    def sum(self, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kwargs):
        """The sum over ``axis`` (None: all axes): ``dask_tra.array.sum``."""
        return da.sum(self, axis, dtype, keepdims, split_every, out=out, **kwargs)

    def prod(self, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kwargs):
        """The product over ``axis`` (None: all axes): ``dask_tra.array.prod``."""
        return da.prod(self, axis, dtype, keepdims, split_every, out=out, **kwargs)

    def mean(self, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kwargs):
        """The mean over ``axis`` (None: all axes): ``dask_tra.array.mean``."""
        return da.mean(self, axis, dtype, keepdims, split_every, out=out, **kwargs)

    def var(
        self, axis=None, dtype=None, keepdims=False, ddof=0, split_every=None, out=None, *, correction=None, **kwargs
    ):
        """The variance over ``axis`` (None: all axes): ``dask_tra.array.var``."""
        return da.var(self, axis, dtype, keepdims, ddof, split_every, out=out, correction=correction, **kwargs)

    def std(
        self, axis=None, dtype=None, keepdims=False, ddof=0, split_every=None, out=None, *, correction=None, **kwargs
    ):
        """The standard deviation over ``axis`` (None: all axes): ``dask_tra.array.std``."""
        return da.std(self, axis, dtype, keepdims, ddof, split_every, out=out, correction=correction, **kwargs)

    def moment(self, order, axis=None, dtype=None, keepdims=False, ddof=0, split_every=None, out=None):
        """The ``order``-th central moment over ``axis``: ``dask_tra.array.moment``."""
        return da.moment(self, order, axis, dtype, keepdims, ddof, split_every, out=out)

    def min(self, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kwargs):
        """The minimum over ``axis`` (None: all axes): ``dask_tra.array.min``."""
        return da.min(self, axis, dtype, keepdims, split_every, out=out, **kwargs)

    def max(self, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kwargs):
        """The maximum over ``axis`` (None: all axes): ``dask_tra.array.max``."""
        return da.max(self, axis, dtype, keepdims, split_every, out=out, **kwargs)

    def argmin(self, axis=None, keepdims=False, split_every=None, out=None, **kwargs):
        """The index of the minimum along ``axis`` (None: of the flattened array): ``dask_tra.array.argmin``."""
        return da.argmin(self, axis, keepdims, split_every, out=out, **kwargs)

    def argmax(self, axis=None, keepdims=False, split_every=None, out=None, **kwargs):
        """The index of the maximum along ``axis`` (None: of the flattened array): ``dask_tra.array.argmax``."""
        return da.argmax(self, axis, keepdims, split_every, out=out, **kwargs)

    def any(self, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kwargs):
        """Whether any element along ``axis`` (None: all axes) is true: ``dask_tra.array.any``."""
        return da.any(self, axis, dtype, keepdims, split_every, out=out, **kwargs)

    def all(self, axis=None, dtype=None, keepdims=False, split_every=None, out=None, **kwargs):
        """Whether all elements along ``axis`` (None: all axes) are true: ``dask_tra.array.all``."""
        return da.all(self, axis, dtype, keepdims, split_every, out=out, **kwargs)

    def cumsum(self, axis=None, dtype=None, out=None, method="sequential", **kwargs):
        """The cumulative sum along ``axis`` (None: of the flattened array): ``dask_tra.array.cumsum``."""
        return da.cumsum(self, axis, dtype, out=out, method=method, **kwargs)

    def cumprod(self, axis=None, dtype=None, out=None, method="sequential", **kwargs):
        """The cumulative product along ``axis`` (None: of the flattened array): ``dask_tra.array.cumprod``."""
        return da.cumprod(self, axis, dtype, out=out, method=method, **kwargs)

    def dot(self, other, out=None):
        """The dot product of ``self`` and ``other``: ``dask_tra.array.dot``."""
        return da.dot(self, other, out)

    def swapaxes(self, axis1, axis2):
        """``self`` with axes ``axis1`` and ``axis2`` interchanged: ``dask_tra.array.swapaxes``."""
        return da.swapaxes(self, axis1, axis2)

    def squeeze(self, axis=None):
        """``self`` without its axes of length one (or those of ``axis``): ``dask_tra.array.squeeze``."""
        return da.squeeze(self, axis)

    def ravel(self):
        """``self`` flattened to one dimension (C order): ``dask_tra.array.ravel``."""
        return da.ravel(self)

    def rechunk(self, chunks="auto", threshold=None, block_size_limit=None, balance=False, method=None):
        """``self`` with blocks ``chunks``: ``dask_tra.array.rechunk``."""
        return da.rechunk(self, chunks, threshold, block_size_limit, balance, method)

    def round(self, decimals=0):
        """``self`` rounded to ``decimals`` decimals: ``dask_tra.array.round``."""
        return da.round(self, decimals)

    def clip(self, min=None, max=None, **kwargs):  # noqa: A002 (NumPy's and dask's parameter names)
        """``self`` limited to ``[min, max]`` (``a_min=``/``a_max=`` also taken): ``dask_tra.array.clip``."""
        return da.clip(self, **{"a_min": min, "a_max": max, **kwargs})

    def conj(self):
        """The complex conjugate, element-wise: ``dask_tra.array.conj``."""
        return da.conj(self)

    def conjugate(self):
        """The complex conjugate, element-wise (``conj``): ``dask_tra.array.conj``."""
        return da.conj(self)

    def repeat(self, repeats, axis=None):
        """Each element repeated ``repeats`` times along ``axis`` (None: flattened): ``dask_tra.array.repeat``."""
        return da.repeat(self, repeats, axis)

    def to_backend(self, backend=None, device=None):
        """``self`` with chunks of another library (numpy, cupy, torch): ``dask_tra.array.to_backend``."""
        return da.to_backend(self, backend, device)

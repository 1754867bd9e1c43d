"""xarray's chunk manager for dask_tra: ``chunked_array_type="dask_tra"``.

Registered under the ``xarray.chunkmanagers`` entry point (``pyproject.toml``), so that
``xr.open_dataset(..., chunks=..., chunked_array_type="dask_tra")``, ``.chunk(...,
chunked_array_type="dask_tra")``, ``apply_ufunc(dask="parallelized")``, ``map_blocks``,
``to_zarr``/``to_netcdf`` and the reductions keep the data a RelArray end to end.

Which manager owns a RelArray (a choice). A RelArray is also a Dask collection, and
xarray's built-in ``DaskManager`` claims every duck array that is a Dask collection, so with
both managers answering yes xarray fails ("Multiple ChunkManagers recognise type"). Of the
two, dask_tra's must win: dask's would run ``dask.array.map_blocks``/``apply_gufunc``/
``store`` on RelArrays, silently turning them into dask.arrays. So when xarray loads this
manager, it makes ``DaskManager.is_chunked_array`` decline RelArrays, and
``DaskManager.from_array`` (``.chunk()`` without ``chunked_array_type``, which picks dask's
manager by default) rechunk a RelArray with dask_tra rather than wrap it: wrappers on those two
methods, which answer for everything else as before. RelArrays stay Dask collections for the
rest: ``dask.compute``, ``persist``, ``Client.compute``. ``xr.set_options(chunk_manager=
"dask_tra")`` makes dask_tra the manager ``.chunk()`` and ``open_dataset(chunks=...)`` pick.

``DataArray.map_blocks``/``Dataset.map_blocks``/``xr.map_blocks`` build dask.array graphs
themselves (xarray has no chunk-manager hook there). When their arguments hold RelArrays, a
wrapper on ``xarray.core.parallel.map_blocks`` hands xarray the RelArrays as dask.arrays
(``to_dask()``: each is planned once), lets it build its graph, and wraps every chunked
variable of the result back with ``from_dask``: the result holds RelArrays, whose blocks are
xarray's tasks (an opaque lazy input to later plans, read where the plan puts them).
"""

from __future__ import annotations

import numpy as np

from .array.core import RelArray

try:
    from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint
except ImportError:  # xarray missing: the entry point is never loaded without it
    ChunkManagerEntrypoint = object


def _is_relarray(data) -> bool:
    return isinstance(data, RelArray)


_dask_methods: dict = {}  # DaskManager's own methods, once wrapped


def _dask_declines_relarrays(self, data) -> bool:
    """``DaskManager.is_chunked_array``, leaving RelArrays to dask_tra's manager."""
    return not _is_relarray(data) and _dask_methods["is_chunked_array"](self, data)


def _dask_from_array_keeps_relarrays(self, data, chunks, **kwargs):
    """``DaskManager.from_array``: a RelArray (``.chunk()`` without naming the manager) is
    rechunked by dask_tra, not wrapped into a dask.array."""
    if _is_relarray(data):
        return DaskTraManager().rechunk(data, chunks)
    return _dask_methods["from_array"](self, data, chunks, **kwargs)


def _variables(obj):
    """Every variable (data and coordinates) of a DataArray or Dataset, by name (None: a
    DataArray's own)."""
    out = dict(obj.variables) if hasattr(obj, "data_vars") else {None: obj.variable, **obj.coords.variables}
    return out


def _holds(obj, test) -> bool:
    return hasattr(obj, "coords") and any(test(v.data) for v in _variables(obj).values())


def _converted(obj, test, fn):
    """``obj`` with each variable whose data passes ``test`` holding ``fn(data)`` instead."""
    if not hasattr(obj, "coords"):
        return obj
    new = {k: v.copy(data=fn(v.data)) for k, v in _variables(obj).items() if test(v.data)}
    if not new:
        return obj
    if hasattr(obj, "data_vars"):
        return obj._replace(variables={**obj.variables, **new})
    own = new.pop(None, obj.variable)
    return obj._replace(variable=own, coords={**obj.coords.variables, **new}, indexes=obj.xindexes)


def _is_dask_array(data) -> bool:
    import dask.array

    return isinstance(data, dask.array.Array)


def _map_blocks_keeps_relarrays(func, obj, args=(), kwargs=None, template=None):
    """``xarray.map_blocks``: RelArrays in, RelArrays out (see the module doc)."""
    original = _dask_methods["map_blocks"]
    if not any(_holds(o, _is_relarray) for o in (obj, *args, template)):
        return original(func, obj, args, kwargs, template)
    import dask_tra.array as da

    def as_dask(o):
        return _converted(o, _is_relarray, lambda x: x.to_dask())

    out = original(
        func, as_dask(obj), [as_dask(a) for a in args], kwargs, None if template is None else as_dask(template)
    )
    return _converted(out, _is_dask_array, da.from_dask)


def _step_dask_aside():
    try:
        from xarray.namedarray.daskmanager import DaskManager
    except ImportError:
        return
    import xarray
    import xarray.core.parallel as parallel

    if parallel.map_blocks is not _map_blocks_keeps_relarrays:
        _dask_methods["map_blocks"] = parallel.map_blocks
        parallel.map_blocks = xarray.map_blocks = _map_blocks_keeps_relarrays
    for name, wrapper in (
        ("is_chunked_array", _dask_declines_relarrays),
        ("from_array", _dask_from_array_keeps_relarrays),
    ):
        if getattr(DaskManager, name) is not wrapper:
            _dask_methods[name] = getattr(DaskManager, name)
            setattr(DaskManager, name, wrapper)


class DaskTraManager(ChunkManagerEntrypoint):
    """The ChunkManagerEntrypoint of dask_tra (see the module doc)."""

    available = True

    def __init__(self):
        self.array_cls = RelArray
        _step_dask_aside()

    def is_chunked_array(self, data) -> bool:
        return _is_relarray(data)

    def chunks(self, data):
        return data.chunks

    def normalize_chunks(self, chunks, shape=None, limit=None, dtype=None, previous_chunks=None):
        from dask.array.core import normalize_chunks

        return normalize_chunks(chunks, shape=shape, limit=limit, dtype=dtype, previous_chunks=previous_chunks)

    def from_array(self, data, chunks, **kwargs):
        import dask_tra.array as da

        if isinstance(chunks, tuple) and "auto" in chunks and any(s == 0 for s in data.shape):
            chunks = data.shape
        return da.from_array(data, chunks=chunks, name=kwargs.get("name"), lock=kwargs.get("lock", False))

    def rechunk(self, data, chunks, **kwargs):
        return data.rechunk(chunks)

    def compute(self, *data, **kwargs):
        import dask

        return dask.compute(*data, **kwargs)

    def persist(self, *data, **kwargs):
        import dask

        return dask.persist(*data, **kwargs)

    @property
    def array_api(self):
        import dask_tra.array as da

        return da

    def reduction(self, arr, func, combine_func=None, aggregate_func=None, axis=None, dtype=None, keepdims=False):
        """``func`` on every block (keeping the reduced axes), those partial results gathered
        into one block along the reduced axes, then ``aggregate_func`` (else ``combine_func``,
        else ``func``) on them: a two-level tree."""
        import dask_tra.array as da

        from .array.relations import axes_of

        axes = axes_of(axis, arr.ndim)
        partial = da.map_blocks(
            func,
            arr,
            axis=axes,
            keepdims=True,
            dtype=dtype,
            chunks=tuple((1,) * len(c) if d in axes else c for d, c in enumerate(arr.chunks)),
        )
        partial = partial.rechunk({d: -1 for d in axes})
        final = aggregate_func or combine_func or func
        kept = tuple(c for d, c in enumerate(partial.chunks) if d not in axes)
        if keepdims:
            return da.map_blocks(
                final,
                partial,
                axis=axes,
                keepdims=True,
                dtype=dtype,
                chunks=tuple((1,) if d in axes else c for d, c in enumerate(partial.chunks)),
            )
        return da.map_blocks(final, partial, axis=axes, keepdims=False, dtype=dtype, drop_axis=list(axes), chunks=kept)

    def scan(self, func, binop, ident, arr, axis=None, dtype=None, **kwargs):
        """``func`` along ``axis`` after making that axis one block (xarray's ffill/bfill)."""
        import dask_tra.array as da

        whole = arr.rechunk({axis: -1})
        return da.map_blocks(func, whole, axis=axis, dtype=dtype if dtype is not None else arr.dtype)

    def apply_gufunc(
        self,
        func,
        signature,
        *args,
        axes=None,
        axis=None,
        keepdims=False,
        output_dtypes=None,
        output_sizes=None,
        vectorize=None,
        allow_rechunk=False,
        meta=None,
        **kwargs,
    ):
        import dask_tra.array as da

        return da.apply_gufunc(
            func,
            signature,
            *args,
            axes=axes,
            axis=axis,
            keepdims=keepdims,
            output_dtypes=output_dtypes,
            output_sizes=output_sizes,
            vectorize=vectorize,
            allow_rechunk=allow_rechunk,
            meta=meta,
            **kwargs,
        )

    def map_blocks(self, func, *args, dtype=None, chunks=None, drop_axis=None, new_axis=None, **kwargs):
        import dask_tra.array as da

        return da.map_blocks(func, *args, dtype=dtype, chunks=chunks, drop_axis=drop_axis, new_axis=new_axis, **kwargs)

    def blockwise(
        self,
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
        import dask_tra.array as da

        return da.blockwise(
            func,
            out_ind,
            *args,
            name=name,
            dtype=dtype,
            adjust_chunks=adjust_chunks,
            new_axes=new_axes,
            align_arrays=align_arrays,
            concatenate=concatenate,
            meta=meta,
            **kwargs,
        )

    def unify_chunks(self, *args, **kwargs):
        """dask's unify_chunks: (array, index) pairs rechunked to the common refinement."""
        import dask_tra.array as da

        from .array.blockwise import _common_chunks

        pairs = list(zip(args[::2], args[1::2]))
        by_index = {}
        for a, ind in pairs:
            if ind is not None:
                for l, c in zip(ind, da.asarray(a).chunks):
                    by_index.setdefault(l, []).append(c)
        unified = {l: _common_chunks(cs) for l, cs in by_index.items()}
        arrays = [
            a
            if ind is None
            else da.asarray(a).rechunk(
                tuple(c if sum(c) == 1 and len(c) == 1 else unified[l] for l, c in zip(ind, da.asarray(a).chunks))
            )
            for a, ind in pairs
        ]
        return unified, arrays

    def store(self, sources, targets, **kwargs):
        import dask_tra.array as da

        kwargs.pop("flush", None)
        return da.store(sources, targets, **kwargs)

    def get_auto_chunk_size(self):
        from dask import config
        from dask.utils import parse_bytes

        return parse_bytes(config.get("array.chunk-size"))

    def shuffle(self, x, indexer, axis, chunks):
        import dask_tra.array as da

        from .array.rechunk import take

        order = np.concatenate([np.asarray(i, dtype=np.int64) for i in indexer]) if indexer else np.arange(0)
        return take(da.asarray(x), axis, order, tuple(len(i) for i in indexer if len(i)) or None)


__all__ = ["DaskTraManager"]

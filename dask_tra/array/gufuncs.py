"""``apply_gufunc``, ``gufunc`` and ``as_gufunc``: a Python function over NumPy
generalized-ufunc signatures, as dask.array has them (``dask/array/gufunc.py``).

Lowering: the inputs' core axes are moved last (``axes``/``axis``) and made one block (a
rechunk, only with ``allow_rechunk=True``, as in dask); then one ``blockwise`` per output over
the loop dimensions, the input core dimensions contracted (one block: dask's
``concatenate=True``) and the output core dimensions new one-block axes of their size (an
input's, or ``output_sizes``'). A function of several outputs runs once per output (each
``blockwise`` picks its own output). ``keepdims`` and the output ``axes`` are an
``expand_dims`` and a ``transpose`` of the result, as in dask.
"""

from __future__ import annotations

import math
import re
import sys
import traceback

import dask.array
import numpy as np
from dask.utils import derived_from

from .blockwise import _blockwise

_OPTIONS = ("vectorize", "axes", "axis", "keepdims", "output_sizes", "output_dtypes", "allow_rechunk", "meta")

# dask's (NumPy's, with zero inputs allowed) grammar of a gufunc signature
_DIMENSION_NAME = r"\w+"
_CORE_DIMENSION_LIST = f"(?:{_DIMENSION_NAME}(?:,{_DIMENSION_NAME})*,?)?"
_ARGUMENT = rf"\({_CORE_DIMENSION_LIST}\)"
_INPUT_ARGUMENTS = f"(?:{_ARGUMENT}(?:,{_ARGUMENT})*,?)?"
_OUTPUT_ARGUMENTS = f"{_ARGUMENT}(?:,{_ARGUMENT})*"
_SIGNATURE = f"^{_INPUT_ARGUMENTS}->{_OUTPUT_ARGUMENTS}$"


def _parse_gufunc_signature(signature):
    """dask's parse: (core dims of each input, core dims of the output), the output a tuple for
    one output and a list of tuples for several (``"(i)->(),()"``); no inputs is allowed
    (``"->()"``). ValueError for a malformed signature."""
    signature = re.sub(r"\s+", "", signature)
    if not re.match(_SIGNATURE, signature):
        raise ValueError(f"Not a valid gufunc signature: {signature}")
    in_txt, out_txt = signature.split("->")
    ins = [tuple(re.findall(_DIMENSION_NAME, arg)) for arg in re.findall(_ARGUMENT, in_txt)]
    outs = [tuple(re.findall(_DIMENSION_NAME, arg)) for arg in re.findall(_ARGUMENT, out_txt)]
    outs = outs[0] if ((len(outs) == 1) and (out_txt[-1] != ",")) else outs
    return ins, outs


def _validate_normalize_axes(axes, axis, keepdims, input_coredimss, output_coredimss):
    """dask's (NumPy's) rules for ``axes``/``axis``/``keepdims``: (axes of each input, axes of
    each output), ValueError where they do not fit the signature."""
    nin = len(input_coredimss)
    nout = 1 if not isinstance(output_coredimss, list) else len(output_coredimss)

    if axes is not None and axis is not None:
        raise ValueError("Only one of `axis` or `axes` keyword arguments should be given")
    if axes and not isinstance(axes, list):
        raise ValueError("`axes` has to be of type list")

    output_coredimss = output_coredimss if nout > 1 else [output_coredimss]
    filtered_core_dims = list(filter(len, input_coredimss))
    nr_outputs_with_coredims = len([True for x in output_coredimss if len(x) > 0])

    if keepdims:
        if nr_outputs_with_coredims > 0:
            raise ValueError("`keepdims` can only be used for scalar outputs")
        output_coredimss = len(output_coredimss) * [filtered_core_dims[0]]

    core_dims = input_coredimss + output_coredimss
    if axis is not None:
        if not isinstance(axis, int):
            raise ValueError("`axis` argument has to be an integer value")
        if filtered_core_dims:
            cd0 = filtered_core_dims[0]
            if len(cd0) != 1:
                raise ValueError("`axis` can be used only, if one core dimension is present")
            for cd in filtered_core_dims:
                if cd0 != cd:
                    raise ValueError("To use `axis`, all core dimensions have to be equal")

    if axes is None:
        if axis is not None:
            axes = [(axis,) if cd else tuple() for cd in core_dims]
        else:
            axes = [tuple(range(-len(icd), 0)) for icd in core_dims]
    elif not isinstance(axes, list):
        raise ValueError("`axes` argument has to be a list")
    axes = [(a,) if isinstance(a, int) else a for a in axes]

    if ((nr_outputs_with_coredims == 0) and (nin != len(axes)) and (nin + nout != len(axes))) or (
        (nr_outputs_with_coredims > 0) and (nin + nout != len(axes))
    ):
        raise ValueError("The number of `axes` entries is not equal the number of input and output arguments")

    output_axes = axes[nin:]
    output_axes = output_axes or [tuple(range(-len(ocd), 0)) for ocd in output_coredimss]
    input_axes = axes[:nin]

    for idx, (iax, icd) in enumerate(zip(input_axes, input_coredimss)):
        if len(iax) != len(icd):
            raise ValueError(
                f"The number of `axes` entries for argument #{idx} is not equal "
                "the number of respective input core dimensions in signature"
            )
    if not keepdims:
        for idx, (oax, ocd) in enumerate(zip(output_axes, output_coredimss)):
            if len(oax) != len(ocd):
                raise ValueError(
                    f"The number of `axes` entries for argument #{idx} is not equal "
                    "the number of respective output core dimensions in signature"
                )
    elif input_coredimss:
        icd0 = input_coredimss[0]
        for icd in input_coredimss:
            if icd0 != icd:
                raise ValueError("To use `keepdims`, all core dimensions have to be equal")
        iax0 = input_axes[0]
        output_axes = [iax0 for _ in output_coredimss]

    return input_axes, output_axes


def _is_arraylike(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "ndim")


def _infer_output_dtypes(func, args, kwargs, nout):
    """dask's ``apply_infer_dtype``: ``func`` on zero arrays of shape (1, ..., 1) and the
    inputs' dtypes; ValueError (dask's wording) when the call fails."""
    probe = [np.zeros((1,) * x.ndim, dtype=x.dtype) if _is_arraylike(x) else x for x in args]
    try:
        with np.errstate(all="ignore"):
            o = func(*probe, **kwargs)
    except OverflowError:
        raise
    except Exception as e:
        tb = "".join(traceback.format_tb(sys.exc_info()[2]))
        raise ValueError(
            "`dtype` inference failed in `apply_gufunc`.\n\n"
            "Please specify the dtype explicitly using the `output_dtypes` kwarg.\n\n"
            "Original error is below:\n"
            "------------------------\n"
            f"{e!r}\n\n"
            "Traceback:\n"
            "---------\n"
            f"{tb}"
        ) from None
    if nout is None:
        return getattr(o, "dtype", type(o))
    return tuple(getattr(e, "dtype", type(e)) for e in o)


def _output_dtypes(func, signature, args, kwargs, nout, output_dtypes, meta, vectorize):
    """The output dtype (one output) or tuple of dtypes, from ``meta``, ``output_dtypes`` or
    inference, validated against the number of outputs as dask does."""
    if meta is not None and output_dtypes is not None:
        raise ValueError("Only one of `meta` and `output_dtypes` should be given (`meta` is preferred).")
    if meta is None:
        if output_dtypes is None:
            probe = np.vectorize(func, signature=signature) if vectorize else func
            output_dtypes = _infer_output_dtypes(probe, args, kwargs, nout)
        if nout is None and isinstance(output_dtypes, (tuple, list)) and len(output_dtypes) == 1:
            output_dtypes = output_dtypes[0]
        found = tuple(output_dtypes) if isinstance(output_dtypes, (tuple, list)) else output_dtypes
    else:
        found = tuple(meta) if isinstance(meta, (tuple, list)) else meta
    if nout is None:
        if isinstance(found, tuple):
            if len(found) != 1:
                raise ValueError(
                    "For a function with one output, must give a single item for `output_dtypes`/`meta`, "
                    "not a tuple or list."
                )
            found = found[0]
        return np.dtype(found.dtype if meta is not None else found)
    if not isinstance(found, tuple):
        raise ValueError(
            f"For a function with {nout} outputs, must give a tuple or list for `output_dtypes`/`meta`, "
            "not a single item."
        )
    if len(found) != nout:
        raise ValueError(
            f"For a function with {nout} outputs, must give a tuple or list of {nout} items for "
            f"`output_dtypes`/`meta`, not {len(found)}."
        )
    return tuple(np.dtype(m.dtype if meta is not None else m) for m in found)


def _calculate_new_chunksizes(input_chunks, new_chunks, changeable_dimensions, maximum_chunk):
    """dask's (``dask/array/_shuffle.py``): split the chunks of ``changeable_dimensions`` until
    a block is at most ``maximum_chunk`` elements (within dask's chunk-size tolerance)."""
    import dask

    tolerance = dask.config.get("array.chunk-size-tolerance", 1.25)
    maximum_chunk = max(maximum_chunk, 1)
    while changeable_dimensions:
        n_changeable = len(changeable_dimensions)
        factor_inc = math.prod(map(max, new_chunks)) / maximum_chunk
        if factor_inc <= 1:
            break
        for i in list(changeable_dimensions):
            sizes = []
            limit = max(new_chunks[i]) / (factor_inc ** (1 / n_changeable))
            for c in input_chunks[i]:
                if c > tolerance * limit:
                    factor = min(math.ceil(c / limit), c)
                    size, rem = divmod(c, factor)
                    sizes.extend(size + (k < rem) for k in range(factor))
                else:
                    sizes.append(c)
            if tuple(sizes) == new_chunks[i] or max(sizes) == 1:
                changeable_dimensions.remove(i)
            new_chunks[i] = tuple(sizes)
    return new_chunks


class _Pick:
    """Output ``index`` of a function returning several (a module-level callable: it pickles)."""

    def __init__(self, func, index):
        self.func, self.index = func, index
        self.__name__ = getattr(func, "__name__", "gufunc")

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)[self.index]


class _NoInputs:
    """A function of no inputs, called with a placeholder block it ignores."""

    def __init__(self, func):
        self.func = func
        self.__name__ = getattr(func, "__name__", "gufunc")

    def __call__(self, _placeholder, **kwargs):
        return self.func(**kwargs)


@derived_from(dask.array)
def apply_gufunc(
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
    """dask.array.apply_gufunc: ``func`` with a NumPy generalized-ufunc ``signature`` (e.g.
    ``"(i),(i)->()"``) over the loop dimensions, which broadcast as NumPy's do. Core dimensions
    must be one block each and loop dimensions chunked alike, or ``allow_rechunk=True`` makes
    them so (as in dask). ``output_dtypes`` (or ``meta``) is inferred, as dask does, by calling
    ``func`` on arrays of shape (1, ..., 1) when not given. ``axes``/``axis``/``keepdims`` are
    NumPy's. Several outputs: a tuple of arrays (``func`` runs once per output)."""
    from .creation import asarray as _asarray
    from .structure import expand_dims

    if not isinstance(signature, str):
        raise TypeError("`signature` has to be of type string")
    signature = re.sub(r"\s+", "", signature)
    input_coredimss, output_coredimss = _parse_gufunc_signature(signature)
    nout = None if not isinstance(output_coredimss, list) else len(output_coredimss)

    dtypes = _output_dtypes(func, signature, args, kwargs, nout, output_dtypes, meta, vectorize)
    if vectorize:
        func = np.vectorize(func, signature=signature, otypes=list(dtypes) if nout else [dtypes])
    output_sizes = dict(output_sizes or {})
    input_axes, output_axes = _validate_normalize_axes(axes, axis, keepdims, input_coredimss, output_coredimss)

    if len(input_coredimss) != len(args):
        raise ValueError(
            f"According to `signature`, `func` requires {len(input_coredimss)} arguments, but {len(args)} given"
        )
    arrays = []
    for arg, iax in zip(args, input_axes):
        a = _asarray(arg)
        iax = tuple(v if v < 0 else v - a.ndim for v in iax)
        order = tuple(i for i in range(-a.ndim, 0) if i not in iax) + iax
        order = tuple(i % a.ndim for i in order) if a.ndim else ()
        arrays.append(a if order == tuple(range(a.ndim)) else a.transpose(order))

    # loop dimensions, named by their position from the right (they broadcast as NumPy's)
    num_loopdims = [a.ndim - len(cd) for a, cd in zip(arrays, input_coredimss)]
    for a, n in zip(arrays, num_loopdims):
        if n < 0:
            raise ValueError(f"apply_gufunc: an input of {a.ndim} dimensions has more core dimensions in {signature!r}")
    max_loopdims = max(num_loopdims) if num_loopdims else 0
    loop_output_dims = tuple(f"__loopdim{d}__" for d in range(max_loopdims))
    input_dimss = [loop_output_dims[max_loopdims - n :] + tuple(cd) for n, cd in zip(num_loopdims, input_coredimss)]
    core_shapes = {}
    for a, n, cd in zip(arrays, num_loopdims, input_coredimss):
        core_shapes.update(zip(cd, a.shape[n:]))
    core_shapes.update(output_sizes)

    sizess, chunkss = {}, {}
    for a, dims in zip(arrays, input_dimss):
        for dim, size, chunks in zip(dims, a.shape, a.chunks):
            sizess.setdefault(dim, []).append(size)
            chunkss.setdefault(dim, []).append(chunks)
    for dim, sizes in sizess.items():
        if set(sizes) | {1} != {1, max(sizes)}:
            raise ValueError(f"Dimension `'{dim}'` with different lengths in arrays")
        if allow_rechunk:
            continue
        if dim not in loop_output_dims and any(len(c) > 1 for c in chunkss[dim]):
            raise ValueError(
                f"Core dimension `'{dim}'` consists of multiple chunks. To fix, rechunk into "
                "a single chunk along this dimension or set `allow_rechunk=True`, but beware "
                "that this may increase memory usage significantly."
            )
        if len({c for s, c in zip(sizes, chunkss[dim]) if s > 1}) > 1:
            raise ValueError(f"Dimension `'{dim}'` with different chunksize present")

    if allow_rechunk:
        # dask's: the core dims become one block; loop dims are split to keep the blocks' size
        rechunked = []
        for a, dims in zip(arrays, input_dimss):
            factor, changeable = 1, set()
            for i, d in enumerate(dims):
                if d not in loop_output_dims:
                    factor *= a.shape[i] / max(a.chunks[i]) if a.shape[i] else 1
                elif max(a.chunks[i]) > 1:
                    changeable.add(i)
            if factor > 1 and changeable:
                new = _calculate_new_chunksizes(
                    a.chunks, list(a.chunks), changeable, math.prod(map(max, a.chunks)) / factor
                )
                a = a.rechunk(tuple(new))
            core = {i: -1 for i, d in enumerate(dims) if d not in loop_output_dims and len(a.chunks[i]) > 1}
            rechunked.append(a.rechunk(core) if core else a)
        arrays = rechunked

    # each input's core axes get names of their own: they are one block each, contracted in
    # every call (a name repeated in one input, ``(n,n)``, is no repeated blockwise index)
    argpairs = []
    for j, (a, dims) in enumerate(zip(arrays, input_dimss)):
        argpairs += [a, tuple(d if d in loop_output_dims else f"__in{j}_{p}__" for p, d in enumerate(dims))]
    if not arrays:  # no inputs (``"->()"``): one block, the function called once
        from .creation import asarray as _zero

        argpairs = [_zero(np.zeros((), dtype=bool)), ()]
        func = _NoInputs(func)

    outs = output_coredimss if nout else [output_coredimss]
    out_dtypes = dtypes if nout else (dtypes,)
    results = []
    for k, (ocd, oax) in enumerate(zip(outs, output_axes)):
        missing = [d for d in ocd if d not in core_shapes]
        if missing:
            raise ValueError(f"apply_gufunc: output core dimension(s) {missing} need output_sizes")
        # an output core dimension is a new one-block axis of its (maybe new) size
        core_ind = tuple(f"__core{k}_{d}__" for d in ocd)
        r = _blockwise(
            _Pick(func, k) if nout else func,
            loop_output_dims + core_ind,
            *argpairs,
            dtype=out_dtypes[k],
            new_axes={c: core_shapes[d] for c, d in zip(core_ind, ocd)},
            concatenate=True,
            **kwargs,
        )
        if keepdims:
            r = expand_dims(r, tuple(range(r.ndim, r.ndim + len(oax))))
        tidcs = [None] * r.ndim
        for i, oa in zip(range(-len(oax), 0), oax):
            tidcs[oa] = i
        j = 0
        for i in range(len(tidcs)):
            if tidcs[i] is None:
                tidcs[i] = j
                j += 1
        order = tuple(i % r.ndim for i in tidcs)
        results.append(r if order == tuple(range(r.ndim)) else r.transpose(order))
    return tuple(results) if nout else results[0]


class gufunc:
    """``pyfunc`` bound into ``apply_gufunc`` with ``signature`` and the other options, as
    dask.array's ``gufunc``.

    Calling the object calls ``apply_gufunc(pyfunc, signature, *args, ...)``.

    Parameters
    ----------
    pyfunc : callable
        A function of NumPy arrays that follows ``signature`` (or is vectorized).
    signature : str
        The generalized ufunc signature, such as ``"(i)->()"``.
    vectorize : bool, optional
        Wrap ``pyfunc`` in ``numpy.vectorize``.
    axes, axis, keepdims : optional
        Where the core dimensions are, as ``apply_gufunc`` takes them.
    output_sizes : dict, optional
        Sizes of output core dimensions that no input has.
    output_dtypes : dtype or list of dtypes, optional
        The outputs' dtypes.
    allow_rechunk : bool, optional
        Allow rechunking core dimensions that are split into several blocks.
    meta : array, optional
        An empty array of the output's type.

    See Also
    --------
    apply_gufunc, as_gufunc

    Examples
    --------
    >>> total = da.gufunc(lambda v: v.sum(-1), signature="(i)->()", output_dtypes=float)
    >>> total(da.ones((3, 4), chunks=(1, 4))).compute()
    array([4., 4., 4.])
    """

    def __init__(
        self,
        pyfunc,
        *,
        signature=None,
        vectorize=False,
        axes=None,
        axis=None,
        keepdims=False,
        output_sizes=None,
        output_dtypes=None,
        allow_rechunk=False,
        meta=None,
    ):
        if not callable(pyfunc):
            raise TypeError(f"gufunc: pyfunc must be callable, got {type(pyfunc).__name__}")
        if not isinstance(signature, str):
            raise TypeError(f"gufunc: signature must be a string like '(i)->()', got {signature!r}")
        self.pyfunc, self.signature, self.vectorize = pyfunc, signature, vectorize
        self.axes, self.axis, self.keepdims = axes, axis, keepdims
        self.output_sizes, self.output_dtypes = output_sizes, output_dtypes
        self.allow_rechunk, self.meta = allow_rechunk, meta
        self.__name__ = getattr(pyfunc, "__name__", "gufunc")
        self.__doc__ = f"Bound gufunc: ``{self.__name__}`` with signature ``{signature!r}``."

    def __call__(self, *args, allow_rechunk=False, **kwargs):
        return apply_gufunc(
            self.pyfunc,
            self.signature,
            *args,
            vectorize=self.vectorize,
            axes=self.axes,
            axis=self.axis,
            keepdims=self.keepdims,
            output_sizes=self.output_sizes,
            output_dtypes=self.output_dtypes,
            allow_rechunk=self.allow_rechunk or allow_rechunk,
            meta=self.meta,
            **kwargs,
        )

    def __repr__(self):
        return f"<gufunc {self.__name__} {self.signature!r}>"


@derived_from(dask.array)
def as_gufunc(signature=None, **kwargs):
    """Decorator: ``@as_gufunc("(i)->()", output_dtypes=float)`` makes a function a ``gufunc``."""
    unknown = set(kwargs) - set(_OPTIONS)
    if unknown:
        raise TypeError(f"Unsupported keyword argument(s) provided: {sorted(unknown)}")

    def _as_gufunc(pyfunc):
        return gufunc(pyfunc, signature=signature, **kwargs)

    return _as_gufunc


__all__ = ["apply_gufunc", "as_gufunc", "gufunc"]

"""dask.array's registry of chunk types, and NEP 13's deferral rule built on it.

A RelArray handles operations with the types registered here (NumPy arrays, masked arrays,
the chunk classes of dask_tra's backends, and whatever ``register_chunk_type`` adds) and
defers to every other duck array that takes part in NumPy's protocols: ``x + other`` returns
``NotImplemented`` so that ``other`` (an upcast type, which may wrap RelArrays) answers, as
dask.array does."""

from __future__ import annotations

import sys

import numpy as np

_HANDLED_CHUNK_TYPES: list[type] = [np.ndarray, np.ma.MaskedArray]


def register_chunk_type(type):
    """Register ``type`` as a chunk type that RelArrays operate with rather than defer to (dask's).

    dask_tra stores chunks of its backends' libraries; an array of another type is converted
    by ``from_array`` as NumPy would, through ``__array__``. Registering a type makes RelArrays
    take precedence over it in binary operations (``other + x``).

    Parameters
    ----------
    type : type
        The chunk type.

    Returns
    -------
    None

    Examples
    --------
    >>> class MyChunk(np.ndarray):
    ...     pass
    >>> da.register_chunk_type(MyChunk)
    >>> da.is_valid_chunk_type(MyChunk)
    True
    """
    _HANDLED_CHUNK_TYPES.append(type)


def _handled() -> tuple:
    """The registered types and the chunk classes of the backends whose library is imported
    (an object of a library not imported yet cannot exist)."""
    from .. import backends

    extra = []
    for name in backends.names():
        b = backends.get(name)
        if b.module_name in sys.modules:
            extra.extend(b.chunk_types())
    return tuple(_HANDLED_CHUNK_TYPES) + tuple(extra)


def is_valid_chunk_type(type) -> bool:
    """Whether ``type`` is a registered chunk type (or a subclass of one).

    Parameters
    ----------
    type : type
        The type asked about.

    Returns
    -------
    bool

    Examples
    --------
    >>> da.is_valid_chunk_type(np.ndarray)
    True
    >>> da.is_valid_chunk_type(list)
    False
    """
    try:
        return type in _HANDLED_CHUNK_TYPES or issubclass(type, _handled())
    except TypeError:
        return False


def is_valid_array_chunk(array) -> bool:
    """Whether ``array`` is None or an instance of a registered chunk type.

    Parameters
    ----------
    array : object
        The object asked about.

    Returns
    -------
    bool

    Examples
    --------
    >>> da.is_valid_array_chunk(np.ones(2))
    True
    >>> da.is_valid_array_chunk([1, 2])
    False
    """
    return array is None or isinstance(array, _handled())


def should_defer(other) -> bool:
    """NEP 13, as dask.array applies it: defer to an object that opts out of ufuncs
    (``__array_ufunc__ = None``), to a duck array of an unregistered type, and to an object
    without ``__array_ufunc__`` of higher ``__array_priority__``."""
    from .relations import is_array

    if is_array(other):
        return False
    ufunc = getattr(other, "__array_ufunc__", False)
    if ufunc is None:
        return True
    if ufunc is not False:
        return not is_valid_array_chunk(other)
    return getattr(other, "__array_priority__", -np.inf) > 20  # RelArray.__array_priority__


__all__ = ["register_chunk_type", "is_valid_chunk_type", "is_valid_array_chunk"]

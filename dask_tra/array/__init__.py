"""dask_tra.array: a NumPy / dask.array-style namespace whose operations are TRA expressions.

``import dask_tra.array as da`` and write dask.array code: every function builds a lazy
tensor-relational expression (Join, Aggregate, ReKey, Filter, Transform, Tile, Concat over
Inputs) that the optimizer plans as a whole at compute time. One module per family;
``docs/api.md`` lists what is supported and what is not.
"""

from numpy import e, inf, nan, newaxis, pi  # noqa: F401

from . import (  # noqa: E402
    blocklayout,
    blocksparse,
    chunk_types,
    contractions,
    creation,
    datadependent,
    elementwise,
    fft,
    fill,
    gufuncs,
    io,
    lib,  # noqa: F401 (dask.array.lib.stride_tricks)
    linalg,
    ma,  # noqa: E402,F401 (dask.array.ma)
    manipulation,
    nanreductions,
    overlap,
    padding,
    quantiles,
    random,
    reductions,
    routines,
    sorting,
    stacking,
    structure,
    treereduce,
    utils,
)
from . import blockwise as _blockwise  # the module (the name ``blockwise`` is the function)
from . import core as _core  # noqa: E402
from . import rechunk as _rechunk  # the module, before ``from .rechunk import rechunk`` (the function) below
from .blocklayout import *  # noqa: F401,F403
from .blocksparse import *  # noqa: F401,F403
from .blockwise import *  # noqa: F401,F403
from .chunk_types import *  # noqa: F401,F403
from .contractions import *  # noqa: F401,F403
from .core import RelArray as Array  # noqa: E402 (dask.array's name: ``isinstance(x, da.Array)``)
from .creation import *  # noqa: F401,F403
from .creation import array  # noqa: F401 (= asarray; not in __all__, see below)
from .datadependent import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .fill import *  # noqa: F401,F403
from .gufuncs import *  # noqa: F401,F403
from .io import *  # noqa: F401,F403
from .linalg.norms import diagonal, trace  # noqa: F401
from .manipulation import *  # noqa: F401,F403
from .nanreductions import *  # noqa: F401,F403
from .overlap import sliding_window_view  # noqa: F401 (dask's: chunked as dask.array.lib.stride_tricks')
from .padding import *  # noqa: F401,F403
from .quantiles import *  # noqa: F401,F403
from .rechunk import rechunk  # noqa: F401
from .reductions import *  # noqa: F401,F403
from .routines import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .stacking import *  # noqa: F401,F403
from .structure import *  # noqa: F401,F403
from .treereduce import *  # noqa: F401,F403
from .utils import *  # noqa: F401,F403

_core.map_blocks = _blockwise.map_blocks  # dask.array.core has it too; core itself cannot import blockwise
from . import joint  # noqa: E402
from .joint import Joint  # noqa: E402,F401

# dask.array's dtype aliases (``da.float32``)
_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
import numpy as _np  # noqa: E402

globals().update({n: getattr(_np, n if n != "bool" else "bool_") for n in _DTYPES})


def compute(*args, **kwargs):
    """Compute several collections at once, as ``dask.compute``.

    RelArrays (alone or in lists, tuples, dicts) are planned as ONE DAG: the nodes they share
    are computed once (``joint.Joint``). Any other collection goes to ``dask.compute``.

    Parameters
    ----------
    *args
        RelArrays (or dask collections), alone or inside lists, tuples and dicts.
    **kwargs
        ``dask.compute``'s keywords (``scheduler=``, ``optimize_graph=``, ...).

    Returns
    -------
    tuple
        One result per argument, in the argument's structure.

    Examples
    --------
    >>> x = da.from_array(np.arange(6.0), chunks=2)
    >>> y = x * 2
    >>> da.compute(y.sum(), y.max())
    (np.float64(30.0), np.float64(10.0))
    """
    if joint.only_arrays(args):
        return joint.compute(*args, **kwargs)
    import dask

    return dask.compute(*args, **kwargs)


def persist(*args, **kwargs):
    """Persist several collections at once, as ``dask.persist``: their blocks are computed and
    kept (in memory, or on the cluster's workers), each returned as a collection over them.

    RelArrays (alone or in lists, tuples, dicts) are planned as ONE DAG, as by ``compute``.

    Parameters
    ----------
    *args
        RelArrays (or dask collections), alone or inside lists, tuples and dicts.
    **kwargs
        ``dask.persist``'s keywords (``scheduler=``, ...).

    Returns
    -------
    tuple
        One persisted collection per argument, in the argument's structure.

    Examples
    --------
    >>> x = da.from_array(np.arange(6.0), chunks=2)
    >>> (y,) = da.persist(x + 1)
    >>> y.sum().compute()
    np.float64(21.0)
    """
    if joint.only_arrays(args):
        return joint.persist(*args, **kwargs)
    import dask

    return dask.persist(*args, **kwargs)


from dask.array.core import PerformanceWarning  # noqa: E402,F401 (dask's class: one filter silences both)


def _array_expr_enabled():
    """dask.array's switch between its classic and its expression-based backend, read by code
    (dask's own tests among it) that branches on which one runs: dask_tra is neither, and keeps
    the classic semantics."""
    return False


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind``, as the Array API's (and NumPy's) ``isdtype``.

    Parameters
    ----------
    dtype : dtype
        The data type asked about.
    kind : str, dtype or tuple of them
        A kind name (``"bool"``, ``"signed integer"``, ``"unsigned integer"``, ``"integral"``,
        ``"real floating"``, ``"complex floating"``, ``"numeric"``), a dtype, or a tuple of
        them (any may match).

    Returns
    -------
    bool

    Examples
    --------
    >>> da.isdtype(da.float32, "real floating")
    True
    >>> da.isdtype(da.int8, ("bool", "unsigned integer"))
    False
    """
    import numpy

    return numpy.isdtype(dtype, kind)


# ``array`` stays out of __all__: ``from dask_tra.array import *`` in dask_tra must not hide this module
_FAMILIES = (
    _blockwise,
    blocklayout,
    chunk_types,
    blocksparse,
    contractions,
    creation,
    datadependent,
    elementwise,
    fill,
    gufuncs,
    io,
    manipulation,
    nanreductions,
    padding,
    quantiles,
    reductions,
    routines,
    sorting,
    stacking,
    structure,
    treereduce,
    utils,
)
__all__ = sorted(
    set().union(*(m.__all__ for m in _FAMILIES)) - {"array"}
    | {
        "rechunk",
        "random",
        "fft",
        "linalg",
        "diagonal",
        "trace",
        "compute",
        "persist",
        "Joint",
        "isdtype",
        "PerformanceWarning",
        "e",
        "inf",
        "nan",
        "newaxis",
        "pi",
        "Array",
    }
    | set(_DTYPES)
)

# RelArray's methods call the function families (``x.sum()`` is ``sum(x)``), which import the
# array core: so the core imports none of them, and this package binds them for its methods
# once every family is imported (``methods.bind``; tests/test_imports.py checks the ranks).
import sys as _sys  # noqa: E402

from . import dispatch as _dispatch  # noqa: E402
from . import indexing as _indexing  # noqa: E402
from . import methods as _methods  # noqa: E402
from . import relations as _relations  # noqa: E402

_methods.bind(
    da=_sys.modules[__name__],
    blockwise=_blockwise,
    creation=creation,
    dispatch=_dispatch,
    indexing=_indexing,
    rechunk=_rechunk,
    relations=_relations,
    structure=structure,
)
from . import namespace as _namespace  # noqa: E402 (the Array API namespace: it reads the package bound above)

_methods.bind(namespace=_namespace)

"""dask_tra.array: a NumPy / dask.array-style namespace whose operations are TRA expressions.

``import dask_tra.array as da`` and write dask.array code: every function builds a lazy
tensor-relational expression (Join, Aggregate, ReKey, Filter, Transform, Tile, Concat over
Inputs) that the optimizer plans as a whole at compute time. One module per family;
``docs/api.md`` lists what is supported and what is not.
"""
from numpy import e, inf, nan, newaxis, pi  # noqa: F401

from . import contractions, creation, elementwise, manipulation, random, reductions, stacking, structure
from .contractions import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .creation import array  # noqa: F401 (= asarray; not in __all__, see below)
from .elementwise import *  # noqa: F401,F403
from .rechunk import rechunk  # noqa: F401
from .reductions import *  # noqa: F401,F403
from .manipulation import *  # noqa: F401,F403
from .stacking import *  # noqa: F401,F403
from .structure import *  # noqa: F401,F403


def compute(*args, **kwargs):
    """``dask.compute`` (RelArrays are Dask collections)."""
    import dask
    return dask.compute(*args, **kwargs)


def isdtype(dtype, kind):
    import numpy
    return numpy.isdtype(dtype, kind)


# ``array`` stays out of __all__: ``from dask_tra.array import *`` in dask_tra must not hide this module
_FAMILIES = (contractions, creation, elementwise, manipulation, reductions, stacking, structure)
__all__ = sorted(set().union(*(m.__all__ for m in _FAMILIES)) - {"array"}
                 | {"rechunk", "random", "compute", "isdtype", "e", "inf", "nan", "newaxis", "pi"})

"""dask_tra: blocked arrays as tensor relations, planned by a cost-based optimizer, run on Dask."""
from . import config, diagnostics
from .array import from_array, from_dask, full, matmul, random
from .core import RelArray

__version__ = "0.1.0"

__all__ = ["RelArray", "from_array", "from_dask", "full", "matmul", "random", "config", "diagnostics"]

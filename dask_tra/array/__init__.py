"""dask_tra.array: a NumPy / dask.array-style namespace whose operations are TRA expressions."""
from . import random
from .creation import from_array, from_dask, full
from .linalg import matmul

__all__ = ["from_array", "from_dask", "full", "matmul", "random"]

"""dask_tra: blocked arrays as tensor relations, planned by a cost-based optimizer, run on Dask."""

from . import (
    config,
    core,  # noqa: F401 (dask_tra.core.RelArray, the class's old home, still works)
    diagnostics,
)
from .array import *  # noqa: F401,F403 (the dask.array-style namespace, also at dask_tra.array)
from .array import __all__ as _array_all
from .array.core import RelArray
from .autodiff import grad, value_and_grad
from .runtime.rates import calibrate
from .runtime.session import install

__version__ = "0.1.0"

__all__ = ["RelArray", "calibrate", "config", "diagnostics", "grad", "install", "value_and_grad"] + list(_array_all)

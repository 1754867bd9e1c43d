"""``dask_tra.core.RelArray``: the old home of ``RelArray``, kept as a re-export. The class lives
in the array layer, ``dask_tra/array/core.py``."""

from .array.core import RelArray

__all__ = ["RelArray"]

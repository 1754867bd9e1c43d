"""Array methods and operators of RelArray (NumPy / dask.array style)."""
from __future__ import annotations


class ArrayMethods:
    def __matmul__(self, other):
        from .linalg import matmul
        return matmul(self, other)

    def __rmatmul__(self, other):
        from .linalg import matmul
        return matmul(other, self)

"""Contractions: matmul as a Join on the shared dim then an Aggregate summing it out."""
from __future__ import annotations

from ..tra import Aggregate, Join
from ..tra import kernels as K


def _merge_sources(*arrays):
    out = {}
    for a in arrays:
        out.update(a.sources)
    return out


def matmul(a, b):
    """2-D matrix product: Σ_(<0,2>, add)(⋈_(<1>,<0>, matmul)(A, B))."""
    from ..core import RelArray
    from .creation import from_array
    a = a if isinstance(a, RelArray) else from_array(a)
    b = b if isinstance(b, RelArray) else from_array(b)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul here takes 2-D arrays, got {a.ndim}-D and {b.ndim}-D")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} not aligned: "
                         f"{a.shape[1]} (dim 1) != {b.shape[0]} (dim 0)")
    if a.chunks[1] != b.chunks[0]:
        raise ValueError(f"matmul: the contracted dim is chunked {a.chunks[1]} on the left but "
                         f"{b.chunks[0]} on the right; rechunk one side to match")
    expr = Aggregate(Join(a.expr, b.expr, (1,), (0,), K.matmul), (0, 2), K.add)
    return RelArray(expr, _merge_sources(a, b))

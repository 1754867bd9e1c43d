"""dask.array.lib.stride_tricks: NumPy's ``sliding_window_view`` with dask's chunks."""

from ..overlap import sliding_window_view

__all__ = ["sliding_window_view"]

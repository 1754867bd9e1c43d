"""dask.array.overlap: halos shared between neighbouring blocks (work in progress)."""

from __future__ import annotations

from .blockwise import map_overlap, overlap, sliding_window_view

__all__ = ["map_overlap", "overlap", "sliding_window_view"]

"""dask_tra settings, kept in dask's config under ``dask_tra.*``.

- ``sites``: how many sites plans use when no distributed Client is active (default 4).
- ``backend``: chunk library for creation and random functions ("numpy").
- ``memory_limit``: bytes per site a plan may need (default: the workers' memory limit
  under a Client, unlimited otherwise).
- ``keep``: layouts kept per operator by the plan search (default 6; 1 is greedy).
- ``force``: a strategy name every contraction must use (``"bmm"``, ``"cmm"``, ``"rmm"``,
  ``"d=[...]"``), or {kind: strategy}; None lets the optimizer choose.
"""
from __future__ import annotations

import dask.config

DEFAULTS = {"sites": 4, "backend": "numpy", "memory_limit": None, "keep": 6, "force": None}


def get(name: str):
    if name not in DEFAULTS:
        raise KeyError(f"unknown dask_tra setting {name!r}; known: {sorted(DEFAULTS)}")
    return dask.config.get(f"dask_tra.{name}", DEFAULTS[name])


def set(**settings):
    """Set options globally, or for a ``with`` block: ``dask_tra.config.set(sites=8)``."""
    for name in settings:
        if name not in DEFAULTS:
            raise KeyError(f"unknown dask_tra setting {name!r}; known: {sorted(DEFAULTS)}")
    return dask.config.set({f"dask_tra.{k}": v for k, v in settings.items()})

"""dask_tra settings, kept in dask's config under ``dask_tra.*``.

- ``sites``: how many sites plans use when no distributed Client is active. None (the default):
  one, the local plan: on dask's threaded or synchronous scheduler nothing moves between
  threads, so each operator gets its one local plan with no search, and ``explain()`` says so
  ("local plan (threaded scheduler): nothing moves"). A number plans for that many sites, as a
  cluster of that size would run it (``explain()`` then predicts what a cluster would move).
- ``backend``: chunk library for creation and random functions: "numpy" (default), "cupy" or
  "torch" (read when an array is created; ``from_array`` keeps its input's library).
- ``device``: where created chunks go (None: the library's default on the worker; torch:
  "cpu", "cuda", "cuda:1", or "auto" = CUDA when the worker has it; CuPy: the worker's GPU).
- ``gpu_memory_limit``: bytes per site a plan may use when its chunks are on GPUs (CuPy), or a
  fraction of each worker's GPU memory (default 0.8: the total reported by
  ``cupy.cuda.Device().mem_info`` on the workers, times 0.8). See ``docs/gpu.md``.
- ``memory_limit``: bytes per site a plan may need (default: the workers' memory limit
  under a Client, unlimited otherwise).
- ``keep``: layouts kept per operator by the plan search (default 6; 1 is greedy).
- ``bandwidth``, ``task_overhead``, ``flop_rate``: the time objective's constants (bytes/s per
  link, seconds of scheduling per task, flops/s per worker); None: what the connected cluster
  knows, when ``probe_rates`` is true (the default): the rates ``dask_tra.calibrate(client)``
  last measured and stored on its scheduler, else the scheduler's bandwidth estimate
  (``dask_tra.runtime.rates``); else the defaults of ``optimizer.Rates``. Planning never runs a
  task to measure them. Every other field of ``optimizer.Rates`` (the constants of
  registered cost terms) is a setting too, under its own name; None: ``Rates``' default.
- ``threads``: tasks one worker runs at once, for the memory estimate (``optimizer/memory.py``:
  blocks stream through that many tasks); None: the workers' thread count under a Client; 0:
  unknown, every block a worker computes counted at once.
- ``rewrite``: simplify expressions before planning (default True; ``optimizer/rewrite.py``):
  slices pushed toward the inputs so only the blocks they keep are computed, chains of per-block
  operations fused, transposes that cancel dropped, equal sub-expressions computed once.
- ``force``: a strategy name every contraction must use (``"bmm"``, ``"cmm"``, ``"rmm"``,
  ``"d=[...]"``), or {kind: strategy}; None lets the optimizer choose.
"""

from __future__ import annotations

import dataclasses

import dask.config

from .optimizer.cost import Rates

DEFAULTS = {
    "sites": None,
    "backend": "numpy",
    "device": None,
    "memory_limit": None,
    "gpu_memory_limit": 0.8,
    "keep": 6,
    "force": None,
    "rewrite": True,
    "bandwidth": None,
    "task_overhead": None,
    "flop_rate": None,
    "probe_rates": True,
    **{f.name: None for f in dataclasses.fields(Rates)},  # the time objective's constants
}


def get(name: str):
    """The value of one dask_tra setting (its default unless set).

    Parameters
    ----------
    name : str
        The setting (the module doc lists them).

    Returns
    -------
    object
        ``dask.config.get("dask_tra.<name>")``, else the setting's default.

    Raises
    ------
    KeyError
        ``name`` is not a dask_tra setting.

    Examples
    --------
    >>> dask_tra.config.get("keep")
    6
    """
    if name not in DEFAULTS:
        raise KeyError(f"unknown dask_tra setting {name!r}; known: {sorted(DEFAULTS)}")
    return dask.config.get(f"dask_tra.{name}", DEFAULTS[name])


def set(**settings):
    """Set dask_tra settings globally, or for a ``with`` block.

    Parameters
    ----------
    **settings
        ``name=value`` for each setting (the module doc lists them).

    Returns
    -------
    dask.config.set
        A context manager: used in a ``with`` statement, the settings are restored when the
        block ends; otherwise they stay set.

    Raises
    ------
    KeyError
        A name is not a dask_tra setting.
    ValueError
        ``backend`` names no known chunk backend.

    Examples
    --------
    >>> before = dask_tra.config.get("keep")
    >>> with dask_tra.config.set(keep=1):
    ...     dask_tra.config.get("keep")
    1
    >>> dask_tra.config.get("keep") == before
    True
    """
    for name in settings:
        if name not in DEFAULTS:
            raise KeyError(f"unknown dask_tra setting {name!r}; known: {sorted(DEFAULTS)}")
    if settings.get("backend") is not None:
        from . import backends

        backends.get(settings["backend"])  # ValueError naming the known backends
    return dask.config.set({f"dask_tra.{k}": v for k, v in settings.items()})

"""Seeded random RelArrays, created lazily on the sites the plan chooses.

Chunk ``key`` is drawn from ``numpy.random.default_rng((seed, *key))``: the values depend on
the seed and the chunking only, not on where or in what order chunks are made.
"""
from __future__ import annotations

import numpy as np

from ..dask.sources import RandomSource
from .creation import _auto, _wrap


def _make(method, shape, chunks, seed, dtype=np.float64, **params):
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    if seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    return _wrap(RandomSource(method, shape, _auto(chunks, shape, dtype), seed, dtype, **params))


def random(size, chunks="auto", seed=None, dtype=np.float64):
    return _make("random", size, chunks, seed, dtype)


def uniform(low=0.0, high=1.0, size=None, chunks="auto", seed=None, dtype=np.float64):
    return _make("uniform", size, chunks, seed, dtype, low=low, high=high)


def standard_normal(size, chunks="auto", seed=None, dtype=np.float64):
    return _make("standard_normal", size, chunks, seed, dtype)


def normal(loc=0.0, scale=1.0, size=None, chunks="auto", seed=None, dtype=np.float64):
    return _make("normal", size, chunks, seed, dtype, loc=loc, scale=scale)

"""Seeded random RelArrays, created lazily on the sites the plan chooses.

Chunk ``key`` is drawn from ``numpy.random.default_rng((seed, *key))``: the values depend on
the seed and the chunking only, not on where or in what order chunks are made.
``default_rng(seed)`` and ``RandomState(seed)`` give dask.array-style generator objects whose
successive calls draw from distinct, reproducible seeds.
"""

from __future__ import annotations

import numpy as np

from ..dask.sources import RandomSource
from . import distributions
from .creation import _shape
from .relations import auto_chunks, check_dtype, wrap_source
from .distributions import *  # every distribution, re-exported


def _make(method, shape, chunks, seed, dtype=np.float64, **params):
    if shape is None:
        shape = ()
    shape = _shape(shape)
    seed = distributions._seed_of(seed)
    dtype = check_dtype(dtype)
    return wrap_source(RandomSource(method, shape, auto_chunks(chunks, shape, dtype), seed, dtype, **params))


def random(size, chunks="auto", seed=None, dtype=np.float64):
    return _make("random", size, chunks, seed, dtype)


random_sample = random


def uniform(low=0.0, high=1.0, size=None, chunks="auto", seed=None, dtype=np.float64):
    return _make("uniform", size, chunks, seed, dtype, low=low, high=high)


def standard_normal(size, chunks="auto", seed=None, dtype=np.float64):
    return _make("standard_normal", size, chunks, seed, dtype)


def normal(loc=0.0, scale=1.0, size=None, chunks="auto", seed=None, dtype=np.float64):
    return _make("normal", size, chunks, seed, dtype, loc=loc, scale=scale)


def randint(low, high=None, size=None, chunks="auto", seed=None, dtype=np.int64):
    """Integers in [low, high) (or [0, low) when ``high`` is None)."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"low >= high ({low} >= {high})")
    return _make("integers", size, chunks, seed, dtype, low=low, high=high)


class Generator:
    """``dask.array.random.default_rng(seed)``: each call draws from the next derived seed."""

    def __init__(self, seed=None):
        self._stream = distributions.SeedStream(seed)

    def __repr__(self):
        return f"{type(self).__name__}(PCG64)"

    __str__ = __repr__

    def _seed(self):
        return self._stream.next()

    def random(self, size=None, dtype=np.float64, chunks="auto", **kw):
        return random(size, chunks, self._seed(), dtype)

    def uniform(self, low=0.0, high=1.0, size=None, chunks="auto", **kw):
        return uniform(low, high, size, chunks, self._seed())

    def normal(self, loc=0.0, scale=1.0, size=None, chunks="auto", **kw):
        return normal(loc, scale, size, chunks, self._seed())

    def standard_normal(self, size=None, dtype=np.float64, chunks="auto", **kw):
        return standard_normal(size, chunks, self._seed(), dtype)

    def integers(self, low, high=None, size=None, dtype=np.int64, chunks="auto", **kw):
        return randint(low, high, size, chunks, self._seed(), dtype)

    def permutation(self, x):
        return distributions.permutation(x, self._seed())

    def choice(self, a, size=None, replace=True, p=None, chunks="auto", **kw):
        return distributions.choice(a, size, replace, p, chunks, self._seed())

    def multinomial(self, n, pvals, size=None, chunks="auto", **kw):
        return distributions.multinomial(n, pvals, size, chunks, self._seed())

    def multivariate_hypergeometric(self, colors, nsample, size=None, method="marginals", chunks="auto", **kw):
        return distributions.multivariate_hypergeometric(colors, nsample, size, method, chunks, self._seed())


def _method(name):
    def m(self, *args, size=None, chunks="auto", **kwargs):
        return getattr(distributions, name)(*args, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    m.__name__ = name
    m.__doc__ = f"See ``dask_tra.array.random.{name}``."
    return m


for _name in distributions.TABLE:
    setattr(Generator, _name, _method(_name))


class RandomState(Generator):
    """``dask.array.random.RandomState(seed)`` (legacy method names)."""

    def seed(self, seed=None):
        self._stream.seed(seed)

    def random_integers(self, low, high=None, size=None, chunks="auto", **kw):
        """Integers in [low, high] (or [1, low] when ``high`` is None)."""
        low, high = (1, low) if high is None else (low, high)
        return self.integers(low, high + 1, size, np.int64, chunks)

    def tomaxint(self, size=None, chunks="auto", **kw):
        return self.integers(0, np.iinfo(np.int64).max, size, np.int64, chunks)

    def random_sample(self, size=None, chunks="auto", **kw):
        return self.random(size, chunks=chunks)

    def randint(self, low, high=None, size=None, chunks="auto", dtype=np.int64, **kw):
        return self.integers(low, high, size, dtype, chunks)


def default_rng(seed=None):
    """A ``Generator`` seeded by ``seed`` (None, ints, a SeedSequence, a BitGenerator or its
    class, a NumPy Generator); a dask_tra ``Generator`` is returned as it is (as dask)."""
    return seed if isinstance(seed, Generator) else Generator(seed)


def seed(seed=None):
    """Reseed the module-level stream: the draws of the module-level functions called without
    ``seed=`` after it repeat for the same seed (as ``dask.array.random.seed``)."""
    _STATE.seed(seed)


_STATE = RandomState()
_STATE._stream = distributions.GLOBAL  # the module-level functions' stream
random_integers, tomaxint = _STATE.random_integers, _STATE.tomaxint

__all__ = [
    "Generator",
    "RandomState",
    "default_rng",
    "normal",
    "randint",
    "random",
    "random_integers",
    "random_sample",
    "seed",
    "standard_normal",
    "tomaxint",
    "uniform",
]
__all__ += distributions.__all__

"""Seeded random RelArrays, created lazily on the sites the plan chooses.

Chunk ``key`` is drawn from ``numpy.random.default_rng((seed, *key))``: the values depend on
the seed and the chunking only, not on where or in what order chunks are made.
``default_rng(seed)`` and ``RandomState(seed)`` give dask.array-style generator objects whose
successive calls draw from distinct, reproducible seeds.
"""

from __future__ import annotations

import dask.array
import numpy as np
from dask.utils import derived_from

from ..runtime.sources import RandomSource
from . import distributions
from .creation import _shape
from .distributions import *  # every distribution, re-exported
from .relations import auto_chunks, check_dtype, wrap_source


def _make(method, shape, chunks, seed, dtype=np.float64, **params):
    if shape is None:
        shape = ()
    shape = _shape(shape)
    seed = distributions._seed_of(seed)
    dtype = check_dtype(dtype)
    return wrap_source(RandomSource(method, shape, auto_chunks(chunks, shape, dtype), seed, dtype, **params))


@derived_from(dask.array.random)
def random(size, chunks="auto", seed=None, dtype=np.float64):
    return _make("random", size, chunks, seed, dtype)


random_sample = random


@derived_from(np.random.RandomState)
def uniform(low=0.0, high=1.0, size=None, chunks="auto", seed=None, dtype=np.float64):
    return _make("uniform", size, chunks, seed, dtype, low=low, high=high)


@derived_from(np.random.RandomState)
def standard_normal(size, chunks="auto", seed=None, dtype=np.float64):
    return _make("standard_normal", size, chunks, seed, dtype)


@derived_from(np.random.RandomState)
def normal(loc=0.0, scale=1.0, size=None, chunks="auto", seed=None, dtype=np.float64):
    return _make("normal", size, chunks, seed, dtype, loc=loc, scale=scale)


@derived_from(np.random.RandomState)
def randint(low, high=None, size=None, chunks="auto", seed=None, dtype=np.int64):
    """Integers in [low, high) (or [0, low) when ``high`` is None)."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"low >= high ({low} >= {high})")
    return _make("integers", size, chunks, seed, dtype, low=low, high=high)


class Generator:
    """A random generator of chunked arrays, as ``dask.array.random.Generator``.

    Each method call draws from the next seed of its stream, so two calls give different
    arrays, and two generators made with the same seed give the same ones. Its methods are
    ``numpy.random.Generator``'s, with ``chunks=``.

    Parameters
    ----------
    seed : None, int, sequence of int, SeedSequence, BitGenerator or Generator, optional
        As ``numpy.random.default_rng`` takes it.

    See Also
    --------
    default_rng, RandomState

    Examples
    --------
    >>> a = da.random.Generator(42).standard_normal(4, chunks=2).compute()
    >>> b = da.random.Generator(42).standard_normal(4, chunks=2).compute()
    >>> bool((a == b).all())
    True
    """

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

    # the distributions of ``distributions.TABLE``, scalar parameters (NumPy's names and defaults)

    def beta(self, a, b, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.beta`` (seeded from this generator)."""
        return distributions.beta(a, b, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def binomial(self, n, p, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.binomial`` (seeded from this generator)."""
        return distributions.binomial(n, p, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def chisquare(self, df, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.chisquare`` (seeded from this generator)."""
        return distributions.chisquare(df, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def exponential(self, scale=1.0, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.exponential`` (seeded from this generator)."""
        return distributions.exponential(scale, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def f(self, dfnum, dfden, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.f`` (seeded from this generator)."""
        return distributions.f(dfnum, dfden, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def gamma(self, shape, scale=1.0, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.gamma`` (seeded from this generator)."""
        return distributions.gamma(shape, scale, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def geometric(self, p, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.geometric`` (seeded from this generator)."""
        return distributions.geometric(p, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def gumbel(self, loc=0.0, scale=1.0, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.gumbel`` (seeded from this generator)."""
        return distributions.gumbel(loc, scale, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def hypergeometric(self, ngood, nbad, nsample, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.hypergeometric`` (seeded from this generator)."""
        return distributions.hypergeometric(ngood, nbad, nsample, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def laplace(self, loc=0.0, scale=1.0, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.laplace`` (seeded from this generator)."""
        return distributions.laplace(loc, scale, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def logistic(self, loc=0.0, scale=1.0, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.logistic`` (seeded from this generator)."""
        return distributions.logistic(loc, scale, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def lognormal(self, mean=0.0, sigma=1.0, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.lognormal`` (seeded from this generator)."""
        return distributions.lognormal(mean, sigma, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def logseries(self, p, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.logseries`` (seeded from this generator)."""
        return distributions.logseries(p, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def negative_binomial(self, n, p, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.negative_binomial`` (seeded from this generator)."""
        return distributions.negative_binomial(n, p, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def noncentral_chisquare(self, df, nonc, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.noncentral_chisquare`` (seeded from this generator)."""
        return distributions.noncentral_chisquare(df, nonc, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def noncentral_f(self, dfnum, dfden, nonc, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.noncentral_f`` (seeded from this generator)."""
        return distributions.noncentral_f(dfnum, dfden, nonc, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def pareto(self, a, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.pareto`` (seeded from this generator)."""
        return distributions.pareto(a, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def poisson(self, lam=1.0, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.poisson`` (seeded from this generator)."""
        return distributions.poisson(lam, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def power(self, a, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.power`` (seeded from this generator)."""
        return distributions.power(a, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def rayleigh(self, scale=1.0, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.rayleigh`` (seeded from this generator)."""
        return distributions.rayleigh(scale, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def standard_cauchy(self, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.standard_cauchy`` (seeded from this generator)."""
        return distributions.standard_cauchy(size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def standard_exponential(self, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.standard_exponential`` (seeded from this generator)."""
        return distributions.standard_exponential(size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def standard_gamma(self, shape, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.standard_gamma`` (seeded from this generator)."""
        return distributions.standard_gamma(shape, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def standard_t(self, df, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.standard_t`` (seeded from this generator)."""
        return distributions.standard_t(df, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def triangular(self, left, mode, right, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.triangular`` (seeded from this generator)."""
        return distributions.triangular(left, mode, right, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def vonmises(self, mu, kappa, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.vonmises`` (seeded from this generator)."""
        return distributions.vonmises(mu, kappa, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def wald(self, mean, scale, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.wald`` (seeded from this generator)."""
        return distributions.wald(mean, scale, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def weibull(self, a, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.weibull`` (seeded from this generator)."""
        return distributions.weibull(a, size=size, chunks=chunks, seed=self._seed(), **kwargs)

    def zipf(self, a, size=None, chunks="auto", **kwargs):
        """Chunked samples of ``numpy.random.Generator.zipf`` (seeded from this generator)."""
        return distributions.zipf(a, size=size, chunks=chunks, seed=self._seed(), **kwargs)


class RandomState(Generator):
    """A random generator of chunked arrays with NumPy's legacy method names, as
    ``dask.array.random.RandomState``.

    A ``Generator`` that also has ``RandomState``'s methods (``randint``, ``random_sample``,
    ``random_integers``, ``tomaxint``, ``seed``). Values are drawn by NumPy's ``Generator``,
    so they differ from ``numpy.random.RandomState``'s for the same seed.

    Parameters
    ----------
    seed : None, int, sequence of int, SeedSequence, BitGenerator or Generator, optional
        As ``numpy.random.default_rng`` takes it.

    See Also
    --------
    Generator

    Examples
    --------
    >>> rs = da.random.RandomState(0)
    >>> x = rs.randint(10, size=6, chunks=3)
    >>> x.chunks, x.dtype
    (((3, 3),), dtype('int64'))
    """

    def seed(self, seed=None):
        self._stream.seed(seed)

    @derived_from(np.random.RandomState)
    def random_integers(self, low, high=None, size=None, chunks="auto", **kw):
        """Integers in [low, high] (or [1, low] when ``high`` is None)."""
        low, high = (1, low) if high is None else (low, high)
        return self.integers(low, high + 1, size, np.int64, chunks)

    @derived_from(np.random.RandomState)
    def tomaxint(self, size=None, chunks="auto", **kw):
        return self.integers(0, np.iinfo(np.int64).max, size, np.int64, chunks)

    def random_sample(self, size=None, chunks="auto", **kw):
        return self.random(size, chunks=chunks)

    def randint(self, low, high=None, size=None, chunks="auto", dtype=np.int64, **kw):
        return self.integers(low, high, size, dtype, chunks)


@derived_from(np.random)
def default_rng(seed=None):
    """A ``Generator`` seeded by ``seed`` (None, ints, a SeedSequence, a BitGenerator or its
    class, a NumPy Generator); a dask_tra ``Generator`` is returned as it is (as dask)."""
    return seed if isinstance(seed, Generator) else Generator(seed)


def seed(seed=None):
    """Reseed the module-level stream, as ``dask.array.random.seed``.

    The module-level functions called without ``seed=`` after it draw the same arrays for the
    same seed.

    Parameters
    ----------
    seed : None, int, sequence of int, SeedSequence or BitGenerator, optional
        As ``numpy.random.default_rng`` takes it (None: fresh entropy).

    Returns
    -------
    None

    Examples
    --------
    >>> da.random.seed(3)
    >>> a = da.random.random(3, chunks=3).compute()
    >>> da.random.seed(3)
    >>> b = da.random.random(3, chunks=3).compute()
    >>> bool((a == b).all())
    True
    """
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

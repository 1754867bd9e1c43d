"""Every distribution of ``dask.array.random``: seeded random RelArrays (see ``random``).

Each function draws chunk ``key`` from ``numpy.random.default_rng((seed, *key))``'s method
of the same name, so values depend on the seed and the chunking only. Parameters are
scalars (dask also broadcasts array parameters; here they raise NotImplementedError) and
are checked at call time by a zero-size draw. ``multinomial`` and
``multivariate_hypergeometric`` add a trailing axis (one block) of the categories.
"""

from __future__ import annotations

import numpy as np
from dask.utils import derived_from

from ..runtime.sources import RandomSource

_REQUIRED = object()
_FLOAT, _INT = np.dtype(np.float64), np.dtype(np.int64)

# name -> ((parameter, default), ...), dtype
TABLE = {
    "beta": ((("a", _REQUIRED), ("b", _REQUIRED)), _FLOAT),
    "binomial": ((("n", _REQUIRED), ("p", _REQUIRED)), _INT),
    "chisquare": ((("df", _REQUIRED),), _FLOAT),
    "exponential": ((("scale", 1.0),), _FLOAT),
    "f": ((("dfnum", _REQUIRED), ("dfden", _REQUIRED)), _FLOAT),
    "gamma": ((("shape", _REQUIRED), ("scale", 1.0)), _FLOAT),
    "geometric": ((("p", _REQUIRED),), _INT),
    "gumbel": ((("loc", 0.0), ("scale", 1.0)), _FLOAT),
    "hypergeometric": ((("ngood", _REQUIRED), ("nbad", _REQUIRED), ("nsample", _REQUIRED)), _INT),
    "laplace": ((("loc", 0.0), ("scale", 1.0)), _FLOAT),
    "logistic": ((("loc", 0.0), ("scale", 1.0)), _FLOAT),
    "lognormal": ((("mean", 0.0), ("sigma", 1.0)), _FLOAT),
    "logseries": ((("p", _REQUIRED),), _INT),
    "negative_binomial": ((("n", _REQUIRED), ("p", _REQUIRED)), _INT),
    "noncentral_chisquare": ((("df", _REQUIRED), ("nonc", _REQUIRED)), _FLOAT),
    "noncentral_f": ((("dfnum", _REQUIRED), ("dfden", _REQUIRED), ("nonc", _REQUIRED)), _FLOAT),
    "pareto": ((("a", _REQUIRED),), _FLOAT),
    "poisson": ((("lam", 1.0),), _INT),
    "power": ((("a", _REQUIRED),), _FLOAT),
    "rayleigh": ((("scale", 1.0),), _FLOAT),
    "standard_cauchy": ((), _FLOAT),
    "standard_exponential": ((), _FLOAT),
    "standard_gamma": ((("shape", _REQUIRED),), _FLOAT),
    "standard_t": ((("df", _REQUIRED),), _FLOAT),
    "triangular": ((("left", _REQUIRED), ("mode", _REQUIRED), ("right", _REQUIRED)), _FLOAT),
    "vonmises": ((("mu", _REQUIRED), ("kappa", _REQUIRED)), _FLOAT),
    "wald": ((("mean", _REQUIRED), ("scale", _REQUIRED)), _FLOAT),
    "weibull": ((("a", _REQUIRED),), _FLOAT),
    "zipf": ((("a", _REQUIRED),), _INT),
}


class SeedStream:
    """The seeds of successive draws.

    A NumPy generator seeded like ``numpy.random.default_rng``; each ``next()`` is the seed of
    one draw (whose blocks are then seeded by ``(seed, *key)``). ``GLOBAL`` is the module-level
    stream: ``random.seed(s)`` reseeds it, and every module-level function called without
    ``seed=`` draws its seed from it, as dask.array's module-level ``RandomState`` does.

    Parameters
    ----------
    seed : None, int, sequence of int, SeedSequence, BitGenerator (or its class), Generator
        What seeds the stream: as ``numpy.random.default_rng`` takes it, or a NumPy or dask_tra
        Generator, or another SeedStream (continued from where it is).

    Examples
    --------
    >>> a, b = da.random.SeedStream(0), da.random.SeedStream(0)
    >>> a.next() == b.next()
    True
    """

    def __init__(self, seed=None):
        self.seed(seed)

    def seed(self, seed=None):
        if isinstance(seed, type) and issubclass(seed, np.random.BitGenerator):
            seed = seed()  # a BitGenerator class (dask accepts it): fresh entropy
        if isinstance(seed, SeedStream):
            seed = seed._rng.bit_generator
        elif isinstance(getattr(seed, "_stream", None), SeedStream):  # a dask_tra Generator
            seed = seed._stream._rng.bit_generator
        self._rng = np.random.default_rng(seed)

    def next(self) -> int:
        return int(self._rng.integers(2**63))


GLOBAL = SeedStream()


def _seed_of(seed) -> int:
    """The seed a draw uses: ``seed`` if given, else the next one of the module-level stream."""
    return GLOBAL.next() if seed is None else seed


def _bind(name, params, args, kwargs):
    if len(args) > len(params):
        raise TypeError(f"{name}() takes {len(params)} distribution parameters, got {len(args)}")
    values = dict(zip((p for p, _ in params), args))
    for p, default in params[len(args) :]:
        if p in kwargs:
            values[p] = kwargs.pop(p)
        elif default is _REQUIRED:
            raise TypeError(f"{name}() missing required argument {p!r}")
        else:
            values[p] = default
    if kwargs:
        raise TypeError(f"{name}() got unexpected arguments {sorted(kwargs)}")
    for p, v in values.items():
        if np.ndim(v) != 0:
            raise NotImplementedError(f"{name}: array-valued parameter {p!r} is not supported (scalars only)")
    return values


def draw(method, size, chunks, seed, dtype, params, trailing=None):
    """A random RelArray of generator ``method`` with ``params`` (checked now by a zero-size draw)."""
    from .creation import _shape
    from .relations import auto_chunks, wrap_source

    getattr(np.random.default_rng(0), method)(size=(0,), **params)
    shape = () if size is None else _shape(size)
    seed = _seed_of(seed)
    if trailing is None:
        src = RandomSource(method, shape, auto_chunks(chunks, shape, dtype), seed, dtype)
    else:
        full = shape + (trailing,)
        chunks = auto_chunks(
            chunks if isinstance(chunks, str) or np.ndim(chunks) == 0 else tuple(chunks) + (trailing,), full, dtype
        )
        src = TrailingRandomSource(method, full, chunks[:-1] + ((trailing,),), seed, dtype)
    src.params = params  # set after: a parameter may be called "shape" (gamma)
    return wrap_source(src)


class TrailingRandomSource(RandomSource):
    """Random chunks of a method whose draws add a trailing axis (multinomial)."""

    def task(self, key):
        shape = tuple(c[i] for c, i in zip(self.chunks, key))
        return (
            trailing_chunk,
            self.method,
            (self.seed,) + tuple(key),
            shape[:-1],
            self.dtype.str,
            tuple(sorted(self.params.items())),
        )


def trailing_chunk(method, seed, size, dtype, params):
    rng = np.random.default_rng(list(seed))
    return np.asarray(getattr(rng, method)(size=tuple(size), **dict(params))).astype(dtype, copy=False)


def _distribution(name):
    params, dtype = TABLE[name]

    def f(*args, size=None, chunks="auto", seed=None, **kwargs):
        return draw(name, size, chunks, seed, dtype, _bind(name, params, args, kwargs))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Samples of numpy.random.Generator.{name}({', '.join(p for p, _ in params)}), chunked."
    return f


beta = derived_from(np.random.Generator)(_distribution("beta"))
binomial = derived_from(np.random.RandomState)(_distribution("binomial"))
chisquare = derived_from(np.random.RandomState)(_distribution("chisquare"))
exponential = derived_from(np.random.RandomState)(_distribution("exponential"))
f = derived_from(np.random.RandomState)(_distribution("f"))
gamma = derived_from(np.random.RandomState)(_distribution("gamma"))
geometric = derived_from(np.random.RandomState)(_distribution("geometric"))
gumbel = derived_from(np.random.RandomState)(_distribution("gumbel"))
hypergeometric = derived_from(np.random.RandomState)(_distribution("hypergeometric"))
laplace = derived_from(np.random.RandomState)(_distribution("laplace"))
logistic = derived_from(np.random.RandomState)(_distribution("logistic"))
lognormal = derived_from(np.random.RandomState)(_distribution("lognormal"))
logseries = derived_from(np.random.RandomState)(_distribution("logseries"))
negative_binomial = derived_from(np.random.RandomState)(_distribution("negative_binomial"))
noncentral_chisquare = derived_from(np.random.RandomState)(_distribution("noncentral_chisquare"))
noncentral_f = derived_from(np.random.RandomState)(_distribution("noncentral_f"))
pareto = derived_from(np.random.RandomState)(_distribution("pareto"))
poisson = derived_from(np.random.RandomState)(_distribution("poisson"))
power = derived_from(np.random.RandomState)(_distribution("power"))
rayleigh = derived_from(np.random.RandomState)(_distribution("rayleigh"))
standard_cauchy = derived_from(np.random.RandomState)(_distribution("standard_cauchy"))
standard_exponential = derived_from(np.random.RandomState)(_distribution("standard_exponential"))
standard_gamma = derived_from(np.random.RandomState)(_distribution("standard_gamma"))
standard_t = derived_from(np.random.RandomState)(_distribution("standard_t"))
triangular = derived_from(np.random.RandomState)(_distribution("triangular"))
vonmises = derived_from(np.random.RandomState)(_distribution("vonmises"))
wald = derived_from(np.random.RandomState)(_distribution("wald"))
weibull = derived_from(np.random.RandomState)(_distribution("weibull"))
zipf = derived_from(np.random.RandomState)(_distribution("zipf"))


@derived_from(np.random.RandomState)
def multinomial(n, pvals, size=None, chunks="auto", seed=None):
    pvals = np.asarray(pvals, dtype=np.float64)
    return draw("multinomial", size, chunks, seed, _INT, {"n": n, "pvals": pvals}, trailing=len(pvals))


@derived_from(np.random.Generator)
def multivariate_hypergeometric(colors, nsample, size=None, method="marginals", chunks="auto", seed=None):
    colors = np.asarray(colors, dtype=np.int64)
    return draw(
        "multivariate_hypergeometric",
        size,
        chunks,
        seed,
        _INT,
        {"colors": colors, "nsample": nsample, "method": method},
        trailing=len(colors),
    )


@derived_from(np.random.RandomState)
def choice(a, size=None, replace=True, p=None, chunks="auto", seed=None):
    """Samples of ``a`` (an int: ``arange(a)``; or a 1-d array), with probabilities ``p``."""
    from .creation import _shape
    from .relations import auto_chunks

    if hasattr(a, "compute"):
        a = np.asarray(a)
    pop = np.arange(a) if np.ndim(a) == 0 else np.asarray(a)
    if pop.ndim != 1:
        raise ValueError("a must be a 1-dimensional array or a positive integer")
    shape = () if size is None else _shape(size)
    if not replace and any(len(c) > 1 for c in auto_chunks(chunks, shape, pop.dtype)):
        raise NotImplementedError(
            "choice(replace=False) needs the output in one chunk (draws per chunk could repeat across chunks)"
        )
    params = {"a": pop, "replace": bool(replace)}
    if p is not None:
        params["p"] = np.asarray(p, dtype=np.float64)
    return draw("choice", size, chunks, seed, pop.dtype, params)


@derived_from(np.random.RandomState)
def permutation(x, seed=None):
    """A random permutation of ``arange(x)`` (x an int) or of ``x`` along its first axis."""
    from .creation import arange, asarray
    from .rechunk import take

    x = arange(int(x)) if np.ndim(x) == 0 and not hasattr(x, "shape") else asarray(x)
    index = np.random.default_rng(_seed_of(seed)).permutation(x.shape[0])
    return take(x, 0, index, x.chunks[0])


__all__ = [
    "SeedStream",
    "beta",
    "binomial",
    "chisquare",
    "choice",
    "exponential",
    "f",
    "gamma",
    "geometric",
    "gumbel",
    "hypergeometric",
    "laplace",
    "logistic",
    "lognormal",
    "logseries",
    "multinomial",
    "multivariate_hypergeometric",
    "negative_binomial",
    "noncentral_chisquare",
    "noncentral_f",
    "pareto",
    "permutation",
    "poisson",
    "power",
    "rayleigh",
    "standard_cauchy",
    "standard_exponential",
    "standard_gamma",
    "standard_t",
    "triangular",
    "vonmises",
    "wald",
    "weibull",
    "zipf",
]

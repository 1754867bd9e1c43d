"""dask_tra.array.random distributions: each chunk is NumPy's seeded draw, calls check their
parameters at call time, Generator/RandomState cover dask.array.random's methods."""
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array import distributions

PARAMS = {"beta": (2.0, 3.0), "binomial": (10, 0.3), "chisquare": (3.0,), "exponential": (2.0,),
          "f": (3.0, 5.0), "gamma": (2.0, 1.5), "geometric": (0.3,), "gumbel": (1.0, 2.0),
          "hypergeometric": (5, 7, 4), "laplace": (0.5, 2.0), "logistic": (1.0, 0.5), "lognormal": (0.1, 0.4),
          "logseries": (0.6,), "negative_binomial": (3, 0.4), "noncentral_chisquare": (3.0, 1.5),
          "noncentral_f": (3.0, 5.0, 1.0), "pareto": (3.0,), "poisson": (4.0,), "power": (2.0,),
          "rayleigh": (1.5,), "standard_cauchy": (), "standard_exponential": (), "standard_gamma": (2.5,),
          "standard_t": (4.0,), "triangular": (0.0, 1.0, 3.0), "vonmises": (0.5, 2.0), "wald": (1.0, 2.0),
          "weibull": (1.5,), "zipf": (2.5,)}


def test_table_is_covered():
    assert set(PARAMS) == set(distributions.TABLE)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_chunks_are_numpy_seeded_draws(name):
    args = PARAMS[name]
    x = getattr(da.random, name)(*args, size=(5, 7), chunks=((3, 2), (4, 3)), seed=11)
    got = x.compute()
    assert got.shape == (5, 7) and got.dtype == x.dtype
    block = getattr(np.random.default_rng([11, 1, 1]), name)(*args, size=(2, 3))
    np.testing.assert_array_equal(got[3:, 4:], block.astype(x.dtype))
    np.testing.assert_array_equal(got, getattr(da.random, name)(*args, size=(5, 7), chunks=((3, 2), (4, 3)),
                                                                seed=11).compute())
    g = getattr(da.random.default_rng(4), name)(*args, size=6, chunks=4)
    assert g.shape == (6,) and np.isfinite(g.compute().astype(float)).all()


def test_moments_match_the_distributions():
    x = da.random.poisson(3.0, size=(400, 50), chunks=(150, 20), seed=1).compute()
    assert abs(x.mean() - 3.0) < 0.05 and abs(x.var() - 3.0) < 0.15
    g = da.random.RandomState(2).gamma(2.0, 3.0, size=20000, chunks=3000).compute()
    assert abs(g.mean() - 6.0) < 0.15


def test_multinomial_choice_permutation():
    m = da.random.multinomial(10, [0.2, 0.3, 0.5], size=(7, 5), chunks=(3, 2), seed=3)
    assert m.shape == (7, 5, 3) and m.chunks[-1] == (3,)
    np.testing.assert_array_equal(m.compute().sum(-1), 10)
    c = da.random.choice(np.array([3, 5, 9]), size=(40,), chunks=7, seed=1, p=[0.1, 0.2, 0.7]).compute()
    assert set(np.unique(c)) <= {3, 5, 9} and (c == 9).sum() > 15
    c = da.random.default_rng(1).choice(6, size=6, replace=False, chunks=6).compute()
    np.testing.assert_array_equal(np.sort(c), np.arange(6))
    p = da.random.permutation(10, seed=3).compute()
    np.testing.assert_array_equal(np.sort(p), np.arange(10))
    assert not (p == np.arange(10)).all()
    a = np.arange(18).reshape(9, 2)
    q = da.random.RandomState(5).permutation(da.from_array(a, chunks=4)).compute()
    np.testing.assert_array_equal(np.sort(q[:, 0]), a[:, 0])
    np.testing.assert_array_equal(q[:, 1], q[:, 0] + 1)  # rows move whole
    r = da.random.RandomState(1).random_integers(3, size=200, chunks=70).compute()
    assert r.min() == 1 and r.max() == 3


def test_call_time_errors():
    with pytest.raises(ValueError):
        da.random.beta(-1.0, 2.0, size=3)
    with pytest.raises(NotImplementedError, match="array-valued"):
        da.random.poisson(np.ones(3), size=3)
    with pytest.raises(TypeError, match="missing required"):
        da.random.gamma(size=3)
    with pytest.raises(NotImplementedError, match="one chunk"):
        da.random.choice(10, size=8, replace=False, chunks=4)


def test_generator_and_random_state_cover_dask():
    dask_random = pytest.importorskip("dask.array.random")
    for ours, theirs in ((da.random.Generator, dask_random.Generator), (da.random.RandomState,
                                                                        dask_random.RandomState)):
        missing = {n for n in dir(theirs) if not n.startswith("_")} - set(dir(ours))
        assert not missing, missing

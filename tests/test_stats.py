"""dask_tra.array.stats (dask.array.stats) against scipy.stats on ragged chunks."""
import numpy as np
import pytest

scipy_stats = pytest.importorskip("scipy.stats")

from dask.delayed import Delayed  # noqa: E402

import dask_tra.array as da  # noqa: E402
from dask_tra.array import stats  # noqa: E402

CHUNKS_1D = ((7, 13, 10),)
CHUNKS_2D = ((7, 13, 10), (1, 3))


@pytest.fixture
def x():
    return np.random.default_rng(3).gamma(2.0, size=(30, 4))


def close(got, want):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_skew_kurtosis_moment(x):
    a = da.from_array(x, chunks=CHUNKS_2D)
    for axis in (0, 1, -1):
        for kw in ({}, {"bias": False}):
            got = stats.skew(a, axis=axis, **kw)
            assert isinstance(got, da.Array)
            close(got.compute(), scipy_stats.skew(x, axis=axis, **kw))
            for fisher in (True, False):
                close(stats.kurtosis(a, axis=axis, fisher=fisher, **kw).compute(),
                      scipy_stats.kurtosis(x, axis=axis, fisher=fisher, **kw))
        for k in range(5):
            close(stats.moment(a, k, axis=axis).compute(), scipy_stats.moment(x, k, axis=axis))
    one = stats.skew(da.from_array(x[:, 0], chunks=CHUNKS_1D)).compute()
    assert isinstance(one, np.float64)
    close(one, scipy_stats.skew(x[:, 0]))


def test_constant_sample_is_nan_as_scipy():
    c = np.full((9, 2), 4.0)
    c[:, 1] = np.arange(9)
    a = da.from_array(c, chunks=((4, 5), 1))
    with np.errstate(all="ignore"):
        close(stats.skew(a).compute(), scipy_stats.skew(c))
        close(stats.kurtosis(a).compute(), scipy_stats.kurtosis(c))


@pytest.mark.parametrize("kind", ["skewtest", "kurtosistest", "normaltest"])
def test_normality_tests(x, kind):
    for axis in (0, 1):
        if kind != "skewtest" and axis == 1:
            continue  # 4 samples per row: too few for kurtosistest
        data = x if axis == 0 else np.repeat(x, 2, axis=1)
        a = da.from_array(data, chunks=CHUNKS_2D if axis == 0 else ((7, 13, 10), (3, 5)))
        got = getattr(stats, kind)(a, axis=axis)
        assert isinstance(got, Delayed)
        res = got.compute()
        want = getattr(scipy_stats, kind)(data, axis=axis)
        assert type(res).__name__ == type(want).__name__
        close(res.statistic, want.statistic)
        close(res.pvalue, want.pvalue)
    statistic, pvalue = getattr(stats, kind)(da.from_array(x[:, 0], chunks=CHUNKS_1D))
    close(pvalue.compute(), getattr(scipy_stats, kind)(x[:, 0]).pvalue)


@pytest.mark.parametrize("kind, kwargs", [
    ("ttest_ind", {}), ("ttest_ind", {"equal_var": False}), ("ttest_rel", {}),
    ("chisquare", {}), ("power_divergence", {}), ("power_divergence", {"lambda_": 0}),
    ("power_divergence", {"lambda_": -1}), ("power_divergence", {"lambda_": "cressie-read"}),
])
def test_two_sample_tests(x, kind, kwargs):
    for axis in (0, 1):
        b = np.flip(x, axis) * (1.1 if kind.startswith("ttest") else 1.0)  # chisquare: the same sums
        got = getattr(stats, kind)(da.from_array(x, chunks=CHUNKS_2D), da.from_array(b, chunks=((10, 20), 2)),
                                   axis=axis, **kwargs)
        assert isinstance(got, Delayed)
        res = got.compute()
        want = getattr(scipy_stats, kind)(x, b, axis=axis, **kwargs)
        close(res.statistic, want.statistic)
        close(res.pvalue, want.pvalue)


def test_one_sample_tests(x):
    a = da.from_array(x, chunks=CHUNKS_2D)
    res = stats.ttest_1samp(a, 2.0).compute()
    want = scipy_stats.ttest_1samp(x, 2.0)
    close(res.statistic, want.statistic)
    close(res.pvalue, want.pvalue)
    res = stats.chisquare(a, axis=None).compute()
    want = scipy_stats.chisquare(x, axis=None)
    close(res.statistic, want.statistic)
    close(res.pvalue, want.pvalue)
    res = stats.chisquare(a, ddof=1).compute()
    want = scipy_stats.chisquare(x, ddof=1)
    close(res.pvalue, want.pvalue)


def test_f_oneway():
    rng = np.random.default_rng(5)
    groups = [i + rng.standard_normal(n) for i, n in enumerate((11, 17, 9))]
    got = stats.f_oneway(*[da.from_array(g, chunks=4) for g in groups])
    assert isinstance(got, Delayed)
    res, want = got.compute(), scipy_stats.f_oneway(*groups)
    close(res.statistic, want.statistic)
    close(res.pvalue, want.pvalue)


def test_errors(x):
    a = da.from_array(x, chunks=CHUNKS_2D)
    for fn, n in ((stats.ttest_1samp, 2), (stats.ttest_rel, 2), (stats.skew, 1), (stats.kurtosistest, 1),
                  (stats.normaltest, 1), (stats.moment, 1), (stats.skewtest, 1)):
        with pytest.raises(NotImplementedError, match="nan_policy"):
            fn(*(None,) * n, nan_policy="omit")
    with pytest.raises(ValueError, match="invalid string for lambda_"):
        stats.power_divergence(a, lambda_="wrong")
    with pytest.raises(ValueError, match="7 samples"):
        stats.skewtest(da.ones((7,), chunks=3))
    with pytest.raises(ValueError, match="at least 5 observations"):
        stats.kurtosistest(da.ones((4,), chunks=3))
    with pytest.raises(TypeError, match="at least two"):
        stats.f_oneway(a[:, 0])

"""dask.array.stats: scipy.stats' tests and moments on RelArrays (needs SciPy).

As in dask: ``skew``, ``kurtosis`` and ``moment`` return arrays; the tests return a
``dask.delayed.Delayed`` of scipy's result namedtuple (``statistic``, ``pvalue``), unpackable
into two Delayeds (``nout=2``). The statistics are dask_tra reductions (``mean``, ``var``,
``moment``, ``sum``) and elementwise arithmetic; the p-values are scipy.special's ufuncs
(``stdtr``, ``chdtrc``, ``ndtr``, ``fdtrc``) applied elementwise (``apply_ufunc``), so the
whole result is one TRA expression: the Delayed wraps a ``Joint`` of the statistic and the
p-value, planned and computed together. Nothing is computed at call time.

Missing values are not handled (``nan_policy`` other than "propagate" raises
``NotImplementedError``, as in dask).
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

try:
    from scipy import special
except ImportError as e:  # as dask.array.stats
    raise type(e)("`dask_tra.array.stats` requires `scipy` to be installed.") from e

import scipy.stats
from dask.utils import derived_from

from .creation import asarray
from .elementwise import apply_ufunc, where
from .relations import axis_of

F_onewayResult = namedtuple("F_onewayResult", ("statistic", "pvalue"))
KurtosistestResult = namedtuple("KurtosistestResult", ("statistic", "pvalue"))
NormaltestResult = namedtuple("NormaltestResult", ("statistic", "pvalue"))
Power_divergenceResult = namedtuple("Power_divergenceResult", ("statistic", "pvalue"))
SkewtestResult = namedtuple("SkewtestResult", ("statistic", "pvalue"))
Ttest_1sampResult = namedtuple("Ttest_1sampResult", ("statistic", "pvalue"))
Ttest_indResult = namedtuple("Ttest_indResult", ("statistic", "pvalue"))
Ttest_relResult = namedtuple("Ttest_relResult", ("statistic", "pvalue"))

_power_div_lambda_names = {
    "pearson": 1,
    "log-likelihood": 0,
    "freeman-tukey": -0.5,
    "mod-log-likelihood": -1,
    "neyman": -2,
    "cressie-read": 2 / 3,
}


# ---------------------------------------------------------------- helpers


def _propagate(nan_policy):
    if nan_policy != "propagate":
        raise NotImplementedError("`nan_policy` other than 'propagate' have not been implemented.")


def _pack(cls, values):
    return cls(*values)


def _result(cls, statistic, pvalue):
    """dask's ``delayed(cls, nout=2)(statistic, pvalue)``, the two arrays planned as one."""
    from dask import delayed

    from .joint import Joint

    return delayed(_pack, nout=2)(cls, Joint(asarray(statistic), asarray(pvalue)))


def _length(a, axis):
    return a.size if axis is None else a.shape[axis_of(axis, a.ndim)]


def _two_sided_t(t, df):
    """scipy's ``2 * t.sf(|t|, df)``."""
    return 2 * apply_ufunc(special.stdtr, df, -abs(t))


def _two_sided_normal(z):
    """scipy's ``2 * norm.sf(|z|)``."""
    return 2 * apply_ufunc(special.ndtr, -abs(z))


def _moments(a, axis, *orders):
    from .routines import moment as _moment

    return [_moment(a, k, axis=axis) for k in orders]


def _zero_variance(a, axis, m2):
    """scipy's test for a (numerically) constant sample: ``m2 <= (eps * mean)**2``."""
    eps = np.finfo(m2.dtype).eps if m2.dtype.kind == "f" else np.finfo(float).eps
    return m2 <= (eps * a.mean(axis=axis)) ** 2


# ---------------------------------------------------------------- tests


@derived_from(scipy.stats)
def ttest_ind(a, b, axis=0, equal_var=True):
    """scipy.stats.ttest_ind (two-sided): a Delayed ``Ttest_indResult``."""
    a, b = asarray(a), asarray(b)
    v1, v2 = a.var(axis=axis, ddof=1), b.var(axis=axis, ddof=1)
    n1, n2 = _length(a, axis), _length(b, axis)
    if equal_var:
        df = n1 + n2 - 2.0
        denom = (((n1 - 1) * v1 + (n2 - 1) * v2) / df * (1.0 / n1 + 1.0 / n2)) ** 0.5
    else:
        vn1, vn2 = v1 / n1, v2 / n2
        df = (vn1 + vn2) ** 2 / (vn1**2 / (n1 - 1) + vn2**2 / (n2 - 1))
        df = where(df != df, 1, df)  # zero variances: any df will do (scipy)
        denom = (vn1 + vn2) ** 0.5
    t = (a.mean(axis=axis) - b.mean(axis=axis)) / denom
    return _result(Ttest_indResult, t, _two_sided_t(t, df))


@derived_from(scipy.stats)
def ttest_1samp(a, popmean, axis=0, nan_policy="propagate"):
    """scipy.stats.ttest_1samp (two-sided): a Delayed ``Ttest_1sampResult``."""
    _propagate(nan_policy)
    a = asarray(a)
    n = _length(a, axis)
    t = (a.mean(axis=axis) - popmean) / (a.var(axis=axis, ddof=1) / float(n)) ** 0.5
    return _result(Ttest_1sampResult, t, _two_sided_t(t, n - 1.0))


@derived_from(scipy.stats)
def ttest_rel(a, b, axis=0, nan_policy="propagate"):
    """scipy.stats.ttest_rel (two-sided): a Delayed ``Ttest_relResult``."""
    _propagate(nan_policy)
    d = (asarray(a) - asarray(b)).astype(np.float64)
    n = _length(d, axis)
    t = d.mean(axis=axis) / (d.var(axis=axis, ddof=1) / float(n)) ** 0.5
    return _result(Ttest_relResult, t, _two_sided_t(t, n - 1.0))


@derived_from(scipy.stats)
def chisquare(f_obs, f_exp=None, ddof=0, axis=0):
    """scipy.stats.chisquare: ``power_divergence`` with ``lambda_="pearson"``."""
    return power_divergence(f_obs, f_exp=f_exp, ddof=ddof, axis=axis, lambda_="pearson")


@derived_from(scipy.stats)
def power_divergence(f_obs, f_exp=None, ddof=0, axis=0, lambda_=None):
    """scipy.stats.power_divergence: a Delayed ``Power_divergenceResult``. As dask, the sums of
    ``f_obs`` and ``f_exp`` are not checked (scipy does; that would compute)."""
    if isinstance(lambda_, str):
        if lambda_ not in _power_div_lambda_names:
            names = repr(list(_power_div_lambda_names))[1:-1]
            raise ValueError(f"invalid string for lambda_: {lambda_!r}. Valid strings are {names}")
        lambda_ = _power_div_lambda_names[lambda_]
    elif lambda_ is None:
        lambda_ = 1
    f_obs = asarray(f_obs)
    f_obs = f_obs if f_obs.dtype.kind in "fc" else f_obs.astype(np.float64)
    f_exp = f_obs.mean(axis=axis, keepdims=True) if f_exp is None else f_exp
    if lambda_ == 1:  # Pearson's chi-squared
        terms = (f_obs - f_exp) ** 2 / f_exp
    elif lambda_ == 0:  # log-likelihood ratio (G-test)
        terms = 2.0 * apply_ufunc(special.xlogy, f_obs, f_obs / f_exp)
    elif lambda_ == -1:  # modified log-likelihood ratio
        terms = 2.0 * apply_ufunc(special.xlogy, f_exp, f_exp / f_obs)
    else:  # Cressie-Read
        terms = f_obs * ((f_obs / f_exp) ** lambda_ - 1) / (0.5 * lambda_ * (lambda_ + 1))
    stat = terms.sum(axis=axis)
    k = _length(asarray(terms), axis)
    return _result(Power_divergenceResult, stat, apply_ufunc(special.chdtrc, k - 1 - ddof, stat))


@derived_from(scipy.stats)
def skewtest(a, axis=0, nan_policy="propagate"):
    """scipy.stats.skewtest (two-sided): a Delayed ``SkewtestResult``; at least 8 samples."""
    _propagate(nan_policy)
    return _result(SkewtestResult, *_skewtest(asarray(a), axis))


def _skewtest(a, axis):
    n = float(_length(a, axis))
    if n < 8:
        raise ValueError(f"skewtest is not valid with less than 8 samples; {int(n)} samples were given.")
    y = skew(a, axis) * math.sqrt(((n + 1) * (n + 3)) / (6.0 * (n - 2)))
    beta2 = 3.0 * (n**2 + 27 * n - 70) * (n + 1) * (n + 3) / ((n - 2.0) * (n + 5) * (n + 7) * (n + 9))
    w2 = -1 + math.sqrt(2 * (beta2 - 1))
    delta, alpha = 1 / math.sqrt(0.5 * math.log(w2)), math.sqrt(2.0 / (w2 - 1))
    y = where(y == 0, 1.0, y)
    z = delta * np.log(y / alpha + ((y / alpha) ** 2 + 1) ** 0.5)
    return z, _two_sided_normal(z)


@derived_from(scipy.stats)
def kurtosistest(a, axis=0, nan_policy="propagate"):
    """scipy.stats.kurtosistest (two-sided): a Delayed ``KurtosistestResult``; at least 5
    samples (scipy returns NaN below that)."""
    _propagate(nan_policy)
    return _result(KurtosistestResult, *_kurtosistest(asarray(a), axis))


def _kurtosistest(a, axis):
    n = float(_length(a, axis))
    if n < 5:
        raise ValueError(f"kurtosistest requires at least 5 observations; {int(n)} observations were given.")
    b2 = kurtosis(a, axis, fisher=False)
    e = 3.0 * (n - 1) / (n + 1)
    varb2 = 24.0 * n * (n - 2) * (n - 3) / ((n + 1) * (n + 1.0) * (n + 3) * (n + 5))
    x = (b2 - e) / math.sqrt(varb2)
    root = math.sqrt((6.0 * (n + 3) * (n + 5)) / (n * (n - 2) * (n - 3)))
    sqrtbeta1 = 6.0 * (n * n - 5 * n + 2) / ((n + 7) * (n + 9)) * root
    big_a = 6.0 + 8.0 / sqrtbeta1 * (2.0 / sqrtbeta1 + math.sqrt(1 + 4.0 / (sqrtbeta1**2)))
    term1 = 1 - 2 / (9.0 * big_a)
    denom = 1 + x * math.sqrt(2 / (big_a - 4.0))
    safe = where(denom == 0, 1.0, abs(denom))
    term2 = np.sign(denom) * where(denom == 0, np.nan, ((1 - 2.0 / big_a) / safe) ** (1 / 3))
    z = (term1 - term2) / math.sqrt(2 / (9.0 * big_a))
    return z, _two_sided_normal(z)


@derived_from(scipy.stats)
def normaltest(a, axis=0, nan_policy="propagate"):
    """scipy.stats.normaltest (D'Agostino-Pearson): a Delayed ``NormaltestResult``."""
    _propagate(nan_policy)
    a = asarray(a)
    (s, _), (k, _) = _skewtest(a, axis), _kurtosistest(a, axis)
    k2 = s * s + k * k
    return _result(NormaltestResult, k2, apply_ufunc(special.chdtrc, 2, k2))


@derived_from(scipy.stats)
def f_oneway(*args):
    """scipy.stats.f_oneway (one-way ANOVA of 1-d samples): a Delayed ``F_onewayResult``."""
    from .stacking import concatenate

    if len(args) < 2:
        raise TypeError(f"at least two inputs are required; got {len(args)}.")
    args = [asarray(a) for a in args]
    alldata = concatenate(args)
    bign = alldata.shape[0]
    offset = alldata.mean()  # centred: variance does not change, precision does
    alldata = alldata - offset
    square_of_sums = alldata.sum() ** 2 / float(bign)
    sstot = (alldata * alldata).sum() - square_of_sums
    ssbn = sum((a - offset).sum() ** 2 / float(a.shape[0]) for a in args) - square_of_sums
    dfbn, dfwn = len(args) - 1, bign - len(args)
    f = (ssbn / float(dfbn)) / ((sstot - ssbn) / float(dfwn))
    return _result(F_onewayResult, f, apply_ufunc(special.fdtrc, dfbn, dfwn, f))


# ---------------------------------------------------------------- moments


@derived_from(scipy.stats)
def skew(a, axis=0, bias=True, nan_policy="propagate"):
    """scipy.stats.skew: an array (NaN where the sample is constant, as scipy; ``bias=False``:
    the adjusted Fisher-Pearson coefficient where ``n > 2``)."""
    _propagate(nan_policy)
    a = asarray(a)
    n = _length(a, axis)
    m2, m3 = _moments(a, axis, 2, 3)
    zero = _zero_variance(a, axis, m2)
    safe = where(zero, 1.0, m2)
    vals = where(zero, np.nan, m3 / safe**1.5)
    if not bias and n > 2:
        vals = where(zero, vals, math.sqrt((n - 1.0) * n) / (n - 2.0) * m3 / safe**1.5)
    return vals


@derived_from(scipy.stats)
def kurtosis(a, axis=0, fisher=True, bias=True, nan_policy="propagate"):
    """scipy.stats.kurtosis: an array (Fisher's, normal = 0.0, or Pearson's; NaN where the
    sample is constant; ``bias=False``: the unbiased estimate where ``n > 3``)."""
    _propagate(nan_policy)
    a = asarray(a)
    n = _length(a, axis)
    m2, m4 = _moments(a, axis, 2, 4)
    zero = _zero_variance(a, axis, m2)
    safe = where(zero, 1.0, m2)
    vals = where(zero, np.nan, m4 / safe**2.0)
    if not bias and n > 3:
        nval = 1.0 / (n - 2) / (n - 3) * ((n**2 - 1.0) * m4 / safe**2.0 - 3 * (n - 1) ** 2.0)
        vals = where(zero, vals, nval + 3.0)
    return vals - 3 if fisher else vals


@derived_from(scipy.stats)
def moment(a, moment=1, axis=0, nan_policy="propagate"):
    """scipy.stats.moment: the ``moment``-th central moment along ``axis`` (an array)."""
    _propagate(nan_policy)
    from .routines import moment as _moment

    return _moment(asarray(a), moment, axis=axis)


__all__ = [
    "ttest_ind",
    "ttest_1samp",
    "ttest_rel",
    "chisquare",
    "power_divergence",
    "skew",
    "skewtest",
    "kurtosis",
    "kurtosistest",
    "normaltest",
    "f_oneway",
    "moment",
]

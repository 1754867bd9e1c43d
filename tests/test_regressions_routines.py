"""Regressions: results of routines that were silently wrong (value, shape or dtype), each
checked against NumPy on ragged chunks."""
import warnings

import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.testing import assert_eq

RNG = np.random.default_rng(7)
A = RNG.standard_normal((7, 10))
X = da.from_array(A, chunks=((3, 4), (4, 1, 5)))


@pytest.mark.parametrize("pad_width", [2, ((3, 1), (0, 2))])
def test_pad_mean_bool(pad_width):
    """A bool mean is cast (True where nonzero), as NumPy; it was rounded like an integer."""
    b = A > 1.0  # means well below 0.5: NumPy pads True, rounding gave False
    x = da.from_array(b, chunks=((3, 4), (4, 1, 5)))
    assert_eq(da.pad(x, pad_width, mode="mean"), np.pad(b, pad_width, mode="mean"))
    i = (A * 3).astype(np.int16)  # integers still round
    assert_eq(da.pad(da.from_array(i, chunks=((3, 4), (4, 1, 5))), pad_width, mode="mean"),
              np.pad(i, pad_width, mode="mean"))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_diff_n_prepend_append(n, axis):
    """n=0 returns the array unchanged, without the prepended/appended values (NumPy)."""
    side = A[:2] if axis == 0 else A[:, :2]
    for kw in ({}, {"prepend": 1.5}, {"append": side}, {"prepend": side, "append": -2.0}):
        assert_eq(da.diff(X, n=n, axis=axis, **kw), np.diff(A, n=n, axis=axis, **kw))
    b = A > 0
    assert_eq(da.diff(da.from_array(b, chunks=((3, 4), (4, 1, 5))), n=n, axis=axis, append=True),
              np.diff(b, n=n, axis=axis, append=True))
    with pytest.raises(ValueError, match="order must be non-negative"):
        da.diff(X, n=-1)


def test_corrcoef_single_row_and_cov_ddof():
    """cov with ddof >= n: NumPy's warning and a zero divisor (inf/NaN); it divided by n - ddof
    (negative: a finite, wrong value). corrcoef of one row of two observations taken with
    rowvar=False: the columns are the variables (it transposed the row back)."""
    one = np.array([[1.0, 2.0]])
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        got = da.corrcoef(da.from_array(one, chunks=1), rowvar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_eq(got, np.corrcoef(one, rowvar=False))
        for ddof in (10, 11):
            with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
                got = da.cov(X, ddof=ddof)
            assert_eq(got, np.cov(A, ddof=ddof))
        assert_eq(da.cov(X, rowvar=False, ddof=9), np.cov(A, rowvar=False, ddof=9))
    row = A[:1]
    assert_eq(da.corrcoef(da.from_array(row, chunks=((1,), (4, 1, 5)))), np.corrcoef(row))
    fw, aw = RNG.integers(1, 4, 10), RNG.random(10) + 0.5
    assert_eq(da.cov(X, fweights=fw, aweights=aw, ddof=2), np.cov(A, fweights=fw, aweights=aw, ddof=2))
    c = A + 1j * RNG.standard_normal((7, 10))
    assert_eq(da.corrcoef(da.from_array(c, chunks=((3, 4), (4, 1, 5)))), np.corrcoef(c))


@pytest.mark.parametrize("weighted", [False, True])
def test_histogramdd_normed_is_density(weighted):
    """normed=True (dask's alias of density) was ignored: raw counts came back."""
    s = RNG.random((50, 3))
    w = RNG.random(50) + 0.5 if weighted else None
    x = da.from_array(s, chunks=((20, 13, 17), (2, 1)))
    dw = None if w is None else da.from_array(w, chunks=((25, 25),))
    bins = [[0, 0.5, 1], [0, 0.25, 0.85, 1], [0, 0.5, 0.8, 1]]
    expected = np.histogramdd(s, bins=bins, weights=w, density=True)[0]
    assert_eq(da.histogramdd(x, bins=bins, weights=dw, normed=True)[0], expected)
    assert_eq(da.histogramdd(x, bins=bins, weights=dw, density=True)[0], expected)
    assert_eq(da.histogram2d(x[:, 0], x[:, 1], bins=4, weights=dw, normed=True)[0],
              np.histogram2d(s[:, 0], s[:, 1], bins=4, weights=w, density=True)[0])
    with pytest.raises(TypeError, match="Cannot specify both"):
        da.histogramdd(x, bins=bins, normed=True, density=True)


def test_histogram_integer_weights_dtype():
    """Integer weights: NumPy's (and dask's) counts have the weights' dtype; it gave float64."""
    v = RNG.random(40)
    for wdt in ("i8", "i4", "u1", "f4"):
        w = RNG.integers(0, 5, 40).astype(wdt)
        got = da.histogram(da.from_array(v, chunks=((15, 7, 18),)), bins=[0, 0.3, 0.6, 1],
                           weights=da.from_array(w, chunks=((15, 7, 18),)))[0]
        assert_eq(got, np.histogram(v, bins=[0, 0.3, 0.6, 1], weights=w)[0])


@pytest.mark.parametrize("fn", ["quantile", "nanquantile", "percentile", "nanpercentile"])
def test_quantile_q_dtype(fn):
    """NumPy's result dtype for each data and q dtype: a float32 q gave float64, and a Python
    float q on float32 data gave float64 for percentile."""
    scale = 100 if fn.endswith("percentile") else 1
    for dtype in ("f2", "f4", "f8", "i4", "u1"):
        a = (RNG.random((6, 7)) * 10).astype(dtype)
        x = da.from_array(a, chunks=((2, 4), (3, 4)))
        for q in (0.5, [0.25, 0.5], np.float32(0.3), np.array([0.25, 0.75], "f4"), np.array(0.5, "f2"),
                  np.array([[0.1, 0.9]], "f8")):
            qq = q * scale if not isinstance(q, list) else [v * scale for v in q]
            if isinstance(q, (np.ndarray, np.generic)):
                qq = np.asarray(qq).astype(q.dtype)[()]
            for axis in (None, 0, 1):
                assert_eq(getattr(da, fn)(x, qq, axis=axis), getattr(np, fn)(a, qq, axis=axis), rtol=1e-3)


def test_roll_shift_axis_mismatch_raises():
    """NumPy's errors at call time; a 2-d shift was flattened and rolled."""
    a = np.arange(24).reshape(4, 6)
    x = da.from_array(a, chunks=(3, 4))
    for shift, axis in (([[1, 2]], (0, 1)), ([[1], [2]], (0, 1))):
        with pytest.raises(ValueError, match="should be scalars or 1D sequences"):
            da.roll(x, shift, axis)
    with pytest.raises(ValueError, match="shape mismatch"):
        da.roll(x, (1, 2), (0, 1, 1))
    for shift, axis in (((1,), (0, 1)), ((1, 2), 0), ((2, 3), (1, -1)), ((1, 2), None), (-7, 1)):
        assert_eq(da.roll(x, shift, axis), np.roll(a, shift, axis))


def test_piecewise_function_returning_scalar():
    """A piece function may return a scalar (NumPy broadcasts it); it failed when computed."""
    i = RNG.integers(10, size=(7, 10))
    x = da.from_array(i, chunks=((3, 4), (4, 1, 5)))
    funcs = [lambda e, v, k: e + 1, lambda e, v, k: v * e, lambda e, v, k: 0]
    assert_eq(da.piecewise(x, [x > 5, x <= 2], funcs, 1, k=2), np.piecewise(i, [i > 5, i <= 2], funcs, 1, k=2))


def test_select_with_array_lists():
    """condlist/choicelist given as one array each: their rows, as NumPy iterates them."""
    conds = A[:3] > 0
    choices = RNG.integers(0, 9, (3, 10))
    got = da.select(da.from_array(conds, chunks=(2, 4)), da.from_array(choices, chunks=(3, 5)), default=-1)
    assert_eq(got, np.select(list(conds), list(choices), default=-1))


def test_histogram_argument_errors_name_the_argument():
    v = da.from_array(RNG.random(10), chunks=4)
    for bins, rng in ((None, None), (10, 1), (10, [0, 1, 2]), (10, np.array([[0, 1]])), ([[0, 1, 2]], None)):
        with pytest.raises((TypeError, ValueError), match="bins|range"):
            da.histogram(v, bins=bins, range=rng)
    s = da.from_array(RNG.random((10, 4)), chunks=(5, 4))
    with pytest.raises(ValueError, match="dimension of bins"):
        da.histogramdd(s, bins=(2, 3, 4), range=((0, 1),) * 4)
    with pytest.raises(ValueError, match="sequence of pairs"):
        da.histogramdd(s, bins=(2, 3, 4, 5), range=((0, 1), (0, 1, 2), 3, 5))
    with pytest.raises(TypeError, match="Axis must be specified"):
        da.average(da.arange(11, chunks=2), weights=[1, 2, 3])

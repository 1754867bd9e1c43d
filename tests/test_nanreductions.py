"""NaN-reductions, order statistics, pad, and dask.array's types, against NumPy and dask."""
import dask.array as dsk
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dask_tra.array as da
from dask_tra.array.testing import assert_eq

CHUNKS = ((4, 1, 6), (5, 2, 7), 3)


@pytest.fixture
def a():
    v = np.random.default_rng(0).standard_normal((11, 14, 3))
    v[v > 1.2] = np.nan
    v[3, :, 1] = np.nan  # an all-NaN slice along axis 1
    return v


@pytest.mark.parametrize("name", ["nanvar", "nanstd", "nansum", "nanmean", "nanmax", "nanmin"])
@pytest.mark.parametrize("axis", [None, 0, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_nan_reductions(a, name, axis, keepdims):
    x = da.from_array(a, chunks=CHUNKS)
    with _quiet():
        expected = getattr(np, name)(a, axis=axis, keepdims=keepdims)
    assert_eq(getattr(da, name)(x, axis=axis, keepdims=keepdims), expected, rtol=1e-10)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
def test_nanmean_is_one_aggregation_in_numpys_dtype(a, dtype):
    """nanmean adds stacked (sum, count) partials in one aggregation (as dask's mean_chunk), with
    NumPy's value and dtype, NaN (no warning) on an all-NaN slice, whole NaN blocks included."""
    v = (a + 1j * np.roll(a, 1, axis=0) if dtype.startswith("complex") else a).astype(dtype)
    v[:4] = np.nan  # every block of the first block row is all NaN
    x = da.from_array(v, chunks=CHUNKS)
    for axis in (0, 1, (0, 2), None):
        y = da.nanmean(x, axis=axis)
        assert sum(type(n).__name__ == "Aggregate" for n in y.expr.walk()) == 1
        with _quiet():
            want = np.nanmean(v, axis=axis)
        assert y.dtype == want.dtype
        got = y.compute()
        assert got.dtype == want.dtype
        if dtype == "float16":  # accumulated in float32, as NumPy's mean (its nanmean adds in float16)
            with _quiet():
                want = np.nanmean(v.astype("float32"), axis=axis).astype(dtype)
        np.testing.assert_allclose(got, want, rtol=1e-3 if dtype == "float16" else 1e-5, equal_nan=True)


@pytest.mark.parametrize("name", ["nanmean", "nanvar", "nanstd"])
def test_nan_moments_take_dasks_split_every(a, name):
    """dask's signatures: ``split_every`` is accepted (the plan decides how partials combine)
    and changes nothing; ``out`` follows it, as in dask."""
    x = da.from_array(a, chunks=CHUNKS)
    with _quiet():
        want = getattr(np, name)(a, axis=0)
        assert_eq(getattr(da, name)(x, axis=0, split_every=2), want, rtol=1e-10)
        assert_eq(getattr(da, name)(x, 0, None, False, *((0,) if name != "nanmean" else ()), {0: 2}), want, rtol=1e-10)


def test_nanmean_gradient_reaches_the_non_nan_elements(a):
    import dask_tra as dt

    x = da.from_array(a, chunks=CHUNKS)
    (g,) = dt.grad(dt.sum(da.nanmean(x, axis=1) ** 2), [x])
    with _quiet():
        m = np.nanmean(a, axis=1, keepdims=True)
    n = (~np.isnan(a)).sum(axis=1, keepdims=True)
    with _quiet():
        want = np.where(np.isnan(a) | (n == 0), 0, 2 * m / n)
    np.testing.assert_allclose(np.nan_to_num(g.compute()), want, rtol=1e-12)


class _quiet:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


@pytest.mark.parametrize("ddof", [0, 1, 3])
def test_nanvar_ddof_complex_and_integers(a, ddof):
    c = a + 1j * np.roll(a, 1, axis=0)
    with _quiet():
        assert_eq(da.nanvar(da.from_array(c, chunks=CHUNKS), axis=1, ddof=ddof), np.nanvar(c, axis=1, ddof=ddof))
        assert_eq(da.nanstd(da.from_array(a, chunks=CHUNKS), axis=0, ddof=ddof), np.nanstd(a, axis=0, ddof=ddof))
    i = np.arange(60).reshape(6, 10) % 7
    assert_eq(da.nanstd(da.from_array(i, chunks=(4, 3)), axis=1, ddof=ddof), np.nanstd(i, axis=1, ddof=ddof))
    assert_eq(da.std(da.from_array(i, chunks=(4, 3)), ddof=ddof), np.std(i, ddof=ddof))


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_nan_scans(a, name, axis):
    b = np.where(np.isnan(a), np.nan, 1 + a / 10)
    assert_eq(getattr(da, name)(da.from_array(b, chunks=CHUNKS), axis=axis), getattr(np, name)(b, axis=axis),
              rtol=1e-10)


@pytest.mark.parametrize("name", ["nanargmin", "nanargmax"])
@pytest.mark.parametrize("axis", [0, 2, None])
def test_nanargminmax(a, name, axis):
    x = da.from_array(a, chunks=CHUNKS)
    assert_eq(getattr(da, name)(x, axis=axis), getattr(np, name)(a, axis=axis))
    with pytest.raises(ValueError, match="All-NaN"):
        getattr(da, name)(x, axis=1).compute()  # slice [3, :, 1] is all NaN, as in NumPy
    i = (np.arange(30) * 7 % 11).reshape(5, 6)
    assert_eq(getattr(da, name)(da.from_array(i, chunks=2), axis=1), getattr(np, name)(i, axis=1))


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("axis", [0, -1, (0, 1), None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_median(a, name, axis, keepdims):
    b = a if name == "nanmedian" else np.nan_to_num(a, nan=0.5)
    with _quiet():
        expected = getattr(np, name)(b, axis=axis, keepdims=keepdims)
    assert_eq(getattr(da, name)(da.from_array(b, chunks=CHUNKS), axis=axis, keepdims=keepdims), expected)


@pytest.mark.parametrize("q", [0.3, [0.1, 0.5, 0.99], [[0.2], [0.8]]])
@pytest.mark.parametrize("method", ["linear", "nearest", "higher"])
def test_quantile_and_percentile(a, q, method):
    b = np.nan_to_num(a, nan=-0.25)
    x = da.from_array(b, chunks=CHUNKS)
    assert_eq(da.quantile(x, q, axis=1, method=method), np.quantile(b, q, axis=1, method=method))
    assert_eq(da.percentile(x, np.asarray(q) * 100, axis=(0, 2), keepdims=True),
              np.percentile(b, np.asarray(q) * 100, axis=(0, 2), keepdims=True))
    with _quiet():
        assert_eq(da.nanquantile(da.from_array(a, chunks=CHUNKS), q, axis=0),
                  np.nanquantile(a, q, axis=0))
    with pytest.raises(ValueError, match="range"):
        da.quantile(x, 1.5)
    assert_eq(da.median(da.from_array(np.arange(7), chunks=3)), np.median(np.arange(7)))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum",
                                  "mean", "empty"])
@pytest.mark.parametrize("width", [2, ((1, 3), (0, 2)), ((4, 0), (6, 1))])
def test_pad_against_numpy_and_dask(mode, width):
    v = np.random.default_rng(2).standard_normal((7, 5))
    chunks = ((3, 4), (2, 2, 1))
    kw = {"constant_values": ((1.5, -2.0), (3.0, 4.0))} if mode == "constant" else {}
    got = da.pad(da.from_array(v, chunks=chunks), width, mode=mode, **kw)
    if mode != "empty":
        assert_eq(got, np.pad(v, width, mode=mode, **kw))
    if np.max(width) <= min(v.shape):  # wider pads: dask's shapes differ from NumPy's (ours do not)
        d = dsk.pad(dsk.from_array(v, chunks=chunks), width, mode=mode, **kw)
        assert got.shape == d.shape and got.dtype == d.dtype  # (dask cuts the padding its own way)


def test_pad_integers_and_errors():
    i = np.arange(20).reshape(4, 5)
    x = da.from_array(i, chunks=3)
    assert_eq(da.pad(x, 1, mode="mean"), np.pad(i, 1, mode="mean"))
    assert_eq(da.pad(x, (2, 1), constant_values=-1), np.pad(i, (2, 1), constant_values=-1))
    with pytest.raises(ValueError, match="negative"):
        da.pad(x, -1)
    with pytest.raises(NotImplementedError, match="linear_ramp"):
        da.pad(x, 1, mode="linear_ramp")


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 12), c=st.integers(1, 5), before=st.integers(0, 14), after=st.integers(0, 14),
       mode=st.sampled_from(["edge", "reflect", "symmetric", "wrap", "constant"]))
def test_pad_1d_property(n, c, before, after, mode):
    v = np.random.default_rng(n).standard_normal(n)
    if mode == "reflect" and n == 1 and (before or after):
        return  # NumPy pads a length-1 axis with edge values here; so do we, but via a different route
    assert_eq(da.pad(da.from_array(v, chunks=c), (before, after), mode=mode), np.pad(v, (before, after), mode=mode))


def test_types_match_dask(a):
    x = da.from_array(np.nan_to_num(a), chunks=CHUNKS)
    d = dsk.from_array(np.nan_to_num(a), chunks=CHUNKS)
    for ours, theirs in ((x.sum(), d.sum()), (x.mean(), d.mean()), (x.max(), d.max()), (x[1, 2, 0], d[1, 2, 0]),
                         (x.argmax(), d.argmax()), ((x > 0).any(), (d > 0).any())):
        got, want = ours.compute(), theirs.compute()
        assert type(got) is type(want), (type(got), type(want))
        assert got == pytest.approx(want, rel=1e-12)
    assert isinstance(x, da.Array) and issubclass(da.Array, object)
    assert da.float32 is np.float32 and da.int64 is np.int64 and da.bool is np.bool_
    assert x.astype(da.float32).dtype == d.astype(dsk.float32).dtype
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x > 0)
    with pytest.raises(TypeError):
        float(x)
    assert bool(x[0, 0, 0] == x[0, 0, 0]) is True

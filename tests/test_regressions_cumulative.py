"""Silent wrong results of the scans and the NaN-skipping means, against NumPy on ragged chunks.

- A NaN (inf) in one block made the cumsum of every block NaN: each block's prefix of block
  totals was a contraction with a strictly-triangular 0/1 mask, and 0 * NaN is NaN.
- cumprod of arange(1320.): block totals overflow to inf, and 0 * inf gave NaN where NumPy has 0.
- nanmean of float16/float32 (complex64) returned float64 (complex128).
- nanvar/nanstd skipped the NaN of inf - inf (NumPy's result is NaN) and divided by zero where
  ``count <= ddof`` (NumPy: NaN).
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dask_tra.array as da

SCANS = ["cumsum", "cumprod", "nancumsum", "nancumprod"]


def _check_scan(name, a, chunks, axis, dtype=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = getattr(np, name)(a, axis=axis, dtype=dtype)
        got = getattr(da, name)(da.from_array(a, chunks=chunks), axis=axis, dtype=dtype)
        computed = np.asarray(got.compute())
    assert got.dtype == computed.dtype == expected.dtype
    assert computed.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(computed), np.isnan(expected))
    np.testing.assert_array_equal(np.isposinf(computed), np.isposinf(expected))
    np.testing.assert_array_equal(np.isneginf(computed), np.isneginf(expected))
    rtol = 1e-10 if expected.dtype.itemsize >= 8 else 1e-5
    np.testing.assert_allclose(computed, expected, rtol=rtol, equal_nan=True)


def test_a_nan_in_a_later_block_leaves_earlier_cumsum_elements_alone():
    x = da.from_array(np.array([1, 2, 3, np.nan, 5, 6.0]), chunks=2)
    np.testing.assert_array_equal(da.cumsum(x).compute(), [1, 3, 6, np.nan, np.nan, np.nan])


@pytest.mark.parametrize("name", SCANS)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_nan_and_inf_in_one_block_reach_only_the_elements_after_them(name, value, where, axis):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 1.5, (7, 9))
    a[2, 1] = 0.0
    row, col = {"first": (0, 1), "middle": (3, 4), "last": (6, 8)}[where]
    a[row, col] = value
    _check_scan(name, a, ((2, 0, 3, 2), (1, 4, 3, 1)), axis)


@pytest.mark.parametrize("axis", [None, 0, 1, 2])
@pytest.mark.parametrize("name", ["cumprod", "nancumprod"])
def test_cumprod_of_arange_is_zero_after_the_zero_although_block_totals_overflow(name, axis):
    a = np.arange(1320.0).reshape(10, 11, 12)
    _check_scan(name, a, (4, 5, 6), axis)


@pytest.mark.parametrize("dtype", [None, np.float32, np.int64])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_scans_with_dtype_on_ragged_chunks(dtype, axis):
    a = np.random.default_rng(2).uniform(-2, 2, (5, 7))
    a[1, 3], a[4, 0] = np.nan, np.inf
    if dtype is np.int64:
        a = np.round(np.nan_to_num(a, posinf=3))
    for name in SCANS:
        _check_scan(name, a, ((3, 2), (2, 0, 5)), axis, dtype)


@pytest.mark.parametrize("ufunc", [np.add, np.multiply])
def test_ufunc_accumulate_with_a_nan_in_a_later_block(ufunc):
    a = np.array([1, 2, 3, np.nan, 5, 6.0])
    got = ufunc.accumulate(da.from_array(a, chunks=2))
    np.testing.assert_array_equal(np.asarray(got.compute()), ufunc.accumulate(a))


def test_method_is_accepted_as_dask_does():
    a = np.array([1, 2, 3, np.nan, 5, 6.0])
    for method in ("sequential", "blelloch"):
        np.testing.assert_array_equal(da.cumsum(da.from_array(a, chunks=2), method=method).compute(), np.cumsum(a))
    with pytest.raises(ValueError, match="Invalid method"):
        da.cumsum(da.from_array(a, chunks=2), method="parallel")


def _ragged(draw, n):
    cuts = draw(st.lists(st.integers(0, n), max_size=3))
    sizes = np.diff([0, *sorted(cuts), n]).tolist()
    return tuple(sizes)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_scans_match_numpy_wherever_nan_and_inf_are(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=3), label="shape"))
    axis = data.draw(st.sampled_from([None, *range(len(shape))]), label="axis")
    # reshape (axis=None flattens) fails on an extent-1 axis split into empty blocks: (1,) there
    chunks = tuple((1,) if n == 1 and axis is None else _ragged(data.draw, n) for n in shape)
    seed = data.draw(st.integers(0, 2**31), label="seed")
    a = np.random.default_rng(seed).uniform(-3, 3, shape)
    specials = data.draw(st.lists(st.sampled_from([np.nan, np.inf, -np.inf, 0.0]), max_size=4), label="specials")
    positions = data.draw(st.lists(st.integers(0, a.size - 1), min_size=len(specials), max_size=len(specials)))
    a.reshape(-1)[positions] = specials
    name = data.draw(st.sampled_from(SCANS), label="name")
    _check_scan(name, a, chunks, axis)


@pytest.mark.parametrize("name", ["mean", "nanmean", "var", "nanvar", "std", "nanstd"])
@pytest.mark.parametrize("kind", [np.float16, np.float32, np.float64, np.complex64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("dtype", [None, np.float32, np.float64])
def test_means_and_variances_have_numpys_dtype(name, kind, dtype):
    a = (np.arange(42) % 5).reshape(6, 7).astype(kind)
    if a.dtype.kind in "fc":
        a[2, 3] = np.nan
    x = da.from_array(a, chunks=((4, 2), (3, 0, 4)))
    for axis in (None, 0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = getattr(np, name)(a, axis=axis, dtype=dtype)
            got = getattr(da, name)(x, axis=axis, dtype=dtype)
            computed = np.asarray(got.compute())
        assert got.dtype == computed.dtype == expected.dtype, (axis, got.dtype, computed.dtype, expected.dtype)
        np.testing.assert_allclose(computed, expected, rtol=2e-3 if np.float16 in (kind, dtype) else 1e-6)


def test_nanmean_of_float32_is_float32():
    a = np.random.default_rng(3).random((5, 6)).astype(np.float32)
    a[1, 2] = np.nan
    got = da.nanmean(da.from_array(a, chunks=(2, 4)), axis=0)
    assert got.dtype == got.compute().dtype == np.float32
    np.testing.assert_allclose(got.compute(), np.nanmean(a, axis=0), rtol=1e-6)


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
@pytest.mark.parametrize(
    "values, ddof", [([1.0, np.inf, 3.0, np.nan], 0), ([np.inf, np.nan], 0), ([1.0, 2.0, np.nan], 2), ([1.0, 2.0], 3)]
)
def test_nanvar_keeps_numpys_nan_for_inf_and_for_too_few_elements(name, values, ddof):
    a = np.array(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = getattr(da, name)(da.from_array(a, chunks=1), ddof=ddof).compute()
        expected = getattr(np, name)(a, ddof=ddof)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dt", ["i4", "u1", "f4", "c8"])
@pytest.mark.parametrize("dtype", ["i8", "f8", "f4"])
@pytest.mark.parametrize("func", ["var", "std"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_var_and_std_with_dtype_are_numpys(dt, dtype, func, axis):
    """NumPy accumulates in ``dtype`` and casts each quotient to it (``var(arange(5), dtype="i8")``
    is 2; complex data with a real dtype keeps only the real parts in the mean)."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 9, (7, 5)) + (1j * rng.integers(0, 9, (7, 5)) if dt == "c8" else 0)
    x = x.astype(dt) if dt != "c8" else x.astype(np.complex64)
    a = da.from_array(x, chunks=((3, 4), (2, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = getattr(np, func)(x, axis=axis, dtype=dtype)
        except TypeError:
            with pytest.raises(TypeError, match="Cannot cast ufunc 'sqrt'"):
                getattr(da, func)(a, axis=axis, dtype=dtype)
            return
        got = getattr(da, func)(a, axis=axis, dtype=dtype).compute()
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_masked_scans_keep_numpy_ma_masks_across_blocks():
    x = np.random.default_rng(0).random((20, 24, 13))
    mx = np.ma.masked_greater(x, 0.4)
    dmx = da.ma.masked_greater(da.from_array(x, chunks=(6, 5, 4)), 0.4)
    for axis in (0, 1, 2, None):
        for f in ("cumsum", "cumprod"):
            got, want = getattr(dmx, f)(axis=axis).compute(), getattr(mx, f)(axis=axis)
            np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
            np.testing.assert_allclose(np.ma.filled(got, 0), np.ma.filled(want, 0))

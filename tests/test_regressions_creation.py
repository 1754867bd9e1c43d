"""Regressions: creation and random results that were silently wrong (compared with NumPy on
ragged chunks). One test per fixed item."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dask_tra.array as da

KINDS = [np.uint8, np.uint64, np.int8, np.int16, np.int64, np.float16, np.float32, np.float64, int, float]


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.tuples(*[st.sampled_from(KINDS)] * 3),
    values=st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(1, 7)),
    negative=st.booleans(),
    dtype=st.sampled_from([None, np.float32, np.int64, np.uint8]),
)
def test_arange_dtype_length_values_match_numpy_for_scalar_kinds(kinds, values, negative, dtype):
    start, stop, step = values
    if negative:
        start, stop = stop, start
    args = [k(v) for k, v in zip(kinds, (start, stop, step))]
    if negative:
        if kinds[2] in (np.uint8, np.uint64):
            args[2] = np.int8(-step)
        else:
            args[2] = kinds[2](-step)
    kw = {} if dtype is None else {"dtype": dtype}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's own overflow warnings on unsigned spans
        try:
            expected = np.arange(*args, **kw)
        except (ValueError, OverflowError, MemoryError):
            return
        if expected.size > 10_000:
            return
        got = da.arange(*args, chunks=3, **kw)
        assert got.dtype == expected.dtype
        assert got.shape == expected.shape
        out = got.compute()
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_arange_numpy_scalar_arguments():
    cases = [
        ((np.float32(3), 13.0, 2.0), {}),
        ((np.uint64(3), np.uint64(13), np.uint64(2)), {}),
        ((np.uint8(3), 13, 2), {}),
        ((np.int8(40), np.int8(2), np.int8(-3)), {}),
        ((np.float32(10),), {"dtype": np.uint8}),
        ((np.float16(0.5), np.float16(9.0), np.float16(0.7)), {}),
        ((0.0, 1.0, 0.1), {"dtype": np.float32}),
    ]
    for args, kw in cases:
        expected = np.arange(*args, **kw)
        got = da.arange(*args, chunks=3, **kw)  # ragged: the last block is shorter
        assert got.dtype == expected.dtype, args
        np.testing.assert_array_equal(got.compute(), expected)
    with pytest.raises(TypeError, match="requires stop"):
        da.arange()
    with pytest.raises(TypeError, match="whatsthis"):
        da.arange(10, chunks=-1, whatsthis=1)


def test_array_ndmin_and_asarray_keywords():
    x = np.arange(10.0).reshape(2, 5)
    for ndmin in (0, 1, 2, 3, 4):
        expected = np.array(x, ndmin=ndmin)
        got = da.array(da.from_array(x, chunks=((1, 1), (2, 3))), ndmin=ndmin)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got.compute(), expected)
    np.testing.assert_array_equal(da.array(5, ndmin=2).compute(), np.array(5, ndmin=2))
    got = da.array(x, dtype=np.float32, ndmin=3)
    assert got.dtype == np.float32 and got.shape == (1, 2, 5)
    f = np.asfortranarray(x)
    np.testing.assert_array_equal(da.asarray(f, order="C", chunks=(1, 3)).compute(), x)
    assert da.asarray([1, 2], False, np.float32).dtype == np.float32  # dask's positions
    with pytest.raises(ValueError):
        da.asarray([1, 2], copy=False)  # NumPy: a list cannot be wrapped without a copy


def test_from_array_does_not_see_later_changes():
    # dask's test_from_array_copies, plus asarray/array (dask copies through from_array)
    x = np.arange(60).reshape((6, 10))
    original = x.copy()
    made = [da.from_array(x, chunks=((2, 4), (3, 3, 4))), da.asarray(x, chunks=(4, 3)), da.array(x)]
    x[2:4, x[0] > 3] = -5
    for d in made:
        np.testing.assert_array_equal(d.compute(), original)
    y = np.arange(6.0)
    shared = da.asarray(y, copy=False)  # NumPy's meaning of copy=False: y's memory
    y[0] = 99.0
    assert shared.compute()[0] == 99.0


def test_reseeding_repeats_draws():
    def draws():
        return [
            da.random.random(7, chunks=(3, 4)).compute(),
            da.random.normal(2.0, 3.0, size=(5, 4), chunks=((2, 3), (1, 3))).compute(),
            da.random.randint(0, 1000, size=9, chunks=4).compute(),
            da.random.poisson(3.0, size=6, chunks=(5, 1)).compute(),
            da.random.permutation(10).compute(),
        ]

    da.random.seed(1)
    a = draws()
    da.random.seed(1)
    b = draws()
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    da.random.seed(2)
    assert not np.array_equal(draws()[0], a[0])
    for make in (da.random.RandomState, da.random.default_rng):
        np.testing.assert_array_equal(
            make(5).normal(10, 1, size=10, chunks=(3, 7)).compute(),
            make(5).normal(10, 1, size=10, chunks=(3, 7)).compute(),
        )
    for seed in (None, 42, np.random.PCG64, np.random.PCG64(3), np.random.default_rng(3)):
        assert isinstance(da.random.default_rng(seed), da.random.Generator)
    rng = da.random.default_rng(3)
    assert da.random.default_rng(rng) is rng
    assert "Generator" in str(rng) and "Generator" in repr(rng)


MASKED = np.ma.array([1.0, 2.0, 3.0, 4.0, 5.0], mask=[0, 1, 0, 0, 1])


@pytest.mark.parametrize(
    "make",
    [
        lambda x: da.full(3, np.ma.masked),
        lambda x: x + MASKED,
        lambda x: np.add(MASKED, x),
        lambda x: x * np.ma.masked,
        lambda x: da.where(x > 2, MASKED, x),
        lambda x: da.clip(x, MASKED, 4),
        lambda x: x.__setitem__(1, np.ma.masked),
        lambda x: x.__setitem__(slice(None), MASKED),
    ],
)
def test_masked_arrays_raise_instead_of_dropping_the_mask(make):
    x = da.from_array(np.arange(5.0), chunks=(2, 3))
    message = "masked arrays are not supported by dask_tra yet: the mask would be lost"
    with pytest.raises(NotImplementedError, match=message):
        make(x)
    np.testing.assert_array_equal(x.compute(), np.arange(5.0))  # a failed assignment changes nothing


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda x: da.from_array(MASKED, chunks=(2, 3)), lambda x: MASKED),
        (lambda x: da.asarray(MASKED), lambda x: MASKED),
        (lambda x: da.array(MASKED, ndmin=2), lambda x: MASKED[None]),
        (lambda x: da.concatenate([x, MASKED]), lambda x: np.ma.concatenate([x, MASKED])),
        (lambda x: da.stack([x, MASKED]), lambda x: np.ma.stack([x, MASKED])),
    ],
)
def test_masked_arrays_keep_their_mask(make, expected):
    """Since da.ma: these paths keep the mask (they raised before, rather than dropping it)."""
    x = np.arange(5.0)
    res, exp = make(da.from_array(x, chunks=(2, 3))).compute(), expected(x)
    assert isinstance(res, np.ma.MaskedArray)
    np.testing.assert_array_equal(np.ma.getmaskarray(res), np.ma.getmaskarray(exp))
    np.testing.assert_array_equal(np.ma.filled(res, -1), np.ma.filled(exp, -1))
    assert da.sum(MASKED).compute() == MASKED.sum()


def test_masked_meta_of_from_delayed_raises():
    import dask

    with pytest.raises(NotImplementedError, match="the mask would be lost"):
        da.from_delayed(dask.delayed(MASKED), (5,), meta=MASKED)

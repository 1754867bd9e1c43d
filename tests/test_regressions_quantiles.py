"""Order statistics with ``weights=`` (NumPy 2's, ``method="inverted_cdf"``) and dask.array's
1-d ``percentile(a, q, method=, internal_method=)`` API, against NumPy on ragged chunks.

- ``weights=`` raised NotImplementedError; now the weights (``a``'s shape, or the shape of the
  reduced axes, NumPy or lazy, chunked otherwise than ``a``) are joined with ``a`` blockwise.
- ``nanquantile`` with 1-d weights on a multi-dimensional array: broadcast (NumPy's own fails).
- NumPy's errors: a method other than inverted_cdf, shapes that differ with ``axis=None``, weights
  not matching the reduced axes, negative weights.
- ``percentile(..., internal_method=...)``, dask's positional ``method`` and its deprecated
  ``method="dask"`` (a FutureWarning) raised TypeError.
- an all-NaN slice of ``nanquantile`` warned (dask's nanquantile gives NaN silently).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dask_tra.array as da

SHAPE = (7, 9, 11)
CHUNKS = ((2, 5), (4, 1, 4), (3, 3, 5))


def _data(nan):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(SHAPE)
    if nan:
        a[rng.random(SHAPE) < 0.15] = np.nan
    return a, rng


def _ragged(w):
    """``w`` as a RelArray cut otherwise than the data (two blocks of unequal size per axis)."""
    return da.from_array(w, chunks=tuple((1, n - 1) if n > 1 else (1,) for n in w.shape))


def _full(w, axis):
    """1-d/n-d weights over ``axis`` broadcast to the data's shape (NumPy's reference)."""
    axis = tuple(d % len(SHAPE) for d in (axis if isinstance(axis, tuple) else (axis,)))
    w = w.transpose(np.argsort(axis))
    return np.broadcast_to(np.expand_dims(w, [d for d in range(len(SHAPE)) if d not in axis]), SHAPE)


AXES = [0, -1, 1, (0, 2), (2, 0), None]


@pytest.mark.parametrize("fn", ["quantile", "nanquantile", "percentile", "nanpercentile"])
@pytest.mark.parametrize("axis, along", [(ax, al) for ax in AXES for al in [False, True] if ax is not None or not al])
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("keepdims", [False, True])
def test_weights_match_numpy_on_ragged_chunks(fn, axis, along, lazy, keepdims):
    a, rng = _data(nan=fn.startswith("nan"))
    q = [0.2, 0.5, 0.95] if "quantile" in fn else [20, 50, 95]
    if along:
        ax = axis if isinstance(axis, tuple) else (axis,)
        w = rng.uniform(0.1, 2.0, tuple(SHAPE[d] for d in ax))
        ref = _full(w, axis)
    else:
        w = ref = rng.uniform(0.1, 2.0, SHAPE)
    got = getattr(da, fn)(
        da.from_array(a, chunks=CHUNKS),
        q,
        axis=axis,
        weights=_ragged(w) if lazy else w,
        method="inverted_cdf",
        keepdims=keepdims,
    )
    expected = getattr(np, fn)(a, q, axis=axis, weights=ref, method="inverted_cdf", keepdims=keepdims)
    assert got.shape == expected.shape
    out = got.compute()
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("a_dtype", [np.int16, np.uint32, np.float32])
@pytest.mark.parametrize("q", [0.5, np.float32(0.5), [0.25, 0.75]])
def test_weights_dtype_matches_numpy(a_dtype, q):
    a = np.asarray([100, 200, 300, 50, 7], dtype=a_dtype)
    w = np.asarray([0.4, 0.6, 1.0, 0.1, 2.0], dtype=np.float32)
    got = da.quantile(da.from_array(a, chunks=2), q, weights=w, method="inverted_cdf").compute()
    expected = np.quantile(a, q, weights=w, method="inverted_cdf")
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_scalar_weight_per_row_zero_weights_are_skipped():
    a = np.arange(12.0).reshape(3, 4)
    w = np.array([0.0, 0.0, 1.0, 0.0])
    got = da.quantile(da.from_array(a, chunks=(2, 3)), [0.1, 0.9], axis=1, weights=da.from_array(w, chunks=1),
                      method="inverted_cdf")
    np.testing.assert_array_equal(got.compute(), np.quantile(a, [0.1, 0.9], axis=1, weights=w, method="inverted_cdf"))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"axis": 1, "weights": np.ones(9)}, ValueError, "Only method 'inverted_cdf' supports weights. Got: linear."),
        ({"weights": np.ones(9), "method": "inverted_cdf"}, TypeError, "Axis must be specified"),
        ({"axis": 1, "weights": np.ones(8), "method": "inverted_cdf"}, ValueError, "consistent with shape of a"),
        ({"axis": (0, 1), "weights": np.ones((9, 7)), "method": "inverted_cdf"}, ValueError, "consistent"),
        ({"axis": 1, "weights": -np.ones(9), "method": "inverted_cdf"}, ValueError, "Weights must be non-negative"),
    ],
)
@pytest.mark.parametrize("fn", ["quantile", "nanpercentile"])
def test_weights_errors_match_numpy(fn, kwargs, error, match):
    a = np.ones(SHAPE)
    q = 0.5 if "quantile" in fn else 50
    with pytest.raises(error, match=match):
        getattr(np, fn)(a, q, **kwargs)
    with pytest.raises(error, match=match):
        getattr(da, fn)(da.from_array(a, chunks=CHUNKS), q, **kwargs)


def test_negative_lazy_weights_raise_at_compute():
    x = da.from_array(np.ones((4, 6)), chunks=(2, 3))
    w = da.from_array(-np.ones(6), chunks=2)
    with pytest.raises(ValueError, match="Weights must be non-negative"):
        da.quantile(x, 0.5, axis=1, weights=w, method="inverted_cdf").compute()


@pytest.mark.parametrize("internal_method", ["default", "dask", "tdigest"])
def test_dask_percentile_api_internal_method_is_exact(internal_method):
    x = np.array([0, 0, 5, 5, 5, 5, 20, 20, 3, 1, 7])
    d = da.from_array(x, chunks=3)
    got = da.percentile(d, [0, 10, 50, 95, 100], internal_method=internal_method).compute()
    np.testing.assert_array_equal(got, np.percentile(x, [0, 10, 50, 95, 100]))
    assert da.percentile(d, 50, internal_method=internal_method).compute() == np.percentile(x, 50)


def test_dask_percentile_api_positional_and_deprecated_method():
    x = np.linspace(500, 1000, 50)
    d = da.from_array(x, chunks=4)
    expected = np.percentile(x, [5, 95], method="lower")
    np.testing.assert_array_equal(da.percentile(d, [5, 95], "lower").compute(), expected)
    with pytest.warns(FutureWarning, match="renamed to `internal_method=`"):
        got = da.percentile(d, [5, 95], method="dask")
    np.testing.assert_array_equal(got.compute(), np.percentile(x, [5, 95]))
    with pytest.raises(ValueError, match="internal_method"):
        da.percentile(d, 50, internal_method="exact")


def test_dask_percentile_api_empty_blocks_empty_q_and_bools():
    x = da.ones(10, chunks=((5, 0, 5),))
    np.testing.assert_array_equal(da.percentile(x, [10, 50, 90]).compute(), [1.0, 1.0, 1.0])
    assert da.percentile(x, [], internal_method="dask").compute().shape == (0,)
    b = np.array([True, False, True, True])
    expected = np.percentile(b, [0, 50, 100], method="nearest")
    np.testing.assert_array_equal(da.percentile(da.from_array(b, chunks=3), [0, 50, 100]).compute(), expected)


def test_nanquantile_all_nan_slice_is_nan_without_warning():
    a = np.full((4, 6), np.nan)
    a[0] = np.arange(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = da.nanquantile(da.from_array(a, chunks=(3, 4)), 0.75, axis=-1).compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(got, np.nanquantile(a, 0.75, axis=-1))


def test_nanquantile_of_blocks_without_nan_takes_numpys_quantile(monkeypatch):
    """NumPy's nanquantile is several times slower than quantile: a block with no NaN gets
    quantile (same values); a block with NaN still gets nanquantile."""
    from dask_tra.array import quantiles

    called = []
    slow = quantiles._NUMPY["nanquantile"]
    monkeypatch.setitem(quantiles._NUMPY, "nanquantile", lambda *a, **k: called.append(1) or slow(*a, **k))
    rng = np.random.default_rng(11)
    a = rng.standard_normal((30, 7)).astype("f4")
    got = da.nanquantile(da.from_array(a, chunks=(30, (3, 4))), [0.1, 0.9], axis=0).compute()
    want = np.nanquantile(a, [0.1, 0.9], axis=0)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and called == []
    a[4, 2] = np.nan
    got = da.nanquantile(da.from_array(a, chunks=(30, (3, 4))), 0.5, axis=0).compute()
    np.testing.assert_array_equal(got, np.nanquantile(a, 0.5, axis=0))
    assert called  # the block holding a NaN


@pytest.mark.parametrize(
    "fn, q",
    [("nanquantile", 0.9), ("nanquantile", [0.1, 0.5, 0.9]), ("nanpercentile", 37.5), ("quantile", 0.9),
     ("quantile", np.float32(0.3)), ("percentile", [10, 90])],
)
def test_last_axis_quantiles_sorted_as_dask_equal_numpy(fn, q):
    """Over the last axis (xarray's quantile), each row is sorted once (dask's own kernel): NumPy's
    values and dtype, NaNs skipped by the nan-forms and kept by the others, ragged chunks."""
    a = np.random.default_rng(3).standard_normal((6, 7, 40)).astype("f4")
    a[0, 0, :5] = np.nan
    a[1, 1, :] = np.nan
    x = da.from_array(a, chunks=((4, 2), (5, 2), 40))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, fn)(a, q, axis=-1)
        got = getattr(da, fn)(x, q, axis=-1).compute()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)

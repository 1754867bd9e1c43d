"""dask_tra.array reductions against NumPy: axis/keepdims, dtypes, ragged chunks, NaNs, empty axes."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dask_tra
import dask_tra.array as da
from dask_tra.array.testing import assert_eq, strategies

shapes, chunking, arrays = strategies()
SETTINGS = settings(max_examples=50, deadline=None)


@st.composite
def axis_for(draw, ndim):
    """None, an int (maybe negative) or a tuple of distinct axes."""
    if ndim == 0 or draw(st.booleans()) and draw(st.booleans()):
        return None
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    axes = [a - ndim if draw(st.booleans()) else a for a in axes]
    return axes[0] if len(axes) == 1 and draw(st.booleans()) else tuple(axes)


def _same(f_da, f_np, x, a, rtol):
    """Equal results, or the same exception type from both."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = f_np(a)
        except (ValueError, TypeError) as e:
            with pytest.raises(type(e)):
                f_da(x)
            return
        assert_eq(f_da(x), want, rtol=rtol, atol=1e-6)


@SETTINGS
@given(st.data(), arrays(max_dims=3, max_side=5),
       st.sampled_from(["sum", "prod", "mean", "min", "max", "any", "all", "var", "std"]),
       st.booleans())
def test_reductions_match_numpy(data, ax, name, keepdims):
    a, x = ax
    axis = data.draw(axis_for(a.ndim))
    if name in ("var", "std") and a.dtype == np.bool_:
        a, x = a.astype(int), x.astype(int)
    kw = {"ddof": data.draw(st.integers(0, 1))} if name in ("var", "std") else {}
    rtol = 1e-4 if a.dtype in (np.float32, np.complex64) else 1e-7
    _same(lambda v: getattr(da, name)(v, axis=axis, keepdims=keepdims, **kw),
          lambda v: getattr(np, name)(v, axis=axis, keepdims=keepdims, **kw), x, a, rtol)
    _same(lambda v: getattr(v, name)(axis=axis, keepdims=keepdims, **kw),   # method form
          lambda v: getattr(v, name)(axis=axis, keepdims=keepdims, **kw), x, a, rtol)


@SETTINGS
@given(st.data(), arrays(dtypes=["float64", "int32", "bool", "float32"], min_dims=1, max_dims=3, max_side=5),
       st.sampled_from(["argmin", "argmax"]), st.booleans(), st.booleans())
def test_argmin_argmax_global_indices(data, ax, name, keepdims, with_nan):
    a, x = ax
    if with_nan and a.dtype.kind == "f" and a.size:
        a = a.copy()
        a.flat[data.draw(st.integers(0, a.size - 1))] = np.nan
        x = da.from_array(a, chunks=x.chunks)
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))
    _same(lambda v: getattr(da, name)(v, axis=axis, keepdims=keepdims),
          lambda v: getattr(np, name)(v, axis=axis, keepdims=keepdims), x, a, 0)


@SETTINGS
@given(st.data(), arrays(max_dims=3, max_side=6, dtype="float64"), st.sampled_from(["cumsum", "cumprod"]))
def test_cumulative(data, ax, name):
    a, x = ax
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1))) if a.ndim else None
    _same(lambda v: getattr(da, name)(v, axis=axis), lambda v: getattr(np, name)(v, axis=axis), x, a, 1e-7)


def test_integer_and_bool_dtypes_follow_numpy():
    rng = np.random.default_rng(0)
    i = rng.integers(-5, 5, (7, 5)).astype(np.int32)
    x = da.from_array(i, chunks=(3, 2))
    for f in ("sum", "prod", "mean", "var", "cumsum"):
        assert_eq(getattr(da, f)(x, axis=0), getattr(np, f)(i, axis=0))
    assert_eq(da.sum(x, dtype=np.float32), i.sum(dtype=np.float32))
    b = x > 0
    assert_eq(b.sum(axis=1), (i > 0).sum(axis=1))
    assert_eq(b.mean(), (i > 0).mean())


def test_nan_reductions_and_count_nonzero():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 5))
    a[a > 1] = np.nan
    x = da.from_array(a, chunks=(4, 2))
    for f in ("nansum", "nanprod", "nanmax", "nanmin", "nanmean"):
        assert_eq(getattr(da, f)(x, axis=0), getattr(np, f)(a, axis=0))
    assert_eq(da.count_nonzero(x > 0, axis=1), np.count_nonzero(a > 0, axis=1))


def test_reductions_through_numpy_protocols_and_sites():
    a = np.random.default_rng(2).standard_normal((8, 6))
    x = da.from_array(a, chunks=(3, 4))
    with dask_tra.config.set(sites=3):
        out = np.mean(x, axis=0)
        assert isinstance(out, dask_tra.RelArray)
        assert_eq(out, a.mean(axis=0))
        assert_eq(np.add.reduce(x, axis=1), a.sum(axis=1))
        assert_eq(np.maximum.reduce(x), a.max(axis=0))
        assert_eq(np.add.accumulate(x), np.add.accumulate(a))
        assert_eq(np.std(x, ddof=1), np.std(a, ddof=1))


def test_reductions_lower_to_transform_and_aggregate():
    x = da.from_array(np.ones((6, 4)), chunks=(2, 2))
    kinds = [type(n).__name__ for n in x.sum(axis=0).expr.walk() if n.children]
    assert kinds == ["Transform", "Aggregate", "Transform"]  # chunk sums, fold, squeeze
    kinds = [type(n).__name__ for n in x.sum(axis=0, keepdims=True).expr.walk() if n.children]
    assert kinds == ["Transform", "Aggregate", "ReKey"]


def test_argmin_argmax_ties_and_nans_take_the_first_occurrence():
    for a in (np.array([3, 1, 5, 1, 1, 7, 7]), np.array([2.0, np.nan, 0.5, np.nan, 0.5, 9.0, 9.0]),
              np.array([[4, 0, 4], [0, 4, 0], [4, 0, 4]])):
        for chunks in (1, 2, 3):
            x = da.from_array(a, chunks=chunks)
            for axis in (None,) + tuple(range(a.ndim)):
                assert_eq(x.argmin(axis=axis), a.argmin(axis=axis))
                assert_eq(x.argmax(axis=axis), a.argmax(axis=axis))

"""Item assignment ``x[key] = v``: dask's semantics (the object is rebound to a new lazy
expression, ``where(mask, v, x)``), checked against NumPy on ragged chunks."""

import numpy as np
import pytest

import dask_tra.array as da

CHUNKS = ((3, 4), (5, 2, 4))  # shape (7, 11)


def _pair(shape=(7, 11), chunks=CHUNKS, dtype=float, seed=0):
    rng = np.random.default_rng(seed)
    a = np.asarray(rng.normal(size=shape) * 10).astype(dtype)
    return a, da.from_array(a.copy(), chunks=chunks)  # from_array does not copy: a is mutated below


def _same(x, a):
    got = x.compute()
    assert got.dtype == a.dtype and got.shape == a.shape
    np.testing.assert_array_equal(got, a)


def _check(key, value, shape=(7, 11), chunks=CHUNKS, dtype=float, lazy_value=False):
    a, x = _pair(shape, chunks, dtype)
    before, name, chunks_before = id(x), x.name, x.chunks
    a[key] = value
    x[key] = da.from_array(np.asarray(value), chunks=2) if lazy_value else value
    assert id(x) == before and x.chunks == chunks_before and x.dtype == a.dtype
    _same(x, a)
    return x, name


# ------------------------------------------------------------------ boolean masks
@pytest.mark.parametrize(
    "value", [0.5, np.float32(-2), np.array(3.0), np.arange(11.0), np.arange(7.0)[:, None], np.full((7, 11), 9.0)]
)
def test_numpy_mask_scalar_and_broadcast_values(value):
    a, x = _pair()
    m = a > 2
    want = np.where(m, value, a)
    x[m] = value
    _same(x, want)


def test_relarray_mask_is_lazy_and_follows_dask():
    a, x = _pair()
    x[x > 0] = 0
    _same(x, np.where(a > 0, 0, a))
    m = da.from_array(a < -3, chunks=((2, 5), (6, 5)))  # other chunks than x
    x[m] = da.from_array(np.arange(11.0), chunks=4)
    _same(x, np.where(a < -3, np.arange(11.0), np.where(a > 0, 0, a)))
    assert x.chunks == CHUNKS


def test_mask_over_leading_axes_3d():
    a, x = _pair((4, 5, 6), ((1, 3), (2, 3), (6,)))
    m = a[:, :, 0] > 0
    a[m] = np.arange(6.0)
    x[m] = np.arange(6.0)
    _same(x, a)
    x[m, ...] = -1
    a[m, ...] = -1
    _same(x, a)


def test_mask_errors_raise_at_call_time_and_leave_x_unchanged():
    a, x = _pair()
    name = x.name
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.ones((7, 10), bool)] = 1
    with pytest.raises(ValueError, match="mask.*not supported"):
        x[a > 0] = np.arange(int((a > 0).sum()) + 100.0)  # NumPy's "one value per true element" form
    with pytest.raises(IndexError, match="together with other indices"):
        x[a > 0, 1] = 1
    assert x.name == name
    _same(x, a)


# ------------------------------------------------------------------ basic indices
KEYS = [
    5,
    -1,
    (2, 3),
    (-7, -11),
    slice(None),
    slice(1, 6),
    slice(None, None, -1),
    (slice(None), slice(9, 0, -3)),
    (slice(6, None, -2), slice(1, 10, 4)),
    (Ellipsis, 2),
    (Ellipsis, slice(3, 4)),
    (1, Ellipsis),
    (None, 3),
    (slice(2, 3), None, slice(None, None, -2)),
    (np.int64(4), np.array(-2)),
    (),
]


@pytest.mark.parametrize("key", KEYS)
def test_basic_keys_scalar_value(key):
    _check(key, 7.25)


@pytest.mark.parametrize("key", KEYS)
def test_basic_keys_array_value(key):
    sel = np.empty((7, 11))[key].shape
    value = np.arange(float(np.prod(sel))).reshape(sel) - 50
    _check(key, value)
    _check(key, value, lazy_value=True)


@pytest.mark.parametrize(
    "key, value",
    [
        ((slice(None), slice(None, None, -2)), np.arange(6.0)),  # broadcast over rows
        ((slice(1, 6), 4), np.arange(5.0)),
        ((slice(1, 6), slice(2, 9)), np.arange(5.0)[:, None]),  # broadcast over columns
        (slice(2, 5), np.ones((1, 1, 1, 11))),  # NumPy drops leading unit dims
        ((slice(None, None, -1), slice(None, None, -1)), np.arange(77.0).reshape(7, 11)),
    ],
)
def test_basic_keys_broadcast_values(key, value):
    _check(key, value)


@pytest.mark.parametrize(
    "shape, chunks, key",
    [
        ((13,), ((5, 1, 7),), slice(-2, 1, -3)),
        ((13,), ((5, 1, 7),), -13),
        ((13,), ((5, 1, 7),), slice(4, 7)),
        ((4, 5, 6), ((1, 3), (2, 3), (4, 2)), (slice(None), -1, slice(None, None, -2))),
        ((4, 5, 6), ((1, 3), (2, 3), (4, 2)), (Ellipsis, slice(1, 5, 3))),
        ((4, 5, 6), ((1, 3), (2, 3), (4, 2)), (3, slice(4, 0, -1), 2)),
        ((), (), ()),
        ((), (), Ellipsis),
    ],
)
def test_one_d_three_d_and_zero_d(shape, chunks, key):
    sel = np.empty(shape)[key].shape
    _check(key, 3.5, shape, chunks)
    _check(key, np.arange(float(np.prod(sel))).reshape(sel), shape, chunks)


@pytest.mark.parametrize("key", [slice(3, 3), (slice(None), slice(5, 2)), (Ellipsis, slice(0, 0))])
def test_empty_selection_leaves_x_unchanged(key):
    a, x = _pair()
    name = x.name
    x[key] = 1.0
    x[key] = np.ones(np.empty((7, 11))[key].shape)
    assert x.name == name
    _same(x, a)


def test_int_arrays_take_floats_truncated_like_numpy():
    a, x = _pair(dtype=np.int32)
    a[1:5, ::2] = np.linspace(-3.7, 3.7, 6)
    x[1:5, ::2] = np.linspace(-3.7, 3.7, 6)
    _same(x, a)
    a[a > 0] = 2.9
    x[x > 0] = 2.9
    _same(x, a)
    a[-1] = -1.5
    x[-1] = da.from_array(np.array(-1.5))
    _same(x, a)
    b, y = _pair((5,), ((2, 3),), dtype=np.int8)
    b[0:2] = np.array([300, -129])  # arrays: unsafe casts wrap, as in NumPy
    y[0:2] = np.array([300, -129])
    _same(y, b)
    with pytest.raises(OverflowError):
        y[1] = 300  # an integer out of range: NumPy's error
    with pytest.raises(ValueError):
        y[1] = np.nan
    _same(y, b)


def test_identity_kept_and_earlier_derived_arrays_keep_old_values():
    a, x = _pair()
    derived, same, copied = x * 2, x, x.copy()
    first_name = x.name
    x[2:4] = 0
    x[0, 0] = -100
    assert same is x and x.name != first_name
    assert x._plans == {} and x._last_explain is None
    a0 = a.copy()
    a[2:4] = 0
    a[0, 0] = -100
    _same(x, a)
    _same(same, a)
    _same(derived, a0 * 2)
    _same(copied, a0)
    later = x + 1  # derived after: sees the new values
    _same(later, a + 1)
    assert x.compute_chunk_sizes() is x


def test_assignment_after_compute_replans():
    a, x = _pair()
    np.testing.assert_allclose(x.sum(axis=0).compute(), a.sum(axis=0))
    _same(x, a)
    x[:, 3] = 1
    a[:, 3] = 1
    _same(x, a)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "key, value, exc",
    [
        (7, 1.0, IndexError),
        ((0, -12), 1.0, IndexError),
        ((0, 0, 0), 1.0, IndexError),
        ((Ellipsis, Ellipsis), 1.0, IndexError),
        (1.5, 1.0, IndexError),
        (slice(0, 3), np.ones(11 + 1), ValueError),
        ((slice(0, 3), 2), np.ones(4), ValueError),
        (slice(None), np.ones((2, 7, 11)), ValueError),
        ((np.array([0, 2]), [1, 2]), 1.0, NotImplementedError),  # two array indices (dask)
        ([0, 7], 1.0, IndexError),
        ((slice(None), np.array([1, 2])), np.ones(3), ValueError),
        ("da_int", np.ones(3), ValueError),
    ],
)
def test_errors_at_call_time_leave_x_unchanged(key, value, exc):
    a, x = _pair()
    name, expr = x.name, x.expr
    if isinstance(key, str):
        key = da.from_array(np.array([0, 2]), chunks=1)
    with pytest.raises(exc):
        x[key] = value
    if exc is not NotImplementedError:
        with pytest.raises(exc):  # NumPy's error class
            a.copy()[key] = value
    assert x.name == name and x.expr is expr and x.chunks == CHUNKS
    _same(x, a)

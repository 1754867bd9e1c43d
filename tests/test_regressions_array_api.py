"""Regressions from the Array API suite (issue 30): the namespace's complex ``expm1`` special
cases, several integer array indices in one ``[]`` (NumPy's advanced indexing), scalar and 0-d
boolean indices in ``x[...]`` and ``x[...] = v``, and NumPy's placement of the advanced dims
when ``None``, ``...`` or a slice separates the advanced indices. Values are checked against
NumPy, or the standard's special cases, on ragged chunks."""

import numpy as np
import pytest

import dask_tra.array as da
from dask_tra import RelArray
from dask_tra.array import namespace as xp

INF, NAN = np.inf, np.nan


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- expm1
# (x, the standard's expm1(x)): 2024.12, "Special cases" for complex floating-point operands
# (a sign left unspecified there is NumPy's exp(x) - 1)
EXPM1_CASES = [
    (complex(0.0, 0.0), complex(0.0, 0.0)),
    (complex(-0.0, 0.0), complex(0.0, 0.0)),  # NumPy's expm1: -0 + 0j
    (complex(1.0, INF), complex(NAN, NAN)),
    (complex(1.0, NAN), complex(NAN, NAN)),
    (complex(INF, 0.0), complex(INF, 0.0)),
    (complex(-INF, 0.0), complex(-1.0, 0.0)),
    (complex(-INF, 2.0), complex(-1.0, 0.0 * np.sin(2.0))),
    (complex(INF, 2.0), complex(INF * np.cos(2.0), INF * np.sin(2.0))),
    (complex(-INF, INF), complex(-1.0, 0.0)),
    (complex(INF, INF), complex(INF, NAN)),
    (complex(-INF, NAN), complex(-1.0, 0.0)),
    (complex(INF, NAN), complex(INF, NAN)),
    (complex(NAN, 0.0), complex(NAN, 0.0)),
    (complex(NAN, 1.0), complex(NAN, NAN)),
    (complex(NAN, NAN), complex(NAN, NAN)),
]


def _complex_equal(got, want):
    """Equal part by part, NaN equal to NaN, the sign of an infinity or a zero kept."""
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (got, want)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_expm1_complex_special_cases(dtype):
    z = np.array([c for c, _ in EXPM1_CASES] + [1e-12 + 1e-12j, 0.5 - 2j], dtype=dtype)
    out = xp.expm1(da.from_array(z, chunks=((3, 1, 5, 2, 4, 2),)))
    assert out.dtype == dtype
    got = out.compute()
    assert got.dtype == dtype
    for g, (_, w) in zip(got, EXPM1_CASES):
        _complex_equal(g, dtype(w))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got[-2:], np.expm1(z[-2:]), rtol=1e-6)  # finite: the library's expm1
    assert got[-2] != 0  # not exp(z) - 1, which loses a small z


def test_expm1_complex_0d():
    for c, w in EXPM1_CASES:
        _complex_equal(complex(xp.expm1(xp.asarray(c, dtype=xp.complex128))), w)


def test_expm1_real_unchanged_and_dask_tra_array_keeps_numpy():
    r = np.array([0.0, -0.0, 1e-12, -3.0, INF, -INF, NAN, 700.0, 710.0])
    with np.errstate(all="ignore"):
        want = np.expm1(r)
    got = xp.expm1(da.from_array(r, chunks=((2, 3, 1, 3),))).compute()
    _same(got, want)
    assert np.signbit(got[1])  # expm1(-0) is -0
    with np.errstate(all="ignore"):
        _same(xp.expm1(da.from_array(r.astype(np.float32), chunks=4)).compute(), np.expm1(r.astype(np.float32)))
    _same(xp.expm1(da.arange(5, chunks=2)).compute(), np.expm1(np.arange(5)))
    # dask_tra.array.expm1 is NumPy's ufunc, special cases and all
    z = np.array([complex(INF, INF), complex(-INF, 0.0)])
    with np.errstate(all="ignore"):
        _same(da.expm1(da.from_array(z, chunks=1)).compute(), np.expm1(z))


def test_expm1_complex_torch_chunks():
    torch = pytest.importorskip("torch")
    z = np.array([c for c, _ in EXPM1_CASES] + [0.5 - 2j])
    out = xp.expm1(da.to_backend(da.from_array(z, chunks=((4, 7, 5),)), "torch")).compute()
    assert isinstance(out, torch.Tensor) and out.dtype == torch.complex128
    got = out.numpy()
    for g, (_, w) in zip(got, EXPM1_CASES):
        _complex_equal(g, w)
    np.testing.assert_allclose(got[-1], np.expm1(z[-1]))
    r = np.array([0.0, 1e-12, INF, -INF, NAN])
    _same(xp.expm1(da.to_backend(da.from_array(r, chunks=2), "torch")).compute().numpy(), np.expm1(r))


def test_floor_divide_torch_chunks():
    """The namespace's floor_divide (the standard's infinities) also on torch chunks, which
    have no NumPy dtype."""
    pytest.importorskip("torch")
    a = np.array([INF, -INF, 1.0, -1.0, 7.0])
    b = np.array([2.0, 2.0, -INF, INF, 2.0])
    got = xp.floor_divide(da.to_backend(da.from_array(a, chunks=2), "torch"), da.from_array(b, chunks=3))
    np.testing.assert_array_equal(got.compute().numpy(), [INF, -INF, -0.0, -0.0, 3.0])
    assert np.signbit(got.compute().numpy()[2:4]).all()


# (x, the standard's tanh(x)) for an infinite real part: +-1 + 0j, the zero's sign that of the
# imaginary part (NumPy and torch, as C99, give 1 + 0 sin(2b) j: -0 for b = 2)
TANH_CASES = [
    (complex(INF, 2.0), complex(1.0, 0.0)),
    (complex(INF, 1.0), complex(1.0, 0.0)),
    (complex(INF, 0.0), complex(1.0, 0.0)),
    (complex(INF, -2.0), complex(1.0, -0.0)),
    (complex(-INF, 2.0), complex(-1.0, 0.0)),
    (complex(-INF, -2.0), complex(-1.0, -0.0)),
    (complex(INF, INF), complex(1.0, 0.0)),  # sign unspecified: NumPy's
    (complex(INF, NAN), complex(1.0, 0.0)),  # sign unspecified: NumPy's
]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_tanh_complex_infinite_real_part(backend):
    if backend == "torch":
        pytest.importorskip("torch")
    z = np.array([c for c, _ in TANH_CASES] + [0.3 + 0.2j, -1.5 - 4j])
    x = da.to_backend(da.from_array(z, chunks=((3, 2, 5),)), backend)
    got = np.asarray(xp.tanh(x).compute())
    for g, (_, w) in zip(got, TANH_CASES):
        _complex_equal(g, w)
    np.testing.assert_allclose(got[-2:], np.tanh(z[-2:]))
    r = np.array([0.0, -0.0, INF, -INF, NAN, 0.5])
    got = np.asarray(xp.tanh(da.to_backend(da.from_array(r, chunks=4), backend)).compute())
    np.testing.assert_allclose(got, np.tanh(r), rtol=1e-15)  # real: the library's tanh
    assert np.signbit(got[1]) and not np.signbit(got[0])
    with np.errstate(all="ignore"):
        _same(da.tanh(da.from_array(z, chunks=4)).compute(), np.tanh(z))  # dask_tra.array's: NumPy's


# ---------------------------------------------------------------- several array indices
A = np.arange(5 * 6 * 7 * 4).reshape(5, 6, 7, 4)
A_CHUNKS = ((2, 3), (1, 4, 1), (3, 3, 1), (4,))
I = np.array([[0, 4], [1, -1]])
J = np.array([5, 0])
J3 = np.array([3, 0])
M = np.zeros((6, 7), bool)
M[1, 2] = M[4, 0] = M[5, 6] = True

SEVERAL = [
    (I, J),
    (I, J, 0),
    (0, I, J),
    (I, slice(1, 3), J),  # separated by a slice: the broadcast dims first
    (I, 0, J),
    (slice(None), I, J),
    (None, I, J),
    (I, None, J),
    (I, J, None, slice(2, None)),
    (Ellipsis, I, J3),
    (I, Ellipsis, J3),
    (slice(None), None, I, slice(1, 2), J3, None),
    (1, M),  # a 2-d mask: its true positions, with the integer
    (np.array([0, 2, 4]), M),
    (I, J, np.array([0, 3]), np.array([[1], [2]])),
    (np.zeros(0, int), np.zeros(0, int)),
    (-1, np.array([2]), slice(None, None, -1), np.array([3, 0])),
    (True, [0, 1]),
    (np.array([0, 1]), True, 1),
    (False, 0, [1]),
]


@pytest.mark.parametrize("key", SEVERAL, ids=range(len(SEVERAL)))
def test_several_array_indices_as_numpy(key):
    x = da.from_array(A, chunks=A_CHUNKS)
    got = x[key]
    want = A[key]
    assert got.shape == want.shape
    _same(got.compute(), want)


def test_several_array_indices_lazy_and_namespace():
    x = da.from_array(A, chunks=A_CHUNKS)
    k = da.from_array(np.array([1, 2]), chunks=1)
    _same(x[I, J, k].compute(), A[I, J, np.array([1, 2])])
    # the Array API suite's form: int32 index arrays of the namespace, with integers
    xa = xp.asarray(A[:, :, 0, 0].astype(np.int32))
    i, j = xp.asarray(np.array([[4], [0]], np.int32)), xp.asarray(np.array([1, 5, 2], np.int32))
    _same(xa[i, j].compute(), A[:, :, 0, 0].astype(np.int32)[np.array([[4], [0]]), np.array([1, 5, 2])])
    _same(xa[-2, j].compute(), A[-2, np.array([1, 5, 2]), 0, 0].astype(np.int32))


@pytest.mark.parametrize(
    "key, error",
    [
        ((np.array([1, 2]), np.array([1, 2, 3])), IndexError),
        ((I, np.array([6, 0])), IndexError),
        ((np.ones(4, bool), J), IndexError),
        ((False, [0, 1]), IndexError),
    ],
)
def test_several_array_indices_errors(key, error):
    with pytest.raises(error):
        A[key]
    with pytest.raises(error):
        da.from_array(A, chunks=A_CHUNKS)[key]


def test_several_array_indices_random_keys():
    """Random mixes of integer arrays, integers, slices, masks, ``None``, ``...`` and scalar
    booleans on ragged chunks: NumPy's shape and values, or an error where NumPy raises."""
    rng = np.random.default_rng(7)
    for _ in range(150):
        shape = tuple(int(s) for s in rng.integers(1, 6, rng.integers(1, 4)))
        a = rng.integers(0, 100, shape)
        chunks = tuple(tuple(int(c) for c in np.diff(np.unique(np.r_[0, rng.integers(1, s + 1, 2), s]))) for s in shape)
        key = []
        for s in shape:
            r = rng.random()
            if r < 0.45:
                key.append(rng.integers(-s, s, size=tuple(rng.integers(1, 3, rng.integers(1, 3)))))
            elif r < 0.65:
                key.append(int(rng.integers(-s, s)))
            elif r < 0.85:
                key.append(slice(int(rng.integers(0, s)), None, int(rng.choice([1, 2, -1]))))
            else:
                key.append(rng.random(s) < 0.5)
            if rng.random() < 0.15:
                key.append(None)
            if rng.random() < 0.1:
                key.append(bool(rng.random() < 0.7))
        if rng.random() < 0.2:
            key.insert(int(rng.integers(0, len(key) + 1)), Ellipsis)
        key = tuple(key)
        try:
            want = a[key]
        except IndexError:
            with pytest.raises(IndexError):
                da.from_array(a, chunks=chunks)[key]
            continue
        got = da.from_array(a, chunks=chunks)[key]
        assert got.shape == want.shape, key
        _same(got.compute(), want)


# ---------------------------------------------------------------- one array index, NumPy's placement
@pytest.mark.parametrize(
    "key",
    [
        (0, None, np.array([0, 1]), 2),  # None between the integer and the array: dims first
        (-1, None, -1, np.array([[-1], [0]])),
        (slice(1, None, -1), -2, Ellipsis, np.array([3])),  # an empty ... separates them too
        (0, Ellipsis, np.array([1, 0])),
        (0, np.array([1, 0]), Ellipsis),  # adjacent: in place
    ],
)
def test_one_array_index_placement_as_numpy(key):
    a = np.arange(4 * 5 * 4).reshape(4, 5, 4)
    got = da.from_array(a, chunks=((3, 1), (2, 3), (1, 3)))[key]
    assert got.shape == a[key].shape
    _same(got.compute(), a[key])


# ---------------------------------------------------------------- scalar and 0-d boolean indices
@pytest.mark.parametrize(
    "key", [True, False, np.bool_(True), np.array(False), (True, 0), (0, True), (Ellipsis, False), (None, True)]
)
def test_getitem_scalar_boolean_as_numpy(key):
    a = np.arange(24.0).reshape(2, 3, 4)
    got = da.from_array(a, chunks=((1, 1), (2, 1), (3, 1)))[key]
    assert got.shape == a[key].shape
    _same(got.compute(), a[key])


MASK0 = [True, False, np.bool_(True), np.array(False), "lazy-true", "lazy-false", (True, Ellipsis), (0, True)]


def _mask0(k):
    return da.asarray(k == "lazy-true") if isinstance(k, str) else k


@pytest.mark.parametrize(
    "value", [7.5, np.arange(5.0), np.arange(5.0)[None], "lazy"], ids=["scalar", "row", "1row", "lazy"]
)
@pytest.mark.parametrize("key", MASK0, ids=[repr(k) for k in MASK0])
def test_setitem_0d_boolean_index_as_numpy(key, value):
    a = np.arange(10.0).reshape(2, 5)
    x = da.from_array(a.copy(), chunks=((1, 1), (3, 2)))
    before = x[1]
    v = da.from_array(np.arange(5.0) - 3, chunks=2) if isinstance(value, str) else value
    want = a.copy()
    want[key if not isinstance(key, str) else key == "lazy-true"] = np.asarray(v)
    x[_mask0(key)] = v
    assert x.chunks == ((1, 1), (3, 2))
    _same(x.compute(), want)
    _same(before.compute(), a[1])  # arrays taken before keep the old values


def test_setitem_0d_array_with_0d_mask():
    """The Array API suite's ``test_setitem_masking`` with a 0-d ``x`` and a 0-d mask."""
    for mask, dtype in [(True, xp.int8), (False, xp.float32), (True, xp.bool), (False, xp.complex64)]:
        x = xp.asarray(np.ones((), dtype))
        res = xp.asarray(x, copy=True)
        res[xp.asarray(mask)] = xp.asarray(np.zeros((), dtype))
        assert res.dtype == x.dtype and res.shape == ()
        _same(res.compute(), np.zeros((), dtype) if mask else np.ones((), dtype))
        _same(x.compute(), np.ones((), dtype))


def test_setitem_0d_boolean_bad_value_raises_as_numpy():
    a = np.arange(10.0).reshape(2, 5)
    for key in (True, False, da.asarray(True)):
        with pytest.raises(ValueError):
            a.copy()[np.asarray(key)] = np.ones(3)
        x = da.from_array(a, chunks=2)
        with pytest.raises(ValueError):
            x[key] = np.ones(3)
        _same(x.compute(), a)


# ---------------------------------------------------------------- floor division with infinities
def test_floordiv_operator_keeps_numpy_and_namespace_function_follows_the_standard():
    """``x // y`` on dask_tra.array's RelArrays is NumPy's floor_divide (NaN for inf // 2, -1.0 for
    1 // -inf: results the standard's notes allow, "to match Python behavior"); the namespace's
    ``floor_divide`` gives the standard's preferred floor(x1 / x2)."""
    a, b, preferred = _FLOORDIV
    x, y = da.from_array(a, chunks=((3, 1, 6),)), da.from_array(b, chunks=((2, 5, 3),))
    with np.errstate(all="ignore"):
        want = np.floor_divide(a, b)
        _same((x // y).compute(), want)
        _same((x // 2.0).compute(), a // 2.0)
        z = x.copy()
        z //= y
        _same(z.compute(), want)
    std = xp.floor_divide(x, y).compute()
    _same(std, preferred)
    np.testing.assert_array_equal(np.signbit(std[4:8]), [True, True, False, False])


_FLOORDIV = (
    np.array([INF, INF, -INF, -INF, 1.0, -1.0, 1.0, -1.0, 7.0, -7.0]),
    np.array([2.0, -2.0, 2.0, -2.0, -INF, INF, INF, -INF, 2.0, 2.0]),
    np.array([INF, -INF, -INF, INF, -0.0, -0.0, 0.0, 0.0, 3.0, -4.0]),
)


def test_namespace_arrays_floordiv_operator_equals_the_namespace_function():
    """The standard asks ``x1 // x2`` to equal ``floor_divide(x1, x2)``: on the arrays the
    namespace makes, and on every array computed from them alone (with scalars and NumPy
    arrays), ``//``, ``//=`` and the reflected operator give the preferred values."""
    a, b, preferred = _FLOORDIV
    x, y = xp.asarray(a), xp.asarray(b)
    assert isinstance(x, xp.Array) and isinstance(x, RelArray)
    _same((x // y).compute(), preferred)
    _same((a // y).compute(), preferred)  # NumPy on the left defers to the array (NEP 13)
    _same((x[:4] // 2.0).compute(), np.array([INF, INF, -INF, -INF]))
    reflected = (2.0 // xp.asarray([INF, -INF])).compute()  # floor(2 / inf) = 0, floor(2 / -inf) = -0
    _same(reflected, np.array([0.0, -0.0]))
    np.testing.assert_array_equal(np.signbit(reflected), [False, True])
    z = xp.asarray(a, copy=True)
    z //= y
    _same(z.compute(), preferred)
    derived = [
        xp.reshape(x, (2, 5))[0] // y[:5],
        xp.concat([x, x])[:10] // y,
        (x + 0.0).rechunk(3) // y,
        xp.where(x == x, x, 0.0) // y,
        xp.zeros(10) + x // y,
        xp.unique_values(x)[-1:] // xp.asarray([2.0]),
    ]
    for got, want in zip(derived, [preferred[:5], preferred, preferred, preferred, preferred, np.array([INF])]):
        assert isinstance(got, xp.Array)
        _same(got.compute(), want)
    assert isinstance(xp.sum(x).persist(), xp.Array)
    m = xp.reshape(xp.arange(9.0), (3, 3)) + 10 * xp.eye(3)
    functions_mixing_in_arrays_of_their_own = [
        xp.broadcast_to(x, (2, 10)),
        xp.broadcast_arrays(x, xp.asarray(1.0))[1],
        xp.meshgrid(x, y)[0],
        xp.linalg.inv(m),
        xp.tril(m),
        xp.nonzero(x)[0],
        xp.unique_counts(x)[1],
    ]
    for r in functions_mixing_in_arrays_of_their_own:
        assert isinstance(r, xp.Array)
    for made in (xp.zeros(3), xp.arange(3), xp.full(2, INF), xp.eye(2), xp.linspace(0, 1, 3), xp.ones_like(x)):
        assert isinstance(made, xp.Array)
    assert isinstance(xp.fft.fftfreq(4), xp.Array)


def test_the_repr_names_the_arrays_class():
    """A namespace-made array says it is the namespace's Array (its ``//`` differs from a
    RelArray's); a mixed result is a RelArray and says so."""
    assert repr(xp.zeros((2, 3))).startswith("dask_tra.array.namespace.Array<zeros-")
    assert repr(da.zeros((2, 3))).startswith("dask_tra.RelArray<zeros-")
    assert repr(xp.ones(2) + da.ones(2)).startswith("dask_tra.RelArray<add-")


def test_a_relarray_among_the_operands_keeps_numpy_floordiv():
    """A dask_tra.array RelArray passed through the namespace (as xarray and array-API code do)
    keeps NumPy's ``//``, and so does what is computed from it with namespace arrays (xarray's
    ``fillna`` mixes a namespace-made scalar in): only what the namespace makes from other data,
    and computes from that alone, is an ``Array``."""
    xr = pytest.importorskip("xarray")
    a, b, _ = _FLOORDIV
    x, y = da.from_array(a, chunks=3), xp.asarray(b)
    mixed = (
        xp.asarray(x),
        xp.asarray(x, copy=True),
        xp.astype(x, xp.float64),
        xp.sum(x[None], axis=0),
        x + y,
        y * x,
        xp.where(x == x, x, xp.asarray(0.0)),
        xp.concat([y, x])[10:],
        xp.broadcast_arrays(y, x[:1])[1],
        xp.meshgrid(y, x)[0],
        xp.linalg.inv(xp.asarray(da.eye(3) + 1)),
    )
    for r in mixed:
        assert type(r) is RelArray
    with np.errstate(all="ignore"):
        want = np.floor_divide(a, b)
        _same((xp.asarray(x) // da.from_array(b, chunks=4)).compute(), want)
        _same((x // y).compute(), want)
        _same((y.__rfloordiv__(x)).compute(), want)  # the reflected form Python tries first (a subclass)
        filled = xr.DataArray(x, dims="i").fillna(0.0)
        assert type(filled.data) is RelArray
        _same((filled // 2.0).values, np.floor_divide(a, 2.0))


def test_namespace_meshgrid_and_broadcast_arrays_return_lists():
    """The 2024.12 standard's lists (dask_tra.array's, as dask.array's, are tuples)."""
    a, b = xp.arange(3), xp.asarray([1.0, 2.0])
    g = xp.meshgrid(a, b)
    assert type(g) is list and len(g) == 2
    _same(g[1].compute(), np.meshgrid(np.arange(3), [1.0, 2.0])[1])
    out = xp.broadcast_arrays(a, xp.asarray(5))
    assert type(out) is list
    _same(out[1].compute(), np.full(3, 5))


@pytest.mark.parametrize(
    "shape, mask_shape",
    [((3, 4), (3, 0)), ((3, 4), (0, 4)), ((3, 4), (0,)), ((0, 1), (0, 0)), ((0,), ()), ((0, 3), ()), ((3, 4), (2,))],
)
@pytest.mark.parametrize("fill", [True, False])
def test_getitem_empty_and_0d_masks_as_numpy(shape, mask_shape, fill):
    """A mask dim of size 0 matches any size and selects nothing; a 0-d mask on an empty array
    is a new axis (NumPy's; the suite's test_getitem_masking draws both)."""
    a = np.arange(float(np.prod(shape))).reshape(shape)
    m = np.full(mask_shape, fill)
    x = da.from_array(a, chunks=2)
    try:
        want = a[m]
    except IndexError:
        with pytest.raises(IndexError, match="did not match"):
            x[m]
        return
    got = x[m]
    assert got.shape == want.shape
    _same(got.compute(), want)
    _same(x[da.from_array(m)].compute(), want)

"""dask_tra.array elementwise operations against NumPy: broadcasting, scalars, ufuncs, dtypes."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dask_tra
import dask_tra.array as da
from dask_tra.array.testing import assert_eq, random_data, strategies

shapes, chunking, arrays = strategies()
SETTINGS = settings(max_examples=50, deadline=None)
NUMERIC = ("float64", "float32", "int64", "int32", "complex128")


@st.composite
def broadcastable(draw, n_operands=2, dtypes=NUMERIC):
    """Operands whose shapes broadcast: leading dims dropped, some dims set to 1."""
    out = draw(shapes(min_dims=0, max_dims=3, max_side=5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ops = []
    for _ in range(n_operands):
        nd = draw(st.integers(0, len(out)))
        shape = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else n for n in out[len(out) - nd :])
        a = random_data(rng, shape, draw(st.sampled_from(dtypes)))
        ops.append((a, da.from_array(a, chunks=draw(chunking(shape)))))
    return ops


BINARY = [
    np.add,
    np.subtract,
    np.multiply,
    np.true_divide,
    np.maximum,
    np.minimum,
    np.equal,
    np.less,
    np.greater_equal,
    np.not_equal,
    np.hypot,
    np.arctan2,
]


@SETTINGS
@given(broadcastable(dtypes=("float64", "float32", "int64", "int32")), st.sampled_from(BINARY))
def test_binary_ufuncs_broadcast(ops, f):
    (a, x), (b, y) = ops
    with np.errstate(all="ignore"):
        want = f(a, b)
        assert_eq(f(x, y), want, rtol=1e-5)  # through __array_ufunc__
        assert_eq(getattr(da, f.__name__)(x, y), want, rtol=1e-5)


@SETTINGS
@given(
    broadcastable(dtypes=("int64", "int32", "bool")),
    st.sampled_from([np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.logical_and, np.logical_xor]),
)
def test_integer_and_logical_ufuncs(ops, f):
    (a, x), (b, y) = ops
    if a.dtype == np.bool_ and b.dtype != np.bool_ and f.__name__.startswith("bitwise"):
        a = a.astype(b.dtype)
        x = x.astype(b.dtype)
    assert_eq(f(x, y), f(a, b))


@SETTINGS
@given(broadcastable(n_operands=3, dtypes=("float64", "int32", "bool")))
def test_where_and_clip_with_three_arrays(ops):
    (c, cx), (a, x), (b, y) = ops
    assert_eq(da.where(cx.astype(bool), x, y), np.where(c.astype(bool), a, b))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    with np.errstate(all="ignore"):
        assert_eq(da.clip(cx, np.minimum(x, y), np.maximum(x, y)), np.clip(c, lo, hi))


@SETTINGS
@given(
    arrays(dtype="float64", min_dims=1),
    st.sampled_from([np.exp, np.sin, np.tanh, np.negative, np.floor, np.isnan, np.square, np.abs, np.sign, np.expm1]),
)
def test_unary_ufuncs_return_relarrays(ax, f):
    a, x = ax
    out = f(x)
    assert isinstance(out, dask_tra.RelArray)
    assert_eq(out, f(a))


@SETTINGS
@given(arrays(), st.sampled_from([2, 2.5, -1, np.float32(1.5), np.int8(3), True]))
def test_scalar_operands_follow_numpy_promotion(ax, s):
    a, x = ax
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in (np.add, np.multiply, np.maximum, np.less):
            try:
                want = f(a, s)
            except TypeError:
                with pytest.raises(TypeError):
                    f(x, s)
                continue
            assert_eq(f(x, s), want, rtol=1e-5)
            assert_eq(f(s, x), f(s, a), rtol=1e-5)


@SETTINGS
@given(arrays(min_dims=1), st.sampled_from(["float32", "int16", "bool", "complex64", "uint8"]))
def test_astype(ax, dtype):
    a, x = ax
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_eq(x.astype(dtype), a.astype(dtype))


def test_operators_and_reflected_operators():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((4,))
    x, y = da.from_array(a, chunks=(2, 3)), da.from_array(b, chunks=3)
    for got, want in [
        (x + y, a + b),
        (x - 1, a - 1),
        (1 - x, 1 - a),
        (2 * x, 2 * a),
        (x / y, a / b),
        (1 / x, 1 / a),
        (x**2, a**2),
        (2**x, 2**a),
        (x // 0.5, a // 0.5),
        (x % 0.7, a % 0.7),
        (-x, -a),
        (+x, +a),
        (abs(x), abs(a)),
        (x > y, a > b),
        (x == y, a == b),
        (x != 0.1, a != 0.1),
        (~(x > 0), ~(a > 0)),
        ((x > 0) & (y < 0), (a > 0) & (b < 0)),
        ((x > 0) | (y < 0), (a > 0) | (b < 0)),
        (b + x, b + a),
        (b * x, b * a),
        (x @ y, a @ b),
        (b @ x.T, b @ a.T),
    ]:
        assert isinstance(got, dask_tra.RelArray)
        assert_eq(got, want)


def test_two_output_ufuncs_and_self_join():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 5)) * 5
    x = da.from_array(a, chunks=(4, 2))
    q, r = np.divmod(x, 3)
    assert_eq(q, np.divmod(a, 3)[0])
    assert_eq(r, np.divmod(a, 3)[1])
    frac, whole = np.modf(x)
    assert_eq(frac, np.modf(a)[0])
    assert_eq(x * x - x, a * a - a)  # the same relation on both sides of a Join


def test_elementwise_across_sites_and_rechunking():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((9, 7)), rng.standard_normal((9, 7))
    x, y = da.from_array(a, chunks=(4, 3)), da.from_array(b, chunks=((2, 7), (5, 2)))
    with dask_tra.config.set(sites=3):
        z = da.maximum(x, y) + np.sin(x) * y
        assert_eq(z, np.maximum(a, b) + np.sin(a) * b)
        # dask.array's chunks: the common refinement of both chunkings (blocks split, never merged)
        import dask.array

        dz = dask.array.maximum(dask.array.from_array(a, chunks=x.chunks), dask.array.from_array(b, chunks=y.chunks))
        assert z.chunks == dz.chunks == ((2, 2, 4, 1), (3, 2, 1, 1))


def test_numpy_array_operands_are_chunked_like_the_relarray():
    a = np.random.default_rng(3).standard_normal((6, 5))
    x = da.from_array(a, chunks=(2, 3))
    z = x + a
    assert z.chunks == x.chunks
    assert not any(type(n).__name__ == "Concat" for n in z.expr.walk())  # no rechunk needed
    assert_eq(z, 2 * a)


def test_misc_elementwise_functions():
    rng = np.random.default_rng(4)
    c = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    x = da.from_array(c, chunks=2)
    assert_eq(x.real, c.real)
    assert_eq(x.imag, c.imag)
    assert_eq(x.conj(), c.conj())
    assert_eq(da.angle(x), np.angle(c))
    r = da.from_array(c.real * 10, chunks=3)
    assert_eq(da.round(r, 1), np.round(c.real * 10, 1))
    assert_eq(da.isclose(r, r + 1e-9), np.isclose(c.real * 10, c.real * 10 + 1e-9))
    n = c.real.copy()
    n[0, 0], n[1, 1] = np.nan, np.inf
    assert_eq(da.nan_to_num(da.from_array(n, chunks=2)), np.nan_to_num(n))


def test_imag_of_real_values_is_zeros_and_each_array_its_own():
    """``x.imag`` of real values is zeros of x's chunks and dtype (as NumPy), made once per
    chunking; assigning into one result leaves the others as they were."""
    a = np.arange(24, dtype="f4").reshape(4, 6)
    x = da.from_array(a, chunks=(3, 4))
    y = x.imag
    assert y.chunks == x.chunks and y.dtype == np.float32
    y[0] = 5
    np.testing.assert_array_equal(x.imag.compute(), np.imag(a))
    assert y.compute()[0].tolist() == [5.0] * 6
    c = np.array([1 + 2j, 3 - 1j])
    np.testing.assert_array_equal(da.from_array(c, chunks=1).imag.compute(), c.imag)

"""``apply_gufunc``/``gufunc``/``as_gufunc`` with dask.array's semantics (dask's
``dask/array/gufunc.py``), checked against NumPy on random data with ragged chunks; and the
n-d FFTs' duplicate-axes and ``fft_wrap``'s ``scipy.fftpack`` rules, as dask has them."""

import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.utils import assert_eq

RNG = np.random.default_rng(7)
A = RNG.standard_normal((7, 9))
B = RNG.standard_normal((9,))
C3 = RNG.standard_normal((5, 6, 4))


def _stats(x):
    return np.mean(x, axis=-1), np.std(x, axis=-1)


def test_output_dtypes_are_inferred_as_dask_does():
    x = da.from_array(A, chunks=((3, 4), (9,)))
    m = da.apply_gufunc(lambda v: np.sum(v, axis=-1), "(i)->()", x)  # no output_dtypes, no meta
    assert m.dtype == np.float64
    assert_eq(m, A.sum(axis=-1))
    i = da.apply_gufunc(lambda v: v.astype("i4"), "()->()", x)
    assert i.dtype == np.int32
    mean, std = da.apply_gufunc(_stats, "(i)->(),()", x)
    assert_eq(mean, A.mean(axis=-1))
    assert_eq(std, A.std(axis=-1))


def test_failed_inference_names_output_dtypes():
    def boom(v):
        raise RuntimeError("Woops")

    with pytest.raises(ValueError, match="output_dtypes") as e:
        da.apply_gufunc(boom, "()->()", da.from_array(A, chunks=3))
    assert "RuntimeError" in str(e.value)


def test_meta_and_output_dtypes_together_raise():
    x = da.from_array(A, chunks=(3, 9))
    with pytest.raises(ValueError, match="Only one of"):
        da.apply_gufunc(np.sum, "(i)->()", x, output_dtypes=float, meta=np.ones(0))
    with pytest.raises(ValueError, match="2 outputs"):
        da.apply_gufunc(_stats, "(i)->(),()", x, output_dtypes=float)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_axis_with_a_core_output(axis):
    x = da.from_array(A, chunks=((2, 5), (4, 5)))
    got = da.apply_gufunc(lambda v: np.cumsum(v, axis=-1), "(i)->(i)", x, axis=axis, allow_rechunk=True)
    assert_eq(got, np.cumsum(A, axis=axis))


def test_output_sizes_override_an_input_core_dimension():
    x = da.from_array(C3, chunks=((2, 3), (1, 5), (3, 1)))
    got = da.apply_gufunc(
        lambda v: np.diff(v, axis=-1), "(i)->(i)", x, axis=1, output_sizes={"i": 5}, allow_rechunk=True
    )
    assert got.shape == (5, 5, 4)
    assert_eq(got, np.diff(C3, axis=1))


@pytest.mark.parametrize("axis", [-2, -1, None])
def test_keepdims(axis):
    x = da.from_array(A, chunks=((3, 4), (2, 7)))
    got = da.apply_gufunc(
        lambda v: np.median(v, axis=-1), "(i)->()", x, axis=axis, keepdims=True, allow_rechunk=True
    )
    assert_eq(got, np.median(A, axis=axis or -1, keepdims=True))


@pytest.mark.parametrize("axes", [[0, 0], [(0,), (0,)]])
def test_axes_as_ints_or_tuples(axes):
    x = da.from_array(A, chunks=((3, 4), (2, 7)))
    y = da.from_array(A[:, :1] + 1, chunks=((5, 2), (1,)))
    got = da.apply_gufunc(
        lambda u, v: np.std(u, axis=-1) * np.mean(v, axis=-1), "(i),(i)->()", x, y, axes=axes, allow_rechunk=True
    )
    assert_eq(got, np.std(A, axis=0) * np.mean(A[:, :1] + 1, axis=0))


def test_axes_of_a_matrix_product():
    a, b = RNG.standard_normal((3, 2, 1)), RNG.standard_normal((3, 7, 5))
    da_, db = da.from_array(a, chunks=2), da.from_array(b, chunks=3)
    got = da.apply_gufunc(
        lambda x, y: np.einsum("...ij,...jk->...ik", x, y),
        "(i,j),(j,k)->(i,k)",
        da_,
        db,
        axes=[(1, 0), (0, -1), (-2, -1)],
        allow_rechunk=True,
    )
    assert_eq(got, np.einsum("jiu,juk->uik", a, b))


def test_no_inputs():
    assert da.apply_gufunc(lambda: 1, "->()", output_dtypes=int).compute() == 1
    x, y = da.apply_gufunc(
        lambda: (1, np.ones((2, 3))), "->(),(i,j)", output_dtypes=(int, float), output_sizes={"i": 2, "j": 3}
    )
    assert x.compute() == 1
    assert y.chunks == ((2,), (3,))
    assert_eq(y, np.ones((2, 3)))


def test_a_core_dimension_repeated_in_one_input():
    m = RNG.standard_normal((6, 3, 3)) + 3 * np.eye(3)
    x = da.from_array(m, chunks=((4, 2), (3,), (3,)))
    inv = da.gufunc(np.linalg.inv, signature="(n, n)->(n, n)", output_dtypes=float, vectorize=True)
    assert_eq(inv(x), np.linalg.inv(m))


def test_loop_dimensions_broadcast_with_numpy_inputs():
    x = da.from_array(np.ones((8, 3, 5), dtype=int), chunks=(3, 3, 5))
    got = da.apply_gufunc(lambda u, v: (u + v).sum(axis=1), "(m,n),(n)->(m)", x, np.ones(5, dtype=int), vectorize=True)
    assert_eq(got, np.full((8, 3), 10, dtype=int))


def test_chunk_rules_without_allow_rechunk():
    a = da.from_array(np.arange(8.0), chunks=((2, 2, 2, 2),))
    b = da.from_array(np.arange(8.0), chunks=((2, 3, 3),))
    with pytest.raises(ValueError, match="different chunksize"):
        da.apply_gufunc(np.add, "(),()->()", a, b, output_dtypes=float)
    assert_eq(da.apply_gufunc(np.add, "(),()->()", a, b, output_dtypes=float, allow_rechunk=True), 2 * np.arange(8.0))
    with pytest.raises(ValueError, match="consists of multiple chunks"):
        da.apply_gufunc(np.sum, "(i)->()", a, output_dtypes=float)
    with pytest.raises(ValueError, match="different lengths"):
        da.apply_gufunc(np.add, "(),()->()", a, da.ones(3, chunks=2), output_dtypes=float, allow_rechunk=True)


def test_allow_rechunk_splits_loop_dimensions_as_dask():
    arr = da.random.random((1, 459, 750), chunks=(1, -1, 250))
    got = da.apply_gufunc(lambda x: x, "(i)->(i)", arr, output_dtypes="f8", allow_rechunk=True)
    assert got.chunks == ((1,), (153, 153, 153), (750,))
    np.testing.assert_array_equal(got.compute(), arr.compute())


@pytest.mark.skipif(not hasattr(np, "matvec"), reason="np.matvec: NumPy >= 2.2")
def test_a_numpy_gufunc_on_lazy_arrays_is_apply_gufunc():
    m, v = RNG.standard_normal((5, 4, 3)), RNG.standard_normal((3,))
    x = da.from_array(m, chunks=((2, 3), (4,), (3,)))
    got = np.matvec(x, v)
    assert isinstance(got, da.Array)
    assert_eq(got, np.matvec(m, v))


def test_as_gufunc_keeps_options():
    x = da.from_array(A, chunks=((3, 4), (9,)))

    @da.as_gufunc("(i)->()", axis=-1, output_dtypes=float, vectorize=True)
    def mean(v):
        return np.mean(v, axis=-1)

    assert_eq(mean(x), A.mean(axis=-1))
    with pytest.raises(TypeError, match="Unsupported keyword"):
        da.as_gufunc("(i)->()", bogus=1)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "rfft2"])
def test_nd_fft_duplicate_axes_raise(name):
    x = da.from_array(C3, chunks=2)
    with pytest.raises(ValueError, match="[Dd]uplicate axes"):
        getattr(da.fft, name)(x, axes=(0, 0))


def test_nd_fft_distinct_axes_still_match_numpy():
    x = da.from_array(C3, chunks=((2, 3), (4, 2), (1, 3)))
    assert_eq(da.fft.rfftn(x, axes=(0, 2)), np.fft.rfftn(C3, axes=(0, 2)))


def test_fft_wrap_warns_for_scipy_fftpack():
    fftpack = pytest.importorskip("scipy.fftpack")
    with pytest.warns(FutureWarning, match="considered legacy"):
        da.fft.fft_wrap(fftpack.fft)
    x = da.from_array(A, chunks=(3, 9))
    assert_eq(da.fft.fft_wrap(fftpack.fft, allow_fftpack=True)(x), np.fft.fft(A))


SIGNATURES = ["(i,j),(j,k)->(i,k)", "()->()", "(i)->(),()", "(i),(i)->()", "(i)->(i,j)", "(),()->()",
              " ( i , j ) -> ( j ) ", "(n_1,m2)->(n_1)", "->()", "(i),(),(k,l,m)->(k),(),()"]
BAD_SIGNATURES = ["", "()", "(i)", "(i)->", "(i)->(i),", "(i)(j)->()", "(i)->(j", "i->j", "((i))->()", "(i)->()->()",
                  "(i?)->()", "(i)=>()", "[i]->()"]


@pytest.mark.parametrize("signature", SIGNATURES + BAD_SIGNATURES)
def test_gufunc_signatures_are_read_as_dask_reads_them(signature):
    from dask.array.gufunc import _parse_gufunc_signature as dasks

    from dask_tra.array.gufuncs import _parse_gufunc_signature as ours

    try:
        expected = dasks(signature)
    except ValueError:
        assert signature in BAD_SIGNATURES
        with pytest.raises(ValueError, match="Not a valid gufunc signature"):
            ours(signature)
    else:
        assert signature in SIGNATURES
        assert ours(signature) == expected

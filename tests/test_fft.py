"""dask_tra.array.fft against numpy.fft on ragged chunks and odd shapes."""
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.testing import assert_eq

RNG = np.random.default_rng(5)
A = RNG.standard_normal((6, 9, 5))
C = RNG.standard_normal((7, 4)) + 1j * RNG.standard_normal((7, 4))


@pytest.mark.parametrize("kind", ["fft", "ifft", "rfft", "ihfft"])
@pytest.mark.parametrize("n, axis, norm", [(None, 1, None), (7, 0, "ortho"), (12, -1, "forward"), (1, 1, None)])
def test_one_axis(kind, n, axis, norm):
    x = da.from_array(A, chunks=((4, 2), (2, 7), (3, 2)))
    got = getattr(da.fft, kind)(x, n=n, axis=axis, norm=norm)
    assert_eq(got, getattr(np.fft, kind)(A, n=n, axis=axis, norm=norm), rtol=1e-10, atol=1e-12)
    assert got.chunks[axis] == (got.shape[axis],)
    other = [d for d in range(3) if d != axis % 3]
    assert all(got.chunks[d] == x.chunks[d] for d in other)  # the other axes keep their blocks


@pytest.mark.parametrize("kind", ["irfft", "hfft"])
@pytest.mark.parametrize("n", [None, 5, 9])
def test_inverse_real(kind, n):
    x = da.from_array(C, chunks=((3, 4), (1, 3)))
    assert_eq(getattr(da.fft, kind)(x, n=n, axis=0), getattr(np.fft, kind)(C, n=n, axis=0), rtol=1e-10, atol=1e-12)


def test_nd_transforms():
    x = da.from_array(A, chunks=(4, 4, 2))
    assert_eq(da.fft.fftn(x), np.fft.fftn(A), rtol=1e-10, atol=1e-10)
    assert_eq(da.fft.ifftn(x, axes=(0, 2)), np.fft.ifftn(A, axes=(0, 2)), rtol=1e-10, atol=1e-12)
    assert_eq(da.fft.rfftn(x, s=(4, 6), axes=(0, 2), norm="ortho"),
              np.fft.rfftn(A, s=(4, 6), axes=(0, 2), norm="ortho"), rtol=1e-10, atol=1e-12)
    r = np.fft.rfftn(A)
    assert_eq(da.fft.irfftn(da.from_array(r, chunks=3), s=A.shape, axes=(0, 1, 2)),
              np.fft.irfftn(r, s=A.shape, axes=(0, 1, 2)), rtol=1e-10,
              atol=1e-12)
    assert_eq(da.fft.fft2(x), np.fft.fft2(A), rtol=1e-10, atol=1e-10)
    assert_eq(da.fft.ifft2(x, s=(3, 4)), np.fft.ifft2(A, s=(3, 4)), rtol=1e-10, atol=1e-12)
    assert_eq(da.fft.rfft2(x), np.fft.rfft2(A), rtol=1e-10, atol=1e-10)
    assert_eq(da.fft.irfft2(da.fft.rfft2(x)), np.fft.irfft2(np.fft.rfft2(A)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32, np.bool_])
def test_dtypes(dtype):
    a = (RNG.standard_normal((5, 6)) * 3).astype(dtype)
    x = da.from_array(a, chunks=(2, 4))
    assert_eq(da.fft.fft(x), np.fft.fft(a), rtol=1e-5, atol=1e-5)
    if np.dtype(dtype).kind != "c":
        assert_eq(da.fft.rfft(x, axis=0), np.fft.rfft(a, axis=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n, d", [(1, 1.0), (10, 0.3), (11, 2.0)])
def test_frequencies_and_shifts(n, d):
    assert_eq(da.fft.fftfreq(n, d, chunks=3), np.fft.fftfreq(n, d))
    assert_eq(da.fft.rfftfreq(n, d, chunks=2), np.fft.rfftfreq(n, d))
    x = da.from_array(A, chunks=(4, 4, 2))
    for axes in (None, 1, (0, 2)):
        assert_eq(da.fft.fftshift(x, axes), np.fft.fftshift(A, axes))
        assert_eq(da.fft.ifftshift(x, axes), np.fft.ifftshift(A, axes))


def test_errors_and_explain():
    x = da.from_array(A, chunks=3)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        da.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="Invalid norm"):
        da.fft.fft(x, norm="bad")
    with pytest.raises(ValueError, match="at least one dimension"):
        da.fft.fft(da.asarray(1.0))
    assert "Transform(fft[1])" in [n.describe() for n in da.fft.fft(x, axis=1).expr.walk()]


def test_array_api_fft_namespace():
    xp = da.ones(1).__array_namespace__()
    x = da.from_array(A, chunks=(4, 4, 2))
    assert_eq(xp.fft.fft(x, axis=0, norm="ortho"), np.fft.fft(A, axis=0, norm="ortho"), rtol=1e-10, atol=1e-12)
    assert_eq(xp.fft.rfftn(x, axes=(1, 2)), np.fft.rfftn(A, axes=(1, 2)), rtol=1e-10, atol=1e-10)
    assert_eq(xp.fft.fftfreq(8, d=0.5, dtype=np.float32), np.fft.fftfreq(8, 0.5).astype(np.float32))
    assert_eq(xp.fft.fftshift(x, axes=(0,)), np.fft.fftshift(A, axes=(0,)))

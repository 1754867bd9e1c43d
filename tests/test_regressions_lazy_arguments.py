"""A lazy array inside a block function's other arguments reaches the function whole, as in dask
(xarray's ``polyfit(skipna=True)`` passes its design matrix that way)."""
import numpy as np
import pytest

import dask_tra.array as da


def _weighted(block, w, scale=1.0):
    assert isinstance(w, np.ndarray)
    return block * w.sum() * scale


def test_map_blocks_keyword_holding_a_lazy_array():
    rng = np.random.default_rng(1)
    x, w = rng.random((9, 5)), rng.random(7)
    got = da.from_array(x, chunks=(4, 2)).map_blocks(_weighted, w=da.from_array(w, chunks=3),
                                                      scale=da.from_array(np.float64(2.0)))
    np.testing.assert_allclose(got.compute(), x * w.sum() * 2.0)


def _fit(y, A):
    return np.linalg.lstsq(A, y, rcond=None)[0]


def test_apply_along_axis_with_a_lazy_extra_argument():
    rng = np.random.default_rng(2)
    A, y = rng.random((11, 3)), rng.random((11, 4, 5))
    got = da.apply_along_axis(_fit, 0, da.from_array(y, chunks=(5, 3, 2)), da.from_array(A, chunks=(4, 2)),
                              dtype=float, shape=(3,))
    np.testing.assert_allclose(got.compute(), np.apply_along_axis(_fit, 0, y, A))


@pytest.mark.parametrize("skipna", [True, False])
def test_xarray_polyfit_matches_dask(skipna):
    xr = pytest.importorskip("xarray")
    rng = np.random.default_rng(0)
    v = rng.random((40, 6, 5))
    if skipna:
        v[3, 1, 2] = v[17, 4, 4] = np.nan
    out = {}
    for manager in ("dask", "dask_tra"):
        d = xr.DataArray(v, dims=("time", "y", "x"), coords={"time": np.arange(40.0)})
        fit = d.chunk({"time": 13, "y": 4}, chunked_array_type=manager).polyfit("time", 2, skipna=skipna)
        out[manager] = fit.compute()
    xr.testing.assert_allclose(out["dask"], out["dask_tra"])
    assert out["dask_tra"].polyfit_coefficients.dtype == out["dask"].polyfit_coefficients.dtype


def _three(a, b, c):
    return a + 2 * b - c


def test_assert_eq_of_a_block_function_of_three_arrays():
    from dask_tra.array.utils import assert_eq

    rng = np.random.default_rng(3)
    a, b, c = rng.random((7, 5)), rng.random((7, 5)), rng.random(5)
    x, y, z = da.from_array(a, chunks=(3, 2)), da.from_array(b, chunks=(4, 5)), da.from_array(c, chunks=3)
    assert assert_eq(da.map_blocks(_three, x, y, z), _three(a, b, c))  # the reference executor checks every chunk

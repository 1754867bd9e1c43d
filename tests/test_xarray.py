"""xarray with dask_tra as its chunk manager: the same code on dask and on dask_tra gives the
same values, and dask_tra's data stays a RelArray."""
import importlib.metadata
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")
pytest.importorskip("h5netcdf")

from xarray.namedarray import parallelcompat

from dask_tra.core import RelArray

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def entry_point(tmp_path_factory):
    """The ``xarray.chunkmanagers`` entry point of pyproject.toml. An install made before it was
    added lacks it: then it is registered from pyproject.toml itself for this module."""
    names = {e.name for e in importlib.metadata.entry_points(group="xarray.chunkmanagers")}
    added = None
    if "dask_tra" not in names:
        spec = tomllib.loads((ROOT / "pyproject.toml").read_text())
        eps = spec["project"]["entry-points"]["xarray.chunkmanagers"]
        added = tmp_path_factory.mktemp("ep")
        info = added / "dask_tra_entry_points-0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dask_tra_entry_points\nVersion: 0.0\n")
        (info / "entry_points.txt").write_text(
            "[xarray.chunkmanagers]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
        sys.path.insert(0, str(added))
    parallelcompat.list_chunkmanagers.cache_clear()
    yield
    if added is not None:
        sys.path.remove(str(added))
    parallelcompat.list_chunkmanagers.cache_clear()


@pytest.fixture(scope="module")
def ds():
    rng = np.random.default_rng(0)
    t = rng.standard_normal((36, 5, 7)) + np.linspace(0, 3, 36)[:, None, None]
    t[4, 2, 1] = t[30, 0, 6] = np.nan
    return xr.Dataset({"t": (("time", "lat", "lon"), t), "w": (("lat",), rng.random(5))},
                      coords={"time": np.arange(36), "lat": np.linspace(-60, 60, 5), "lon": np.arange(7.0)})


MONTH = xr.DataArray(np.arange(36) % 12, dims="time", name="month")  # in memory: a grouper needs labels


CHUNKS = {"time": 7, "lat": 3}


@pytest.fixture(scope="module")
def both(ds):
    return ds.chunk(CHUNKS, chunked_array_type="dask_tra"), ds.chunk(CHUNKS)


def check(result_tra, result_dask):
    """Both results agree, and dask_tra's variables are RelArrays (not dask.arrays)."""
    for name, var in (result_tra.variables if hasattr(result_tra, "variables") else {None: result_tra}).items():
        if name is None or var.chunks:
            assert isinstance(var.data, RelArray), (name, type(var.data))
    xr.testing.assert_allclose(result_tra.compute(), result_dask.compute())


def test_the_manager_is_found_and_dask_keeps_its_arrays(both):
    tra, dsk = both
    assert type(parallelcompat.guess_chunkmanager("dask_tra")).__name__ == "DaskTraManager"
    assert type(parallelcompat.get_chunked_array_type(tra.t.data)).__name__ == "DaskTraManager"
    assert type(parallelcompat.get_chunked_array_type(dsk.t.data)).__name__ == "DaskManager"
    assert isinstance(tra.t.data, RelArray) and tra.t.chunks == dsk.t.chunks


OPS = {
    "mean": lambda d: d.t.mean("time"),
    "std": lambda d: d.t.std("time"),
    "var_ddof": lambda d: d.t.var(["lat", "lon"], ddof=1),
    "sum_skipna_false": lambda d: d.t.sum("lon", skipna=False),
    "cumsum": lambda d: d.t.cumsum("time"),
    "median": lambda d: d.t.median("time"),
    "argmax": lambda d: d.t.fillna(-9).argmax("time"),
    "idxmin": lambda d: d.t.fillna(9).idxmin("lat"),
    "quantile": lambda d: d.t.quantile([0.1, 0.5, 0.9], dim="time"),
    "rolling_mean": lambda d: d.t.rolling(time=3).mean(),
    "rolling_centered": lambda d: d.t.rolling(time=4, center=True, min_periods=1).sum(),
    "dot": lambda d: xr.dot(d.t, d.w, dim="lat"),
    "weighted": lambda d: d.t.weighted(d.w).mean("lat"),
    "climatology": lambda d: d.t.groupby(MONTH).mean(),
    "anomaly": lambda d: d.t.groupby(MONTH) - d.t.groupby(MONTH).mean(),
    "sel_isel": lambda d: d.t.sel(lat=slice(-30, 60)).isel(time=[1, 5, 30]),
    "where": lambda d: d.t.where(d.t > 0, -1.0),
    "ufunc": lambda d: xr.apply_ufunc(np.sin, d.t, dask="parallelized", output_dtypes=[float]),
}


@pytest.mark.parametrize("op", list(OPS))
def test_operation_matches_dask_and_stays_dask_tra(both, op):
    tra, dsk = both
    check(OPS[op](tra), OPS[op](dsk))


def spread(v):
    return v.max(-1) - v.min(-1)


def test_apply_ufunc_parallelized_with_core_dims(both):
    tra, dsk = both
    whole = {"time": -1}
    got = xr.apply_ufunc(spread, tra.t.chunk(whole, chunked_array_type="dask_tra"),
                         input_core_dims=[["time"]], dask="parallelized", output_dtypes=[float])
    want = xr.apply_ufunc(spread, dsk.t.chunk(whole), input_core_dims=[["time"]], dask="parallelized",
                          output_dtypes=[float])
    check(got, want)
    with xr.set_options(chunk_manager="dask_tra"):  # .chunk() without naming the manager
        assert isinstance(tra.t.chunk({"time": 12}).data, RelArray)


def test_dataarray_map_blocks_computes_but_goes_through_dask(both):
    """xarray.map_blocks builds dask.array graphs itself (no chunk-manager hook): its result is
    a dask.array over the RelArray's graph. Values are right; wrap back with from_dask."""
    import dask.array

    import dask_tra.array as da
    tra, dsk = both
    got = tra.t.map_blocks(np.square)
    xr.testing.assert_allclose(got.compute(), dsk.t.map_blocks(np.square).compute())
    assert isinstance(got.data, dask.array.Array)
    back = da.from_dask(got.data)
    np.testing.assert_allclose(back.compute(), np.square(tra.t.values))


def test_to_zarr_and_back(both, tmp_path):
    tra, dsk = both
    out = (tra.groupby(MONTH) - tra.groupby(MONTH).mean())[["t"]]
    assert isinstance(out.t.data, RelArray)
    out.chunk({"time": 6, "lat": 5}, chunked_array_type="dask_tra").to_zarr(tmp_path / "a.zarr")
    back = xr.open_zarr(tmp_path / "a.zarr", chunked_array_type="dask_tra")
    assert isinstance(back.t.data, RelArray)
    xr.testing.assert_allclose(back.t.compute(), (dsk.groupby(MONTH) - dsk.groupby(MONTH).mean()).t.compute())
    pending = tra[["t"]].chunk({"time": 6}, chunked_array_type="dask_tra").to_zarr(tmp_path / "b.zarr",
                                                                                     compute=False)
    assert np.isnan(xr.open_zarr(tmp_path / "b.zarr").t.values).all()  # nothing written yet
    pending.compute()
    xr.testing.assert_allclose(xr.open_zarr(tmp_path / "b.zarr").t.compute(), dsk.t.compute())


@pytest.mark.parametrize("engine", ["h5netcdf", "netcdf4"])
def test_open_dataset_and_to_netcdf(both, ds, tmp_path, engine):
    pytest.importorskip({"netcdf4": "netCDF4"}.get(engine, engine))
    _, dsk = both
    ds.to_netcdf(tmp_path / "in.nc", engine=engine)
    opened = xr.open_dataset(tmp_path / "in.nc", engine=engine, chunks=CHUNKS, chunked_array_type="dask_tra")
    assert isinstance(opened.t.data, RelArray) and opened.t.chunks == dsk.t.chunks
    anomaly = opened.t - opened.t.mean("time")
    assert isinstance(anomaly.data, RelArray)
    anomaly.to_netcdf(tmp_path / "out.nc", engine=engine)
    with xr.open_dataset(tmp_path / "out.nc", engine=engine) as result:
        xr.testing.assert_allclose(result.t.load(), (dsk.t - dsk.t.mean("time")).compute())
    opened.close()

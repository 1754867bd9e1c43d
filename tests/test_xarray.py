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


def _drift(block):
    """A block function that needs its coordinates (xarray's map_blocks passes xarray objects)."""
    return block - block.lat / 100


def test_map_blocks_keeps_relarrays_and_matches_dask(both):
    """DataArray.map_blocks, Dataset.map_blocks and xr.map_blocks (with args and a template):
    the results hold RelArrays and equal the same calls on dask."""
    tra, dsk = both
    check(tra.t.map_blocks(np.square), dsk.t.map_blocks(np.square))
    check(tra[["t"]].map_blocks(_drift), dsk[["t"]].map_blocks(_drift))
    check(xr.map_blocks(lambda a, b: a * 2 - b, tra.t, args=[tra.t], template=tra.t),
          xr.map_blocks(lambda a, b: a * 2 - b, dsk.t, args=[dsk.t], template=dsk.t))
    got = tra.t.map_blocks(np.square).mean("time")  # and dask_tra operations go on from there
    check(got, dsk.t.map_blocks(np.square).mean("time"))


def test_map_blocks_on_dask_data_is_left_to_dask(both):
    import dask.array

    _, dsk = both
    assert isinstance(dsk.t.map_blocks(np.square).data, dask.array.Array)


def test_every_step_of_a_pipeline_stays_dask_tra(both):
    """A climatology pipeline step by step: every intermediate's data is a RelArray."""
    tra, dsk = both
    steps = [
        lambda d: d.t.sel(lat=slice(-30, 60)),
        lambda d: d.fillna(0.0),
        lambda d: d.rolling(time=3, min_periods=1).mean(),
        lambda d: d.groupby(MONTH) - d.groupby(MONTH).mean(),
        lambda d: d.weighted(xr.ones_like(d.lat)).mean("lat"),
        lambda d: d.quantile([0.25, 0.75], dim="time"),
    ]
    a, b = tra, dsk
    for step in steps:
        a, b = step(a), step(b)
        assert isinstance(a.data, RelArray), (step, type(a.data))
    check(a, b)


def test_the_example_runs(tmp_path):
    """examples/xarray_climatology.py end to end (it asserts that every step holds RelArrays)."""
    import subprocess

    out = subprocess.run([sys.executable, str(ROOT / "examples" / "xarray_climatology.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "every step is a dask_tra RelArray" in out.stdout
    assert "dask_tra local plan (threaded scheduler): nothing moves" in out.stdout  # no Client: the local plan


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

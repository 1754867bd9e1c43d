"""A climatology pipeline in xarray with dask_tra as its chunk manager.

Opens a netCDF file of monthly temperatures lazily (``chunked_array_type="dask_tra"``: each
block is read by the worker the plan gives it, only when needed), computes the monthly
climatology, the anomalies and a per-gridpoint linear trend (a least-squares slope: one
contraction over time), writes both to zarr, and prints the optimizer's plan (``explain()``)
for the heaviest step, the trend.

Needs the ``io`` extra (``pip install -e ".[io]"``: the install registers the chunk manager).

    python examples/xarray_climatology.py             # threaded scheduler
    python examples/xarray_climatology.py --cluster   # a small LocalCluster
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from dask_tra.core import RelArray

YEARS, NLAT, NLON = 20, 36, 72


def make_input(path):
    """20 years of monthly temperatures: a seasonal cycle, a warming trend, noise."""
    rng = np.random.default_rng(0)
    time = np.arange(YEARS * 12)
    lat = np.linspace(-87.5, 87.5, NLAT)
    season = 10 * np.cos(2 * np.pi * time / 12)[:, None, None] * np.sin(np.deg2rad(lat))[None, :, None]
    trend = (0.002 + 0.001 * np.cos(np.deg2rad(lat)))[None, :, None] * time[:, None, None]
    t = 15 + season + trend + rng.standard_normal((len(time), NLAT, NLON))
    xr.Dataset({"t": (("time", "lat", "lon"), t)},
               coords={"time": time, "lat": lat, "lon": np.arange(0, 360, 360 / NLON)}).to_netcdf(path)


def main(workdir: Path):
    make_input(workdir / "t.nc")
    ds = xr.open_dataset(workdir / "t.nc", chunks={"time": 48, "lat": 18}, chunked_array_type="dask_tra")
    t = ds.t
    month = xr.DataArray(ds.time.values % 12, dims="time", name="month")
    climatology = t.groupby(month).mean()
    anomaly = t.groupby(month) - climatology
    tc = ds.time - ds.time.mean()
    trend = xr.dot(anomaly, tc, dim="time") / float((tc ** 2).sum()) * 120  # per decade
    for name, v in (("t", t), ("anomaly", anomaly), ("trend", trend)):
        assert isinstance(v.data, RelArray), (name, type(v.data))
    print(f"input {t.shape}, chunks {t.chunks}; every step is a dask_tra RelArray")

    out = xr.Dataset({"anomaly": anomaly.drop_vars("month", errors="ignore"), "trend": trend})
    out = out.chunk({"time": 48, "lat": 18}, chunked_array_type="dask_tra")
    out.to_zarr(workdir / "out.zarr", mode="w")

    back = xr.open_zarr(workdir / "out.zarr", chunked_array_type="dask_tra")
    print(f"trend per decade: mean {float(back.trend.mean()):.3f} K, "
          f"equator {float(back.trend.sel(lat=slice(-5, 5)).mean()):.3f} K, "
          f"poles {float(back.trend.sel(lat=slice(80, 90)).mean()):.3f} K")
    print("\nPlan of the heaviest step (the trend: a contraction over time of the anomalies):")
    print(trend.data.explain())


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        if "--cluster" in sys.argv:
            from distributed import Client, LocalCluster
            with LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=None) as cluster, \
                    Client(cluster):
                main(Path(d))
        else:
            main(Path(d))

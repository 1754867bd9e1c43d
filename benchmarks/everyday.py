"""``python -m benchmarks everyday``: everyday pipelines with dask_tra, dask.array and (if it
imports) the ``dask-array`` package, on the threaded scheduler and on a 4-worker LocalCluster.

Workloads (``--only`` takes their names, comma-separated):

- ``climatology``: xarray on a daily netCDF file (T×Y×X float32, written to a temp dir) opened
  with ``xr.open_dataset(path, chunks={"time": 92}, chunked_array_type=...)``; steps: monthly
  climatology (``groupby("time.month").mean()``), anomalies (``groupby - climatology``),
  ``rolling(time=5).mean()``, ``resample(time="1MS").mean()``, a linear trend (``polyfit``),
  ``.chunk(time=-1).quantile(0.9, dim="time")`` and ``to_zarr`` of the anomalies;
- ``standardize``: ``((x - x.mean(0)) / x.std(0)).sum(1)`` on a random N×N float32 array;
- ``slices``: ``(x + x.T)[:100, :100]`` and ``x.T.T[:5, :5]`` on a lazy random B×B array;
- ``elementwise``: ``((x * 2 + 1) ** 2).sum()``;
- ``rechunk``: ``x.rechunk((N, c)).rechunk((c, N)).sum(0)`` (column strips, then row strips);
- ``gd``: 20 steps of least-squares gradient descent ``w -= lr * X.T @ (X @ w - y)`` on a
  persisted X, computed once at the end (``lazy``) or persisted every step (``persist``).

"Random" arrays are ``zeros(...).map_blocks(gen)`` with ``gen`` drawing each block from NumPy's
generator seeded by the block's position, so the three libraries compute on the same values
(their own ``random`` modules draw different ones) and every result is checked against
dask.array's (``np.testing.assert_allclose``, float32 tolerance) before anything is timed.

Per (workload, step, library, scheduler): *wall*, the median of ``--repeats`` timed runs, each
building the expression from scratch and computing it (dask_tra's plan cache cleared first: every
run plans, as a script run once does; ``--warm-plans`` keeps it), libraries in a balanced order
that alternates every repeat (``cli.round_order``) so drift hits all alike; *graph*, the time
to turn the step's collections into the graph the scheduler gets (``collections_to_expr(...,
optimize_graph=True).optimize().__dask_graph__()``, materialized): for dask_tra that is planning
+ emission (plan cache cleared), for the others graph construction + optimization; it is measured
in a run of its own just before each timed run, so graph times and walls share the machine's
slow and fast phases (median over the repeats; 1 with ``--quick``; a loop's steps summed, once,
before its first timed run); it is *part of* wall, not added to it; *tasks*, that graph's tasks
after culling to the outputs (what the schedulers run), less keys that are data (persisted
blocks' futures, in-memory chunks), with the emitted graph's size where culling drops some of it
(``2 (of 200)``); in a loop, summed over its steps.

BLAS runs one thread per process (as dask's worker processes do, ``distributed.nanny.
pre-spawn-environ``): on a small shared machine OpenBLAS threads fighting the scheduler's threads
made the gradient-descent runs 5-7× slower and far noisier, alike for every library.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np

LIBRARIES = ("dask_tra", "dask.array", "dask-array")
REFERENCE = "dask.array"
START, END = "<!-- everyday:start -->", "<!-- everyday:end -->"
RTOL = 2e-4     # float32: ~1e-7 per operation, sums of 10^4-10^8 terms in other orders
ATOL = 2e-5     # times the largest |reference| value


# --------------------------------------------------------------------------------------- sizes

@dataclass
class Sizes:
    nt: int = 730            # climatology: days (2 years; --size nt=1096 --size ny=90 --size nx=180: 3 years, 1°)
    ny: int = 60
    nx: int = 120
    time_chunk: int = 92
    n: int = 4000            # standardize, elementwise, rechunk: n × n float32
    chunk: int = 1000
    big: int = 20000         # slices: big × big (never materialized)
    gd_rows: int = 50_000    # gradient descent: X is gd_rows × gd_cols float32
    gd_cols: int = 100
    gd_chunk: int = 5_000
    gd_steps: int = 20


QUICK = dict(nt=366, ny=6, nx=12, time_chunk=92, n=1200, chunk=300, big=4000, gd_rows=4000, gd_cols=50,
             gd_chunk=1000, gd_steps=20)


# --------------------------------------------------------------------------------- libraries

def load_libraries(wanted=LIBRARIES) -> tuple[dict, dict]:
    """({name: array module}, {name: why it is skipped})."""
    libs, skipped = {}, {}
    for name in wanted:
        try:
            if name == "dask_tra":
                import dask_tra.array as mod
            elif name == "dask.array":
                import dask.array as mod
            elif name == "dask-array":
                import dask_array as mod
                got = mod.ones(4, chunks=2).sum().compute()  # imports is not enough: it must run
                assert got == 4, got
            else:
                raise ValueError(f"unknown library {name!r} (choose from {', '.join(LIBRARIES)})")
            libs[name] = mod
        except ImportError as e:
            skipped[name] = f"not importable ({e}); pip install {name}" if name == "dask-array" else str(e)
        except Exception as e:  # imports but does not work with this dask
            skipped[name] = f"does not run with dask {__import__('dask').__version__}: {type(e).__name__}: {e}"
    return libs, skipped


@contextlib.contextmanager
def xarray_manager(lib_name):
    """The name ``chunked_array_type`` takes for ``lib_name``. dask-array is xarray's "dask" manager
    only after ``dask_array.xarray.register()``, which displaces xarray's own: put back on exit."""
    if lib_name != "dask-array":
        yield "dask_tra" if lib_name == "dask_tra" else "dask"
        return
    import dask_array.xarray
    from xarray.namedarray.parallelcompat import list_chunkmanagers
    managers = list_chunkmanagers()
    before = managers.get("dask")
    dask_array.xarray.register()
    try:
        yield "dask"
    finally:
        managers["dask"] = before


def single_blas_thread() -> str:
    """Limit the OpenBLAS loaded in this process to one thread (what threadpoolctl does, without
    needing it); returns what was done."""
    import ctypes
    libs = set()
    with contextlib.suppress(OSError):
        for line in open("/proc/self/maps"):
            path = line.split()[-1]
            name = os.path.basename(path).lower()
            if "openblas" in name and (".so" in name or name.endswith(".dylib")):
                libs.add(path)
    done = []
    for path in sorted(libs):
        lib = ctypes.CDLL(path)
        for sym in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                    "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn(1)
                done.append(os.path.basename(path))
                break
    return ("BLAS limited to 1 thread (" + ", ".join(done) + ")") if done else "BLAS threads left as they are"


def random_array(lib, shape, chunks, seed=0, dtype="float32"):
    """Uniform [0, 1) values, the same whichever library: each block drawn from NumPy's generator
    seeded by (seed, the block's offsets)."""
    def gen(block, block_info=None):
        loc = block_info[0]["array-location"]
        rng = np.random.default_rng([seed] + [start for start, _ in loc])
        return rng.random(block.shape, dtype=np.float32).astype(block.dtype, copy=False)
    return lib.zeros(shape, chunks=chunks, dtype=dtype).map_blocks(gen, dtype=dtype)


# --------------------------------------------------------------------------------- workloads

class Probed(Exception):
    """Raised by a graph probe after measuring a step that computes one thing."""


@dataclass
class Step:
    name: str
    run: Callable  # run(lib, ctx, probe) -> numpy result; probe(*collections) before each compute
    loop: bool = False  # computes several times: the probe adds them up and lets it go on
    note: str = ""


@dataclass
class Workload:
    name: str
    title: str
    steps: Callable  # steps(sizes) -> [Step]
    setup: Callable | None = None  # setup(sizes, dir) -> ctx (dict)
    describe: Callable = lambda s: ""
    ctx: dict = field(default_factory=dict)


def _compute(probe, *colls):
    import dask
    probe(*colls)
    out = dask.compute(*colls)
    return out if len(out) > 1 else out[0]


# -- climatology (xarray)

def _write_netcdf(s: Sizes, d):
    import pandas as pd
    import xarray as xr
    rng = np.random.default_rng(0)
    day = np.arange(s.nt)
    lat = np.linspace(-89, 89, s.ny)
    season = 10 * np.cos(2 * np.pi * day / 365.25)[:, None, None] * np.sin(np.deg2rad(lat))[None, :, None]
    trend = 0.0001 * day[:, None, None]
    t = (15 + season + trend + rng.standard_normal((s.nt, s.ny, s.nx))).astype("float32")
    path = os.path.join(d, "daily.nc")
    xr.Dataset({"t": (("time", "lat", "lon"), t)},
               coords={"time": pd.date_range("2000-01-01", periods=s.nt, freq="D"), "lat": lat,
                       "lon": np.arange(s.nx) * 360.0 / s.nx}).to_netcdf(path)
    return dict(path=path, dir=d, sizes=s)


def _xr_step(fn):
    """A climatology step: open the file, build ``fn(t)`` (a DataArray), compute it."""
    def run(lib, ctx, probe):
        import xarray as xr
        with xarray_manager(ctx["lib_name"]) as kind:
            t = xr.open_dataset(ctx["path"], chunks={"time": ctx["sizes"].time_chunk}, chunked_array_type=kind).t
            out = fn(t)
            probe(out.data)
            return out.compute().values
    return run


def _anomalies(t):
    return t.groupby("time.month") - t.groupby("time.month").mean()


def _to_zarr(lib, ctx, probe):
    import xarray as xr
    with xarray_manager(ctx["lib_name"]) as kind:
        t = xr.open_dataset(ctx["path"], chunks={"time": ctx["sizes"].time_chunk}, chunked_array_type=kind).t
        anom = _anomalies(t)
        probe(anom.data)
        path = os.path.join(ctx["dir"], f"anom-{ctx['lib_name']}.zarr")
        anom.drop_vars("month").to_dataset(name="anom").to_zarr(path, mode="w", consolidated=False)
    return xr.open_zarr(path, chunks=None, consolidated=False).anom.values  # read back by zarr alone: what was written


def climatology_steps(s):
    return [
        Step("monthly mean", _xr_step(lambda t: t.groupby("time.month").mean())),
        Step("anomalies", _xr_step(_anomalies)),
        Step("rolling(5).mean", _xr_step(lambda t: t.rolling(time=5).mean())),
        Step("resample(1MS).mean", _xr_step(lambda t: t.resample(time="1MS").mean())),
        Step("trend (polyfit)", _xr_step(lambda t: t.polyfit("time", 1).polyfit_coefficients)),
        Step("quantile(0.9)", _xr_step(lambda t: t.chunk(time=-1).quantile(0.9, dim="time"))),
        Step("to_zarr(anomalies)", _to_zarr),
    ]


# -- arrays

def _standardize(lib, ctx, probe):
    s = ctx["sizes"]
    x = random_array(lib, (s.n, s.n), s.chunk, seed=1)
    return _compute(probe, ((x - x.mean(0)) / x.std(0)).sum(1))


def _slice_sum(lib, ctx, probe):
    s = ctx["sizes"]
    x = random_array(lib, (s.big, s.big), s.chunk, seed=2)
    return _compute(probe, (x + x.T)[:100, :100])


def _slice_tt(lib, ctx, probe):
    s = ctx["sizes"]
    x = random_array(lib, (s.big, s.big), s.chunk, seed=2)
    return _compute(probe, x.T.T[:5, :5])


def _elementwise(lib, ctx, probe):
    s = ctx["sizes"]
    x = random_array(lib, (s.n, s.n), s.chunk, seed=3)
    return _compute(probe, ((x * 2 + 1) ** 2).sum())


def _rechunk(lib, ctx, probe):
    s = ctx["sizes"]
    c = max(1, s.chunk // 4)
    x = random_array(lib, (s.n, s.n), s.chunk, seed=4)
    return _compute(probe, x.rechunk((s.n, c)).rechunk((c, s.n)).sum(0))


def _gd_inputs(lib, s):
    import dask
    X = random_array(lib, (s.gd_rows, s.gd_cols), (s.gd_chunk, s.gd_cols), seed=5) - 0.5
    w_true = lib.ones((s.gd_cols, 1), chunks=(s.gd_cols, 1), dtype="float32")
    y = X @ w_true + 0.01 * (random_array(lib, (s.gd_rows, 1), (s.gd_chunk, 1), seed=6) - 0.5)
    X, y = dask.persist(X, y)  # a user persists the data a loop reads every step
    return X, y, lib.zeros((s.gd_cols, 1), chunks=(s.gd_cols, 1), dtype="float32")


def _lr(s):
    return np.float32(3.0 / s.gd_rows)  # X's entries have variance 1/12: X.T @ X ≈ rows/12 · I


def _gd_lazy(lib, ctx, probe):
    s = ctx["sizes"]
    X, y, w = _gd_inputs(lib, s)
    for _ in range(s.gd_steps):
        w = w - _lr(s) * (X.T @ (X @ w - y))
    return _compute(probe, w)


def _gd_persist(lib, ctx, probe):
    import dask
    s = ctx["sizes"]
    X, y, w = _gd_inputs(lib, s)
    for _ in range(s.gd_steps):
        w = w - _lr(s) * (X.T @ (X @ w - y))
        probe(w)
        (w,) = dask.persist(w)
    return w.compute()


WORKLOADS = [
    Workload("climatology", "xarray climatology of a daily netCDF file", climatology_steps, setup=_write_netcdf,
             describe=lambda s: f"{s.nt}×{s.ny}×{s.nx} float32, chunks time={s.time_chunk}"),
    Workload("standardize", "((x - x.mean(0)) / x.std(0)).sum(1)",
             lambda s: [Step("standardize-reduce", _standardize)],
             describe=lambda s: f"{s.n}² float32 in {s.chunk}² chunks"),
    Workload("slices", "slices of big lazy expressions",
             lambda s: [Step("(x + x.T)[:100, :100]", _slice_sum), Step("x.T.T[:5, :5]", _slice_tt)],
             describe=lambda s: f"{s.big}² float32 in {s.chunk}² chunks"),
    Workload("elementwise", "((x * 2 + 1) ** 2).sum()", lambda s: [Step("elementwise-sum", _elementwise)],
             describe=lambda s: f"{s.n}² float32 in {s.chunk}² chunks"),
    Workload("rechunk", "x.rechunk((N, c)).rechunk((c, N)).sum(0)", lambda s: [Step("rechunk-rechunk-sum", _rechunk)],
             describe=lambda s: f"{s.n}² float32, {s.chunk}² → {s.n}×{max(1, s.chunk // 4)} → "
                                f"{max(1, s.chunk // 4)}×{s.n}"),
    Workload("gd", "least-squares gradient descent, w -= lr * X.T @ (X @ w - y)",
             lambda s: [Step(f"{s.gd_steps} steps, compute at end", _gd_lazy),
                        Step(f"{s.gd_steps} steps, persist each", _gd_persist, loop=True)],
             describe=lambda s: f"X {s.gd_rows}×{s.gd_cols} float32 in {s.gd_chunk}-row chunks, persisted"),
]


# ---------------------------------------------------------------------------------- measuring

def graph_tasks(*collections) -> tuple[float, int, int]:
    """(seconds, tasks run, tasks emitted): the graph the scheduler gets for ``collections`` (as
    ``dask.compute`` builds it: one expression, optimized, materialized). *Emitted*: its length,
    less keys that are data, not tasks (persisted blocks' futures, in-memory chunks); *run*: the
    same after culling to the output keys (the schedulers run only those)."""
    from dask.base import collections_to_expr
    from dask.core import flatten
    from dask.optimization import cull
    from dask.task_spec import Alias, DataNode
    from distributed import Future
    t0 = time.perf_counter()
    expr = collections_to_expr(list(collections), optimize_graph=True).optimize()
    dsk = dict(expr.__dask_graph__())
    dt = time.perf_counter() - t0

    def data(v):
        return (isinstance(v, (Future, np.ndarray)) or (isinstance(v, DataNode) and
                                                        isinstance(v.value, (Future, np.ndarray))))

    def tasks(g):
        held = {k for k, v in g.items() if data(v)}
        return sum(1 for k, v in g.items() if k not in held
                   and not (isinstance(v, Alias) and v.target in held and v.key == v.target))
    culled, _ = cull(dsk, list(flatten(expr.__dask_keys__())))
    return dt, tasks(culled), tasks(dsk)


def _fresh():
    """Before every run: a collected heap, and dask_tra planning from scratch (unless --warm-plans)."""
    gc.collect()
    if not _fresh.warm_plans:
        from dask_tra.optimizer import cache
        cache.clear()


_fresh.warm_plans = False


def _no_probe(*colls):
    pass


def run_once(step, lib_name, lib, ctx):
    _fresh()
    ctx["lib_name"] = lib_name
    t0 = time.perf_counter()
    out = step.run(lib, ctx, _no_probe)
    return time.perf_counter() - t0, np.asarray(out)


def probe_once(step, lib_name, lib, ctx):
    """(graph seconds, tasks) of the step: every collection it computes, summed over a loop."""
    acc = [0.0, 0, 0]

    def probe(*colls):
        if not step.loop:
            _fresh()  # planning from scratch, as the timed run
        for i, v in enumerate(graph_tasks(*colls)):
            acc[i] += v
        if not step.loop:
            raise Probed
    _fresh()
    ctx["lib_name"] = lib_name
    with contextlib.suppress(Probed):
        step.run(lib, ctx, probe)
    return tuple(acc)


def check(got, want):
    """'ok', or why not: float32 tolerance, NaNs where the reference has NaNs."""
    got, want = np.asarray(got, dtype="float64"), np.asarray(want, dtype="float64")
    try:
        scale = float(np.nanmax(np.abs(want))) if want.size and np.isfinite(want).any() else 1.0
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL * max(1.0, scale))
        return "ok"
    except AssertionError as e:
        return "DIFFERS: " + " ".join(str(e).split())[:300]


def round_order(names, i):
    from .cli import round_order as balanced
    return balanced(list(names), i)


def run_step(wl, step, libs, ctx, repeats, scheduler, log=print, probes=None):
    """One row: {workload, step, scheduler, per library: wall (median), times, graph_s, tasks, check}.

    ``probes`` graph measurements per library (None: one per repeat; a loop's, one), each taken
    just before one of its timed runs: this machine's speed drifts in phases of seconds (the
    same graph takes 8 ms, then 14 ms), so a graph time and the walls it is compared with are
    measured in the same phases."""
    row = dict(workload=wl.name, step=step.name, scheduler=scheduler, libraries={})
    ref = None
    results = {}
    for name in [REFERENCE] + [n for n in libs if n != REFERENCE]:  # warm-up, and the results checked
        if name not in libs:
            continue
        try:
            _, results[name] = run_once(step, name, libs[name], ctx)
        except Exception as e:
            row["libraries"][name] = dict(error=f"{type(e).__name__}: {' '.join(str(e).split())[:200]}")
            log(f"[everyday]   {name}: ERROR {row['libraries'][name]['error']}")
    ref = results.get(REFERENCE)
    for name, got in results.items():
        entry = row["libraries"].setdefault(name, {})
        entry["check"] = "reference" if name == REFERENCE else ("no reference" if ref is None else check(got, ref))
        if entry["check"].startswith("DIFFERS"):
            log(f"[everyday]   {name}: RESULT {entry['check']}")
    ok = [n for n in results]
    times: dict[str, list] = {n: [] for n in ok}
    graphs: dict[str, list] = {n: [] for n in ok}
    want = 1 if step.loop else (repeats if probes is None else probes)
    for i in range(repeats):
        for name in round_order(ok, i):
            entry = row["libraries"][name]
            if len(graphs[name]) < want and "graph_error" not in entry:
                try:
                    graphs[name].append(probe_once(step, name, libs[name], ctx))
                except Exception as e:
                    entry["graph_error"] = f"{type(e).__name__}: {e}"[:200]
            t, _ = run_once(step, name, libs[name], ctx)
            times[name].append(t)
    for name in ok:
        e = row["libraries"][name]
        e["times"] = times[name]
        e["wall_s"] = statistics.median(times[name]) if times[name] else None
        g = graphs[name]
        if g and "graph_error" not in e:
            e["graph_s"] = statistics.median(t for t, _, _ in g)
            e["tasks"], e["tasks_emitted"] = g[0][1], g[0][2]
    return row


# ---------------------------------------------------------------------------------- schedulers

@contextlib.contextmanager
def scheduler(kind, workers=4, processes=False):
    """Yield a description of the scheduler now in use."""
    import dask
    if kind == "threads":
        from distributed import default_client
        with contextlib.suppress(ValueError):
            default_client()
            raise RuntimeError("a distributed Client is active: the threaded scheduler would not be used")
        with dask.config.set(scheduler="threads"):
            yield f"threaded scheduler ({os.cpu_count()} threads)"
        return
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes, memory_limit="3GiB",
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        import dask_tra
        dask_tra.calibrate(client)  # plans costed with this cluster's rates, measured once, untimed
        yield (f"LocalCluster, {workers} workers × 1 thread, "
               + ("worker processes (TCP on 127.0.0.1)" if processes else "in-process workers (processes=False)"))


# ----------------------------------------------------------------------------------- running

def run_suite(sizes: Sizes, repeats=5, schedulers=("threads", "cluster"), only=None, libraries=LIBRARIES,
              workers=4, processes=False, warm_plans=False, probes=None, log=print, on_row=None) -> dict:
    """Every workload on every scheduler: {'rows': [...], 'meta': {...}}. ``on_row(result)`` gets
    the result so far after each row (``meta.partial`` set): ``main`` saves it, so a run stopped
    late keeps what it measured."""
    from .cli import load, machine, versions
    _fresh.warm_plans = warm_plans
    blas = single_blas_thread()
    log(f"[everyday] {blas}")
    libs, skipped = load_libraries(libraries)
    for name, why in skipped.items():
        log(f"[everyday] {name}: skipped, {why}")
    wls = WORKLOADS
    if only:
        wanted = [w.strip() for w in only.split(",")] if isinstance(only, str) else list(only)
        unknown = set(wanted) - {w.name for w in WORKLOADS}
        if unknown:
            raise SystemExit(f"unknown workloads {sorted(unknown)}; choose from {[w.name for w in WORKLOADS]}")
        wls = [w for w in WORKLOADS if w.name in wanted]
    vs = versions()
    with contextlib.suppress(ImportError):
        import xarray
        import zarr
        vs.update(xarray=xarray.__version__, zarr=zarr.__version__)
    if "dask-array" in libs:
        import dask_array
        vs["dask-array"] = getattr(dask_array, "__version__", "?")
    rows, described = [], {}
    meta = dict(machine=machine(), versions=vs, repeats=repeats, probes=probes, schedulers=described,
                libraries=list(libs), skipped=skipped, sizes=sizes.__dict__, warm_plans=warm_plans, blas=blas)
    t_start = time.time()
    d = tempfile.mkdtemp(prefix="everyday-")
    try:
        ctxs = {}
        for w in wls:
            ctxs[w.name] = w.setup(sizes, d) if w.setup else dict(dir=d)
            ctxs[w.name].setdefault("sizes", sizes)
        for kind in schedulers:
            with scheduler(kind, workers, processes) as desc:
                described[kind] = desc
                log(f"\n[everyday] scheduler {kind}: {desc}")
                for w in wls:
                    log(f"[everyday] {w.name}: {w.title} ({w.describe(sizes)})")
                    for step in w.steps(sizes):
                        t0 = time.time()
                        row = run_step(w, step, libs, ctxs[w.name], repeats, kind, log, probes)
                        rows.append(row)
                        log(text_row(row) + f"   ({time.time() - t0:.0f}s)")
                        if on_row is not None:
                            on_row(dict(rows=rows, meta=dict(meta, load_after=load(), partial=True,
                                                             elapsed_s=time.time() - t_start)))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return dict(rows=rows, meta=dict(meta, load_after=load(), elapsed_s=time.time() - t_start))


# ------------------------------------------------------------------------------------ report

def _wall(row, lib):
    return row["libraries"].get(lib, {}).get("wall_s")


def ratio(row, lib, base=REFERENCE):
    a, b = _wall(row, lib), _wall(row, base)
    return None if a is None or not b else a / b


def _t(v):
    return "-" if v is None else (f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s")


def _r(v):
    return "-" if v is None else f"{v:.2f}"


def columns(libs):
    cols = ["workload", "step", "scheduler"] + [f"{lib} wall" for lib in libs]
    cols += [f"{lib} ÷ dask.array" for lib in libs if lib != REFERENCE]
    cols += ["dask_tra plan+emit (share)"] + [f"{lib} graph" for lib in libs if lib != "dask_tra"]
    cols += ["tasks " + " / ".join(libs), "check"]
    return cols


def cells(row, libs):
    L = row["libraries"]
    out = [row["workload"], row["step"], row["scheduler"]]
    for lib in libs:
        e = L.get(lib, {})
        out.append("error" if "error" in e else _t(e.get("wall_s")))
    out += [_r(ratio(row, lib)) for lib in libs if lib != REFERENCE]
    tra = L.get("dask_tra", {})
    if tra.get("graph_s") is not None:
        share = tra["graph_s"] / tra["wall_s"] if tra.get("wall_s") else None
        out.append(_t(tra["graph_s"]) + ("" if share is None else f" ({100 * share:.0f}%)"))
    else:
        out.append("-")
    out += [_t(L.get(lib, {}).get("graph_s")) for lib in libs if lib != "dask_tra"]
    out.append(" / ".join(_tasks(L.get(lib, {})) for lib in libs))
    checks = {lib: L.get(lib, {}).get("check") or ("error" if "error" in L.get(lib, {}) else "-")
              for lib in libs if lib != REFERENCE}
    out.append("ok" if all(c == "ok" for c in checks.values())
               else "; ".join(f"{lib}: {c}" for lib, c in checks.items() if c != "ok"))
    return out


def _tasks(e):
    """Tasks run, and the emitted graph's size where culling drops some of it: ``2 (of 200)``."""
    if "tasks" not in e:
        return "-"
    return str(e["tasks"]) + (f" (of {e['tasks_emitted']})" if e.get("tasks_emitted", e["tasks"]) != e["tasks"] else "")


def text_row(row):
    libs = [lib for lib in LIBRARIES if lib in row["libraries"]]
    return "  ".join(str(c) for c in cells(row, libs))


def text_table(result) -> str:
    libs = result["meta"]["libraries"]
    rs = [columns(libs)] + [cells(r, libs) for r in result["rows"]]
    widths = [min(44, max(len(str(r[i])) for r in rs)) for i in range(len(rs[0]))]
    lines = ["  ".join(str(c)[:44].ljust(w) for c, w in zip(r, widths)) for r in rs]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def markdown_table(result) -> str:
    libs = result["meta"]["libraries"]
    cols = columns(libs)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" if i < 3 else "---:" for i in range(len(cols))) + "|"]
    for r in result["rows"]:
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells(r, libs)) + " |")
    return "\n".join(lines)


def planning_share(result) -> dict:
    """Per scheduler: dask_tra's plan+emit summed over steps ÷ its wall summed (and the median share)."""
    out = {}
    for sched in result["meta"]["schedulers"]:
        tra = [r["libraries"].get("dask_tra", {}) for r in result["rows"] if r["scheduler"] == sched]
        tra = [e for e in tra if e.get("graph_s") is not None and e.get("wall_s")]
        if tra:
            out[sched] = dict(total=sum(e["graph_s"] for e in tra) / sum(e["wall_s"] for e in tra),
                              median=statistics.median(e["graph_s"] / e["wall_s"] for e in tra))
    return out


def wrong(result) -> list:
    return [(r["workload"], r["step"], r["scheduler"], lib, e.get("check") or e.get("error"))
            for r in result["rows"] for lib, e in r["libraries"].items()
            if "error" in e or str(e.get("check", "")).startswith("DIFFERS")]


def plot(result, path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return False
    rows = result["rows"]
    scheds = list(result["meta"]["schedulers"])
    others = [lib for lib in result["meta"]["libraries"] if lib != REFERENCE]
    steps = list(dict.fromkeys((r["workload"], r["step"]) for r in rows))
    fig, axes = plt.subplots(1, len(scheds), figsize=(6.5 * len(scheds), 0.42 * len(steps) + 1.8), sharey=True,
                             squeeze=False)
    h = 0.8 / max(1, len(others))
    for ax, sched in zip(axes[0], scheds):
        by = {(r["workload"], r["step"]): r for r in rows if r["scheduler"] == sched}
        for j, lib in enumerate(others):
            ys = [i + (j - (len(others) - 1) / 2) * h for i in range(len(steps))]
            vals = [ratio(by[s], lib) if s in by else None for s in steps]
            ax.barh([y for y, v in zip(ys, vals) if v], [v for v in vals if v], height=h, label=f"{lib} ÷ dask.array")
        ax.axvline(1, color="k", lw=0.8)
        ax.set_xscale("log")
        vals = [v for r in by.values() for lib in others if (v := ratio(r, lib))]
        lo, hi = min(vals + [0.5]), max(vals + [2.0])
        ticks = [t for t in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if lo / 1.5 <= t <= hi * 1.5]
        ax.set_xlim(lo / 1.3, hi * 1.3)
        ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FixedFormatter([f"{t:g}" for t in ticks]))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(result["meta"]["schedulers"][sched].split(",")[0] if sched == "cluster" else "threaded scheduler")
        ax.set_xlabel("wall time ÷ dask.array's (log; < 1 is faster)")
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[0][0].set_yticks(range(len(steps)), [f"{w}: {s}" for w, s in steps], fontsize=8)
    axes[0][0].invert_yaxis()
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def markdown_section(result, command, png=None) -> str:
    m = result["meta"]
    sz = Sizes(**m["sizes"])
    share = planning_share(result)
    lines = [f"Generated by `{command}` in {m['elapsed_s'] / 60:.1f} min, median of {m['repeats']} timed runs "
             f"per cell{' (dask_tra plan cache kept warm)' if m['warm_plans'] else ''}.",
             "",
             f"Machine: {m['machine']}; load average after the run {m['load_after']}. "
             f"Versions: {', '.join(f'{k} {v}' for k, v in m['versions'].items())}.",
             "",
             "Schedulers: " + "; ".join(f"*{k}*: {v}" for k, v in m["schedulers"].items()) + ".",
             "",
             "Sizes: " + "; ".join(f"{w.name} {w.describe(sz)}" for w in WORKLOADS) + "."]
    for lib, why in m["skipped"].items():
        lines += ["", f"**{lib} not run**: {why}."]
    lines += ["", markdown_table(result), ""]
    if share:
        lines.append("dask_tra's planning + emission as a share of its wall time (summed over steps; "
                     "median over steps): " + "; ".join(f"{k} {100 * v['total']:.0f}% (median {100 * v['median']:.0f}%)"
                                                     for k, v in share.items()) + ".")
    bad = wrong(result)
    lines += ["", "Every result agreed with dask.array's." if not bad else
              "**Results that did not agree or failed**: " + "; ".join(f"{w} / {s} / {sc} / {lib}: {why}"
                                                                      for w, s, sc, lib, why in bad)]
    if png:
        lines += ["", f"![everyday ratios]({png})"]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------- cli

def save(result, path, command) -> None:
    """``result`` (with ``command``) written to ``path`` as ``--json`` does, atomically."""
    result["meta"]["command"] = command
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1, default=str)
    os.replace(tmp, path)


def merged(results) -> dict:
    """Several runs' results as one: rows in the suite's order (scheduler, then workload), a
    later run's row replacing an earlier one's for the same step; the first run's meta, with
    every run's command and meta under ``runs``."""
    if len(results) == 1:
        return results[0]
    by_step = {}
    for r in results:
        for row in r["rows"]:
            by_step[(row["scheduler"], row["workload"], row["step"])] = row
    scheds = ["threads", "cluster"]
    names = [w.name for w in WORKLOADS]
    order = {}
    for r in results:
        for row in r["rows"]:
            order.setdefault((row["scheduler"], row["workload"], row["step"]), len(order))

    def place(k):
        sched, wl, _ = k
        return (scheds.index(sched) if sched in scheds else len(scheds),
                names.index(wl) if wl in names else len(names), order[k])
    meta = dict(results[0]["meta"])
    meta["runs"] = [r["meta"] for r in results]
    meta["command"] = " + ".join(f"`{r['meta'].get('command', '?')}`" for r in results).strip("`")
    meta["skipped"] = {k: v for r in results for k, v in r["meta"].get("skipped", {}).items()}
    meta["schedulers"] = {k: v for r in results for k, v in r["meta"]["schedulers"].items()}
    meta["elapsed_s"] = sum(r["meta"]["elapsed_s"] for r in results)
    meta["load_after"] = results[-1]["meta"]["load_after"]
    return dict(rows=[by_step[k] for k in sorted(by_step, key=place)], meta=meta)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks everyday", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes and 3 repeats (~2 minutes)")
    p.add_argument("--repeats", type=int, default=None, help="timed runs per cell (default 5; 3 with --quick)")
    p.add_argument("--schedulers", default="threads,cluster", help="comma-separated: threads, cluster")
    p.add_argument("--only", default=None, help=f"comma-separated workloads: {','.join(w.name for w in WORKLOADS)}")
    p.add_argument("--libraries", default=",".join(LIBRARIES), help="comma-separated subset of " + ",".join(LIBRARIES))
    p.add_argument("--workers", type=int, default=4, help="LocalCluster workers (1 thread each)")
    p.add_argument("--processes", action="store_true", help="worker processes (default: in-process workers)")
    p.add_argument("--warm-plans", action="store_true", help="keep dask_tra's plan cache between runs")
    p.add_argument("--size", action="append", default=[], metavar="NAME=N",
                   help="override a size: " + ", ".join(Sizes.__dataclass_fields__))
    p.add_argument("--json", default=None, metavar="FILE",
                   help="write every measurement to FILE (after each row: a stopped run keeps its rows)")
    p.add_argument("--write", default=None, metavar="MD", help="fill the everyday section of this Markdown file")
    p.add_argument("--from-json", default=None, nargs="+", metavar="FILE",
                   help="run nothing: redraw the table, plot and --write section from --json FILEs (several: "
                        "their rows merged, a later file's row replacing an earlier one's)")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="ratio plot (default with --write: docs/benchmarks/everyday.png)")
    return p.parse_args(argv)


def sizes_from(args) -> Sizes:
    kw = dict(QUICK) if args.quick else {}
    for item in args.size:
        k, _, v = item.partition("=")
        if k not in Sizes.__dataclass_fields__:
            raise SystemExit(f"unknown size {k!r}; choose from {', '.join(Sizes.__dataclass_fields__)}")
        kw[k] = int(v)
    return Sizes(**kw)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    repeats = args.repeats or (3 if args.quick else 5)
    scheds = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    bad = set(scheds) - {"threads", "cluster"}
    if bad:
        raise SystemExit(f"unknown schedulers {sorted(bad)}: choose threads, cluster")
    if args.from_json:
        results = []
        for path in args.from_json:
            with open(path) as f:
                results.append(json.load(f))
        result = merged(results)
        command = result["meta"]["command"]
    else:
        from .cli import load
        print(f"[everyday] load average before: {load()}")
        command = ("python -m benchmarks everyday " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
        result = run_suite(sizes_from(args), repeats, scheds, args.only, args.libraries.split(","), args.workers,
                           args.processes, args.warm_plans, probes=1 if args.quick else None,
                           on_row=partial(save, path=args.json, command=command) if args.json else None)
        result["meta"]["command"] = command
    print("\n" + text_table(result))
    for sched, v in planning_share(result).items():
        print(f"[everyday] dask_tra plan+emit share of wall ({sched}): {100 * v['total']:.0f}% summed, "
              f"median step {100 * v['median']:.0f}%")
    for lib, why in result["meta"]["skipped"].items():
        print(f"[everyday] {lib} not run: {why}")
    if args.json and not args.from_json:
        save(result, args.json, command)
        print(f"[everyday] wrote {args.json}")
    png = args.plot or (os.path.join(os.path.dirname(args.write) or ".", "benchmarks", "everyday.png")
                        if args.write else None)
    if png:
        os.makedirs(os.path.dirname(png) or ".", exist_ok=True)
        if plot(result, png):
            print(f"[everyday] wrote {png}")
        else:
            png = None
    if args.write:
        from .coverage import write
        rel = os.path.relpath(png, os.path.dirname(args.write) or ".") if png else None
        write(args.write, markdown_section(result, command, rel), START, END)
        print(f"[everyday] wrote the everyday section of {args.write}")
    bad = wrong(result)
    for w, s, sc, lib, why in bad:
        print(f"[everyday] WRONG OR FAILED: {w} / {s} / {sc} / {lib}: {why}")
    return 1 if bad else 0

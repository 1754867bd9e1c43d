"""GPU benchmarks: ``python -m benchmarks gpu``. They need a CUDA GPU that CuPy can use (and,
for the PyTorch competitor, torch built with CUDA); without one they say so, measure nothing
and exit with status 2.

- ``matmul``: an n×n float32 matmul (n = 16384) on one GPU worker, dask_tra with CuPy chunks,
  against ``cupy.matmul`` in one process (the goal: at least 80% of its throughput);
- ``ffnn``: one SGD step of the FFNN (the ``ffnn-speech`` and ``ffnn-xml`` sizes, every dim ×10,
  float32) on one GPU worker, dask_tra with CuPy chunks, against PyTorch CUDA with autograd in
  one process;
- ``paper-mm``: the three paper matmul shapes (the suite's sizes ×10, float32) on two GPU workers
  sharing the GPU, dask_tra against dask.array with CuPy chunks on the same workers, both
  reading the same persisted inputs.

Every row gives the median time, TFLOP/s, the bytes moved between workers (``measure()``) and
the host↔device copies made by the chunk serializers (``dask_tra.runtime.dispatch.transfers``,
summed over the workers and the client). GPU kernels run asynchronously, so each timed region
ends with a device synchronization on every worker. Inputs are made afresh (same seeds, new
keys) before every run, so no replica left by an earlier run saves a transfer. Results are
printed and written to ``<out>/results-gpu.{md,json}``.
"""
from __future__ import annotations

import json
import os
import statistics
import time

from .workloads import SUITES, _ffnn_flops, _ffnn_inputs, _mm_flops, _mm_inputs, ffnn_step, ffnn_torch, matmul

GPU_DTYPE = "float32"


def gpu_unavailable() -> str | None:
    """Why the GPU benchmarks cannot run here (None when they can)."""
    from dask_tra import backends
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "CuPy is not installed (pip install cupy-cuda12x, or the dask_tra[gpu] extra)"
    if not backends.available("cupy"):
        return "CuPy sees no CUDA device"
    return None


def torch_cuda_unavailable() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return None if torch.cuda.is_available() else "torch has no CUDA device (a CPU build?)"


def scaled(name, factor=10):
    """The dims of suite workload ``name``, every dim times ``factor``."""
    w = next(w for w in SUITES["paper"] if w.name == name)
    return {k: v * factor if isinstance(v, int) else v for k, v in w.dims.items()}


# ---------------------------------------------------------------- workers

def synchronize(names=("cupy", "torch")):
    """Run on a worker (or here): wait for the device work of these backends' libraries."""
    from dask_tra import backends
    for name in names:
        if backends.available(name):
            backends.get(name).synchronize()


def _reset_transfers():
    from dask_tra.runtime import dispatch
    dispatch.reset_transfers()


def _transfers():
    from dask_tra.runtime import dispatch
    return dispatch.transfers()


def start_gpu_cluster(n_workers, memory_limit="16GiB"):
    """``n_workers`` single-thread worker processes on GPU 0 (``CUDA_VISIBLE_DEVICES=0`` and the
    ``GPU`` resource for each), and a client; dask_tra's GPU limit shares the device among them."""
    from distributed import Client, LocalCluster
    os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           resources={"GPU": 1}, memory_limit=memory_limit)
    client = Client(cluster)
    import dask_tra
    dask_tra.calibrate(client)  # the rates plans are costed with (planning never measures them)
    # the GPU chunks' dispatch on every worker: the runs below hand graphs to dask.persist, and
    # making a graph installs nothing (docs/dask-integration.md, "What changes a cluster")
    from dask_tra import backends
    dask_tra.install(client, backends=[b for b in ("cupy", "torch") if backends.available(b)])
    return cluster, client


def make_inputs(specs, backend, seed):
    """dask_tra random inputs of chunk library ``backend`` (float32), persisted and waited for."""
    import dask
    from distributed import wait

    import dask_tra as dt
    out = {}
    with dt.config.set(backend=backend):
        for i, (name, (shape, chunks, low, high)) in enumerate(sorted(specs.items())):
            out[name] = dt.random.uniform(low, high, shape, chunks=chunks, seed=1000 * seed + i + 1, dtype=GPU_DTYPE)
    persisted = dask.persist(*out.values())
    wait(list(persisted))
    return dict(zip(out, persisted))


def run_on_cluster(client, fn, specs, competitor, backend="cupy", seed=0):
    """One timed run of ``fn(xp, inputs, barrier)``: (seconds, bytes moved, host↔device copies,
    plan strategies). ``competitor``: "dask_tra" (several outputs planned as one ``Joint``) or
    "dask.array" (on the same persisted blocks, through ``to_dask()``)."""
    import dask
    import dask.array as da
    from distributed import wait

    import dask_tra as dt
    from dask_tra.autodiff import Joint
    x = make_inputs(specs, backend, seed)
    xp = dt
    if competitor == "dask.array":
        xp, x = da, {k: v.to_dask() for k, v in x.items()}
    client.run(_reset_transfers)
    _reset_transfers()
    t0 = time.perf_counter()
    with dt.diagnostics.measure(client) as m:
        outs = fn(xp, x, _identity)
        outs = dask.persist(Joint(*outs) if xp is dt and len(outs) > 1 else outs)[0]
        wait(outs)
        client.run(synchronize)
    seconds = time.perf_counter() - t0
    counts = list(client.run(_transfers).values()) + [_transfers()]
    copies = {k: sum(c[k] for c in counts) for k in ("device_to_host", "host_to_device")}
    strategies = " | ".join(",".join(op.strategy for op in e.operators if op.kind in ("matmul", "einsum"))
                            for e in m.explains)
    del outs, x
    return dict(seconds=seconds, bytes=m.bytes_moved, copies=copies, strategies=strategies)


def _identity(*arrays):
    return arrays


# ---------------------------------------------------------------- single-process baselines

def _cupy_matmul(n, repeat):
    import cupy
    rng = cupy.random.default_rng(0)
    a = rng.random((n, n), dtype=cupy.float32)
    b = rng.random((n, n), dtype=cupy.float32)
    cupy.matmul(a, b)
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        c = cupy.matmul(a, b)
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
        del c
    return times


def _torch_ffnn(dims, repeat):
    import torch
    x = {name: torch.empty(shape, device="cuda", dtype=torch.float32).uniform_(low, high)
         for name, (shape, _, low, high) in _ffnn_inputs(dims).items()}
    ffnn_torch(torch, x)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = ffnn_torch(torch, x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        del out
    return times


def in_fresh_process(fn, *args):
    """``fn(*args)`` in a spawned process (its own CUDA context, freed when it exits)."""
    import concurrent.futures as cf
    import multiprocessing as mp
    with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as ex:
        return ex.submit(fn, *args).result()


# ---------------------------------------------------------------- the benchmarks

def _row(workload, competitor, times, flops, **extra):
    t = statistics.median(times)
    return dict(workload=workload, competitor=competitor, times=times, seconds=t, tflops=flops / t / 1e12, **extra)


def _cluster_rows(client, workload, fn, specs, flops, competitors, repeat, log):
    rows = []
    for c in competitors:
        run_on_cluster(client, fn, specs, c)  # warm-up (CUDA contexts, kernels, plans)
        recs = [run_on_cluster(client, fn, specs, c, seed=i + 1) for i in range(repeat)]
        rows.append(_row(workload, c, [r["seconds"] for r in recs], flops,
                         bytes_moved=statistics.median(r["bytes"] for r in recs), copies=recs[-1]["copies"],
                         strategies=recs[-1]["strategies"]))
        log(_fmt(rows[-1]))
    return rows


def bench_matmul(n, chunk, repeat, log=print):
    """n×n float32 matmul: dask_tra (CuPy chunks, one GPU worker) vs cupy.matmul."""
    flops = 2 * n ** 3
    rows = [_row(f"matmul-{n}", "cupy.matmul", in_fresh_process(_cupy_matmul, n, repeat), flops)]
    log(_fmt(rows[-1]))
    specs = {"A": ((n, n), (chunk, chunk), -1, 1), "B": ((n, n), (chunk, chunk), -1, 1)}
    cluster, client = start_gpu_cluster(1)
    with cluster, client:
        rows += _cluster_rows(client, f"matmul-{n}", matmul, specs, flops, ["dask_tra"], repeat, log)
    rows[-1]["ratio"] = rows[-1]["tflops"] / rows[0]["tflops"]
    return rows


def bench_ffnn(repeat, log=print):
    """FFNN SGD step, ffnn-speech and ffnn-xml ×10: dask_tra (CuPy, one GPU worker) vs PyTorch CUDA."""
    rows = []
    why = torch_cuda_unavailable()
    cluster, client = start_gpu_cluster(1)
    with cluster, client:
        for name in ("ffnn-speech", "ffnn-xml"):
            dims = scaled(name)
            label, flops = f"{name}×10", _ffnn_flops(dims)
            if why is None:
                rows.append(_row(label, "torch (CUDA, autograd)", in_fresh_process(_torch_ffnn, dims, repeat), flops))
                log(_fmt(rows[-1]))
            else:
                log(f"[bench] {label}: no PyTorch CUDA competitor: {why}")
            rows += _cluster_rows(client, label, ffnn_step, _ffnn_inputs(dims), flops, ["dask_tra"], repeat, log)
    return rows


def bench_paper_mm(repeat, log=print):
    """The three paper matmul shapes ×10 on two GPU workers: dask_tra vs dask.array, CuPy chunks."""
    import dask_tra as dt
    rows = []
    cluster, client = start_gpu_cluster(2)
    with cluster, client, dt.config.set(gpu_memory_limit=0.4):  # two workers share the device
        for name in ("mm-general", "mm-common-large", "mm-two-large"):
            dims = scaled(name)
            rows += _cluster_rows(client, f"{name}×10", matmul, _mm_inputs(dims), _mm_flops(dims),
                                  ["dask_tra", "dask.array"], repeat, log)
    return rows


BENCHES = ("matmul", "ffnn", "paper-mm")


def _fmt(r):
    copies = r.get("copies")
    extra = "" if copies is None else (f"  moved {r['bytes_moved'] / 2**20:.1f} MiB, copies d→h {copies['device_to_host']}"
                                       f" h→d {copies['host_to_device']}  [{r['strategies']}]")
    ratio = f"  ({r['ratio']:.0%} of cupy.matmul)" if "ratio" in r else ""
    return f"  {r['workload']:22s} {r['competitor']:24s} {r['seconds']:.3f}s  {r['tflops']:.1f} TFLOP/s{ratio}{extra}"


def environment():
    import cupy

    from .cli import machine, versions
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return dict(machine=machine(), versions={**versions(), "cupy": cupy.__version__},
                gpu=f"{name}, {props['totalGlobalMem'] / 2**30:.0f} GiB",
                cuda_runtime=cupy.cuda.runtime.runtimeGetVersion(), driver=cupy.cuda.runtime.driverGetVersion())


def write(rows, env, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results-gpu.json"), "w") as f:
        json.dump(dict(environment=env, rows=rows), f, indent=1)
    lines = [f"GPU: {env['gpu']}; {env['machine']}; {env['versions']}", "",
             "| workload | competitor | time (median) | TFLOP/s | moved between workers | device→host / host→device copies | plan |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r.get("copies")
        tflops = f"{r['tflops']:.1f}" + (f" ({r['ratio']:.0%} of cupy.matmul)" if "ratio" in r else "")
        moved = "" if c is None else f"{r['bytes_moved'] / 2**20:.1f} MiB"
        copies = "" if c is None else f"{c['device_to_host']} / {c['host_to_device']}"
        lines.append(f"| {r['workload']} | {r['competitor']} | {r['seconds']:.3f}s | {tflops} | {moved} | {copies} "
                     f"| {r.get('strategies', '')} |")
    with open(os.path.join(out, "results-gpu.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def run(args, log=print) -> int:
    why = gpu_unavailable()
    if why is not None:
        log(f"[bench] the GPU benchmarks need a CUDA GPU that CuPy can use: {why}. Nothing was measured.")
        return 2
    only = args.only.split(",") if args.only else list(BENCHES)
    unknown = set(only) - set(BENCHES)
    if unknown:
        log(f"[bench] unknown GPU benchmarks {sorted(unknown)}; choose from {list(BENCHES)}")
        return 2
    env = environment()
    log(f"[bench] {env}")
    rows = []
    if "matmul" in only:
        rows += bench_matmul(args.n, args.chunk, args.repeat, log)
    if "ffnn" in only:
        rows += bench_ffnn(args.repeat, log)
    if "paper-mm" in only:
        rows += bench_paper_mm(args.repeat, log)
    write(rows, env, args.out)
    log(f"[bench] wrote {os.path.join(args.out, 'results-gpu.md')} (+ .json)")
    return 0

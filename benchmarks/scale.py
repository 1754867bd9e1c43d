"""``python -m benchmarks scale``: how planning and bookkeeping grow, against dask.array.

- matmul: A @ B in 1000² blocks at 10² … 160² blocks, metadata only, 16 sites: dask_tra's
  planning (``explain``), planning + emission (the whole Dask graph), and dask.array's graph
  build + materialization of the same product;
- iteration: ``w = w - lr * X.T @ (X @ w - y)`` for 10/20/50 iterations on a 4-worker
  LocalCluster: planning time, and plan + compute against dask.array's compute;
- sites: ``(A @ B).sum(0)`` at 40² and 80² blocks of 1000², metadata only, planned for 16, 64,
  256 and 1024 sites (``explain(sites=...)``, cold plan cache), against dask.array's graph build
  of the same expression (which does not depend on the workers);
- depth: 1000 chained elementwise ops, computed, against dask.array;
- build: the time to build one ``x = x + 1`` at chain depths 100 … 10,000 (metadata only: an
  operation's cost must not grow with the depth of the expression it extends);
- reuse: a 10-step FFNN training loop (the paper suite's ``ffnn-xml`` step, quick sizes):
  planning time per step (step 2 re-costs step 1's plan for where step 1's outputs landed;
  later steps replay it; each asks the scheduler where its inputs are in one round trip).
"""
from __future__ import annotations

import json
import os
import time

import numpy as np


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def matmul_rows(sizes, sites=16, dask_max=80, emit_max=80):
    import dask.array as da

    import dask_tra as dt
    from dask_tra.optimizer import cache
    rows = []
    for nb in sizes:
        n = nb * 1000
        cache.clear()
        A = dt.random.random((n, n), chunks=1000, seed=1)
        B = dt.random.random((n, n), chunks=1000, seed=2)
        z = A @ B
        t_plan, e = _timed(lambda: z.explain(sites=sites))
        row = dict(blocks=nb, plan_s=t_plan, strategy=e.operators[0].strategy)
        if nb <= emit_max:
            cache.clear()
            z2 = A @ B
            with dt.config.set(sites=sites):
                t_emit, g = _timed(lambda: len(dict(z2.__dask_graph__())))
            row.update(plan_emit_s=t_emit, tasks=g)
        if nb <= dask_max:
            a = da.random.random((n, n), chunks=1000)
            b = da.random.random((n, n), chunks=1000)
            t_da, ntasks = _timed(lambda: len(dict((a @ b).__dask_graph__())))
            row.update(dask_s=t_da, dask_tasks=ntasks, plan_ratio=t_plan / t_da)
            if "plan_emit_s" in row:
                row["plan_emit_ratio"] = row["plan_emit_s"] / t_da
        rows.append(row)
        print(row, flush=True)
    return rows


def sites_rows(blocks=(40, 80), sites=(16, 64, 256, 1024), dask=True):
    """Planning ``(A @ B).sum(0)`` per (blocks, sites), against dask.array's graph build."""
    import dask.array as da

    import dask_tra as dt
    from dask_tra.optimizer import cache
    rows = []
    for nb in blocks:
        n = nb * 1000
        t_da = None
        if dask:
            a = da.random.random((n, n), chunks=1000)
            b = da.random.random((n, n), chunks=1000)
            t_da, _ = _timed(lambda: len(dict((a @ b).sum(0).__dask_graph__())))
        for s in sites:
            cache.clear()
            A = dt.random.random((n, n), chunks=1000, seed=1)
            B = dt.random.random((n, n), chunks=1000, seed=2)
            z = (A @ B).sum(0)
            t_plan, e = _timed(lambda: z.explain(sites=s))
            row = dict(blocks=nb, sites=s, plan_s=t_plan, strategy=e.operators[0].strategy,
                       predicted_bytes=int(e.predicted_bytes))
            if t_da is not None:
                row.update(dask_s=t_da, plan_ratio=t_plan / t_da)
            rows.append(row)
            print(row, flush=True)
    return rows


def _gd(xp, X, y, w, iters):
    for _ in range(iters):
        w = w - 1e-4 * (X.T @ (X @ w - y))
    return w


def iteration_rows(client, iters=(10, 20, 50)):
    import dask.array as da

    import dask_tra as dt
    from dask_tra.optimizer import cache
    rng = np.random.default_rng(0)
    Xn, yn = rng.standard_normal((10_000, 100)), rng.standard_normal((10_000, 1))
    rows = []
    for n in iters:
        X = dt.from_array(Xn, chunks=(1000, 100))
        y = dt.from_array(yn, chunks=(1000, 1))
        w = _gd(dt, X, y, dt.zeros((100, 1), chunks=(100, 1)), n)
        cache.clear()
        t_plan, _ = _timed(lambda: w.explain())
        w = _gd(dt, X, y, dt.zeros((100, 1), chunks=(100, 1)), n)
        cache.clear()  # plan + compute includes the whole search
        t_all, got = _timed(lambda: w.compute())
        Xd, yd = da.from_array(Xn, chunks=(1000, 100)), da.from_array(yn, chunks=(1000, 1))
        t_da, want = _timed(lambda: _gd(da, Xd, yd, da.zeros((100, 1), chunks=(100, 1)), n).compute())
        assert np.allclose(got, want), "gradient descent: dask_tra and dask.array disagree"
        rows.append(dict(iterations=n, plan_s=t_plan, plan_compute_s=t_all, dask_s=t_da, ratio=t_all / t_da))
        print(rows[-1], flush=True)
    return rows


def depth_row(client, n=1000):
    import dask.array as da

    import dask_tra as dt
    base = np.random.default_rng(1).standard_normal((300, 400))
    x = dt.from_array(base, chunks=(70, 90))
    for _ in range(n):
        x = x + 1.0
    t, got = _timed(x.compute)
    d = da.from_array(base, chunks=(70, 90))
    for _ in range(n):
        d = d + 1.0
    t_da, want = _timed(d.compute)
    assert np.allclose(got, want)
    row = dict(ops=n, dask_tra_s=t, dask_s=t_da, ratio=t / t_da)
    print(row, flush=True)
    return row


def build_rows(depths=(100, 1000, 10000), window=100):
    """Per depth: the mean time of the last ``window`` ``x = x + 1`` of a chain that deep
    (nothing computed), against building the same ops with dask.array."""
    import dask.array as da

    import dask_tra as dt
    rows = []
    for n in depths:
        row = dict(depth=n)
        for key, lib in (("dask_tra_ms", dt), ("dask_ms", da)):
            x = _plus_ones(lib.from_array(np.ones((30, 40)), chunks=(10, 20)), n - window)
            t, _ = _timed(lambda: _plus_ones(x, window))
            row[key] = t / window * 1000
        rows.append(row)
        print(rows[-1], flush=True)
    return rows


def _plus_ones(x, n):
    for _ in range(n):
        x = x + 1
    return x


def reuse_rows(client, steps=10):
    """Per step: ``planned()`` in all, of which the optimizer (``plan_many``: the search, a replay
    or a re-cost) and reading the workers and the inputs' placements (a scheduler round trip)."""
    import dask

    import dask_tra as dt
    from dask_tra.autodiff import Joint
    from dask_tra.optimizer import cache

    from .competitors import ClientTimers
    from .workloads import SUITES, make_inputs
    w = next(w for w in SUITES["paper"] if w.name == "ffnn-xml")
    dims = w.size(quick=True)
    x = make_inputs(w, dims, seed=0)
    x = dict(zip(x, dask.persist(*x.values())))
    cache.clear()
    rows = []
    for step in range(steps):
        w1, w2 = w.fn(dt, x, lambda *a: a)
        j = Joint(w1, w2)
        with ClientTimers() as ct:
            t_plan, _ = _timed(j.planned)
        t_all, (w1, w2) = _timed(lambda: _persist_wait(j))
        x["W1"], x["W2"] = w1, w2
        rows.append(dict(step=step + 1, plan_ms=t_plan * 1000, optimizer_ms=ct.plan_s * 1000,
                         query_ms=ct.query_s * 1000, step_s=t_all))
        print(rows[-1], flush=True)
    return rows


def _persist_wait(j):
    from distributed import wait
    out = __import__("dask").persist(j)[0]
    wait(list(out))
    return out


def run(args):
    from distributed import Client, LocalCluster
    if getattr(args, "only", None) == "sites":  # the sites axis alone (metadata only, no cluster)
        out = dict(sites=sites_rows(sites=args.sites))
        md = markdown(out)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "scale-sites.json"), "w") as f:
            json.dump(out, f, indent=1)
        print(md)
        return
    out = dict(matmul=matmul_rows(args.blocks, dask_max=args.dask_max, emit_max=args.emit_max))
    out["sites"] = sites_rows(sites=args.sites)
    out["build"] = build_rows()
    with LocalCluster(n_workers=4, threads_per_worker=1, memory_limit="4GiB", dashboard_address=":0") as cl, \
            Client(cl) as client:
        import dask_tra
        # the cluster's rates, measured once before any timed row (planning never measures; this
        # also has every worker import dask_tra, and so dask.array, before the first timed row)
        dask_tra.calibrate(client)
        out["iteration"] = iteration_rows(client)
        out["depth"] = depth_row(client)
        out["reuse"] = reuse_rows(client)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "scale.json"), "w") as f:
        json.dump(out, f, indent=1)
    md = markdown(out)
    with open(os.path.join(args.out, "scale.md"), "w") as f:
        f.write(md)
    plot(out, os.path.join(args.out, "scale.png"))
    print(md)


def sites_markdown(rows) -> list:
    lines = ["| blocks | sites | dask_tra plan | dask.array graph | plan ÷ dask | strategy |",
             "|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        da_s = f"{r['dask_s']:.3f} s" if "dask_s" in r else "-"
        ratio = f"{r['plan_ratio']:.3f}" if "plan_ratio" in r else "-"
        lines.append(f"| {r['blocks']}×{r['blocks']} | {r['sites']} | {r['plan_s']:.3f} s | {da_s} | {ratio} | "
                     f"{r['strategy']} |")
    return lines


def markdown(out) -> str:
    if "matmul" not in out:
        return "\n".join(sites_markdown(out.get("sites", ()))) + "\n"
    lines = ["| blocks | dask_tra plan | plan + emit | dask.array graph | plan ÷ dask | plan+emit ÷ dask | tasks (dask_tra / dask) | strategy |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in out["matmul"]:
        da_s = f"{r['dask_s']:.3f} s" if "dask_s" in r else "-"
        pe = f"{r['plan_emit_s']:.2f} s" if "plan_emit_s" in r else "-"
        lines.append(f"| {r['blocks']}×{r['blocks']} | {r['plan_s']:.3f} s | {pe} | {da_s} | "
                     f"{r.get('plan_ratio', float('nan')):.3f} | {r.get('plan_emit_ratio', float('nan')):.2f} | "
                     f"{r.get('tasks', '-')} / {r.get('dask_tasks', '-')} | {r['strategy']} |")
    if out.get("sites"):
        lines += [""] + sites_markdown(out["sites"])
    lines += ["", "| GD iterations | planning | plan + compute | dask.array | ratio |", "|---:|---:|---:|---:|---:|"]
    for r in out["iteration"]:
        lines.append(f"| {r['iterations']} | {r['plan_s']:.3f} s | {r['plan_compute_s']:.2f} s | {r['dask_s']:.2f} s | "
                     f"{r['ratio']:.2f} |")
    d = out["depth"]
    lines += ["", f"1000 chained elementwise ops: dask_tra {d['dask_tra_s']:.2f} s, dask.array {d['dask_s']:.2f} s "
                  f"(ratio {d['ratio']:.2f}).", "", "| chain depth | build one `x = x + 1`: dask_tra | dask.array |",
              "|---:|---:|---:|"]
    for r in out.get("build", ()):
        lines.append(f"| {r['depth']} | {r['dask_tra_ms']:.3f} ms | {r['dask_ms']:.3f} ms |")
    lines += ["", "| FFNN step | optimizer | workers and placements | planned() in all | step |", "|---:|---:|---:|---:|---:|"]
    for r in out["reuse"]:
        lines.append(f"| {r['step']} | {r['optimizer_ms']:.1f} ms | {r['query_ms']:.1f} ms | {r['plan_ms']:.1f} ms "
                     f"| {r['step_s']:.2f} s |")
    return "\n".join(lines) + "\n"


def plot(out, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rows = out["matmul"]
    fig, ax = plt.subplots(figsize=(6, 4))
    nb = [r["blocks"] for r in rows]
    ax.loglog(nb, [r["plan_s"] for r in rows], "o-", label="dask_tra planning")
    em = [r for r in rows if "plan_emit_s" in r]
    ax.loglog([r["blocks"] for r in em], [r["plan_emit_s"] for r in em], "s-", label="dask_tra planning + emission")
    da_rows = [r for r in rows if "dask_s" in r]
    ax.loglog([r["blocks"] for r in da_rows], [r["dask_s"] for r in da_rows], "^-", label="dask.array graph")
    ax.set_xlabel("blocks per side (A @ B, 1000² blocks, 16 sites)")
    ax.set_ylabel("seconds")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)

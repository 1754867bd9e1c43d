"""The demo: the TRA paper's three matmul shapes, scaled to one machine, planned and run on a
Dask cluster with dask_tra and with dask.array on the same inputs."""

from __future__ import annotations

import time

import numpy as np

from .backends.cluster import workers_info

SHAPES = {  # (I, K, J): the paper's general, common-large-dim and two-large-dims cases, scaled
    "general": (4000, 4000, 4000),
    "common large dim": (1000, 64000, 1000),
    "two large dims": (8000, 1000, 8000),
}


LEGEND = """\
strategy:   how the product is spread over the workers. "split 2×1×2": rows × summed axis × columns
            cut into 2×1×2 pieces, one per worker (partial sums are added up where the summed axis
            is cut); "co-partition": both inputs split on the summed axis, partial results summed
            across workers; "broadcast": the smaller input sent to every worker.
predicted:  bytes dask_tra's plan moves between workers, plus gathering the result on one worker
            (explain(): "moves" plus "to gather the result").
measured:   what the workers' transfer logs say they received, for the same computation.
dask_tra, dask.array: wall time of the product; da moved: bytes dask.array moved for it."""


def run_demo(scheduler=None, workers=4, scale=1.0) -> int:
    from dask.utils import format_bytes
    from distributed import Client, LocalCluster

    import dask_tra as dt

    from .optimizer.explain import short_strategy

    if scheduler:
        client, cluster = Client(scheduler), None
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        client = Client(cluster)
    n = len(workers_info(client))
    link = dashboard_link(client)
    if link:
        where = f" (dashboard: {link})"
    elif scheduler is None and not bokeh_ok():
        where = f' (no dashboard: it needs {_bokeh_requirement()}: pip install "dask_tra[diagnostics]")'
    else:
        where = ""
    print(f"dask_tra demo on {n} workers{where}")
    # measured once, stored on the scheduler for every client of this cluster; also has every
    # worker import dask_tra, so no product's time includes it
    rates = dt.calibrate(client)
    print(f"rates measured by dt.calibrate(client): {describe_rates(rates)}\n")
    header = (
        f"{'shape':18s} {'I×K×J':>18s} {'strategy':>13s} {'predicted':>11s} {'measured':>11s} "
        f"{'dask_tra':>9s} {'dask.array':>11s} {'da moved':>10s}"
    )
    print(header)
    print("-" * len(header))
    ok = True
    try:
        for name, dims in SHAPES.items():
            i, k, j = (max(8, int(d * scale)) for d in dims)
            a = dt.random.uniform(-1, 1, (i, k), chunks=(-(-i // 4), -(-k // 8)), seed=1)
            b = dt.random.uniform(-1, 1, (k, j), chunks=(-(-k // 8), -(-j // 4)), seed=2)
            z = a @ b
            t0 = time.perf_counter()
            with dt.diagnostics.measure(client) as m:
                got = z.compute()
            t_tra = time.perf_counter() - t0
            da_a, da_b = a.to_dask(), b.to_dask()  # the same inputs, as dask.arrays
            t0 = time.perf_counter()
            with dt.diagnostics.measure(client) as md:
                want = (da_a @ da_b).compute()
            t_da = time.perf_counter() - t0
            same = np.allclose(got, want, rtol=1e-8, atol=1e-8)
            ok &= same
            op = z.explain().operators[0]
            print(
                f"{name:18s} {f'{i}×{k}×{j}':>18s} {short_strategy(op.strategy):>13s} "
                f"{format_bytes(m.predicted_bytes):>11s} {format_bytes(m.bytes_moved):>11s} "
                f"{t_tra:8.2f}s {t_da:10.2f}s {format_bytes(md.bytes_moved):>10s}"
                + ("" if same else "  RESULTS DIFFER")
            )
        print("\n" + LEGEND + "\n\nThe last plan:\n")
        print(z.explain())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return 0 if ok else 1


def describe_rates(rates: dict) -> str:
    words = {
        "bandwidth": "{:.0f} MB/s per worker",
        "task_overhead": "{:.2f} ms per task",
        "flop_rate": "{:.1f} GFLOP/s per worker",
    }
    scale = {"bandwidth": 1e-6, "task_overhead": 1e3, "flop_rate": 1e-9}
    return ", ".join(words[k].format(v * scale[k]) for k, v in rates.items()) or "none (one worker)"


def _bokeh_requirement() -> str:
    from distributed.versions import BOKEH_REQUIREMENT

    return str(BOKEH_REQUIREMENT)


def bokeh_ok() -> bool:
    """Whether this process has a bokeh the Dask dashboard accepts (distributed's own check)."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import distributed.dashboard.scheduler  # noqa: F401 (ImportError: no bokeh, or too old)
    except ImportError:
        return False
    return True


def _dashboard_served(dask_scheduler) -> bool:
    """On the scheduler: whether it serves a dashboard, with a bokeh distributed accepts (without
    one it serves only a page saying "Dask needs bokeh>=3.1.0")."""
    return "dashboard" in dask_scheduler.services and bokeh_ok()


def dashboard_link(client, timeout=3.0) -> str | None:
    """The cluster's dashboard link, when it works: the scheduler serves a real dashboard (bokeh
    at a version distributed accepts: ``pip install dask_tra[diagnostics]``) and the link
    answers from here. None otherwise."""
    import urllib.request

    try:
        link = client.dashboard_link
        if not link or not client.run_on_scheduler(_dashboard_served):
            return None
        with urllib.request.urlopen(link, timeout=timeout) as r:
            return link if r.status == 200 else None
    except Exception:  # noqa: BLE001 (no link to show: unreachable, refused, no dashboard)
        return None

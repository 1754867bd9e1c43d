"""The demo: the TRA paper's three matmul shapes, scaled to one machine, planned and run on a
Dask cluster with dask_tra and with dask.array on the same inputs."""

from __future__ import annotations

import time

import numpy as np

SHAPES = {  # (I, K, J): the paper's general, common-large-dim and two-large-dims cases, scaled
    "general": (4000, 4000, 4000),
    "common large dim": (1000, 64000, 1000),
    "two large dims": (8000, 1000, 8000),
}


def run_demo(scheduler=None, workers=4, scale=1.0) -> int:
    from distributed import Client, LocalCluster

    import dask_tra as dt
    from .dask.rates import ensure_measured
    from .optimizer.explain import fmt_bytes

    if scheduler:
        client, cluster = Client(scheduler), None
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        client = Client(cluster)
    n = len(client.scheduler_info(n_workers=-1)["workers"])
    ensure_measured(client)  # the one-off probe of the cluster (workers import dask_tra) is not a product's time
    print(f"dask_tra demo on {n} workers (dashboard: {client.dashboard_link})\n")
    header = (
        f"{'shape':18s} {'I×K×J':>18s} {'strategy':>10s} {'predicted':>11s} {'measured':>11s} "
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
                f"{name:18s} {f'{i}×{k}×{j}':>18s} {op.strategy:>10s} {fmt_bytes(m.predicted_bytes):>11s} "
                f"{fmt_bytes(m.bytes_moved):>11s} {t_tra:8.2f}s {t_da:10.2f}s {fmt_bytes(md.bytes_moved):>10s}"
                + ("" if same else "  RESULTS DIFFER")
            )
        print(
            "\npredicted/measured: worker-to-worker bytes of dask_tra's plan (measured from the "
            "workers' transfer logs);\nda moved: what dask.array moved for the same product. "
            "The last plan in full:\n"
        )
        print(z.explain())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return 0 if ok else 1

"""Block-sparse × dense matmul on a LocalCluster: two-phase placement against the static plans.

A block-sparse matrix (only some 250² blocks held; a missing block is zeros) with power-law row
degrees, and a dense one, are persisted on 4 workers and rebalanced (an irregular placement, as
after other work). dask_tra plans ``A @ B`` from the key sets and where each block is: the
two-phase strategy places every block product and output block by the paper's greedy, and
competes with bmm/cmm/rmm by predicted time. The script prints the plan, then each strategy's
bytes (predicted = measured) and time, and checks every result against NumPy.

    python examples/block_sparse.py
"""
from __future__ import annotations

import time

import numpy as np
from distributed import Client, LocalCluster, futures_of, wait

import dask_tra as dt


def run(force, a, b, want):
    z = a @ b
    with dt.config.set(force=force), dt.diagnostics.measure() as m:
        t0 = time.perf_counter()
        got = z.persist()
        wait(futures_of(got))
        seconds = time.perf_counter() - t0
    assert np.allclose(got.compute(), want), force
    assert m.bytes_moved == m.predicted_bytes, (force, m.bytes_moved, m.predicted_bytes)
    strategy = next(o.strategy for o in z.explain().operators if o.kind == "matmul")
    return strategy, m.bytes_moved, seconds, z


def inputs(c, n, k, m, block, density):
    """A (block-sparse, power-law rows) and B (dense), persisted and rebalanced: fresh for each
    plan, so no plan finds copies an earlier one left."""
    a = dt.block_sparse_random((n, k), chunks=block, density=density, seed=1, pattern="power-law")
    b = dt.random.uniform(-1, 1, (k, m), chunks=block, seed=2)
    a, b = dt.persist(a, b)
    wait(futures_of([a, b]))
    c.rebalance()
    return a, b


def main(n=4000, k=4000, m=1000, block=250, density=0.05):
    with LocalCluster(n_workers=4, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster) as c:
        a, b = inputs(c, n, k, m, block, density)
        print(f"A: {n}×{k}, {a.nnzblocks} of {a.npartitions} blocks held; B: {k}×{m} dense; 4 workers")
        want = a.compute() @ b.compute()
        rows = []
        for force in (None, "two-phase", "bmm", "cmm", "rmm"):
            a, b = inputs(c, n, k, m, block, density)
            strategy, moved, seconds, z = run(force, a, b, want)
            rows.append((force or "auto", strategy, moved, seconds))
            if force is None:
                print(z.explain())
        print(f"\n{'plan':>10} {'strategy':>12} {'moved (= predicted)':>22} {'time':>8}")
        for name, strategy, moved, seconds in rows:
            print(f"{name:>10} {strategy:>12} {moved / 2**20:>18.2f} MiB {seconds:>7.2f}s")


if __name__ == "__main__":
    main()

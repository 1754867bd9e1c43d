"""``python -m benchmarks recovery``: a worker killed under a deep lineage, dask_tra against dask.array.

For each depth: ``x = from_array(a)``, then ``x = (1 - x).persist()`` that many times (a loop of
persisted generations, as an iterative algorithm makes), then the worker holding the fewest of
x's blocks killed (``os._exit``), then ``x.compute()``. The time reported is recovery: from the
kill to the result in the client (both libraries learn of the death the same way, and dask.array
starts recomputing before ``compute`` is called). Each (library, depth) runs on a fresh
LocalCluster of ``--workers`` single-thread worker processes; the result is checked against NumPy.

dask.array recomputes the lost blocks from the tasks the scheduler keeps (a chain as long as the
loop, per lost block). dask_tra's from_array blocks are scattered (no task), so the scheduler
cancels the lost blocks; dask_tra recomputes them from the lineage it keeps (``runtime/recovery.py``):
one expression of the chain, planned once, culled to the lost blocks.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from dask_tra.backends.cluster import workers_info


def _kill(client, worker):
    client.run(os._exit, 1, workers=[worker], on_error="ignore")
    deadline = time.time() + 60
    while worker in workers_info(client):
        if time.time() > deadline:
            raise TimeoutError(f"worker {worker} still listed 60 s after it was killed")
        time.sleep(0.05)


def run_one(library: str, depth: int, n: int, chunk: int, workers: int) -> dict:
    """{'loop_s', 'recover_s', 'lost', 'ok'} for one library at one depth, on a fresh cluster."""
    from distributed import Client, LocalCluster, futures_of, wait

    import dask.array as da
    import dask_tra as dt

    a = np.random.default_rng(0).standard_normal((n, n))
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        lib = da if library == "dask.array" else dt
        x = lib.from_array(a, chunks=chunk)
        want = a
        t0 = time.perf_counter()
        for _ in range(depth):
            x = (1 - x).persist()
            want = 1 - want
        wait(x)
        loop = time.perf_counter() - t0
        holders = client.who_has(futures_of(x))
        counts = {}
        for ws in holders.values():
            for w in ws:
                counts[w] = counts.get(w, 0) + 1
        victim = min(counts, key=counts.get)
        t0 = time.perf_counter()
        _kill(client, victim)
        got = x.compute()
        recover = time.perf_counter() - t0
        return dict(loop_s=loop, recover_s=recover, lost=counts[victim], blocks=len(holders),
                    ok=bool(np.allclose(got, want, rtol=1e-12)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks recovery", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--depths", type=lambda v: [int(d) for d in v.split(",")], default=[300, 2000],
                   help="loop lengths (default 300,2000)")
    p.add_argument("--n", type=int, default=1000, help="the array is n × n float64 (default 1000)")
    p.add_argument("--chunk", type=int, default=500, help="chunk side (default 500: 4 blocks)")
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--libraries", default="dask_tra,dask.array")
    p.add_argument("--write", default=None, metavar="MD", help="also write the table to this Markdown file")
    args = p.parse_args(argv)
    rows = []
    for depth in args.depths:
        for library in args.libraries.split(","):
            r = run_one(library, depth, args.n, args.chunk, args.workers)
            rows.append(dict(library=library, depth=depth, **r))
            print(f"[recovery] {library:10s} depth {depth:5d}: loop {r['loop_s']:7.1f} s, "
                  f"recovery {r['recover_s']:6.2f} s ({r['lost']} of {r['blocks']} blocks on the killed "
                  f"worker), result {'ok' if r['ok'] else 'WRONG'}", flush=True)
    lines = [f"Recovery after a worker is killed under a loop of `x = (1 - x).persist()` "
             f"({args.n}×{args.n} float64 in {args.chunk}² chunks, {args.workers} worker processes): "
             "seconds from the kill to the result.", "",
             "| depth | library | recovery (s) | loop (s) | result |", "|---|---|---|---|---|"]
    lines += [f"| {r['depth']} | {r['library']} | {r['recover_s']:.2f} | {r['loop_s']:.1f} | "
              f"{'ok' if r['ok'] else 'WRONG'} |" for r in rows]
    print("\n" + "\n".join(lines))
    if args.write:
        with open(args.write, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1

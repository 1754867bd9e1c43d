"""``python -m benchmarks tasks``: how many tasks each paper workload sends to the scheduler,
dask_tra against dask.array, on the same inputs and the same 4-worker LocalCluster.

A count is the graph the scheduler receives (the collections turned into one expression and
optimized as ``dask.persist`` does, then materialized), less the keys already in memory
(persisted inputs' futures). Inputs are persisted first (``--inputs persisted``, as in
``python -m benchmarks run``) or made inside the graph (``--inputs lazy``). Counts depend on
block counts, not sizes, so the quick sizes are the default.
"""
from __future__ import annotations

import argparse
import sys

from .workloads import SUITES, make_inputs


def graph_tasks(*collections) -> dict:
    """{task key: task} that persisting ``collections`` submits, without keys already in memory."""
    from dask.base import collections_to_expr
    from dask.task_spec import Alias, DataNode
    from distributed import Future

    dsk = collections_to_expr(list(collections), optimize_graph=True).optimize().__dask_graph__()
    held = {k for k, v in dsk.items() if isinstance(v, Future)
            or (isinstance(v, DataNode) and isinstance(v.value, Future))}
    return {k: v for k, v in dsk.items() if k not in held
            and not (isinstance(v, Alias) and v.target in held and v.key == v.target)}


def by_kind(tasks) -> dict:
    from dask.utils import key_split
    kinds = {}
    for k in tasks:
        kinds[key_split(k)] = kinds.get(key_split(k), 0) + 1
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1]))


def workload_graphs(w, dims, competitor, lazy, joint):
    """The collections ``competitor`` persists for workload ``w`` (inputs persisted unless ``lazy``)."""
    import dask
    import dask.array as da
    from distributed import wait

    import dask_tra as dt
    inputs = make_inputs(w, dims, 0)
    x = dict(inputs)
    if not lazy:
        persisted = dask.persist(*inputs.values())
        wait(list(persisted))
        x = dict(zip(inputs, persisted))
    if competitor == "dask.array":
        return w.fn(da, {k: v.to_dask() for k, v in x.items()}, _identity)
    outs = w.fn(dt, x, _identity)
    return (joint(*outs),) if len(outs) > 1 else outs


def _identity(*arrays):
    return arrays


def table(rows) -> str:
    lines = ["| workload | dask_tra tasks | dask.array tasks | ratio | dask_tra tasks by kind |",
             "|---|---:|---:|---:|---|"]
    for name, ours, theirs, kinds in rows:
        lines.append(f"| {name} | {ours} | {theirs} | {ours / theirs:.2f} | "
                     + ", ".join(f"{k} {n}" for k, n in kinds.items()) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks tasks", description=__doc__)
    p.add_argument("--suite", default="paper", choices=sorted(SUITES))
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--inputs", choices=("persisted", "lazy"), default="persisted")
    p.add_argument("--full", action="store_true", help="the full sizes (default: quick sizes)")
    p.add_argument("--only", default=None, help="comma-separated workload names")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    from distributed import Client, LocalCluster

    from dask_tra.autodiff import Joint
    workloads = [w for w in SUITES[args.suite] if args.only is None or w.name in args.only.split(",")]
    rows = []
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        import dask_tra
        dask_tra.calibrate(client)  # plans costed with this cluster's rates (planning never measures them)
        for w in workloads:
            dims = w.size(not args.full)
            counts = {}
            for competitor in ("dask_tra", "dask.array"):
                outs = workload_graphs(w, dims, competitor, args.inputs == "lazy", Joint)
                counts[competitor] = graph_tasks(*outs)
            ours, theirs = counts["dask_tra"], counts["dask.array"]
            rows.append((w.name, len(ours), len(theirs), by_kind(ours)))
            print(f"{w.name}: dask_tra {len(ours)}, dask.array {len(theirs)}", flush=True)
    print(f"\nTasks per graph ({args.inputs} inputs, {args.workers} workers, "
          f"{'full' if args.full else 'quick'} sizes):\n")
    print(table(rows))
    return 0

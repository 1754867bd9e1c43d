"""``python -m benchmarks run ...``: run a suite, print the table, write Markdown, JSON and plots;
``python -m benchmarks soak --minutes 10``: the reliability soak (benchmarks/fuzz.py)."""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time

from . import report
from .competitors import (FORCED, FORCED_SPARSE, ClusterRunner, Result, add_timed_run, run_cluster_competitor,
                          run_single_competitor)
from .workloads import SUITES, describe_dims, input_bytes, missing_features

DEFAULT_COMPETITORS = ["numpy", "torch", "dask_tra"] + [f"dask_tra:{f}" for f in FORCED] + ["dask.array"]
SPARSE_COMPETITORS = (["numpy", "dask_tra"] + [f"dask_tra:{f}" for f in FORCED_SPARSE]
                      + ["dask.array", "dask.array:sparse"])
ALL_COMPETITORS = DEFAULT_COMPETITORS + [c for c in SPARSE_COMPETITORS if c not in DEFAULT_COMPETITORS]


def round_order(comps, i):
    """Round ``i``'s order of ``comps``: a balanced (Williams) sequence, mirrored every other
    round, so each competitor runs right after each other one (dask.array's big run above all,
    whose clean-up slows the next run) about equally often. A fixed order, or one rotated per
    round, keeps the same neighbours in every round."""
    n, pat, lo, hi = len(comps), [0], 1, len(comps) - 1
    while len(pat) < n:
        pat.append(lo)
        lo += 1
        if len(pat) < n:
            pat.append(hi)
            hi -= 1
    order = [comps[(i // 2 + p) % n] for p in pat] if n else []
    return order[::-1] if i % 2 else order


def default_competitors(suite):
    return SPARSE_COMPETITORS if suite == "sparse" else DEFAULT_COMPETITORS


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a benchmark suite")
    r.add_argument("--suite", default="paper", choices=sorted(SUITES))
    r.add_argument("--workers", type=int, default=4)
    r.add_argument("--net", default=None, metavar="RATE",
                   help="emulate a cluster network shaped to RATE (tc units, e.g. 250mbit); needs root")
    r.add_argument("--repeat", type=int, default=None, help="timed runs after the warm-up (default 3; 1 with --quick)")
    r.add_argument("--quick", action="store_true", help="small sizes: a 1-2 minute smoke run")
    r.add_argument("--size", choices=("default", "large"), default="default",
                   help="large: the matmuls at 4000³, 1000×64000×1000, 8000×1000×8000 in 1000² blocks "
                        "(only workloads with a large size run)")
    r.add_argument("--only", default=None, help="comma-separated workload names")
    r.add_argument("--competitors", default=None,
                   help=f"comma-separated subset of {','.join(ALL_COMPETITORS)} (default: "
                        f"{','.join(DEFAULT_COMPETITORS)}; suite sparse: {','.join(SPARSE_COMPETITORS)})")
    r.add_argument("--inputs", choices=("persisted", "lazy"), default="persisted",
                   help="persisted: inputs exist on the workers before the timed run, in one layout for "
                        "every competitor (default); lazy: made inside the timed run, dask_tra making "
                        "each block where its plan wants it")
    r.add_argument("--memory-limit", default="2GiB", help="per worker")
    r.add_argument("--out", default=os.path.join("docs", "benchmarks"))
    r.add_argument("--label", default=None, help="file name prefix (default: loopback or net-RATE, +quick)")
    r.add_argument("--log-dir", default=None, help="keep scheduler/worker logs of the emulated network here")
    rp = sub.add_parser("report", help="rewrite the Markdown table and plots from a results JSON")
    rp.add_argument("json")
    sc = sub.add_parser("scale", help="planning, emission, iteration, depth and plan reuse vs dask.array")
    sc.add_argument("--blocks", type=lambda v: [int(x) for x in v.split(",")], default=[10, 20, 40, 80, 160],
                    help="matmul sizes in blocks per side (default 10,20,40,80,160)")
    sc.add_argument("--dask-max", type=int, default=80,
                    help="largest size dask.array's graph is built for (160² blocks: ~4M tasks)")
    sc.add_argument("--emit-max", type=int, default=80, help="largest size whose graph dask_tra emits")
    sc.add_argument("--sites", type=lambda v: [int(x) for x in v.split(",")], default=[16, 64, 256, 1024],
                    help="sites axis: (A @ B).sum(0) at 40² and 80² blocks planned for these site counts "
                         "(default 16,64,256,1024)")
    sc.add_argument("--only", choices=("sites",), default=None,
                    help="sites: run the sites axis alone (metadata only, no cluster)")
    sc.add_argument("--out", default=os.path.join("docs", "benchmarks"))
    g = sub.add_parser("gpu", help="the GPU benchmarks (need a CUDA GPU with CuPy; see benchmarks/gpu.py)")
    g.add_argument("--only", default=None, help="comma-separated subset of matmul,ffnn,paper-mm")
    g.add_argument("--n", type=int, default=16384, help="matmul size (default 16384)")
    g.add_argument("--chunk", type=int, default=8192, help="matmul chunk size (default 8192)")
    g.add_argument("--repeat", type=int, default=3)
    g.add_argument("--out", default=os.path.join("docs", "benchmarks"))
    sub.add_parser("list", help="list the workloads")
    sub.add_parser("cleanup", help="remove namespaces/bridges left by killed runs")
    sub.add_parser("tasks", help="table the tasks per graph, dask_tra vs dask.array (see tasks --help)")
    sub.add_parser("memory", help="peak worker memory of computations larger than the cluster's memory, dask_tra vs "
                                  "dask.array (see memory --help)")
    sub.add_parser("everyday", help="everyday pipelines (xarray, reductions, slices, rechunks, loops): dask_tra vs "
                                    "dask.array and dask-array (see everyday --help)")
    cov = sub.add_parser("coverage", help="dask.array functions covered by dask_tra.array (table for docs/api.md)")
    cov.add_argument("--write", default=None, metavar="MD", help="write the table into this Markdown file")
    conf = sub.add_parser("conformance", help="run the Array API test suite from a checkout")
    conf.add_argument("--suite-dir", default=None, help="array-api-tests checkout (default: $ARRAY_API_TESTS_DIR)")
    conf.add_argument("--max-examples", type=int, default=3)
    conf.add_argument("--select", nargs="*", default=None, help="test files inside array_api_tests/")
    conf.add_argument("--write", default=None, metavar="MD", help="write the counts into this Markdown file")
    ds = sub.add_parser("dask-suite", help="dask's own array tests (from the installed wheel) against "
                                           "dask_tra.array, with dask.array as the baseline")
    ds.add_argument("files", nargs="*", help="test files to run (default: all but the GPU ones)")
    ds.add_argument("--jobs", type=int, default=2, help="test files run at once (one pytest process each)")
    ds.add_argument("--timeout", type=int, default=120, help="seconds per test before it counts as failed")
    ds.add_argument("--memory-gib", type=float, default=8, help="address-space cap per pytest process")
    ds.add_argument("--gpu", action="store_true", help="also the test_cupy_* files")
    ds.add_argument("--json", default=None, help="write every outcome to this JSON file")
    ds.add_argument("--write", default=None, metavar="MD", help="write the table into this Markdown file")
    ds.add_argument("--keep", action="store_true", help="keep the scratch copies (their path is printed)")
    sk = sub.add_parser("soak", help="random operations and worker faults on a LocalCluster, checked "
                                     "against NumPy (benchmarks/fuzz.py)")
    sk.add_argument("--minutes", type=float, default=10)
    sk.add_argument("--workers", type=int, default=4)
    sk.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def machine():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import psutil
        mem = f"{psutil.virtual_memory().total / 2**30:.1f} GiB"
    except ImportError:
        mem = "?"
    return f"{os.cpu_count()} cores ({model}), {mem} RAM, {platform.system()} {platform.release()}"


def versions():
    import dask
    import distributed
    import numpy
    out = {"python": platform.python_version(), "numpy": numpy.__version__, "dask": dask.__version__,
           "distributed": distributed.__version__}
    if importlib.util.find_spec("torch"):
        import torch
        out["torch"] = torch.__version__
    return out


def load():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def run(args):
    from .cluster import start_cluster
    repeat = args.repeat or (1 if args.quick else 3)
    workloads = SUITES[args.suite]
    if args.only:
        wanted = args.only.split(",")
        unknown = set(wanted) - {w.name for w in workloads}
        if unknown:
            sys.exit(f"unknown workloads: {sorted(unknown)}; see python -m benchmarks list")
        workloads = [w for w in workloads if w.name in wanted]
    comps = (args.competitors or ",".join(default_competitors(args.suite))).split(",")
    bad = set(comps) - set(ALL_COMPETITORS)
    if bad:
        sys.exit(f"unknown competitors {sorted(bad)}; choose from {ALL_COMPETITORS}")
    has_torch = importlib.util.find_spec("torch") is not None
    if "torch" in comps and not has_torch:
        print("[bench] torch not installed: skipping the PyTorch competitor (pip install torch==2.13.0)")
    no_sparse = None
    if "dask.array:sparse" in comps and importlib.util.find_spec("sparse") is None:
        no_sparse = "skipped: pydata sparse not installed (pip install sparse)"
        print(f"[bench] dask.array:sparse {no_sparse}")
        comps = [c for c in comps if c != "dask.array:sparse"]
    large = args.size == "large"
    if large and args.quick:
        sys.exit("--quick and --size large exclude each other")
    if large:
        workloads = [w for w in workloads if w.large is not None]
    label = args.label or (("net-" + args.net if args.net else "loopback") + ("-lazy" if args.inputs == "lazy" else "")
                           + ("-quick" if args.quick else "") + ("-large" if large else ""))
    print(f"[bench] machine: {machine()}")
    print(f"[bench] versions: {versions()}")
    print(f"[bench] load average: {load()}")
    t_start = time.time()
    results, skipped = [], {}
    runnable = []
    for w in workloads:
        miss = missing_features(w)
        if miss:
            skipped[w.name] = "dask_tra lacks " + "; ".join(miss)
            print(f"[bench] SKIP {w.name}: {skipped[w.name]}")
        else:
            runnable.append(w)
    load_before = load()
    with start_cluster(args.workers, args.net, args.memory_limit, args.log_dir) as (client, desc):
        networked = not desc.startswith("loopback")
        print(f"[bench] cluster: {desc}")
        runner = ClusterRunner(client, lazy_inputs=args.inputs == "lazy")
        import dask_tra
        # measured now, stored on the scheduler: what every plan of this run is costed with
        rates = dask_tra.calibrate(client)
        print(f"[bench] time objective's rates (dask_tra.calibrate): {report.describe_rates(rates)}")
        try:
            for w in runnable:
                dims = w.size(args.quick, large)
                t_w = time.time()
                print(f"\n[bench] {w.name}: {w.title}\n        {describe_dims(w, dims)} "
                      f"({input_bytes(w, dims) / 2**20:.0f} MiB of inputs; {w.note})")
                reference = None
                if "numpy" in comps or "torch" in comps:  # NumPy is the reference result
                    res, reference = run_single_competitor(w, args.suite, dims, "numpy", repeat)
                    if "numpy" in comps:
                        results.append(res)
                if "torch" in comps and has_torch and w.torch_fn is not None:
                    res, sums = run_single_competitor(w, args.suite, dims, "torch", repeat)
                    if sums is not None and reference is not None:
                        from .competitors import checksums_equal
                        res.check = "ok" if checksums_equal(sums, reference) else "DIFFERS"
                    results.append(res)
                cluster_comps = [c for c in comps if c not in ("numpy", "torch")
                                 and (w.contraction or not c.startswith("dask_tra:"))]
                cres = {c: run_cluster_competitor(runner, w, dims, c, repeat, reference) for c in cluster_comps}
                for i in range(repeat):  # every competitor once a round: load drift hits all alike
                    for c in round_order(cluster_comps, i):
                        add_timed_run(runner, cres[c], w, dims, c, seed=0)
                results.extend(cres.values())
                if no_sparse:
                    results.append(Result(w.name, "dask.array:sparse", status=no_sparse))
                print(report.text_table([r for r in results if r.workload == w.name], args.suite))
                print(f"        ({time.time() - t_w:.0f}s)")
        finally:
            runner.close()
    meta = dict(suite=args.suite, cluster=desc, rates=rates,
                cluster_short=("loopback" if not networked else f"{args.workers} workers, {args.net}"),
                command="python -m benchmarks " + " ".join(sys.argv[1:]) if sys.argv[0].endswith("__main__.py")
                else " ".join(sys.argv), quick=args.quick, repeat=repeat, inputs=args.inputs, workers=args.workers,
                machine=machine(), versions=versions(), load_before=load_before, load_after=load(),
                elapsed=time.time() - t_start, skipped=skipped)
    print("\n" + report.text_table(results, args.suite))
    ts, pngs = report.write(results, meta, args.out, label, networked)
    print("\nTargets:")
    for t, s, d in ts:
        print(f"  [{s:6s}] {t}: {d}")
    print(f"\n[bench] wrote {os.path.join(args.out, f'results-{label}.md')} (+ .json) and {len(pngs)} plots; "
          f"{time.time() - t_start:.0f}s in all")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["tasks"]:
        from . import tasks
        return tasks.main(argv[1:])
    if argv[:1] == ["recovery"]:
        from . import recovery
        return recovery.main(argv[1:])
    if argv[:1] == ["memory"]:
        from . import memory
        return memory.main(argv[1:])
    if argv[:1] == ["everyday"]:
        from . import everyday
        return everyday.main(argv[1:])
    args = parse_args(argv)
    if args.cmd == "list":
        for name, ws in SUITES.items():
            print(f"suite {name}:")
            for w in ws:
                print(f"  {w.name:18s} {w.title}\n  {'':18s} full: {describe_dims(w, w.dims)}; "
                      f"quick: {describe_dims(w, w.quick)}")
        return 0
    if args.cmd == "report":
        results, meta = report.load(args.json)
        label = os.path.basename(args.json)[len("results-"):-len(".json")]
        ts, pngs = report.write(results, meta, os.path.dirname(args.json) or ".", label,
                                not meta["cluster"].startswith("loopback"))
        print(report.text_table(results, meta.get("suite")))
        print(f"rewrote {args.json[:-5]}.md and {len(pngs)} plots")
        return 0
    if args.cmd == "scale":
        from . import scale
        scale.run(args)
        return 0
    if args.cmd == "gpu":
        from . import gpu
        return gpu.run(args)
    if args.cmd == "soak":
        import json

        from .fuzz import soak
        result = soak(args.minutes, workers=args.workers, seed=args.seed)
        print(json.dumps(result, indent=1, default=str))
        return 1 if result["wrong"] or result["internal errors"] else 0
    if args.cmd == "cleanup":
        from .cluster import cleanup_stale
        print("removed:", cleanup_stale() or "nothing")
        return 0
    if args.cmd == "dask-suite":
        from . import dasksuite
        return dasksuite.main(args)
    if args.cmd in ("coverage", "conformance"):
        from . import conformance, coverage
        return (coverage if args.cmd == "coverage" else conformance).main(args)
    return run(args)

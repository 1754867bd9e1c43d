"""``python -m benchmarks memory``: computations larger than the cluster's memory, dask_tra against
dask.array, with each worker's peak of managed memory measured (``dask_tra/runtime/memory.py``).

Each (computation, library) runs in a child process of its own, on a fresh LocalCluster
(``--workers`` worker processes of ``--threads`` threads, ``--limit`` memory each): nothing of one
run's memory state (spilled data, a paused or restarted worker) reaches the next. A run that does
not finish in ``--timeout`` seconds is reported as a timeout (its peaks so far are still read), one
whose workers died as ``KilledWorker``, one refused by dask_tra's planner as ``MemoryLimitError``;
none of them stops the benchmark. A child that hangs past the timeout (plus a grace period for
the cluster's start and stop) is killed with its process group.

Per run: the outcome (ok, or the error's first line), the wall time of the computation (planning
included, cluster start not), the busiest worker's peak of managed memory (task results held in
RAM), the bytes spilled to disk (all workers), the busiest worker process's peak resident
memory, and for dask_tra the plan's predicted peak for its busiest site (``explain()``). The
small results are compared between the libraries: exactly where the inputs are deterministic
(``ones``), statistically where they are random (the two libraries' generators differ: each
result is checked against its expectation within 8 standard deviations, and against the other
library's within the same bound).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

import numpy as np

LIBRARIES = ("dask.array", "dask_tra")
MARK_START, MARK_END = "<!-- memory:start -->", "<!-- memory:end -->"
SIGMAS = 8  # statistical checks: within this many standard deviations
U_STD = 12**-0.5  # standard deviation of uniform(0, 1)


@dataclass(frozen=True)
class Computation:
    name: str
    title: str  # in the libraries' own words, with the full sizes' placeholders filled in by ``describe``
    kind: str  # "compute" or "persist"


COMPUTATIONS = [
    Computation("ones-sum", "ones(({n}, {n}), chunks={c}).sum()", "compute"),
    Computation("uniform-mean0", "random.uniform(size=({n}, {n}), chunks={c}).mean(axis=0)", "compute"),
    Computation("ones-bigchunk-sum0", "ones(({n}, {n}), chunks={big}).sum(axis=0)", "compute"),
    Computation("matvec", "A @ v, A = random.uniform(size=({n}, {n}), chunks={c}), v = arange({n}) / {n}", "compute"),
    Computation("rechunk-sum", "random.uniform(size=({n}, {n}), chunks={c}).rechunk(({n}, {c})).sum()", "compute"),
    Computation("persist", "random.uniform(size=({n}, {n}), chunks={c}).persist(), then released", "persist"),
    Computation(
        "standardise", "((x - x.mean(0)) / x.std(0)).sum(1), x = random.uniform(size=({n}, {n}), chunks={c})", "compute"
    ),
]
BY_NAME = {c.name: c for c in COMPUTATIONS}


def sizes(quick: bool) -> dict:
    """n: the arrays' side (n² float64: 3.2 GB full, 200 MB quick); c: the chunk side; big: the
    big-chunk case's chunk side."""
    return dict(n=5000, c=500, big=2000) if quick else dict(n=20000, c=2000, big=8000)


def describe(comp: Computation, dims: dict) -> str:
    return comp.title.format(**dims)


def build(name: str, lib, dims: dict):
    """The lazy array of computation ``name`` in library ``lib`` (dask.array or dask_tra.array)."""
    n, c, big = dims["n"], dims["c"], dims["big"]
    if name == "ones-sum":
        return lib.ones((n, n), chunks=c).sum()
    if name == "uniform-mean0":
        return lib.random.uniform(size=(n, n), chunks=c).mean(axis=0)
    if name == "ones-bigchunk-sum0":
        return lib.ones((n, n), chunks=big).sum(axis=0)
    if name == "matvec":
        return lib.random.uniform(size=(n, n), chunks=c) @ (lib.arange(n, chunks=c) / n)
    if name == "rechunk-sum":
        return lib.random.uniform(size=(n, n), chunks=c).rechunk((n, c)).sum()
    if name == "persist":
        return lib.random.uniform(size=(n, n), chunks=c)
    if name == "standardise":
        x = lib.random.uniform(size=(n, n), chunks=c)
        return ((x - x.mean(0)) / x.std(0)).sum(1)
    raise KeyError(name)


# -- checks: each result against its expectation, and the two libraries' against each other --------


def expectation(name: str, dims: dict, result) -> tuple:
    """(problem or None, atol for comparing two libraries' results) for ``result`` of ``name``."""
    n = dims["n"]
    r = np.asarray(result, dtype=float)
    if name == "ones-sum":
        return _within(r, float(n) * n, 0.0, "sum"), 1e-6 * n * n
    if name == "ones-bigchunk-sum0":
        return _shape(r, (n,)) or _within(r, float(n), 0.0, "column sums"), 1e-9 * n
    if name == "uniform-mean0":
        sd = U_STD / n**0.5
        return _shape(r, (n,)) or _within(r, 0.5, SIGMAS * sd, "column means"), SIGMAS * sd * 2**0.5
    if name == "matvec":
        v = np.arange(n) / n
        sd = U_STD * float(np.sqrt((v**2).sum()))
        return _shape(r, (n,)) or _within(r, 0.5 * v.sum(), SIGMAS * sd, "A @ v"), SIGMAS * sd * 2**0.5
    if name in ("rechunk-sum", "persist"):  # persist: the persisted array's sum, computed after
        sd = U_STD * n
        return _within(r, 0.5 * n * n, SIGMAS * sd, "sum"), SIGMAS * sd * 2**0.5
    if name == "standardise":
        # standardised columns sum to 0, so the row sums do; each row sum is a sum of n
        # independent standardised values (variance n)
        problem = _shape(r, (n,))
        if problem is None and abs(r.sum()) > 1e-6 * n * n:
            problem = f"row sums add up to {r.sum():.3g}, not 0"
        if problem is None and abs(r.std() / n**0.5 - 1) > SIGMAS / (2 * n) ** 0.5:
            problem = f"row sums' standard deviation {r.std():.4g}, expected about {n**0.5:.4g}"
        return problem, None  # two random realisations: nothing to compare element by element
    raise KeyError(name)


def _shape(r, shape) -> str | None:
    return None if r.shape == shape else f"shape {r.shape}, expected {shape}"


def _within(r, want, atol, what) -> str | None:
    worst = float(np.max(np.abs(r - want))) if r.size else 0.0
    if not np.all(np.isfinite(r)) or worst > atol + 1e-9 * abs(want):
        return f"{what} off by up to {worst:.3g} from {want:.6g} (allowed {atol:.3g})"
    return None


def compare(name: str, dims: dict, results: dict) -> str:
    """The check column: "equal" (deterministic inputs), "≈" (random inputs, statistically
    equal), "—" (fewer than two results), or what is wrong."""
    problems = []
    atol = None
    for lib, r in results.items():
        problem, atol = expectation(name, dims, r)
        if problem:
            problems.append(f"{lib}: {problem}")
    if problems:
        return "WRONG: " + "; ".join(problems)
    if not results:
        return "—"
    if len(results) < 2:
        return "as expected (one library)"
    a, b = results.values()
    if atol is not None:
        try:
            np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=0, atol=atol)
        except AssertionError as e:
            return "DIFFERS: " + str(e).strip().splitlines()[0]
    return "equal" if name.startswith("ones") else f"≈ (random; within {SIGMAS}σ)"


# -- one run, in a child process ---------------------------------------------------------------


def child(spec: dict) -> dict:
    """Run one (computation, library) on a fresh cluster; the row, with the result saved to
    ``spec["out"]`` (a .npy file) when there is one."""
    from distributed import Client, LocalCluster, wait

    from dask_tra.runtime import memory

    name, library, dims = spec["name"], spec["library"], spec["dims"]
    row = dict(name=name, library=library, outcome="ok", seconds=None, predicted_peak=None)
    cluster = LocalCluster(
        n_workers=spec["workers"],
        threads_per_worker=spec["threads"],
        processes=True,
        memory_limit=spec["limit"],
        dashboard_address=":0",
        local_directory=spec.get("local_directory"),
    )
    client = Client(cluster)
    if library == "dask_tra":
        import dask_tra.array as lib
    else:
        import dask.array as lib
    memory.reset(client)
    box = {}

    def work():
        try:
            x = box["array"] = build(name, lib, dims)
            t0 = time.perf_counter()
            if spec["kind"] == "persist":
                y = x.persist()
                wait(y)
                box["value"] = y
            else:
                box["value"] = x.compute()
            box["seconds"] = time.perf_counter() - t0
        except BaseException as e:  # reported, never raised: the next run goes on
            box["error"] = e

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(spec["timeout"])
    rows = memory.peaks(client)
    row["workers_measured"] = len(rows)
    row.update(memory.busiest(rows))
    if t.is_alive():
        row["outcome"] = f"timeout after {spec['timeout']:.0f} s"
    elif "error" in box:
        e = box["error"]
        first = (str(e).strip().splitlines() or [""])[0]
        row["outcome"] = f"{type(e).__name__}: {first}"[:300]
        needs = re.search(r"needs ([\d,]+) bytes", str(e))  # MemoryLimitError: its best plan's busiest site
        if library == "dask_tra" and needs:
            row["predicted_peak"] = int(needs.group(1).replace(",", ""))
    else:
        row["seconds"] = box["seconds"]
        try:
            value = box["value"]
            if spec["kind"] == "persist":
                value = box["value"].sum().compute()  # the check, after the peaks were read
                del box["value"]
                row["released"] = _released(client)
            np.save(spec["out"], np.asarray(value))
        except Exception as e:
            first = (str(e).strip().splitlines() or [""])[0]
            row["outcome"] = f"ran, then its check failed: {type(e).__name__}: {first}"[:300]
    if library == "dask_tra" and "array" in box and row["predicted_peak"] is None and not t.is_alive():
        row["predicted_peak"] = predicted_peak(box["array"])  # the plan that ran (cached), or None
    return row


def predicted_peak(x) -> int | None:
    """The plan's predicted peak on its busiest site (``explain()``), None if it has none."""
    try:
        e = x.explain()
    except Exception:
        return None
    peak = getattr(e, "peak_memory", None)
    if peak is None:
        peak = getattr(e, "predicted_peak_memory", None)
    if isinstance(peak, dict):
        return int(max(peak.values(), default=0))
    return int(peak) if isinstance(peak, (int, float)) else None


def _released(client, timeout=30.0) -> bool:
    """Whether the workers' managed memory went back under 1 MB after the persisted array was dropped."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        held = client.run(lambda dask_worker: dask_worker.state.nbytes)
        if sum(held.values()) < 2**20:
            return True
        time.sleep(0.2)
    return False


def run_child(spec: dict, grace: float = 90.0) -> dict:
    """``child(spec)`` in a process group of its own, killed (all of it: the cluster's workers
    too) if it outlives the run's timeout plus ``grace``."""
    cmd = [sys.executable, "-m", "benchmarks.memory", "--child", json.dumps(spec)]
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=spec["timeout"] + grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return dict(
            name=spec["name"],
            library=spec["library"],
            outcome=f"hung: killed after {spec['timeout'] + grace:.0f} s",
            seconds=None,
        )
    finally:
        try:  # the cluster's worker processes, should the child have left any
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for line in reversed(out.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    log.seek(0)
    lines = [s for s in log.read().splitlines() if s.strip()]
    raised = [s for s in lines if re.match(r"^[A-Za-z_.]*(Error|Exception|KilledWorker|Cancelled\w*)(:|$)", s)]
    tail = raised[-1:] or lines[-3:]
    return dict(
        name=spec["name"],
        library=spec["library"],
        seconds=None,
        outcome=f"child exited {proc.returncode}: " + (" | ".join(tail)[-300:] or "no output"),
    )


# -- the table ---------------------------------------------------------------------------------


def fmt_bytes(n) -> str:
    if n is None:
        return "—"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def outcome_short(row) -> str:
    o = row["outcome"]
    if o == "ok":
        return "ok" if row.get("released", True) else "ok, but still held 30 s after release"
    o = o if len(o) <= 140 else o[:139] + "…"
    return o.replace("|", "\\|")


def table(rows: list, checks: dict) -> list:
    lines = [
        "| computation | library | outcome | wall (s) | peak managed, busiest worker | predicted peak (dask_tra) "
        "| spilled | peak process memory | result |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        secs = "—" if r.get("seconds") is None else f"{r['seconds']:.1f}"
        lines.append(
            f"| {r['name']} | {r['library']} | {outcome_short(r)} | {secs} | {fmt_bytes(r.get('peak_bytes'))} "
            f"| {fmt_bytes(r.get('predicted_peak')) if r['library'] == 'dask_tra' else ''} "
            f"| {fmt_bytes(r.get('spilled_bytes'))} | {fmt_bytes(r.get('peak_process_bytes'))} "
            f"| {checks.get(r['name'], '—') if r['outcome'] == 'ok' else '—'} |"
        )
    return lines


def write_section(path: str, text: str) -> None:
    doc = open(path).read()
    if MARK_START not in doc or MARK_END not in doc:
        raise SystemExit(f"{path} has no {MARK_START} … {MARK_END} section to fill")
    head, rest = doc.split(MARK_START, 1)
    _, tail = rest.split(MARK_END, 1)
    with open(path, "w") as f:
        f.write(head + MARK_START + "\n" + text.rstrip("\n") + "\n" + MARK_END + tail)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        row = child(json.loads(argv[1]))
        print("RESULT " + json.dumps(row), flush=True)
        os._exit(0)  # don't wait on a computation still running in its thread, or a stuck cluster close
    p = argparse.ArgumentParser(
        prog="python -m benchmarks memory", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="sizes scaled down 16× (5000² float64, 200 MB)")
    p.add_argument("--limit", default="400MB", help="memory_limit per worker (default 400MB)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=2, help="threads per worker (default 2)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (default 300; 60 with --quick)")
    p.add_argument("--only", default=None, help=f"comma-separated subset of {','.join(BY_NAME)}")
    p.add_argument("--libraries", default=",".join(LIBRARIES))
    p.add_argument("--json", default=None, metavar="FILE", help="write the rows and metadata to this JSON file")
    p.add_argument(
        "--write", default=None, metavar="MD", help=f"fill the {MARK_START} … {MARK_END} section of this Markdown file"
    )
    args = p.parse_args(argv)
    from .cli import machine, versions

    names = args.only.split(",") if args.only else list(BY_NAME)
    unknown = [x for x in names if x not in BY_NAME]
    libraries = args.libraries.split(",")
    if unknown or set(libraries) - set(LIBRARIES):
        sys.exit(
            f"unknown computations {unknown} or libraries {libraries}; choose from {list(BY_NAME)}, {list(LIBRARIES)}"
        )
    dims = sizes(args.quick)
    timeout = args.timeout or (60.0 if args.quick else 300.0)
    command = "python -m benchmarks memory " + " ".join(argv)
    print(
        f"[memory] machine: {machine()}\n[memory] {args.workers} worker processes × {args.threads} threads, "
        f"memory_limit={args.limit} each; timeout {timeout:.0f} s per run",
        flush=True,
    )
    rows, checks = [], {}
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="dask-tra-memory-") as tmp:
        for name in names:
            comp = BY_NAME[name]
            print(f"\n[memory] {name}: {describe(comp, dims)}", flush=True)
            results = {}
            for library in libraries:
                out = os.path.join(tmp, f"{name}-{library}.npy")
                spec = dict(
                    name=name,
                    library=library,
                    kind=comp.kind,
                    dims=dims,
                    workers=args.workers,
                    threads=args.threads,
                    limit=args.limit,
                    timeout=timeout,
                    out=out,
                    local_directory=os.path.join(tmp, "spill"),
                )
                t0 = time.time()
                row = run_child(spec)
                if row["outcome"] == "ok" and os.path.exists(out):
                    results[library] = np.load(out)
                rows.append(row)
                secs = "" if row.get("seconds") is None else f" in {row['seconds']:.1f} s"
                print(
                    f"[memory]   {library:10s} {row['outcome'][:160]}{secs}; peak managed "
                    f"{fmt_bytes(row.get('peak_bytes'))} (predicted {fmt_bytes(row.get('predicted_peak'))}), "
                    f"spilled {fmt_bytes(row.get('spilled_bytes'))}, process peak "
                    f"{fmt_bytes(row.get('peak_process_bytes'))} ({time.time() - t0:.0f} s with the cluster)",
                    flush=True,
                )
            checks[name] = compare(name, dims, results)
            print(f"[memory]   result: {checks[name]}", flush=True)
    lines = table(rows, checks)
    print("\n" + "\n".join(lines))
    print(f"\n[memory] {time.time() - t_start:.0f} s in all")
    meta = dict(
        command=command,
        machine=machine(),
        versions=versions(),
        dims=dims,
        limit=args.limit,
        workers=args.workers,
        threads=args.threads,
        timeout=timeout,
        quick=args.quick,
        elapsed=time.time() - t_start,
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, rows=rows, checks=checks), f, indent=1, default=str)
    if args.write:
        head = [
            f"`{command}` on {machine()}; {args.workers} worker processes × {args.threads} threads, "
            f"`memory_limit={args.limit}` each, a fresh LocalCluster per run (timeout {timeout:.0f} s); "
            f"n = {dims['n']}, chunks {dims['c']} (big chunks {dims['big']}); versions {meta['versions']}.",
            "",
        ]
        head += [f"- `{c.name}`: `{describe(c, dims)}`" for c in COMPUTATIONS if c.name in names] + [""]
        write_section(args.write, "\n".join(head + lines))
        print(f"[memory] wrote the table into {args.write}")
    wrong = [n for n, c in checks.items() if c.startswith(("WRONG", "DIFFERS"))]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

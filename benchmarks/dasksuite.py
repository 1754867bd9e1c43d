"""``python -m benchmarks dask-suite``: dask's own array tests, run against dask_tra.array.

The installed dask wheel ships ``dask/array/tests/``. This copies those files twice into a
scratch directory (never into the repository): once unmodified, the baseline run against
dask.array, and once with every ``dask.array`` import rewritten to ``dask_tra.array``. A name
dask_tra lacks keeps dask's (``from dask.array.core import normalize_chunks`` stays dask's), and
each such fallback is listed. Both copies run under dask's own pytest settings, one pytest
process per file, with a per-test timeout and a memory cap per process.

The user-facing pass rate of a file counts the tests that pass on dask.array, less the ones in
``dasksuite_internals.EXCLUDED`` (tests that only inspect dask's graph structure, each with its
reason), and says how many of those pass on dask_tra. A dask_tra failure that is an
``AssertionError`` (the test computed and compared) is reported apart from the others (an
exception raised before any comparison): those are where a wrong value, shape or dtype may be.
"""
from __future__ import annotations

import ast
import concurrent.futures
import fnmatch
import importlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

from .coverage import write as write_block
from .dasksuite_internals import EXCLUDED, GPU_FILES

START, END = "<!-- dask-suite:start -->", "<!-- dask-suite:end -->"
PACKAGE = "suite_tests"  # the copied test package, in place of dask.array.tests
# dask's [tool.pytest.ini_options] (dask/dask pyproject.toml): dask's warnings are errors
PYTEST_INI = """[pytest]
xfail_strict = true
filterwarnings =
    error:::dask[.*]
    error:::pandas[.*]
    error:::numpy[.*]
    error:::distributed[.*]
markers =
    network: Test requires an internet connection
    slow: Skipped unless --runslow passed
    gpu: marks tests we want to run on GPUs
    skip_with_pyarrow_strings: Tests that should be skipped when pyarrow strings are enabled
    xfail_with_pyarrow_strings: Tests that should be xfailed when pyarrow strings are enabled
    normal_and_array_expr: Tests run with and without array expressions
    array_expr: Tests for the array-expression backend
"""


def tests_dir() -> str:
    import dask
    return os.path.join(os.path.dirname(dask.__file__), "array", "tests")


def _has(module: str, name: str | None = None) -> bool:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return False
    return name is None or hasattr(mod, name)


def _ours(module: str) -> str:
    return "dask_tra" + module[len("dask"):]


def rewrite_source(source: str, fname: str, fallbacks: list) -> str:
    """``source`` with its ``dask.array`` imports pointed at dask_tra.array where dask_tra has the
    name; each name kept from dask is appended to ``fallbacks`` as (file, 'module.name')."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    modules = []  # ``import dask.array.X`` of a module dask_tra has: its dotted uses become ours
    edits = []  # (first line, last line, replacement text), 1-based
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mod = node.module
            if mod == "dask.array.tests" or mod.startswith("dask.array.tests."):
                stmts = [ast.ImportFrom(PACKAGE + mod[len("dask.array.tests"):], node.names, 0)]
            elif mod == "dask.array" or mod.startswith("dask.array."):
                ours, top, theirs = [], [], []
                for alias in node.names:
                    public = not alias.name.startswith("_")
                    if _has(_ours(mod), alias.name) or _has(_ours(mod) + "." + alias.name):
                        ours.append(alias)
                    elif public and mod != "dask.array" and _has("dask_tra.array", alias.name):
                        top.append(alias)  # ``from dask.array.core import from_array``: the function users call
                    else:
                        theirs.append(alias)
                        fallbacks.append((fname, f"{mod}.{alias.name}"))
                stmts = [ast.ImportFrom(m, names, 0) for m, names in
                         ((_ours(mod), ours), ("dask_tra.array", top), (mod, theirs)) if names]
            elif mod == "dask" and any(a.name == "array" for a in node.names):
                stmts = [ast.ImportFrom("dask_tra", [a for a in node.names if a.name == "array"], 0)]
                rest = [a for a in node.names if a.name != "array"]
                stmts += [ast.ImportFrom("dask", rest, 0)] if rest else []
            else:
                continue
        elif isinstance(node, ast.Import):
            stmts, changed = [], False
            for alias in node.names:
                name = alias.name
                if name.startswith("dask.array") and alias.asname:
                    if _has(_ours(name)):
                        stmts.append(ast.Import([ast.alias(_ours(name), alias.asname)]))
                        changed = True
                        continue
                    fallbacks.append((fname, name))
                elif name.startswith("dask.array.") and _has(_ours(name)):
                    # ``import dask.array.stats``: ours instead, and its dotted uses
                    # (``dask.array.stats.skew``) are pointed at ours below
                    stmts.append(ast.Import([ast.alias(_ours(name))]))
                    modules.append(name)
                    changed = True
                    continue
                elif name.startswith("dask.array."):
                    fallbacks.append((fname, name))
                stmts.append(ast.Import([alias]))
            if not changed:
                continue
        else:
            continue
        indent = lines[node.lineno - 1][: node.col_offset]
        edits.append((node.lineno, node.end_lineno, indent + "; ".join(ast.unparse(s) for s in stmts) + "\n"))
    for first, last, text in sorted(edits, reverse=True):
        lines[first - 1:last] = [text]
    out = "".join(lines)
    for name in modules:
        out = re.sub(r"(?<![\w.])" + re.escape(name) + r"\b", _ours(name), out)
    return out


def prepare(root: str, rewrite: bool, files: list[str]) -> list:
    """Copy dask's test files (and its conftest) under ``root``; returns the fallbacks."""
    import dask
    pkg = os.path.join(root, PACKAGE)
    os.makedirs(pkg)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    shutil.copy(os.path.join(os.path.dirname(dask.__file__), "conftest.py"), os.path.join(root, "conftest.py"))
    with open(os.path.join(root, "pytest.ini"), "w") as f:
        f.write(PYTEST_INI)
    fallbacks: list = []
    src_dir = tests_dir()
    for name in sorted(os.listdir(src_dir)):
        if not name.endswith(".py") or name == "__init__.py":
            continue
        with open(os.path.join(src_dir, name)) as f:
            source = f.read()
        if rewrite:
            source = rewrite_source(source, name, fallbacks)
        elif name.startswith("test_"):
            source = source.replace("dask.array.tests.", PACKAGE + ".")
        with open(os.path.join(pkg, name), "w") as f:
            f.write(source)
    return fallbacks


def _limit_memory(nbytes: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
    return apply


def run_file(root: str, name: str, timeout: int, memory: int) -> tuple[str, dict, float]:
    """Run one copied test file; returns (file, {test id: (outcome, message)}, seconds)."""
    xml = os.path.join(root, f"junit-{name}.xml")
    cmd = [sys.executable, "-m", "pytest", os.path.join(PACKAGE, name), "-q", "-p", "no:cacheprovider",
           "--timeout", str(timeout), f"--junitxml={xml}", "-o", "junit_family=xunit1"]
    t = time.perf_counter()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout whose dask_tra is tested
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env, preexec_fn=_limit_memory(memory))
    seconds = time.perf_counter() - t
    if not os.path.exists(xml):  # the process died (a crash, or killed)
        tail = (proc.stdout + proc.stderr)[-400:]
        return name, {f"{name}::<file>": ("error", f"pytest exited {proc.returncode} with no report: {tail}")}, seconds
    return name, parse_junit(xml, name), seconds


def parse_junit(path: str, name: str) -> dict:
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        test = case.get("name", "")
        tid = f"{name}::{test}" if case.get("classname") else f"{name}::<file>"
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        if cls and cls[:1].isupper():  # a test class
            tid = f"{name}::{cls}::{test}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = child.tag, (child.get("message") or "")[:300]
                break
            if child.tag == "skipped":
                xfail = (child.get("type") or "") == "pytest.xfail"
                outcome, message = ("xfailed" if xfail else "skipped"), (child.get("message") or "")[:200]
        out[tid] = (outcome, message)
    return out


def run_side(root: str, files: list[str], jobs: int, timeout: int, memory: int, label: str) -> tuple[dict, float]:
    results: dict = {}
    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futs = [pool.submit(run_file, root, f, timeout, memory) for f in files]
        for fut in concurrent.futures.as_completed(futs):
            name, res, seconds = fut.result()
            results[name] = res
            passed = sum(o == "passed" for o, _ in res.values())
            print(f"[dask-suite] {label}: {name}: {passed}/{len(res)} passed ({seconds:.0f}s)", flush=True)
    return results, time.perf_counter() - t


def excluded(tid: str) -> str | None:
    """The reason a test is excluded as graph-internal, or None."""
    base = tid.split("[", 1)[0]
    for pattern, reason in EXCLUDED.items():
        if fnmatch.fnmatchcase(base, pattern) or fnmatch.fnmatchcase(tid, pattern):
            return reason
    return None


def is_assertion(message: str) -> bool:
    """A failure where the test compared what it got with what it expected (a value, shape, dtype,
    type or name), or expected an error that never came; not an error message's wording."""
    if "Regex pattern did not match" in message or "Regex: " in message:
        return False
    return message.startswith(("AssertionError", "assert ", "Failed: DID NOT RAISE"))


def summarize(base: dict, tra: dict) -> list[dict]:
    """Per file: dask.array passes, dask_tra passes of those, user-facing counts and rate, and the
    dask_tra failures among the user-facing tests (assertion failures apart)."""
    rows = []
    for name in sorted(base):
        good = [t for t, (o, _) in base[name].items() if o == "passed"]
        mine = tra.get(name, {})
        file_error = mine.get(f"{name}::<file>")
        user = [t for t in good if excluded(t) is None]
        def outcome(t):
            return mine.get(t, file_error or ("missing", "not run on dask_tra"))
        passed_user = [t for t in user if outcome(t)[0] == "passed"]
        failing = {t: outcome(t) for t in user if outcome(t)[0] != "passed"}
        rows.append(dict(file=name, dask=len(good), dask_tra=sum(outcome(t)[0] == "passed" for t in good),
                         user=len(user), user_passed=len(passed_user),
                         assertion=sorted(t for t, (o, m) in failing.items() if is_assertion(m)),
                         failing=failing, gpu=name in GPU_FILES))
    return rows


def table(rows: list[dict], meta: dict) -> str:
    cpu = [r for r in rows if not r["gpu"] and r["dask"]]
    n, p = sum(r["user"] for r in cpu), sum(r["user_passed"] for r in cpu)
    lines = [f"dask {meta['dask']} `dask/array/tests/` (installed wheel), dask_tra at {meta['commit']}; "
             f"{meta['command']}; {meta['seconds']:.0f} s on {meta['machine']} "
             f"(dask.array {meta['seconds_base']:.0f} s, dask_tra {meta['seconds_tra']:.0f} s).",
             "",
             f"**User-facing pass rate: {p} of {n} ({100 * p / max(n, 1):.1f}%)** over the files that run "
             f"without a GPU; {sum(len(r['assertion']) for r in cpu)} user-facing failures are assertion "
             "failures (a compared value, shape, dtype or type differed, or an expected error was not raised).",
             "",
             "| file | dask.array passes | dask_tra passes | user-facing | dask_tra user-facing passes | rate "
             "| assertion failures |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if not r["dask"]:
            continue
        rate = f"{100 * r['user_passed'] / r['user']:.1f}%" if r["user"] else "n/a"
        flag = " (GPU)" if r["gpu"] else ""
        lines.append(f"| `{r['file']}`{flag} | {r['dask']} | {r['dask_tra']} | {r['user']} | {r['user_passed']} "
                     f"| {rate} | {len(r['assertion'])} |")
    return "\n".join(lines)


def commit() -> str:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=here).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main(args) -> int:
    from .cli import machine
    src = tests_dir()
    files = sorted(f for f in os.listdir(src) if f.startswith("test_") and f.endswith(".py"))
    if args.files:
        unknown = set(args.files) - set(files)
        if unknown:
            sys.exit(f"not in {src}: {sorted(unknown)}")
        files = [f for f in files if f in args.files]
    if not args.gpu:
        files = [f for f in files if f not in GPU_FILES]
    scratch = tempfile.mkdtemp(prefix="dask-suite-")
    try:
        base_root, tra_root = os.path.join(scratch, "dask"), os.path.join(scratch, "dask_tra")
        prepare(base_root, False, files)
        fallbacks = prepare(tra_root, True, files)
        t0 = time.perf_counter()
        memory = int(args.memory_gib * 2**30)
        base, t_base = run_side(base_root, files, args.jobs, args.timeout, memory, "dask.array")
        tra, t_tra = run_side(tra_root, files, args.jobs, args.timeout, memory, "dask_tra")
        seconds = time.perf_counter() - t0
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"[dask-suite] kept {scratch}")
    rows = summarize(base, tra)
    import dask
    meta = dict(dask=dask.__version__, commit=commit(), machine=machine(), seconds=seconds, seconds_base=t_base,
                seconds_tra=t_tra, command="`python -m benchmarks dask-suite " + " ".join(sys.argv[2:]) + "`")
    text = table(rows, meta)
    print(text)
    used = sorted({name for _, name in fallbacks})
    print(f"\n[dask-suite] names kept from dask.array (dask_tra lacks them): {', '.join(used)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, rows=rows, fallbacks=sorted(set(fallbacks)),
                           excluded={t: excluded(t) for r in base.values() for t in r if excluded(t)}),
                      f, indent=1, default=list)
        print(f"[dask-suite] wrote {args.json}")
    if args.write:
        write_block(args.write, text + "\n\nNames the rewritten tests still import from dask.array "
                    "(dask_tra has no such name): " + ", ".join(f"`{n}`" for n in used) + ".", START, END)
        print(f"[dask-suite] wrote the table into {args.write}")
    return 0

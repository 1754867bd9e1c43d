"""``python -m benchmarks conformance``: run the Array API test suite (data-apis/array-api-tests)
against ``dask_tra.array``'s namespace and write the pass/fail counts (and each failure) into
``docs/api.md``.

The suite is not vendored: point ``--suite-dir`` (or ``ARRAY_API_TESTS_DIR``) at a checkout
with its ``array-api`` submodule; without one the command says so and exits 0."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from .coverage import write

START, END = "<!-- conformance:start -->", "<!-- conformance:end -->"


def run(suite_dir, max_examples=3, extensions=("linalg", "fft"), select=None, timeout=3600):
    """(passed, failed, skipped, [(test id, first line of the failure)])."""
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="dask_tra.array.namespace",
               PYTHONPATH=os.pathsep.join([os.getcwd(), suite_dir, os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "report.xml")
        paths = [os.path.join(suite_dir, "array_api_tests", f) for f in select] if select else [
            os.path.join(suite_dir, "array_api_tests")]
        cmd = [sys.executable, "-m", "pytest", *paths, "-q",
               "-p", "no:cacheprovider", f"--max-examples={max_examples}", f"--junitxml={xml}",
               "--hypothesis-disable-deadline", "-o", "addopts="]
        for ext in {"linalg", "fft"} - set(extensions):
            cmd.append(f"--disable-extension={ext}")
        proc = subprocess.run(cmd, cwd=suite_dir, env=env, timeout=timeout, check=False)  # failures are data
        if not os.path.exists(xml):
            raise RuntimeError(f"the suite did not run (pytest exit {proc.returncode}); its requirements "
                               f"(pip install .[conformance]) and array-api submodule must be there")
        return _counts(ET.parse(xml).getroot())


def _counts(root):
    passed = failed = skipped = 0
    failures = []
    for case in root.iter("testcase"):
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is not None:
            failed += 1
            why = (bad.get("message") or "").strip().splitlines()
            failures.append((f"{case.get('classname')}::{case.get('name')}", why[0][:160] if why else ""))
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped, failures


def report(passed, failed, skipped, failures, max_examples):
    ran = passed + failed
    head = (f"array-api-tests, `--max-examples={max_examples}`, linalg and fft extensions on: "
            f"**{passed} passed, {failed} failed** of {ran} run ({100 * passed / max(ran, 1):.1f}%), "
            f"{skipped} skipped.")
    lines = [head, ""]
    if failures:
        lines += ["| failing test | reason |", "|---|---|"]
        lines += [f"| `{t}` | {why.replace('|', '/')} |" for t, why in failures]
    return "\n".join(lines).rstrip("\n")


def main(args) -> int:
    suite = args.suite_dir or os.environ.get("ARRAY_API_TESTS_DIR")
    if not suite or not os.path.isdir(os.path.join(suite, "array_api_tests")):
        print("conformance: skipped, no array-api-tests checkout (give --suite-dir or ARRAY_API_TESTS_DIR; "
              "git clone --recursive https://github.com/data-apis/array-api-tests)")
        return 0
    counts = run(suite, args.max_examples, select=args.select)
    text = report(*counts, args.max_examples)
    print(text)
    if args.write:
        write(args.write, text, START, END)
    return 0

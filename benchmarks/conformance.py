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

# The suite's tests of results that the standard leaves to the library. For these floor-division
# cases the suite checks only the value the standard prefers, floor(x1 / x2). The standard's own
# text (2024.12, floor_divide, "Special cases") adds "(note: libraries may return NaN [or -1.0] to
# match Python behavior)". RelArray's `//` is NumPy's floor_divide, as dask.array's, Python's and
# array-api-strict's are, and gives those values. The namespace's floor_divide gives the preferred
# values. Each case is listed with the value the note allows; the rate is given with and without them.
_FLOORDIV_NOTES = {
    "x1_i is +infinity and isfinite(x2_i) and x2_i > 0) -> +infinity": "NaN",
    "x1_i is +infinity and isfinite(x2_i) and x2_i < 0) -> -infinity": "NaN",
    "x1_i is -infinity and isfinite(x2_i) and x2_i > 0) -> -infinity": "NaN",
    "x1_i is -infinity and isfinite(x2_i) and x2_i < 0) -> +infinity": "NaN",
    "isfinite(x1_i) and x1_i > 0 and x2_i is -infinity) -> -0": "-1.0",
    "isfinite(x1_i) and x1_i < 0 and x2_i is +infinity) -> -0": "-1.0",
}
PERMITTED = {
    f"array_api_tests.test_special_cases::test_{kind}[{op}({case}]": (
        f"the standard's note allows {value} (\"to match Python behavior\"); `//` is NumPy's floor_divide, "
        f"which gives {value}"
    )
    for kind, op in (("binary", "__floordiv__"), ("iop", "__ifloordiv__"))
    for case, value in _FLOORDIV_NOTES.items()
}


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
    permitted = [(t, why) for t, why in failures if t in PERMITTED]
    failures = [(t, why) for t, why in failures if t not in PERMITTED]
    head = (f"array-api-tests, `--max-examples={max_examples}`, linalg and fft extensions on: "
            f"**{passed} passed, {failed} failed** of {ran} run ({100 * passed / max(ran, 1):.1f}%), "
            f"{skipped} skipped.")
    if permitted:
        rest = ran - len(permitted)
        rate, verb = 100 * passed / max(rest, 1), "is" if len(permitted) == 1 else "are"
        head += (f" {len(permitted)} of the failures {verb} of results the standard leaves to the library "
                 f"(listed below with the reason); without them **{passed} of {rest} pass ({rate:.1f}%)**.")
    lines = [head, ""]
    if failures:
        lines += ["| failing test | reason |", "|---|---|"]
        lines += [f"| `{t}` | {why.replace('|', '/')} |" for t, why in failures]
        lines += [""]
    if permitted:
        lines += ["| failing test, a result the standard allows | first error line; why it is allowed |", "|---|---|"]
        lines += [f"| `{t}` | {why.replace('|', '/').rstrip(' ,')}; {PERMITTED[t]} |" for t, why in permitted]
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

"""``python -m benchmarks everyday`` at its smallest: two workloads on the threaded scheduler, dask_tra
against dask.array (and dask-array where it imports). Results must agree; no timing is asserted."""
import json

import numpy as np
import pytest

from benchmarks import everyday

TINY = everyday.Sizes(**{**everyday.QUICK, "n": 400, "chunk": 100, "big": 1000})


SEEN = []  # the partial results ``on_row`` got


@pytest.fixture(scope="module")
def result():
    return everyday.run_suite(TINY, repeats=1, schedulers=("threads",), only="elementwise,slices", probes=1,
                              log=lambda *a: None, on_row=lambda r: SEEN.append(json.loads(json.dumps(r))))


def test_each_row_is_saved_as_it_is_measured_and_runs_merge(result, tmp_path):
    """``on_row`` gets the rows so far after each row (``main`` writes them: a run stopped late
    keeps them); two runs' files merge in the suite's order, the later run's row replacing."""
    assert [len(r["rows"]) for r in SEEN] == [1, 2, 3] and all(r["meta"]["partial"] for r in SEEN)
    path = tmp_path / "part.json"
    everyday.save(SEEN[1], str(path), "python -m benchmarks everyday --only slices")
    assert json.loads(path.read_text())["rows"] == SEEN[1]["rows"]
    rows = result["rows"]
    elementwise = dict(rows=[rows[2]], meta={**result["meta"], "command": "b", "elapsed_s": 2.0})
    redone = dict(rows=[{**rows[0], "redone": True}], meta={**result["meta"], "command": "c", "elapsed_s": 3.0})
    first = dict(rows=rows[:2], meta={**result["meta"], "command": "a", "elapsed_s": 1.0})
    both = everyday.merged([elementwise, first, redone])
    assert [r["step"] for r in both["rows"]] == [r["step"] for r in rows]
    assert both["rows"][0].get("redone") and not both["rows"][1].get("redone")
    assert both["meta"]["elapsed_s"] == 6.0 and both["meta"]["command"] == "b` + `a` + `c"


def test_rows_agree_and_carry_every_measure(result):
    rows = result["rows"]
    assert [(r["workload"], r["step"]) for r in rows] == [  # the suite's order, not --only's
        ("slices", "(x + x.T)[:100, :100]"), ("slices", "x.T.T[:5, :5]"), ("elementwise", "elementwise-sum")]
    assert {"dask_tra", "dask.array"} <= set(result["meta"]["libraries"])
    for r in rows:
        assert r["scheduler"] == "threads"
        for lib in result["meta"]["libraries"]:
            e = r["libraries"][lib]
            assert e["check"] == ("reference" if lib == "dask.array" else "ok"), (r["step"], lib, e)
            assert len(e["times"]) == 1 and e["wall_s"] > 0 and e["graph_s"] > 0
            assert 1 <= e["tasks"] <= e["tasks_emitted"]
    assert everyday.wrong(result) == []
    assert everyday.ratio(rows[2], "dask_tra") > 0


def test_tables_have_the_columns(result, tmp_path):
    libs = result["meta"]["libraries"]
    md = everyday.markdown_table(result).splitlines()
    header = [c.strip() for c in md[0].strip("|").split("|")]
    assert header[:3] == ["workload", "step", "scheduler"]
    assert "dask_tra ÷ dask.array" in header and "dask_tra plan+emit (share)" in header and header[-1] == "check"
    assert len(md) == 2 + len(result["rows"])
    assert all(len(line.strip("|").split("|")) == len(header) for line in md[2:])
    assert all(line.rstrip(" |").endswith("ok") for line in md[2:])
    assert len(everyday.text_table(result).splitlines()) == 2 + len(result["rows"])
    doc = tmp_path / "b.md"
    doc.write_text("# B\n\nbefore\n")
    from benchmarks.coverage import write
    result["meta"]["elapsed_s"] = 1.0
    for _ in range(2):  # written, then replaced in place
        write(str(doc), everyday.markdown_section(result, "python -m benchmarks everyday --quick"),
              everyday.START, everyday.END)
    text = doc.read_text()
    assert text.count(everyday.START) == 1 and text.count(everyday.END) == 1 and "before" in text
    assert "tasks " + " / ".join(libs) in text


def test_a_wrong_result_is_caught():
    want = np.array([1.0, 2.0, np.nan], dtype="float32")
    assert everyday.check(want * (1 + 1e-6), want) == "ok"
    assert everyday.check(want + 0.01, want).startswith("DIFFERS")
    assert everyday.check(want[:2], want).startswith("DIFFERS")


@pytest.mark.parametrize("loop", [False, True])
def test_each_graph_probe_is_taken_just_before_a_timed_run(monkeypatch, loop):
    """The machine's speed drifts in phases of seconds, so each library's graph time is measured
    right before one of its timed runs (one per repeat; a loop's once, before its first): the
    graph times and the walls they are compared with share the same phases."""
    calls = []
    monkeypatch.setattr(everyday, "run_once", lambda step, name, lib, ctx: calls.append(("run", name)) or (1.0, 0))
    monkeypatch.setattr(everyday, "probe_once", lambda step, name, lib, ctx: calls.append(("probe", name)) or (0.5, 2, 3))
    libs = {"dask.array": None, "dask_tra": None}
    workload = everyday.Workload("w", "a workload", lambda s: [])
    row = everyday.run_step(workload, everyday.Step("s", None, loop=loop), libs, {}, 3, "threads", log=print)
    assert calls[:2] == [("run", "dask.array"), ("run", "dask_tra")]  # the checked warm-up runs
    probes = 1 if loop else 3
    for name in libs:
        mine = [what for what, n in calls[2:] if n == name]
        assert mine == ["probe", "run"] * probes + ["run"] * (3 - probes)
        e = row["libraries"][name]
        assert (e["graph_s"], e["tasks"], e["tasks_emitted"], len(e["times"])) == (0.5, 2, 3, 3)

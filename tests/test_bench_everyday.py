"""``python -m benchmarks everyday`` at its smallest: two workloads on the threaded scheduler, dask_tra
against dask.array (and dask-array where it imports). Results must agree; no timing is asserted."""
import numpy as np
import pytest

from benchmarks import everyday

TINY = everyday.Sizes(**{**everyday.QUICK, "n": 400, "chunk": 100, "big": 1000})


@pytest.fixture(scope="module")
def result():
    return everyday.run_suite(TINY, repeats=1, schedulers=("threads",), only="elementwise,slices", probes=1,
                              log=lambda *a: None)


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

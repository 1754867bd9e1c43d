"""explain() in dask's words: workers, strategies named by what they do, dask's byte units, the
time labelled as an estimate; repeats folded; the algebra's terms on request (``detail="algebra"``).
No cluster: plans for a number of sites."""
import random
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from dask.utils import format_bytes as dask_format_bytes

import dask_tra as dt
from dask_tra.optimizer import plan
from dask_tra.optimizer.explain import Explain, OperatorReport, fmt_bytes, fold, format_bytes
from dask_tra.tra import Aggregate, Input, Join, split
from dask_tra.tra import kernels as K

JARGON = ("PART[", "∘", "Join(", "d=[", "site")


def _no_jargon(text):
    for word in JARGON:
        assert word not in text.lower() if word == "site" else word not in text, (word, text)


@pytest.fixture(scope="module")
def matmul_sum():
    a = dt.random.uniform(-1, 1, (4000, 4000), chunks=(1000, 500), seed=1)
    b = dt.from_array(np.random.default_rng(0).random((4000, 2000)), chunks=(500, 500))
    return (a @ b).sum(0).explain(sites=4)


def test_format_bytes_is_dasks():
    values = [0, 1, 921, 922, 1023, 1024, 1234, 12345678, 1234567890, 1234567890000, 1234567890000000]
    values += [int(0.9 * 2**k) + d for k in (10, 20, 30, 40, 50) for d in (-1, 0, 1)]
    rng = random.Random(0)
    values += [rng.randrange(0, 2 ** rng.randrange(1, 60)) for _ in range(2000)]
    for n in values:
        assert format_bytes(n) == dask_format_bytes(n), n
    assert fmt_bytes(None) == "-" and fmt_bytes(1234) == "1.21 kiB"


def test_default_is_in_dasks_words(matmul_sum):
    text = str(matmul_sum)
    _no_jargon(text)
    assert text.startswith("dask_tra plan on 4 workers")
    assert "estimated for an idle cluster, from default rates (dt.calibrate(client) measures them)" in text
    assert "3-D split: 2×2×1 workers" in text  # the chosen d=[2, 2, 1], by what it does
    assert "MiB" in text and "KiB" not in text  # dask's units (kiB)
    assert "next best: broadcast the smaller input to every worker" in text
    assert repr(matmul_sum) == text  # not a dataclass dump
    assert matmul_sum._repr_html_().startswith('<div class="dask-tra-explain"')  # HTML that wraps, not a <pre>
    assert "OperatorReport(" not in repr(matmul_sum)


def test_algebra_detail_keeps_the_papers_terms(matmul_sum):
    text = str(matmul_sum.view(detail="algebra"))
    for word in JARGON:
        assert word in text, word
    assert "TRA plan on 4 sites" in text and "candidates: d=[2, 2, 1]=" in text
    assert matmul_sum.text(detail="algebra") == text
    with pytest.raises(ValueError, match="detail"):
        matmul_sum.view(detail="papers")


def test_an_arrays_explain_takes_detail_and_full():
    x = dt.from_array(np.random.default_rng(1).random((400, 300)), chunks=100)
    y = (x @ x.T).sum(0)
    _no_jargon(str(y.explain(sites=4)))
    algebra = str(y.explain(sites=4, detail="algebra"))
    assert "Join(" in algebra and "sites" in algebra
    assert len(str(y.explain(sites=4, full=True))) > len(str(y.explain(sites=4)))
    with pytest.raises(ValueError, match="detail"):
        y.explain(sites=4, detail="papers")


def test_full_shows_every_step_and_alternative(matmul_sum):
    short, full = str(matmul_sum), str(matmul_sum.view(full=True))
    _no_jargon(full)
    assert "more steps move nothing" in short and "move nothing" not in full
    assert full.count("\n    or: ") == len(matmul_sum.operators[0].candidates) - 1 + 1  # + the shuffle's one
    assert matmul_sum.view() is matmul_sum  # the report itself: measure() fills it in later


def test_step_bytes_add_up_to_the_plan(matmul_sum):
    assert sum(op.moved for op in matmul_sum.operators) == matmul_sum.predicted_bytes
    mm = matmul_sum.operators[0]
    assert mm.label == "matmul" and mm.operands[1] == "array" and mm.moves


def test_measured_bytes_and_time_beside_the_estimate(matmul_sum):
    e = matmul_sum.view(full=True)  # a copy
    assert "measured:" not in str(e)
    e.measured_bytes, e.measured_seconds = 123 * 2**20, 2.5
    assert "measured: 123.00 MiB moved, 2.5 s" in str(e)


def test_demo_figures_are_consistent(matmul_sum):
    """The plan's total is the bytes between workers; the gather is a separate, labelled figure."""
    text = str(matmul_sum)
    assert f"moves:  {format_bytes(matmul_sum.predicted_bytes)} between workers" in text
    assert f"+{format_bytes(matmul_sum.gather_bytes)} to gather the result on one worker" in text


def test_fold_repeats():
    entries = [(k, i) for i, k in enumerate("xabcabcabcy")]
    groups = fold(entries)
    assert [(c, "".join(e[0] for e in first)) for c, first, _ in groups] == [(1, "x"), (3, "abc"), (1, "y")]
    assert [len(every) for _, _, every in groups] == [1, 9, 1]
    # a repeat that starts after a lone first copy: G G C G C G C -> G, (G C) x 3
    keys = ["g", "g", "c", "g", "c", "g", "c"]
    assert [(c, len(first)) for c, first, _ in fold([(k,) for k in keys])] == [(1, 1), (3, 2)]


def _report(ops):
    return Explain("e", 4, ops, sum(o.predicted_bytes for o in ops), {0: 10})


def test_repeated_sub_plans_are_folded():
    op = OperatorReport("aggregate", "shuffle", {"shuffle": 100, "two-phase": 150}, "Aggregate([1],add)", 100, 10,
                        label="sum across blocks", moves=[])
    from dask_tra.optimizer.explain import Move
    ops = []
    for i in range(12):
        ops.append(OperatorReport(**{**op.__dict__, "moves": [Move("shuffle by PART[1]", "T", "the sum result", 100 + i)]}))
        ops.append(OperatorReport("transform", "local", {"local": 0}, "Transform(sum[0])", 0, 10, label="sum"))
    text = str(_report(ops))
    assert "× 12 (repeated steps, 1.24 kiB in all" in text  # 12 x 100 B + 0 + ... + 11 B
    assert text.count("shuffle blocks to where they are combined") == 1
    algebra = str(_report(ops).view(detail="algebra"))
    assert "× 12:" in algebra and algebra.count("Aggregate([1],add)") == 1


def test_xarray_pipeline_fits_one_screen():
    xr = pytest.importorskip("xarray")
    pytest.importorskip("netCDF4")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    try:
        import xarray_climatology as ex
    finally:
        sys.path.pop(0)
    with tempfile.TemporaryDirectory() as d:
        ex.make_input(Path(d) / "t.nc")
        ds = xr.open_dataset(Path(d) / "t.nc", chunks={"time": 48, "lat": 18}, chunked_array_type="dask_tra")
        t = ds.t
        month = xr.DataArray(ds.time.values % 12, dims="time", name="month")
        anomaly = t.groupby(month) - t.groupby(month).mean()
        tc = ds.time - ds.time.mean()
        trend = xr.dot(anomaly, tc, dim="time") / float((tc**2).sum()) * 120
        local = str(trend.data.explain())  # no Client: the local plan, nothing moves
        with dt.config.set(sites=4):  # as a 4-worker cluster would run it
            report = trend.data.explain()
        text = str(report)
        full = str(report.view(full=True))
        algebra = str(report.view(detail="algebra"))
    assert len(local.splitlines()) <= 40 and local.startswith("dask_tra local plan"), local
    assert len(text.splitlines()) <= 40, text
    assert re.search(r"× 12\b", text)  # the 12 months' climatology, once
    _no_jargon(text)
    _no_jargon(full)
    for word in JARGON:
        assert word in algebra, word
    assert len(full.splitlines()) > len(text.splitlines())


def test_plan_without_a_cluster_in_dasks_words():
    a, b = np.random.rand(8, 6), np.random.rand(6, 4)
    ta, _ = split(a, ((4, 4), (3, 3)))
    tb, _ = split(b, ((3, 3), (2, 2)))
    mm = Aggregate(Join(Input("A", ta), Input("B", tb), (1,), (0,), K.matmul), (0, 2), K.add)
    e = plan(mm, 4).explain
    _no_jargon(str(e))
    assert "matmul (A @ B)" in str(e.view(full=True))


def test_naming_an_operand_looks_through_a_bounded_number_of_operations(monkeypatch):
    """A chain of 2,000 same-named operations (a loop of ``x = 1 - x``): naming what one of them
    moves looks at most ALIAS_DEPTH operations down (it walked to the bottom: quadratic in
    depth over a plan, 20 s of a 2,000-generation recovery)."""
    from dask_tra.optimizer import explain as ex
    x = dt.from_array(np.ones((8, 8)), chunks=4)
    for _ in range(2000):
        x = 1 - x
    calls = []
    real = ex.operation
    monkeypatch.setattr(ex, "operation", lambda n: calls.append(n) or real(n))
    assert ex.operand(x.expr) == "the subtract result"
    assert len(calls) <= 2 * ex.ALIAS_DEPTH + 1


def test_computing_makes_no_report_unless_a_measure_or_explain_asks():
    """The report (an operator walk and its words) is made when asked for: ``compute`` builds
    none (``measure()`` blocks and ``explain()`` do)."""
    x = dt.from_array(np.arange(36.0).reshape(6, 6), chunks=3)
    y = (x + x.T).sum(axis=0)
    a = np.arange(36.0).reshape(6, 6)
    np.testing.assert_array_equal(y.compute(scheduler="sync"), (a + a.T).sum(axis=0))
    plan_ = y._last_entry.plan
    assert "explain" not in plan_.__dict__
    assert "nothing moves" in str(y.explain())
    assert "explain" in plan_.__dict__

"""The benchmark's timed rounds: every competitor once a round, and each one right after
dask.array's run about equally often (a run after it pays for its clean-up)."""
from collections import Counter

import pytest

from benchmarks.cli import round_order


@pytest.mark.parametrize("n", [2, 3, 5, 6, 7])
def test_every_round_runs_each_competitor_once_and_no_one_always_follows_dask_array(n):
    comps = [f"c{i}" for i in range(n - 1)] + ["dask.array"]
    after, prev = Counter(), None
    for i in range(2 * n):
        order = round_order(comps, i)
        assert sorted(order) == sorted(comps)
        seq = ([prev] if prev is not None else []) + order
        after.update(b for a, b in zip(seq, seq[1:]) if a == "dask.array")
        prev = order[-1]
    others = [after[c] for c in comps if c != "dask.array"]
    # over 2n rounds each of the others follows dask.array once or twice, none every round
    assert min(others) >= 1 and max(others) <= 2 * n // (n - 1) + 1


def test_an_automatic_plan_slower_than_its_own_forced_twin_is_named_as_spread():
    from benchmarks.competitors import Result
    from benchmarks.report import targets

    def res(comp, t, strategies, tasks=71):
        return Result("w", comp, times=[t] * 3, predicted_bytes=100, tasks=tasks, strategies=strategies)

    def row(results):
        return next(r for r in targets(results, networked=False) if r[0].startswith("automatic plan"))

    same = row([res("dask_tra", 1.3, "bmm"), res("dask_tra:bmm", 1.0, "bmm"), res("dask_tra:cmm", 2.0, "cmm")])
    assert same[1] == "missed" and same[2] == "w 1.30× (the very plan of dask_tra:bmm: run-to-run spread)"
    other = row([res("dask_tra", 1.3, "cmm", 90), res("dask_tra:bmm", 1.0, "bmm"), res("dask_tra:cmm", 1.2, "cmm", 90)])
    assert other[1] == "missed" and other[2] == "w 1.30× (cmm's very plan: 1.20× forced)"
    spread = [res("dask_tra", 1.3, "cmm", 90), res("dask_tra:bmm", 1.0, "bmm"), res("dask_tra:cmm", 1.6, "cmm", 90)]
    spread[0].times, spread[1].times = [1.3, 1.25, 1.4], [1.0, 0.9, 1.3]
    assert row(spread)[2] == ("w 1.30× (cmm's very plan: 1.60× forced; "
                              "runs overlap: 1.250–1.400 s against 0.900–1.300 s)")
    apart = [res("dask_tra", 1.3, "rmm", 50), res("dask_tra:bmm", 1.0, "bmm")]
    assert row(apart)[2] == "w 1.30×"
    assert row([res("dask_tra", 1.05, "bmm"), res("dask_tra:bmm", 1.0, "bmm")])[1] == "met"

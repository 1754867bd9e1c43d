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

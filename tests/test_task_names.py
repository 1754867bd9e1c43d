"""Task names that read on the dashboard: the key prefixes dask's ``key_split`` gives (what the
dashboard groups tasks by) name the user's operation and its stage (``matmul``,
``sum-partial``, ``mean-aggregate``, ``random_uniform``), fit the Progress panel's 20
characters, and are words dask keeps (letters, hyphens); the result blocks keep the
collection's name. ``measure()`` still recognises the plan's keys by their form."""
import re

import pytest
from dask.utils import key_split

import dask_tra as dt
from dask_tra.runtime.emit import MAX_PREFIX, Step, is_plan_name, task_name

WORDS = re.compile(r"[a-z][a-z_]*(-[a-z]+)*")


def prefixes(x) -> set:
    return {key_split(k) for k in dict(x.__dask_graph__())}


@pytest.fixture(scope="module")
def arrays(client):
    a = dt.random.uniform(-1, 1, (400, 400), chunks=(100, 100), seed=1)
    b = dt.random.uniform(-1, 1, (400, 200), chunks=(100, 100), seed=2)
    x = dt.random.uniform(-1, 1, (400, 300), chunks=(100, 100), seed=3)
    return a, b, x


def test_dashboard_prefixes_name_the_operations(arrays):
    a, b, x = arrays
    mm = prefixes((a @ b).sum(0))
    std = prefixes((x - x.mean(0)).std())
    assert "random_uniform" in mm  # inputs by what makes them, not tra-input-random
    assert any(p.startswith("matmul") for p in mm) and any(p.startswith("sum") for p in mm)
    assert "matmul-sum-partial" in mm  # the products are fused into the per-block sums
    assert "mean-aggregate" in std and "sum-partial" in std and "std" in std
    for p in mm | std:
        assert not p.startswith("tra-"), p
        assert len(p) <= MAX_PREFIX and WORDS.fullmatch(p), p


def test_result_keys_keep_the_collection_name(arrays):
    a, b, _ = arrays
    z = (a @ b).sum(0)
    keys = [(z.name, i) for i in range(z.numblocks[0])]
    assert z.__dask_keys__() == keys and len(keys) == 2
    assert {k for k in dict(z.__dask_graph__()) if k[0] == z.name} == set(keys)


def test_measure_counts_the_renamed_tasks_as_the_plans(arrays, client):
    a, b, _ = arrays
    z = (a @ b).sum(0)
    names = {k[0] for k in dict(z.__dask_graph__()) if k[0] != z.name}
    assert names and all(is_plan_name(n) for n in names)
    with dt.diagnostics.measure() as m:
        (p,) = dt.persist(z)
        from distributed import wait

        wait(p)
    assert m.bytes_moved > 0 and m.other_bytes == 0
    assert not is_plan_name("random_sample-" + "a" * 32) and not is_plan_name(z.name)


@pytest.mark.parametrize(
    "steps, name",
    [
        ([Step("random_uniform", role="input")], "random_uniform"),
        ([Step("random_uniform", role="input"), Step("sum", "partial")], "sum-partial"),
        ([Step("matmul", role="products"), Step("sum", "partial")], "matmul-sum-partial"),
        ([Step("sum", "aggregate", "aggregate"), Step("mean")], "mean-aggregate"),
        ([Step("sum", "aggregate", "aggregate"), Step("mean"), Step("mean", role="plumbing")], "mean-aggregate"),
        ([Step("matmul", role="products"), Step("logical_not", "partial")], "logical_not-partial"),
        ([Step("a_very_long_operation_name", "aggregate", "aggregate")], "a_very_lon-aggregate"),
    ],
)
def test_task_name(steps, name):
    assert task_name(steps) == name
    assert len(name) <= MAX_PREFIX

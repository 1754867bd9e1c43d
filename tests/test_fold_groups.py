"""Folds in bounded groups (``runtime/emit.py``, ``optimizer/memory.py``): a contraction or an
aggregation whose group is larger than ``memory.FOLD_BYTES`` is folded as a tree of tasks, each
reading at most that many operand bytes, and the memory model counts that bounded group. So
``A @ v`` over more than a site's memory, and the sum of a persisted array larger than it, are
planned and run where they were refused. ``FOLD_BYTES`` is lowered here so that test-sized blocks
are folded as 3.2 GB of 32 MB blocks are at full size. One 2-worker, 2-thread LocalCluster."""

import dask
import numpy as np
import pytest
from distributed import Client, Future, LocalCluster, futures_of, wait

import dask_tra as dt
from dask_tra.optimizer import MemoryLimitError
from dask_tra.optimizer import memory as mem

FOLD = 1_000_000  # bytes of operands one fold task may read, here (32 MiB by default)


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(n_workers=2, threads_per_worker=2, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture
def fold(monkeypatch):
    monkeypatch.setattr(mem, "FOLD_BYTES", FOLD)


def _tasks(x) -> dict:
    return {k: v for k, v in dict(x.__dask_graph__()).items() if not isinstance(v, Future)}


def _reads(x, *inputs) -> list:
    """Per task of x's graph, (how many blocks of the persisted ``inputs`` it reads, their bytes)."""
    held = futures_of(inputs[0])[0].client.nbytes(summary=False)
    sizes = {f.key: held[f.key] for i in inputs for f in futures_of(i)}
    out = []
    for t in _tasks(x).values():
        read = [d for d in t.dependencies if d in sizes]
        out.append((len(read), sum(sizes[d] for d in read)))
    return out


def _persisted(x):
    (p,) = dask.persist(x)
    wait(futures_of(p))
    return p


def test_matvec_folds_a_row_in_bounded_groups_and_fits_where_it_was_refused(client, fold):
    """A row of A (12 blocks of 408 KB, ragged) was one task holding all of it: 2 threads x 4.9 MB.
    With 1 MB per fold task, each task folds 2 products and a tree sums the partials: the plan
    needs a fraction of that, runs under a limit the whole row exceeds, and is exact."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1000, 1900)), rng.standard_normal(1900)
    A, v = _persisted(dt.from_array(a, chunks=(300, 170))), _persisted(dt.from_array(b, chunks=170))
    row = 12 * 300 * 170 * 8
    with dt.config.set(memory_limit=row):  # 2 threads each holding a whole row (or half of one): over it
        y = A @ v
        with dt.diagnostics.measure() as m:
            got = y.compute()
        peak = max(y.explain().predicted_peak_memory.values())
    np.testing.assert_allclose(got, a @ b, rtol=1e-10, atol=1e-10)
    assert peak <= row
    assert m.plan_bytes == m.predicted_bytes  # the tree's tasks sit where their group did: no move
    reads = _reads(y, A, v)
    assert sum(n for n, _ in reads) == 2 * 4 * 12  # every block of A (and v's partner) read once
    assert max(b for _, b in reads) <= FOLD  # a few at a time: 2 full blocks, 7 of the ragged row
    # the old model (a whole group per task) needs more than the limit
    with dt.config.set(memory_limit=row), pytest.MonkeyPatch.context() as mp:
        mp.setattr(mem, "FOLD_BYTES", 10**12)
        with pytest.raises(MemoryLimitError, match="no plan fits"):
            (dt.from_array(a, chunks=(300, 170)) @ dt.from_array(b, chunks=170)).compute()


def test_sum_of_a_persisted_array_reads_its_blocks_a_few_at_a_time(client, fold):
    """The sum of a persisted array larger than the limit: its blocks are read by the tasks
    running at once (dask spills the rest), never all of a worker's in one task."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1300, 1100))
    x = _persisted(dt.from_array(a, chunks=(250, 240)))  # 6 x 5 blocks, ragged, 480 KB at most
    with dt.config.set(memory_limit=3_000_000):  # under either worker's share (5.7 MB each)
        total, cols = x.sum(), x.sum(axis=0)
        for z, want in ((total, a.sum()), (cols, a.sum(axis=0))):
            with dt.diagnostics.measure() as m:
                got = z.compute()
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
            assert max(z.explain().predicted_peak_memory.values()) <= 3_000_000
            assert m.plan_bytes == m.predicted_bytes
    for z in (total, cols):
        reads = _reads(z, x)
        assert sum(n for n, _ in reads) == 30 and max(b for _, b in reads) <= FOLD, reads


def test_small_groups_keep_one_task(client):
    """Groups within ``FOLD_BYTES`` (the default, 32 MiB) are folded by one task, as before."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((400, 600)), rng.standard_normal(600)
    A, v = _persisted(dt.from_array(a, chunks=100)), _persisted(dt.from_array(b, chunks=100))
    y = A @ v
    np.testing.assert_allclose(y.compute(), a @ b, rtol=1e-10)
    assert max(n for n, _ in _reads(y, A)) == 6  # a whole row of A


def test_fold_widths():
    assert mem.fold_pairs(mem.FOLD_BYTES + 1) == 1 and mem.fold_pairs(mem.FOLD_BYTES // 3) == 3
    assert mem.fold_width(mem.FOLD_BYTES + 1) == 2 and mem.fold_width(8) == mem.FOLD_BYTES // 8

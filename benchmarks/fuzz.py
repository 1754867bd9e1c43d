"""A busy cluster, randomly: dask.array and dask_tra operations on shared persisted data,
interleaved with persist/del, replicate/rebalance and workers retired, added or killed
mid-compute. Every result is compared with NumPy on the same data.

``Workload`` holds the state and the operations; ``tests/test_fuzz.py`` drives it with a
hypothesis ``RuleBasedStateMachine``, ``python -m benchmarks soak`` with a seeded
``random.Random`` for minutes. Invariants (checked by ``Workload``): the right answer or a
documented error (``EXPECTED_ERRORS``); never an internal error, a wrong number or a hang
(every wait has a deadline); measured plan bytes within 10% of predicted whenever the
worker set did not change during the operation.
"""
from __future__ import annotations

import collections
import gc
import os
import threading
import time
import traceback

import numpy as np

from dask_tra.backends.cluster import workers_info

SHAPES = ((37, 53), (53, 37), (64, 64), (53, 53))
DEADLINE_S = 180


def expected_errors():
    """dask_tra's documented errors, and Dask's cancellation when data it cannot recompute
    (scattered blocks) was lost with a worker: raised by ``wait`` on a persisted array, by
    ``dask.compute``/``to_dask()`` paths, or after ``RelArray.compute``'s retries
    (docs/reliability.md). Counted by type in the report, never silently."""
    from distributed.client import FutureCancelledError, FuturesCancelledError

    from dask_tra.runtime.recovery import InputLostError
    from dask_tra.optimizer import MemoryLimitError
    return (MemoryLimitError, InputLostError, FutureCancelledError, FuturesCancelledError)


class WrongResult(AssertionError):
    pass


class Workload:
    """Named arrays (RelArray or dask.array, with their NumPy values) on one cluster."""

    def __init__(self, cluster, client, workers=4, min_workers=2, max_workers=5, check_bytes=True):
        self.cluster, self.client = cluster, client
        self.workers, self.min_workers, self.max_workers = workers, min_workers, max_workers
        self.check_bytes = check_bytes
        self.arrays = {}  # name -> (array, numpy value)
        self.count = 0
        self.stats = collections.Counter()
        self.errors = collections.Counter()
        self.byte_misses = []

    # ------------------------------------------------------------------ data
    def new(self, kind: str, shape_i: int, chunk_seed: int):
        import dask.array as da

        import dask_tra as dt
        shape = SHAPES[shape_i % len(SHAPES)]
        rng = np.random.default_rng(chunk_seed)
        chunks = tuple(_ragged(n, rng) for n in shape)
        value = rng.standard_normal(shape)
        if kind == "from_array":
            x = dt.from_array(value, chunks=chunks)
        elif kind == "random":
            x = dt.random.uniform(-1, 1, shape, chunks=chunks, seed=chunk_seed)
            value = dt.random.uniform(-1, 1, shape, chunks=chunks, seed=chunk_seed).compute()
        elif kind == "dask-persisted":
            x = self.client.persist(da.from_array(value, chunks=chunks))
            self._wait(x)
        elif kind == "dask-lazy":
            x = da.from_array(value, chunks=chunks)
        else:
            raise ValueError(kind)
        self.count += 1
        self.arrays[f"a{self.count}"] = (x, value)
        self.stats["new"] += 1

    def persist(self, i: int):
        name = self._pick(i)
        if name is None:
            return
        x, v = self.arrays[name]
        try:
            p = self._timed(x.persist) if not _is_dask(x) else self.client.persist(x)
            self._wait(p)
        except expected_errors() as e:
            self.errors[type(e).__name__] += 1
            return
        self.arrays[name] = (p, v)
        self.stats["persist"] += 1

    def delete(self, i: int):
        name = self._pick(i)
        if name is not None and len(self.arrays) > 1:
            del self.arrays[name]
            self.stats["del"] += 1

    # ------------------------------------------------------------------ operations
    def operate(self, op: str, i: int, j: int):
        """One operation on shared data, computed and compared with NumPy."""
        import dask_tra as dt
        a, b = self._pick(i), self._pick(j)
        if a is None:
            return
        (x, xv), (y, yv) = self.arrays[a], self.arrays[b]
        X, Y = _tra(x), _tra(y)
        if op == "elementwise":
            z, want = (X * 2 + X, xv * 3) if X.shape != Y.shape else (X * Y - 1, xv * yv - 1)
        elif op == "sum":
            z, want = X.sum(i % 2), xv.sum(i % 2)
        elif op == "matmul":
            z, want = (X @ Y, xv @ yv) if X.shape[1] == Y.shape[0] else (X @ X.T, xv @ xv.T)
        elif op == "einsum":
            z, want = ((dt.einsum("ij,kj->ik", X, Y), xv @ yv.T) if X.shape[1] == Y.shape[1]
                       else (dt.einsum("ij,ij->j", X, X), (xv * xv).sum(0)))
        elif op == "slice":
            z, want = X[1::2, : X.shape[1] - 3], xv[1::2, : xv.shape[1] - 3]
        elif op == "rechunk" and X.shape[1] == Y.shape[1]:
            z = X.rechunk((X.shape[0] // 2 + 1, 17)) @ Y.T.rechunk((17, Y.shape[0] // 3 + 1))
            want = xv @ yv.T
        elif op == "rechunk":
            z, want = X.rechunk(20), xv
        elif op in ("dask", "to_dask"):  # dask.array on the same data, mixed with dask_tra
            z, want = ((_dask(x) + 1).sum(0), (xv + 1).sum(0)) if op == "dask" else \
                ((X * 2).to_dask().T + 1, (xv * 2).T + 1)
            try:
                got = self._timed(z.compute)
            except expected_errors() as e:
                self.errors[type(e).__name__] += 1
                return
            return self._compare(op, got, want)
        else:
            raise ValueError(op)
        self._compute(op, z, want)

    def _compute(self, op, z, want):
        import dask_tra as dt
        before = self._worker_set()
        try:
            with dt.diagnostics.measure(self.client) as m:
                got = self._timed(z.compute)
        except expected_errors() as e:
            self.errors[type(e).__name__] += 1
            return
        self._compare(op, got, want)
        off = abs(m.plan_bytes - m.predicted_bytes) > 0.1 * max(m.predicted_bytes, 1) + 4096
        if off and self.check_bytes and before == self._worker_set() and m.complete:
            self.byte_misses.append((op, m.plan_bytes, m.predicted_bytes, str(z.explain())))

    def _compare(self, op, got, want):
        self.stats[op] += 1
        if np.shape(got) != np.shape(want) or not np.allclose(got, want, rtol=1e-8, atol=1e-8):
            self.stats["wrong"] += 1
            raise WrongResult(f"{op}: wrong result (max diff "
                              f"{np.max(np.abs(np.asarray(got) - want)) if np.shape(got) == np.shape(want) else 'shape'})")

    # ------------------------------------------------------------------ cluster events
    def replicate(self, i: int):
        from distributed import futures_of
        name = self._pick(i)
        fs = futures_of(self.arrays[name][0]) if name else []
        if fs:
            self.client.replicate(fs, n=2)
            self.stats["replicate"] += 1

    def rebalance(self):
        self.client.rebalance()
        self.stats["rebalance"] += 1

    def retire(self):
        if self.workers > self.min_workers:
            self.workers -= 1
            self.cluster.scale(self.workers)
            self._settle()
            self.stats["retire"] += 1

    def add(self):
        if self.workers < self.max_workers:
            self.workers += 1
            self.cluster.scale(self.workers)
            self._settle()
            self.stats["add"] += 1

    def kill_mid_compute(self, i: int, delay_ms: int):
        """A matmul runs in a thread while one worker dies without cleanup (its nanny starts
        a fresh one)."""
        name = self._pick(i)
        if name is None:
            return
        x, xv = self.arrays[name]
        X = _tra(x)
        out, err = [], []
        t = threading.Thread(target=_run, args=(lambda: (X @ X.T).compute(), out, err), daemon=True)
        t.start()
        time.sleep(delay_ms / 1000)
        workers = sorted(workers_info(self.client))
        victim = workers[delay_ms % len(workers)]
        self.client.run(os._exit, 1, workers=[victim], on_error="ignore")
        self.stats["faults"] += 1
        t.join(DEADLINE_S)
        if t.is_alive():
            self.errors["Hang"] += 1
            raise TimeoutError(f"matmul did not finish {DEADLINE_S}s after a worker was killed")
        self._settle()
        if err:
            if isinstance(err[0], expected_errors()):
                self.errors[type(err[0]).__name__] += 1
                return
            raise err[0]
        self._compare("matmul-killed", out[0], xv @ xv.T)

    # ------------------------------------------------------------------ helpers
    def scheduler_keys(self) -> int:
        return len(self.client.run_on_scheduler(_task_count))

    def _pick(self, i):
        names = sorted(self.arrays)
        return names[i % len(names)] if names else None

    def _worker_set(self):
        return frozenset(workers_info(self.client))

    def _settle(self):
        """Wait for the cluster to have its workers and nothing in flight."""
        start = time.time()
        while True:
            n = len(workers_info(self.client))
            busy = self.client.run_on_scheduler(_busy)
            if n == self.workers and not busy:
                return
            if time.time() > start + DEADLINE_S:
                self.errors["Hang"] += 1
                raise TimeoutError(f"cluster did not settle: {n} of {self.workers} workers, busy tasks {busy}")
            if n != self.workers and time.time() > start + 30:
                self.cluster.scale(self.workers)  # a nanny that gave up restarting its worker
            time.sleep(0.1)

    def _wait(self, x):
        from distributed import wait
        wait(x, timeout=DEADLINE_S)

    def _timed(self, fn):
        out, err = [], []
        t = threading.Thread(target=_run, args=(fn, out, err), daemon=True)
        t.start()
        t.join(DEADLINE_S)
        if t.is_alive():
            self.errors["Hang"] += 1
            raise TimeoutError(f"no result within {DEADLINE_S}s")
        if err:
            raise err[0]
        return out[0]


def _run(fn, out, err):
    try:
        out.append(fn())
    except BaseException as e:  # noqa: BLE001  (handed to the caller's thread)
        err.append(e)


def _task_count(dask_scheduler):
    return list(dask_scheduler.tasks)


def _busy(dask_scheduler):
    """(key, state, worker restrictions) of up to 5 tasks not yet done."""
    return [(str(ts.key), ts.state, sorted(ts.worker_restrictions or ())) for ts in dask_scheduler.tasks.values()
            if ts.state in ("processing", "waiting", "no-worker")][:5]


def _ragged(n, rng):
    """Chunk sizes summing to n, ragged at the end."""
    size = int(rng.integers(max(n // 5, 4), max(n // 2, 6)))
    return (size,) * (n // size) + ((n % size,) if n % size else ())


def _is_dask(x):
    return type(x).__module__.startswith("dask.array")


def _tra(x):
    import dask_tra as dt
    return dt.from_dask(x) if _is_dask(x) else x


def _dask(x):
    return x if _is_dask(x) else x.to_dask()


KINDS = ("from_array", "random", "dask-persisted", "dask-lazy")
OPS = ("elementwise", "sum", "matmul", "einsum", "slice", "rechunk", "dask", "to_dask")


def soak(minutes: float, workers=4, seed=0, out=print) -> dict:
    """Run random operations and faults for ``minutes``; return the counts."""
    import random

    from distributed import Client, LocalCluster
    rng = random.Random(seed)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="2GiB") as cluster, Client(cluster) as client:
        w = Workload(cluster, client, workers=workers)
        for k in KINDS:
            w.new(k, rng.randrange(4), rng.randrange(10**6))
        stop = time.time() + minutes * 60
        internal = collections.Counter()
        while time.time() < stop:
            r = rng.random()
            try:
                if r < 0.55:
                    w.operate(rng.choice(OPS), rng.randrange(100), rng.randrange(100))
                elif r < 0.65:
                    w.new(rng.choice(KINDS), rng.randrange(4), rng.randrange(10**6))
                elif r < 0.72:
                    w.persist(rng.randrange(100))
                elif r < 0.78:
                    w.delete(rng.randrange(100))
                elif r < 0.82:
                    w.replicate(rng.randrange(100))
                elif r < 0.85:
                    w.rebalance()
                elif r < 0.89:
                    w.retire()
                elif r < 0.93:
                    w.add()
                else:
                    w.kill_mid_compute(rng.randrange(100), rng.randrange(5, 400))
            except WrongResult as e:
                out(f"WRONG: {e}")
            except Exception as e:  # noqa: BLE001  (an internal error: counted, reported; the soak goes on)
                internal[type(e).__name__] += 1
                out(f"error: {type(e).__name__}: {str(e)[:300]}\n{traceback.format_exc(limit=-6)}")
                w._settle()
        ops = sum(v for k, v in w.stats.items() if k in OPS or k == "matmul-killed")
        w.arrays.clear()
        gc.collect()
        time.sleep(2)
        left = [k for k in client.run_on_scheduler(_task_count)]
        return {"minutes": minutes, "operations": ops, "events": dict(w.stats), "faults": w.stats["faults"],
                "wrong": w.stats["wrong"], "documented errors": dict(w.errors), "internal errors": dict(internal),
                "byte mismatches": len(w.byte_misses), "byte mismatch examples": w.byte_misses[:3],
                "scheduler keys left after del": len(left), "left examples": left[:5]}

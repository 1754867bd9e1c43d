"""Running one competitor on one workload, and measuring it.

Cluster competitors (dask_tra's automatic plan, dask_tra with each forced contraction
strategy, dask.array) run on the same cluster. Before every run the inputs are created
afresh (same seeds, new keys) and persisted in the layout dask_tra gives a lone input; the
timed region then starts from data that exists on the workers, identical for every
competitor (dask.array reads the persisted blocks via ``.to_dask()``), and ends when the
results are persisted on the workers (not gathered to the client). Fresh inputs every run
mean no replica left by an earlier run can save a transfer.

NumPy and PyTorch run in a fresh single process (spawned), on the same values, all cores.

A workload's ``after_persist`` hook (suite ``sparse``: ``client.rebalance()`` of the inputs) runs
after the inputs are persisted and before the timed region, for every cluster competitor. A
forced strategy the optimizer does not offer for a contraction (not applicable, or not built
yet) is recorded as ``n/a: <the optimizer's message>``, not as an error. ``dask.array:sparse``
(dask.array on pydata ``sparse.COO`` chunks, converted from the same blocks before the timed
region) runs only where ``sparse`` is importable.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

CONTRACTION_KINDS = ("matmul", "einsum", "contraction")
FORCED = ("bmm", "cmm", "rmm")
FORCED_SPARSE = FORCED + ("two-phase",)  # suite sparse also forces issue 14's two-phase plan
NOT_APPLICABLE = ("is not applicable", "unknown strategy", "no such strategy")


@dataclass
class Result:
    workload: str
    competitor: str
    status: str = "ok"              # ok | skipped: why | error: what
    times: list = field(default_factory=list)
    bytes_moved: list = field(default_factory=list)
    predicted_bytes: int | None = None
    predicted_peak: int | None = None
    peak_mem: list = field(default_factory=list)      # max over processes of RSS growth in the run
    peak_rss: list = field(default_factory=list)      # max over processes of absolute RSS
    submit_s: list = field(default_factory=list)      # client side: graph build (+ planning) and submit
    tasks: int | None = None
    compute_s: list = field(default_factory=list)     # sum of task compute time (all workers)
    transfer_s: list = field(default_factory=list)    # sum of transfer time (all workers)
    plan_s: list = field(default_factory=list)        # client side: dask_tra's optimizer
    plan_first_s: float | None = None                 # uncached planning: median of the warm-up's and re-plans
    greedy_first_s: float | None = None               # of which the two-phase greedy (the same samples)
    emit_s: list = field(default_factory=list)        # client side: plan -> Dask graph
    task_kinds: dict = field(default_factory=dict)    # task name prefix -> count (last run)
    strategies: str = ""
    check: str = ""                 # result checksum agreement with NumPy
    balance: list = field(default_factory=list)       # max/mean over workers of task compute time

    @property
    def ok(self):
        return self.status == "ok" and bool(self.times)

    def median(self, name):
        vals = [v for v in getattr(self, name) if v is not None]
        return statistics.median(vals) if vals else None

    def to_dict(self):
        return asdict(self)


# -- memory ------------------------------------------------------------------------------

class RssSampler:
    """Samples the RSS of some processes every ``interval`` s in a background thread."""

    def __init__(self, pids, interval=0.02):
        import psutil
        self.procs = [psutil.Process(p) for p in pids]
        self.interval = interval
        self.lock = threading.Lock()
        self.base = self.peak = None
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _rss(self):
        out = []
        for p in self.procs:
            try:
                out.append(p.memory_info().rss)
            except Exception:  # noqa: BLE001 (a worker restarted)
                out.append(0)
        return out

    def _loop(self):
        while not self.stop_flag.wait(self.interval):
            rss = self._rss()
            with self.lock:
                if self.peak is not None:
                    self.peak = [max(a, b) for a, b in zip(self.peak, rss)]

    def begin(self, base=None):
        """Start a window; growth is measured from ``base`` (default: the RSS now)."""
        rss = self._rss()
        with self.lock:
            self.base, self.peak = (base or rss), list(rss)

    def end(self):
        rss = self._rss()
        with self.lock:
            peak = [max(a, b) for a, b in zip(self.peak, rss)]
            base, self.peak = self.base, None
        return max(p - b for p, b in zip(peak, base)), max(peak)

    def close(self):
        self.stop_flag.set()
        self.thread.join()


# -- checksums ---------------------------------------------------------------------------

def checksum(x):
    if hasattr(x, "todense") and not isinstance(x, np.ndarray):  # a sparse.COO chunk
        x = x.todense()
    x = np.asarray(x)
    return float(np.sum(x, dtype=np.float64)), float(np.sum(np.square(x, dtype=np.float64))), int(x.size)


def _add(parts):
    return tuple(sum(p[i] for p in parts) for i in range(3))


def checksums_equal(a, b, rtol=1e-6):
    for (s1, q1, n1), (s2, q2, n2) in zip(a, b):
        if n1 != n2 or abs(q1 - q2) > rtol * max(abs(q1), abs(q2), 1e-300):
            return False
        if abs(s1 - s2) > rtol * (np.sqrt(max(q1, q2) * n1) + 1):
            return False
    return len(a) == len(b)


REPLANS = 4  # uncached re-plans after the warm-up (planning only), for the planning figures


def _median(xs):
    return float(np.median(xs)) if xs else None


# -- client-side timers -------------------------------------------------------------------

class ClientTimers:
    """Time spent in dask_tra's optimizer and graph emission, the part of planning the two-phase
    greedy takes, and the scheduler round trip that reads the workers and where the inputs are
    (wraps the functions that do it; does nothing if those names move)."""

    def __init__(self):
        self.plan_s = self.emit_s = self.greedy_s = self.query_s = 0.0
        self.saved = []

    def _wrap(self, mod, name, attr):
        fn = getattr(mod, name, None)
        if fn is None:
            return

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                setattr(self, attr, getattr(self, attr) + time.perf_counter() - t0)
        self.saved.append((mod, name, fn))
        setattr(mod, name, timed)

    def __enter__(self):
        import importlib
        for modname, plan_fn in (("dask_tra.runtime.collection", "plan_many"),):
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                continue
            self._wrap(mod, plan_fn, "plan_s")
            self._wrap(mod, "emit", "emit_s")
            self._wrap(mod, "cluster_snapshot", "query_s")
        try:  # the greedy placement and its rivals (``twophase_strategy.cost`` calls ``_best``)
            self._wrap(importlib.import_module("dask_tra.optimizer.twophase_strategy"), "_best", "greedy_s")
        except ImportError:
            pass
        return self

    def __exit__(self, *exc):
        for mod, name, fn in self.saved:
            setattr(mod, name, fn)
        return False


# -- cluster competitors -----------------------------------------------------------------

def _identity(*arrays):
    return arrays


def _joint_class():
    """dask_tra's ``Joint`` (several outputs planned as one computation), if this version has it."""
    try:
        from dask_tra.autodiff import Joint
    except ImportError:
        try:
            from dask_tra import Joint
        except ImportError:
            return None
    return Joint


class ClusterRunner:
    """Runs cluster competitors for one workload on one client."""

    def __init__(self, client, lazy_inputs=False, joint=True):
        self.client = client
        self.lazy_inputs = lazy_inputs
        self.joint = _joint_class() if joint else None
        pids = client.run(os.getpid)
        self.workers = sorted(pids)
        self.sampler = RssSampler(pids.values())
        client.get_task_stream(start=time.time())  # the first call installs the scheduler's recorder

    def close(self):
        self.sampler.close()

    def run_once(self, w, dims, competitor, seed=0, with_checksum=False):
        """One timed run; returns a dict of measurements (and checksums if asked)."""
        import dask
        import dask.array as da
        from distributed import futures_of, wait

        import dask_tra as dt
        from .workloads import make_inputs

        client = self.client
        inputs = make_inputs(w, dims, seed)
        names = list(inputs)
        if self.lazy_inputs:  # made inside the timed run, where each plan wants them
            persisted = list(inputs.values())
        else:
            persisted = dask.persist(*inputs.values())
            wait(list(persisted))
        x = dict(zip(names, persisted))
        if w.after_persist is not None and not self.lazy_inputs:
            w.after_persist(client, x)
            if with_checksum:
                from .workloads import placement_summary
                print(f"    {competitor}: inputs' blocks per worker after {w.after_persist.__name__}: "
                      f"{placement_summary(client, x)}")
        force = competitor.split(":", 1)[1] if competitor.startswith("dask_tra:") else None
        if competitor == "dask.array":
            xp, barrier = da, _identity
            x = {k: v.to_dask() for k, v in x.items()}
        elif competitor == "dask.array:sparse":  # the same blocks as sparse.COO chunks, made untimed
            import sparse
            xp, barrier = da, _identity
            x = dict(zip(x, dask.persist(*[v.to_dask().map_blocks(sparse.COO.from_numpy) for v in x.values()])))
            wait(list(x.values()))
        else:
            xp = dt
            joint = self.joint
            if joint is None:  # no joint planning: materialise intermediates several outputs share
                def barrier(*arrays):
                    arrays = dask.persist(*arrays)
                    wait(list(arrays))
                    return arrays
            else:
                barrier = _identity
        i_stream = client.run_on_scheduler(_stream_index)
        self.sampler.begin()
        t_wall0 = time.time()
        t0 = time.perf_counter()
        with dt.config.set(force=force), dt.diagnostics.measure(client) as m, ClientTimers() as ct:
            outs = w.fn(xp, x, barrier)
            if not competitor.startswith("dask.array") and len(outs) > 1 and self.joint is not None:
                outs = dask.persist(self.joint(*outs))[0]  # one plan for every output
            else:
                outs = dask.persist(*outs)
            t_submit = time.perf_counter() - t0
            # the plans that run, taken before ``wait``: waiting on a persisted block-sparse array
            # asks it for its graph again, and its trivial re-plan replaced the report in ``m``
            explains = list(m.explains)
            wait(list(outs))
            wall = time.perf_counter() - t0
        t_wall1 = time.time()
        peak, peak_rss = self.sampler.end()
        rec = dict(wall=wall, submit=t_submit, bytes=m.bytes_moved, complete=m.complete,
                   peak=peak, peak_rss=peak_rss, plan_s=ct.plan_s, emit_s=ct.emit_s, greedy_s=ct.greedy_s)
        if not competitor.startswith("dask.array"):
            # the plans' own bytes: m.predicted_bytes would add the gather of a compute(), which
            # persist does not do (dask calls __dask_postcompute__ for persist too)
            rec["predicted"] = sum(e.predicted_bytes for e in explains)
            rec["predicted_peak"] = max((max(e.predicted_peak_memory.values(), default=0) for e in explains),
                                        default=0)
            rec["strategies"] = " | ".join(
                ",".join(op.strategy for op in e.operators if op.kind in CONTRACTION_KINDS) for e in explains)
        stream = [t for t in client.get_task_stream(start=t_wall0, stop=t_wall1)
                  if min(s["start"] for s in t["startstops"]) >= t_wall0]
        rec["tasks"] = len(stream)
        from dask.utils import key_split
        kinds = {}
        for t in stream:
            k = key_split(t["key"])
            kinds[k] = kinds.get(k, 0) + 1
        rec["task_kinds"] = dict(sorted(kinds.items(), key=lambda kv: -kv[1]))
        rec["compute_s"] = sum(s["stop"] - s["start"] for t in stream for s in t["startstops"]
                               if s["action"] == "compute")
        rec["transfer_s"] = sum(s["stop"] - s["start"] for t in stream for s in t["startstops"]
                                if s["action"] == "transfer")
        # by the stream's append counter, not by time: a time window drops short tasks whose
        # (worker-clock-corrected) start falls a few ms before it
        rec["balance"] = compute_balance(client.run_on_scheduler(_stream_since, start_index=i_stream), self.workers)
        if with_checksum:
            sums = []
            for o in outs:
                futs = futures_of(o)
                s, q, n = _add(client.gather(client.map(checksum, futs, pure=False)))
                if getattr(getattr(o, "sparse_expr", None), "type", None) is not None and \
                        o.sparse_expr.type.keys is not None:  # block-sparse: missing blocks are zeros
                    n = int(np.prod(o.shape))
                sums.append((s, q, n))
            rec["checksums"] = sums
            if not competitor.startswith("dask.array"):
                rec["replans"] = self.replan(w, x, force, REPLANS)
        del outs, persisted, x, inputs
        return rec

    def replan(self, w, x, force, n):
        """[(optimizer s, greedy s)] of ``n`` uncached plans of the workload on the inputs ``x`` as
        they are (planning only: the plan caches are emptied first, nothing is computed)."""
        import dask_tra as dt
        from dask_tra.optimizer import cache
        out, kept = [], list(cache._plans.items())  # the other competitors' plans, put back after
        try:
            for _ in range(n):
                cache.clear()
                with dt.config.set(force=force), ClientTimers() as ct:
                    outs = w.fn(dt, x, _identity)
                    for o in (self.joint(*outs),) if len(outs) > 1 and self.joint is not None else outs:
                        o.planned()
                out.append((ct.plan_s, ct.greedy_s))
        finally:
            cache.clear()
            for k, v in kept:
                cache.put(k, v)
        return out


def _stream_index(dask_scheduler):
    return dask_scheduler.plugins["task-stream"].index


def _stream_since(dask_scheduler, start_index):
    return dask_scheduler.plugins["task-stream"].collect(start_index=start_index)


def compute_balance(stream, workers):
    """Per-site compute balance of one run: max / mean over the cluster's workers (idle ones
    count as 0) of each worker's summed task compute time, from the task stream. 1.0 = even."""
    busy = dict.fromkeys(workers, 0.0)
    for t in stream:
        for s in t["startstops"]:
            if s["action"] == "compute":
                busy[t["worker"]] = busy.get(t["worker"], 0.0) + s["stop"] - s["start"]
    mean = sum(busy.values()) / max(1, len(busy))
    return max(busy.values()) / mean if mean > 0 else None


def not_applicable(competitor, e) -> bool:
    """A forced strategy the optimizer does not offer here (or does not know yet)."""
    return competitor.startswith("dask_tra:") and any(m in str(e) for m in NOT_APPLICABLE)


def run_cluster_competitor(runner, w, dims, competitor, repeat, reference=None, log=print):
    """Warm-up (checked against ``reference`` checksums) then ``repeat`` timed runs."""
    res = Result(w.name, competitor)
    try:
        rec = runner.run_once(w, dims, competitor, seed=0, with_checksum=True)
    except Exception as e:  # noqa: BLE001
        if not_applicable(competitor, e):
            res.status = f"n/a: {str(e).splitlines()[0][:300]}"
            log(f"    {competitor}: {res.status}")
            return res
        res.status = f"error: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        log(f"    {competitor}: {res.status}")
        if os.environ.get("BENCH_DEBUG"):
            traceback.print_exc()
        return res
    if reference is not None:
        res.check = "ok" if checksums_equal(rec["checksums"], reference) else "DIFFERS"
    res.strategies = rec.get("strategies", "")
    if not competitor.startswith("dask.array"):
        # uncached planning: the warm-up's and the re-plans', median (one sample on a busy
        # 2-core machine swung 2x)
        samples = [(rec.get("plan_s"), rec.get("greedy_s"))] + rec.get("replans", [])
        res.plan_first_s = _median([a for a, _ in samples if a is not None])
        res.greedy_first_s = _median([b for _, b in samples if b is not None])
    res.predicted_bytes = rec.get("predicted")
    res.predicted_peak = rec.get("predicted_peak")
    return res


def add_timed_run(runner, res, w, dims, competitor, seed, log=print):
    if not res.status == "ok":
        return
    try:
        rec = runner.run_once(w, dims, competitor, seed=seed)
    except Exception as e:  # noqa: BLE001
        res.status = f"error: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        log(f"    {competitor}: {res.status}")
        return
    res.times.append(rec["wall"])
    res.bytes_moved.append(rec["bytes"])
    res.peak_mem.append(rec["peak"])
    res.peak_rss.append(rec["peak_rss"])
    res.submit_s.append(rec["submit"])
    res.compute_s.append(rec["compute_s"])
    res.transfer_s.append(rec["transfer_s"])
    res.balance.append(rec.get("balance"))
    res.plan_s.append(rec["plan_s"])
    res.emit_s.append(rec["emit_s"])
    res.tasks = rec["tasks"]
    res.task_kinds = rec["task_kinds"]
    if rec.get("predicted") is not None:
        res.predicted_bytes = rec["predicted"]


# -- single-process competitors (NumPy, PyTorch) ------------------------------------------

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _single(workload_name, suite, dims, kind, repeat, threads):
    """In a fresh process: make the inputs, warm up, time ``repeat`` runs, report peak RSS growth."""
    import dask

    from .workloads import SUITES, make_inputs
    w = next(x for x in SUITES[suite] if x.name == workload_name)
    inputs = make_inputs(w, dims, 0)
    arrays = dask.compute(*[a.to_dask() for a in inputs.values()], scheduler="sync")
    x = dict(zip(inputs, arrays))
    if kind == "torch":
        import torch
        torch.set_num_threads(threads)
        x = {k: torch.from_numpy(v) for k, v in x.items()}

        def run():
            return w.torch_fn(torch, x)
    else:
        def run():
            return w.fn(np, x, _identity)
    sampler = RssSampler([os.getpid()], interval=0.01)
    base = sampler._rss()  # after the inputs exist: later runs reuse memory the warm-up freed,
    out = run()  # warm-up   # so growth is counted from here, not from each run's start
    sums = [checksum(o.detach().numpy() if hasattr(o, "detach") else o) for o in out]
    del out
    times, peaks, rss = [], [], []
    for _ in range(repeat):
        sampler.begin(base)
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
        del out
        p, r = sampler.end()
        peaks.append(p)
        rss.append(r)
    sampler.close()
    return dict(times=times, peak=peaks, peak_rss=rss, checksums=sums, threads=threads)


def _spawn_single(w, suite, dims, kind, repeat, threads):
    """Run _single in a spawned process whose BLAS/OpenMP pools have ``threads`` threads."""
    import concurrent.futures as cf
    import multiprocessing as mp
    saved = {v: os.environ.get(v) for v in THREAD_VARS}
    os.environ.update({v: str(threads) for v in THREAD_VARS})  # read by the child at import
    try:
        with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as ex:
            fut = ex.submit(_single, w.name, suite, dims, kind, repeat, threads)
    finally:
        for v, val in saved.items():
            if val is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = val
    return fut.result()


def run_single_competitor(w, suite, dims, kind, repeat, log=print):
    """The best single process: run with one thread and with every core, keep the faster."""
    res = Result(w.name, kind)
    recs = []
    for threads in sorted({1, os.cpu_count() or 1}):
        try:
            recs.append(_spawn_single(w, suite, dims, kind, repeat, threads))
        except Exception as e:  # noqa: BLE001
            res.status = f"error: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            log(f"    {kind}: {res.status}")
            return res, None
    recs.sort(key=lambda r: statistics.median(r["times"]))
    rec = recs[0]
    res.times, res.peak_mem, res.peak_rss = rec["times"], rec["peak"], rec["peak_rss"]
    res.strategies = f"{rec['threads']} thread(s)" + "".join(
        f"; {r['threads']}: {statistics.median(r['times']):.3f}s" for r in recs[1:])
    return res, rec["checksums"]

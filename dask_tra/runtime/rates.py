"""The time objective's constants for the connected cluster: what the cluster already knows,
measured only when asked (``dask_tra.calibrate(client)``), and shared by every client.

Planning never runs a task on the cluster. The rates a plan is costed with come, each from
the first of:

1. ``dask_tra.config`` (``bandwidth``, ``task_overhead``, ``flop_rate``): always wins;
2. the rates last calibrated on this cluster by any client, stored on the scheduler by
   dask_tra's plugin (``plugin.RATES_OP``);
3. the scheduler's own bandwidth estimate: the median over worker pairs of what workers
   measured on their transfers of over 1 MB (``Scheduler.bandwidth_workers``; distributed's
   ``Scheduler.bandwidth`` starts at the 100 MB/s of ``distributed.scheduler.bandwidth`` and
   moves 5% per transfer, so for a long while it is the config default, not a measurement);
4. the defaults of ``optimizer.Rates`` (a 1 Gbit/s cluster of CPU workers).

The scheduler's per-prefix task durations are not used: a prefix's mean duration carries no
flop count or task count to turn into a compute rate or a per-task overhead.

What the cluster knows reaches a client with planning's placement query (one round trip it
makes anyway) and is kept per scheduler in this process. A new calibration on the scheduler
replaces it; the bandwidth estimate is kept as first seen, so that the plan ``explain()``
shows is the plan ``compute()`` runs (a plan is cached per set of rates).
``probe_rates=False`` plans with config values and the defaults only.

``calibrate(client)`` times, on the cluster itself, in tasks whose keys all have the dashboard
prefix ``dask_tra-calibrate``:

- bandwidth: every worker fetching a 16 MiB block from the next at once, in a ring, as a
  plan's moves run: per worker, 16 MiB over the faster of two rings' wall time (after a 1 MiB
  warm-up ring).
  Workers sharing a host share its cores and memory bus: on a LocalCluster of 4 workers on
  2 cores one fetch alone ran at 480 MB/s and each of a ring's at 275 MB/s, the rate a
  plan's concurrent moves see;
- per-task overhead: the extra wall time of a graph of 300 tasks over one of 60, less the
  extra compute, in tasks shaped like a plan's: each pinned to a worker (pinned tasks skip
  the scheduler's queue of root tasks, so timing unpinned ``client.map`` calls measured round
  trips instead: 6 ms per task at 250 Mbit/s against 0.6 ms in a graph), each burning 4 ms of
  CPU, and half of them reading a small block made on another worker. A graph of no-op tasks
  measured 0.7 ms per task on a LocalCluster of 4 workers on 2 cores; these tasks 2.1-2.5 ms,
  as a least-squares fit of 36 benchmark plans' wall times did (2.6 ms): the scheduler and the
  transfers share the cores the tasks compute on;
- compute rate: a 512³ float64 matmul on one worker, scaled by the share of a core each worker
  thread gets when every worker computes (a host whose worker threads outnumber its cores, such
  as a LocalCluster of 4 workers on 2 cores, gives each about half its solo rate).

About 2 s on a local 4-worker LocalCluster (it also has every worker import dask_tra); on a
slow network the two 16 MiB rings add 2 × 16 MiB ÷ the per-worker bandwidth (about 1.2 s at
the 28 MB/s of a 250 Mbit/s link). Its tasks run beside whatever else the cluster runs: call it
on an idle cluster, outside a ``diagnostics.measure()`` block (inside one, its transfers count
in ``other_bytes``, never as a plan's).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
import uuid

import numpy as np

from .. import config
from ..backends.cluster import workers_info
from ..optimizer import Rates
from .ownership import Pins, mark
from .plugin import MEASURED, valid_rates
from .session import query_rates, store_rates
from .sites import in_event_loop

PREFIX = "dask_tra-calibrate"  # every calibration task's key prefix (``key_split``) on the dashboard

_known: dict = {}  # scheduler address -> the scheduler's rates reply (``plugin.rates_reply``), as kept


def _name(kind: str) -> str:
    """A calibration key: ``dask_tra-calibrate-<token>-<kind>``. The token starts with a digit,
    so the dashboard's prefix (``key_split``) stops before it: every such key is ``PREFIX``."""
    return f"{PREFIX}-0{uuid.uuid4().hex[:11]}-{kind}"


def _block(nbytes):
    return np.ones(nbytes // 8)


def _nbytes(x):
    return int(x.nbytes)


TASK_CPU_S = 0.004  # what each probe task computes (CPU time)


def _busy(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def _made(seconds):
    """A probe task making a small block; being dask_tra's, the warm-up graph makes each worker
    import dask_tra (as every plan's tasks need) before anything is timed."""
    _busy(seconds)
    return np.ones(1000)


def _read(block, seconds):
    _busy(seconds)
    return block.size


def _pinned_graph_seconds(client, workers, n, cpu_s=TASK_CPU_S) -> float:
    """Wall time of one graph of ``n`` tasks pinned round-robin to ``workers`` (as a plan's tasks
    are), each computing ``cpu_s``: ``n / 2`` make a block, and as many read one of those made
    on the next worker; then one task reading the readers."""
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    name = _name("overhead")
    w = len(workers)
    dsk: dict = {}
    pins: dict = {}
    for i in range(n // 2):
        dsk[(name, "made", i)], pins[(name, "made", i)] = (_made, cpu_s), [workers[i % w]]
        dsk[(name, i)], pins[(name, i)] = (_read, (name, "made", i), cpu_s), [workers[(i + 1) % w]]
    dsk[(name, "all")] = (len, [(name, i) for i in range(n // 2)])
    pins[(name, "all")] = [workers[0]]
    layer = MaterializedLayer(dsk, annotations=mark({"workers": Pins(pins), "allow_other_workers": False}))
    t0 = time.perf_counter()
    client.get(HighLevelGraph({name: layer}, {name: set()}), (name, "all"))
    return time.perf_counter() - t0


def _ring_seconds(client, workers, nbytes) -> float:
    """Wall time of every worker fetching an ``nbytes`` block made on the next worker, at once."""
    n, name = len(workers), _name("ring")
    blocks = [client.submit(_block, nbytes, workers=[w], key=f"{name}-block-{i}") for i, w in enumerate(workers)]
    here = [
        client.submit(_nbytes, b, workers=[w], key=f"{name}-local-{i}") for i, (b, w) in enumerate(zip(blocks, workers))
    ]
    client.gather(here)
    t0 = time.perf_counter()
    client.gather(
        [client.submit(_nbytes, blocks[i], workers=[workers[(i + 1) % n]], key=f"{name}-fetch-{i}") for i in range(n)]
    )
    return time.perf_counter() - t0


def _matmul_seconds(n):
    a = np.random.default_rng(0).standard_normal((n, n))
    a @ a  # warm-up (BLAS threads, page faults)
    t0 = time.perf_counter()
    a @ a
    return time.perf_counter() - t0


def _host_cores():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return socket.gethostname(), cores or 1


def core_share(client) -> float:
    """The smallest, over hosts, of cores ÷ worker threads on that host (at most 1)."""
    info = workers_info(client)
    hosts = client.run(_host_cores)
    threads: dict[str, int] = {}
    cores: dict[str, int] = {}
    for w, (host, n) in hosts.items():
        threads[host] = threads.get(host, 0) + int(info.get(w, {}).get("nthreads", 1))
        cores[host] = n
    return min((min(1.0, cores[h] / threads[h]) for h in threads), default=1.0)


def measure(client, workers) -> dict:
    """{bandwidth, task_overhead, flop_rate} measured on ``client``'s ``workers`` (addresses).
    Runs tasks; stores nothing."""
    if not workers:
        return {}
    info = workers_info(client)
    workers = sorted(workers)
    out = {}
    _pinned_graph_seconds(client, workers, max(20, 2 * len(workers)), 0.0)  # warm-up: imports dask_tra
    if len(workers) >= 2:
        _ring_seconds(client, workers, 1 << 20)  # warms the connections up
        took = min(_ring_seconds(client, workers, 16 << 20) for _ in range(2))
        out["bandwidth"] = (16 << 20) / max(took, 1e-4)
    share = core_share(client)
    small, large = _pinned_graph_seconds(client, workers, 60), _pinned_graph_seconds(client, workers, 300)
    # the 240 extra tasks' own compute, spread over the cores the worker threads get, is not overhead
    threads = sum(int(info.get(w, {}).get("nthreads", 1)) for w in workers)
    marginal = (large - small - 240 * TASK_CPU_S / (threads * share)) / 240
    out["task_overhead"] = marginal if marginal > 0 else large / 300  # noise: the mean, an upper bound
    n = 512
    secs = client.submit(_matmul_seconds, n, workers=[workers[0]], key=_name("matmul")).result()
    out["flop_rate"] = 2 * n**3 / max(secs, 1e-6) * share
    return out


def calibrate(client=None, workers=None) -> dict:
    """Measure the time objective's rates on the cluster now, and store them on its scheduler.

    Every client of the cluster, in any process, plans with them from its next plan
    (``dask_tra.config`` values still win). Planning never calibrates by itself: call this once
    on an idle cluster (about 2 s on a local 4-worker cluster), and again after the cluster
    changed. Its tasks show on the dashboard as ``dask_tra-calibrate``.

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster's client; default ``distributed.default_client()``.
    workers : iterable of str, optional
        The addresses of the workers to time; default every worker.

    Returns
    -------
    dict
        ``{"bandwidth": bytes/s per worker, "task_overhead": s per task, "flop_rate": flop/s
        per worker}``; ``{}`` for no workers (nothing is stored then).

    See Also
    --------
    install

    Examples
    --------
    >>> from distributed import Client  # doctest: +SKIP
    >>> import dask_tra as dt  # doctest: +SKIP
    >>> client = Client(n_workers=4)  # doctest: +SKIP
    >>> rates = dt.calibrate(client)  # doctest: +SKIP
    >>> sorted(rates)  # doctest: +SKIP
    ['bandwidth', 'flop_rate', 'task_overhead']
    """

    if client is None:
        from distributed import default_client

        client = default_client()
    if workers is None:
        workers = workers_info(client)
    workers = tuple(sorted(workers))
    measured = measure(client, workers)
    if measured:
        learn(client.scheduler.address, store_rates(client, measured, workers))
    return measured


def learn(address, reply) -> None:
    """Keep a scheduler's rates reply (``plugin.rates_reply``) for planning in this process: the
    first one, then one only when it carries another calibration or comes from another
    scheduler at that address (so a plan stays the same plan while the scheduler's bandwidth
    estimate drifts)."""
    if not isinstance(reply, dict) or "generation" not in reply:
        return
    if valid_rates(reply.get("calibrated") or {}) is not None:
        return
    bandwidth = reply.get("bandwidth")
    if bandwidth is not None and valid_rates({"bandwidth": bandwidth}) is not None:
        return
    kept = _known.get(address)
    same = kept is not None and (kept.get("scheduler"), kept["generation"]) == (
        reply.get("scheduler"),
        reply["generation"],
    )
    if not same:
        _known[address] = reply


def forget(client=None) -> None:
    """Drop what this process kept of a cluster's rates (every cluster's, without ``client``):
    its next plan asks the scheduler again."""
    if client is None:
        _known.clear()
    else:
        _known.pop(client.scheduler.address, None)


def cluster_rates(client) -> dict:
    """The rates ``client``'s cluster knows (a subset of ``MEASURED``): its stored calibration
    over the scheduler's bandwidth estimate. Asks the scheduler (one round trip) only when this
    process kept nothing for it yet; {} inside the client's event loop, where it cannot ask, and
    when the scheduler cannot answer (a plugin of an older dask_tra registered first: it keeps
    the first registration)."""
    address = client.scheduler.address
    if address not in _known:
        if in_event_loop(client) or client.status != "running":
            return {}
        try:
            reply = query_rates(client)
        except Exception:  # noqa: BLE001 (e.g. an older dask_tra's plugin on the scheduler: no such handler)
            reply = {"scheduler": None, "generation": -1, "calibrated": None, "bandwidth": None}
        learn(address, reply)
    kept = _known.get(address) or {}
    out = {} if kept.get("bandwidth") is None else {"bandwidth": float(kept["bandwidth"])}
    out.update({k: float(v) for k, v in (kept.get("calibrated") or {}).items()})
    return out


def rate_sources(where) -> dict:
    """{rate: where its value comes from}: "config", "calibrated" (stored on the scheduler),
    "scheduler" (its bandwidth estimate) or "default", for the three measured rates."""
    known = {}
    if config.get("probe_rates") and where.client is not None:
        address = where.client.scheduler.address
        cluster_rates(where.client)
        kept = _known.get(address) or {}
        known = {k: "calibrated" for k in kept.get("calibrated") or {}}
        if kept.get("bandwidth") is not None:
            known.setdefault("bandwidth", "scheduler")
    return {k: "config" if config.get(k) is not None else known.get(k, "default") for k in MEASURED}


def current_rates(where) -> Rates:
    """Rates for planning on ``where`` (a ``Sites``): config, else what the cluster knows (see
    the module doc), else defaults. Runs no task."""
    given = {f.name: config.get(f.name) for f in dataclasses.fields(Rates)}
    rates = {k: float(v) for k, v in given.items() if v is not None}
    if config.get("probe_rates") and where.client is not None and any(k not in rates for k in MEASURED):
        rates = {**cluster_rates(where.client), **rates}
    return Rates(**rates)


def planning_rates(where) -> Rates:
    """``current_rates`` with the tasks a worker runs at once (its threads, unless configured):
    the memory estimate then streams (``optimizer/memory.py``)."""
    rates = current_rates(where)
    threads = getattr(where, "threads", 0)
    if config.get("threads") is None and threads:
        rates = dataclasses.replace(rates, threads=float(threads))
    return rates

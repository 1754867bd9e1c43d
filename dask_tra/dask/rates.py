"""The time objective's constants for the connected cluster: measured once, cheaply, and cached.

``cluster_rates(client)`` times, on the cluster itself:

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

Once per client and set of workers: about 2 s on a local 4-worker LocalCluster; on a slow
network the two 16 MiB rings add 2 × 16 MiB ÷ the per-worker bandwidth (about 1.2 s at the
28 MB/s of a 250 Mbit/s link). ``dask_tra.config`` values win over
measured ones (``bandwidth``, ``task_overhead``, ``flop_rate``), and ``probe_rates=False``
uses the defaults of ``optimizer.Rates`` instead of measuring.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time

import numpy as np

from .. import config
from ..optimizer import Rates
from .ownership import mark

_measured: dict = {}


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

    from .emit import Pins
    from .sources import fresh_name

    name = fresh_name("tra-probe-overhead")
    w, dsk, pins = len(workers), {}, {}
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
    n = len(workers)
    blocks = [client.submit(_block, nbytes, workers=[w], pure=False) for w in workers]
    client.gather([client.submit(_nbytes, b, workers=[w], pure=False) for b, w in zip(blocks, workers)])
    t0 = time.perf_counter()
    client.gather([client.submit(_nbytes, blocks[i], workers=[workers[(i + 1) % n]], pure=False) for i in range(n)])
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
    info = client.scheduler_info(n_workers=-1)["workers"]
    hosts = client.run(_host_cores)
    threads, cores = {}, {}
    for w, (host, n) in hosts.items():
        threads[host] = threads.get(host, 0) + int(info.get(w, {}).get("nthreads", 1))
        cores[host] = n
    return min((min(1.0, cores[h] / threads[h]) for h in threads), default=1.0)


def measure(client, workers) -> dict:
    """{bandwidth, task_overhead, flop_rate} measured on ``client``'s ``workers`` (the planned
    sites' addresses: the scheduler's worker list, read again here, may be briefly empty)."""
    if not workers:
        return {}
    info = client.scheduler_info(n_workers=-1)["workers"]
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
    secs = client.submit(_matmul_seconds, n, workers=[workers[0]], pure=False).result()
    out["flop_rate"] = 2 * n**3 / max(secs, 1e-6) * share
    return out


def _in_event_loop(client) -> bool:
    import asyncio

    try:
        return asyncio.get_running_loop() is client.loop.asyncio_loop
    except RuntimeError:
        return False


def current_rates(where) -> Rates:
    """Rates for planning on ``where`` (a ``Sites``): config, else measured (cached), else defaults."""
    given = {f.name: config.get(f.name) for f in dataclasses.fields(Rates)}
    rates = {k: float(v) for k, v in given.items() if v is not None}
    measured = ("bandwidth", "task_overhead", "flop_rate")
    probe = any(k not in rates for k in measured) and config.get("probe_rates")
    if probe and where.client is not None and not _in_event_loop(where.client):
        rates = {**ensure_measured(where.client, where.workers), **rates}
    return Rates(**rates)


def ensure_measured(client, workers=None) -> dict:
    """The measured rates of ``client``'s cluster (``workers``: its sorted worker addresses),
    measuring them now if they are not cached. ``diagnostics.measure`` calls it on entry so
    that the probe's own transfers never fall inside a measured block."""
    if workers is None:
        workers = tuple(sorted(client.scheduler_info(n_workers=-1)["workers"]))
    key = (client.scheduler.address, tuple(workers))
    if key not in _measured:
        _measured[key] = measure(client, workers)
    return _measured[key]

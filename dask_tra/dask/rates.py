"""The time objective's constants for the connected cluster: measured once, cheaply, and cached.

``cluster_rates(client)`` times, on the cluster itself:

- bandwidth: every worker fetching a 16 MiB block from the next at once, in a ring, as a
  plan's moves run: per worker, 16 MiB over the faster of two rings' wall time (after a 1 MiB
  warm-up ring).
  Workers sharing a host share its cores and memory bus: on a LocalCluster of 4 workers on
  2 cores one fetch alone ran at 480 MB/s and each of a ring's at 275 MB/s, the rate a
  plan's concurrent moves see;
- per-task overhead: the extra wall time of a graph of 500 trivial tasks over one of 100,
  each pinned to a worker as a plan's tasks are (pinned tasks skip the scheduler's queue of
  root tasks, so timing unpinned ``client.map`` calls measured round trips instead: 6 ms per
  task at 250 Mbit/s against 0.6 ms in a graph);
- compute rate: a 512³ float64 matmul on one worker, scaled by the share of a core each worker
  thread gets when every worker computes (a host whose worker threads outnumber its cores, such
  as a LocalCluster of 4 workers on 2 cores, gives each about half its solo rate).

Once per client and set of workers: 0.6-0.9 s on a local 4-worker LocalCluster; on a slow
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

_measured: dict = {}


def _block(nbytes):
    return np.ones(nbytes // 8)


def _nbytes(x):
    return int(x.nbytes)


def _noop(i):
    """A task that does nothing; being dask_tra's, the warm-up graph makes each worker import
    dask_tra (as every plan's tasks need) before anything is timed."""
    return i


def _pinned_graph_seconds(client, workers, n) -> float:
    """Wall time of one graph of ``n`` no-op tasks pinned round-robin to ``workers`` (as a plan's
    tasks are) plus one task reading them all."""
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    from .emit import Pins
    from .sources import fresh_name

    name = fresh_name("tra-probe-overhead")
    dsk = {(name, i): (_noop, i) for i in range(n)}
    dsk[(name, "all")] = (len, list(dsk))
    pins = Pins({k: [workers[i % len(workers)]] for i, k in enumerate(dsk)})
    layer = MaterializedLayer(dsk, annotations={"workers": pins, "allow_other_workers": False})
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


def measure(client) -> dict:
    """{bandwidth, task_overhead, flop_rate} measured on ``client``'s cluster."""
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    out = {}
    _pinned_graph_seconds(client, workers, max(20, len(workers)))  # warm-up: every worker imports dask_tra
    if len(workers) >= 2:
        _ring_seconds(client, workers, 1 << 20)  # warms the connections up
        took = min(_ring_seconds(client, workers, 16 << 20) for _ in range(2))
        out["bandwidth"] = (16 << 20) / max(took, 1e-4)
    small, large = _pinned_graph_seconds(client, workers, 100), _pinned_graph_seconds(client, workers, 500)
    marginal = (large - small) / 400
    out["task_overhead"] = marginal if marginal > 0 else large / 500  # noise: the mean, an upper bound
    n = 512
    secs = client.submit(_matmul_seconds, n, workers=[workers[0]], pure=False).result()
    out["flop_rate"] = 2 * n**3 / max(secs, 1e-6) * core_share(client)
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
        _measured[key] = measure(client)
    return _measured[key]

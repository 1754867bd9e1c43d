"""The cluster a benchmark runs on: loopback (LocalCluster) or an emulated network.

Emulated network (``--net RATE``, needs root and iproute2): a Linux bridge with an address
for the client (root namespace), and one network namespace per node (the scheduler and
each worker) joined to the bridge by a veth pair. Both ends of every veth are shaped with
``tc tbf`` to RATE, so each node sends and receives at most RATE. The scheduler and workers
are ``dask scheduler`` / ``dask worker`` processes started with ``ip netns exec``. Everything
is torn down on exit, error, Ctrl-C or SIGTERM. All names carry this process' pid, and only
addresses of the private subnet on our own bridge are used.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SUBNETS = [f"10.77.{i}" for i in range(256)]  # 10.77.i.0/24: the first one no route uses yet


def parse_rate(rate: str) -> int:
    """'250mbit' -> bits per second (tc units: bit, kbit, mbit, gbit)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)bit", rate.strip().lower())
    if not m:
        raise ValueError(f"--net takes a tc rate like 250mbit or 1gbit, got {rate!r}")
    return int(float(m.group(1)) * {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[m.group(2)])


def netns_unavailable() -> str | None:
    """Why an emulated network cannot be built here (None if it can)."""
    if not sys.platform.startswith("linux"):
        return "not Linux"
    if os.geteuid() != 0:
        return "not running as root (network namespaces and tc need root)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"'{tool}' not found (apt-get install -y iproute2)"
    return None


def _sh(*cmd, ns=None, check=True):
    full = (["ip", "netns", "exec", ns] if ns else []) + [str(c) for c in cmd]
    r = subprocess.run(full, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {r.stderr.strip() or r.stdout.strip()}")
    return r


class _Terminate(BaseException):
    pass


@contextlib.contextmanager
def _signals_raise():
    """SIGTERM/SIGHUP raise (like Ctrl-C does), so ``finally`` blocks tear the network down."""
    def handler(signum, frame):
        raise _Terminate(f"signal {signum}")
    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class NetnsCluster:
    """Scheduler and workers in their own network namespaces behind a shaped bridge."""

    def __init__(self, n_workers: int, rate: str, memory_limit: str = "2GiB", log_dir: str | None = None):
        self.n_workers, self.rate, self.memory_limit = n_workers, rate, memory_limit
        self.bps = parse_rate(rate)
        tag = str(os.getpid())
        self.bridge = f"tb{tag}"
        self.nodes = [f"trab-{tag}-s"] + [f"trab-{tag}-w{i}" for i in range(n_workers)]
        self.procs: list[subprocess.Popen] = []
        self.made_ns: list[str] = []
        self.made_links: list[str] = []
        self.log_dir = log_dir
        self.subnet = None

    # -- network -------------------------------------------------------------------------
    def _free_subnet(self) -> str:
        routes = _sh("ip", "-4", "route").stdout
        for s in SUBNETS:
            if f"{s}.0/24" not in routes:
                return s
        raise RuntimeError("no free 10.77.x.0/24 subnet")

    def _shape(self, dev, ns=None):
        rate_bytes = self.bps / 8
        burst = max(int(rate_bytes * 0.01), 128 * 1024)  # >= 10 ms of traffic and >= one GSO packet
        _sh("tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{self.bps}bit",
            "burst", burst, "latency", "50ms", ns=ns)

    def build_network(self):
        self.subnet = self._free_subnet()
        _sh("ip", "link", "add", self.bridge, "type", "bridge")
        self.made_links.append(self.bridge)
        _sh("ip", "addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _sh("ip", "link", "set", self.bridge, "up")
        for i, ns in enumerate(self.nodes):
            _sh("ip", "netns", "add", ns)
            self.made_ns.append(ns)
            host, inner = f"{self.bridge}h{i}", f"{self.bridge}n{i}"
            _sh("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
            self.made_links.append(host)
            _sh("ip", "link", "set", inner, "netns", ns)
            _sh("ip", "link", "set", host, "master", self.bridge)
            _sh("ip", "link", "set", host, "up")
            _sh("ip", "addr", "add", f"{self.address(i)}/24", "dev", inner, ns=ns)
            _sh("ip", "link", "set", inner, "up", ns=ns)
            _sh("ip", "link", "set", "lo", "up", ns=ns)
            self._shape(host)            # traffic into the node
            self._shape(inner, ns=ns)    # traffic out of the node

    def address(self, i):
        return f"{self.subnet}.{10 + i}"

    # -- processes -----------------------------------------------------------------------
    def _spawn(self, ns, args, name):
        log = open(os.path.join(self.log_dir, f"{name}.log"), "w") if self.log_dir else subprocess.DEVNULL
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", "dask", *args],
                             stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs.append(p)
        return p

    def start(self):
        self.build_network()
        sched = f"tcp://{self.address(0)}:8786"
        self._spawn(self.nodes[0], ["scheduler", "--host", self.address(0), "--port", "8786",
                                    "--no-dashboard"], "scheduler")
        for i in range(1, len(self.nodes)):
            self._spawn(self.nodes[i], ["worker", sched, "--host", self.address(i), "--nthreads", "1",
                                        "--nworkers", "1", "--memory-limit", self.memory_limit,
                                        "--no-dashboard", "--name", f"w{i - 1}"], f"worker{i - 1}")
        self.scheduler_address = sched
        return sched

    def close(self):
        for p in self.procs:  # only the process groups we started, by id
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        deadline = time.time() + 10
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()
        for ns in reversed(self.made_ns):  # deleting a namespace deletes the veth ends inside it
            _sh("ip", "netns", "del", ns, check=False)
        for link in reversed(self.made_links):
            if _sh("ip", "link", "show", link, check=False).returncode == 0:
                _sh("ip", "link", "del", link, check=False)
        self.made_ns.clear()
        self.made_links.clear()

    def describe(self):
        return (f"emulated network: scheduler + {self.n_workers} workers in network namespaces on bridge "
                f"{self.bridge} ({self.subnet}.0/24), every veth shaped with tc tbf to {self.rate}")


def cleanup_stale() -> list[str]:
    """Remove namespaces/bridges left by runs whose process no longer exists (after kill -9)."""
    removed = []
    if netns_unavailable():
        return removed
    for line in _sh("ip", "netns", "list").stdout.splitlines():
        m = re.match(r"(trab-(\d+)-\S+)", line)
        if m and not os.path.exists(f"/proc/{m.group(2)}"):
            _sh("ip", "netns", "del", m.group(1), check=False)
            removed.append(m.group(1))
    for line in _sh("ip", "-o", "link", "show").stdout.splitlines():
        m = re.match(r"\d+: (tb(\d+))(?:[@:])", line)
        if m and not os.path.exists(f"/proc/{m.group(2)}"):
            _sh("ip", "link", "del", m.group(1), check=False)
            removed.append(m.group(1))
    return removed


@contextlib.contextmanager
def start_cluster(workers: int, net: str | None, memory_limit: str = "2GiB", log_dir: str | None = None):
    """Yield (client, description). ``net`` None: loopback LocalCluster; else an emulated
    network shaped to ``net`` (falls back to loopback, saying why, if it cannot be built)."""
    from distributed import Client, LocalCluster

    if net is not None:
        why = netns_unavailable()
        if why:
            print(f"[cluster] cannot emulate a network: {why}; falling back to loopback (LocalCluster)")
            net = None
    if net is None:
        with _signals_raise():
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   memory_limit=memory_limit, dashboard_address=":0")
            client = Client(cluster)
            try:
                yield client, f"loopback: LocalCluster, {workers} worker processes × 1 thread (TCP on 127.0.0.1)"
            finally:
                client.close()
                cluster.close()
        return

    with _signals_raise():
        cl = NetnsCluster(workers, net, memory_limit, log_dir)
        client = None
        try:
            address = cl.start()
            client = _connect(address, workers, cl)
            yield client, cl.describe()
        finally:
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close(timeout=10)
            cl.close()


def _connect(address, workers, cl, timeout=90):
    from distributed import Client
    t0 = time.time()
    while True:
        dead = [p.args for p in cl.procs if p.poll() is not None]
        if dead:
            raise RuntimeError(f"a cluster process exited early: {dead[0]} (see --log-dir logs)")
        try:
            client = Client(address, timeout=5)
            break
        except OSError:
            if time.time() - t0 > timeout:
                raise
            time.sleep(0.5)
    client.wait_for_workers(workers, timeout=max(5, timeout - (time.time() - t0)))
    return client

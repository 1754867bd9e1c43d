"""One ``Session`` per distributed Client: what dask_tra installed on its cluster, and the
cluster reads planning makes.

Planning and graph construction only read (``snapshot``, ``rates``): a Client where nothing
was installed is read through ``Client.run_on_scheduler`` (no plugin, handler or policy is
added, nothing is held). ``install`` is the one place that changes a cluster: it registers the
scheduler plugin (``plugin.DaskTraPlugin``: the memory-manager policy, the placement and rates
handlers) and the chunk backends' worker dispatch (``dispatch.py``). ``RelArray.compute`` /
``persist``, ``dask_tra.compute`` / ``persist``, ``dask_tra.calibrate`` and an explicit
``dask_tra.install(client)`` call it; ``__dask_graph__``, ``.dask``, ``to_dask()`` and
``is_dask_collection`` never do (``docs/dask-integration.md``, "What changes a cluster").
"""

from __future__ import annotations

import threading
import weakref

from . import compat, spill
from .dispatch import register_worker_dispatch
from .plugin import HOLD_OP, NAME, RATES_OP, SNAPSHOT_OP, DaskTraPlugin, read_rates, read_snapshot

_SESSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class Session:
    """dask_tra's state for one Client: the scheduler address it installed its plugin on."""

    def __init__(self, client):
        self._client = weakref.ref(client)
        self.installed_on: str | None = None  # the scheduler address the plugin was registered on

    @property
    def client(self):
        client = self._client()
        if client is None:  # pragma: no cover (the session dies with its client)
            raise RuntimeError("the Client of this dask_tra session was closed and collected")
        return client

    @property
    def installed(self) -> bool:
        """Whether this session registered dask_tra's plugin on the client's current scheduler."""
        return self.installed_on is not None and self.installed_on == self.client.scheduler.address

    def install(self, backends=()) -> None:
        """Register dask_tra's scheduler plugin and its spilling worker plugin (``spill.py``)
        (once per scheduler address; the scheduler keeps the first registration of any client)
        and the worker dispatch of chunk ``backends``
        (besides NumPy's, once per backend)."""
        client = self.client
        if not self.installed:
            compat.require(client, "client")
            client.register_plugin(DaskTraPlugin(), name=NAME)
            spill.install(client)
            self.installed_on = client.scheduler.address
        if backends:
            register_worker_dispatch(client, backends)

    def snapshot(self, keys, hold: bool = False) -> dict:
        """The placement query's reply (``plugin.read_snapshot``), one round trip. With the
        plugin installed its handler answers (with ``hold``, holding the replicas it reports
        for the plan about to run); otherwise a read-only function sent to the scheduler."""
        client = self.client
        out = None
        if self.installed:
            kw = {} if hold else {"hold": False}  # an older dask_tra's handler knows no ``hold``
            out = client.sync(getattr(client.scheduler, SNAPSHOT_OP), keys=list(keys), **kw)
            if not hold and "unexpected arguments" in out.get("error", ""):
                out = None
        if out is None:
            out = client.run_on_scheduler(read_snapshot, keys=list(keys))
        if "error" in out:
            raise ValueError(f"dask_tra's scheduler plugin refused the placement query: {out['error']}")
        return out

    def rates(self) -> dict:
        """The cluster's rates reply (``plugin.rates_reply``), read only."""
        client = self.client
        if self.installed:
            return client.sync(getattr(client.scheduler, RATES_OP))
        return client.run_on_scheduler(read_rates)

    def store_rates(self, rates: dict, workers) -> dict:
        """Store calibrated ``rates`` on the scheduler (installing the plugin that keeps them)."""
        self.install()
        client = self.client
        out = client.sync(getattr(client.scheduler, RATES_OP), store=dict(rates), workers=list(workers))
        if "error" in out:
            raise ValueError(f"dask_tra's scheduler plugin refused the rates: {out['error']}")
        return out

    def hold(self, keys) -> None:
        """Ask the scheduler (one-way) to hold ``keys``' replicas (with the plugin installed)."""
        if keys and self.installed:
            compat.send_to_scheduler(self.client, {"op": HOLD_OP, "keys": list(keys)})


def session(client) -> Session:
    """The client's session (made on first use; it lives as long as the client)."""
    with _LOCK:
        out = _SESSIONS.get(client)
        if out is None:
            out = _SESSIONS[client] = Session(client)
        return out


def install(client=None, backends=("numpy",)) -> None:
    """Install what dask_tra runs with on ``client``'s cluster (default: the current Client).

    ``compute``/``persist`` install it by themselves the first time; call this to have it in
    place before graphs are handed to dask by other means (``dask.compute``,
    ``Client.compute``, ``Client.persist``, xarray) or to see it installed up front. It
    registers, once per cluster:

    - the scheduler plugin ``dask-tra``: the memory-manager policy ``KeepPinnedReplicas`` in
      place of ``ReduceReplicas``, the re-pinning of dask_tra's tasks when a worker leaves, the
      placement and rates handlers (``docs/reliability.md``, "What dask_tra installs");
    - the worker plugin ``dask-tra-spill`` (``spill.py``): at the end of each of dask_tra's tasks,
      results spilled to disk as the worker's memory monitor would at its next tick;
    - for chunk ``backends`` other than NumPy (``"torch"``, ``"cupy"``), a worker plugin
      installing their ``sizeof``, concatenation and serialization on every worker.

    Parameters
    ----------
    client : distributed.Client, optional
        The client whose cluster to install on; default ``distributed.default_client()``.
    backends : iterable of str
        Chunk backends the cluster's workers will see (NumPy needs nothing).

    Returns
    -------
    None
        Installing twice is harmless: what a cluster has is not installed again.

    Examples
    --------
    >>> from distributed import Client  # doctest: +SKIP
    >>> import dask_tra as dt  # doctest: +SKIP
    >>> client = Client()  # doctest: +SKIP
    >>> dt.install(client, backends=("torch",))  # doctest: +SKIP
    """
    if client is None:
        from distributed import default_client

        client = default_client()
    session(client).install(tuple(b for b in backends if b != "numpy"))


def ensure_installed(client):
    """Register the plugin on the client's scheduler (once per client; the scheduler keeps
    the first registration of any client). Only ``compute``/``persist``, ``dask_tra.install``
    and ``calibrate`` install it: never a graph or a plan."""
    session(client).install()


def snapshot(client, keys, hold: bool = False) -> dict:
    """The placement query's reply from the client's scheduler, in one round trip: the
    workers' info, {key: [worker, ...]} for ``keys`` in memory, [keys being computed], and the
    rates reply (``plugin.rates_reply``). With ``hold`` (a plan about to run, the plugin
    installed) the replicas reported are held for the plan (``amm.py``); without, nothing on
    the cluster changes."""
    return session(client).snapshot(keys, hold)


def query_snapshot(client, keys, hold: bool = False) -> tuple:
    """(workers' info, {key: [worker, ...]}, {key: [worker]} bound, [other keys being
    computed]) of ``snapshot``."""
    out = snapshot(client, keys, hold)
    return out["workers"], out["who_has"], out["bound"], out["computing"]


def query_rates(client) -> dict:
    """The cluster's rates reply (``plugin.rates_reply``), in one round trip, read only."""
    return session(client).rates()


def store_rates(client, rates: dict, workers) -> dict:
    """Store calibrated ``rates`` (measured on ``workers``) on the cluster's scheduler, for every
    client of it (installs the plugin); returns the new rates reply."""
    return session(client).store_rates(rates, workers)


def send_hold(client, keys) -> None:
    """Ask the scheduler (one-way) to hold ``keys``' replicas for ``HOLD_S`` seconds (with the
    plugin installed; without, nothing reduces replicas on dask_tra's behalf to hold against)."""
    session(client).hold(keys)


__all__ = [
    "Session",
    "ensure_installed",
    "install",
    "query_rates",
    "query_snapshot",
    "send_hold",
    "session",
    "snapshot",
    "store_rates",
]

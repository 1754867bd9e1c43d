"""A client-side mirror of where the client's persisted blocks are, pushed by the scheduler.

Planning reads the workers and where the held inputs' blocks are. Asking the scheduler
(``amm.snapshot``) is a round trip each plan, 1 ms on an idle LocalCluster and several on a
busy one: more than a replayed plan costs. So the scheduler *tells* the client instead:

- ``Watches`` (on the scheduler, started by ``amm.UseKeepPinnedReplicas``) keeps, per key, the
  mirroring clients that watch it: the keys a client's placement query asked for, and the
  pinned outputs of the graphs it submits (what ``persist`` leaves on the cluster). Every
  change of a watched key's holders (``add_replica``, ``remove_replica``,
  ``remove_all_replicas``: the only ways the scheduler changes them) and every worker that
  joins or leaves is pushed on the client's stream, the one that also reports finished keys.
  Messages on it arrive in order, so once ``wait`` has seen a persisted block finish, the
  mirror has seen where it landed and the copies its graph left.
- ``Mirror`` (on the client) applies the pushes. A plan whose held keys are all in memory
  there is planned from the mirror with no round trip, if each has one holder (the active
  memory manager never drops a last replica) or replicas still held for plans (``amm.py``: a
  query or a read holds them for ``amm.HOLD_S``; the mirror trusts that until ``MARGIN``
  before it ends, and each read renews it). Any other plan asks the scheduler, which also
  starts watching what it asked for.
- Changes the client itself makes by a direct request (``replicate``, ``rebalance``,
  ``retire_workers``, ``restart``) are answered on another connection than the stream, so the
  mirror may not have them yet when the request returns: after one, the next plan asks, and
  the mirror is trusted again once the scheduler's mark after that query (``synced``) came in
  on the stream, behind every push before it.

The scheduler changes holders only through those three methods; if a distributed release
renames them, ``Watches`` finds none to wrap, pushes nothing, and every plan asks. Another
client's requests reach this client's mirror a few milliseconds later; a plan made in between
plans the blocks where they were (the result is the same; the bytes may differ from the
prediction by those blocks).
"""

from __future__ import annotations

import threading
import time

PUSH_OP = "dask_tra_placements"  # scheduler -> client: holders of watched keys, workers
HOLD_OP = "dask_tra_hold"  # client -> scheduler: renew the hold on keys read from the mirror
MARGIN = 5.0  # seconds of a hold the mirror never counts on (the renewal's latency, clock skew)
REPLICA_METHODS = ("add_replica", "remove_replica", "remove_all_replicas")
MOVING_REQUESTS = ("replicate", "rebalance", "retire_workers", "restart")  # Client methods


class Watches:
    """On the scheduler: who watches which key, and the pushes to them."""

    def __init__(self, scheduler, hold, workers_info):
        self.scheduler, self.hold, self.workers_info = scheduler, hold, workers_info
        self.clients: set = set()  # mirroring clients
        self.watchers: dict = {}  # key -> {client id}
        self.enabled = all(callable(getattr(scheduler, m, None)) for m in REPLICA_METHODS)
        if self.enabled:
            for m in REPLICA_METHODS:
                self._wrap(m)
        scheduler.stream_handlers[HOLD_OP] = self.handle_hold  # scattering holds with or without a mirror

    def _wrap(self, name):
        changes = getattr(self.scheduler, name)

        def changed(ts, *args):
            changes(ts, *args)
            if ts.key in self.watchers:
                self._push_holders((ts,))

        setattr(self.scheduler, name, changed)

    def handle_hold(self, keys=(), client=None):
        self.hold(keys)

    def watch(self, client, keys, synced=None):
        """``client`` mirrors from now on and watches ``keys``: their holders (and the workers,
        on its first watch) are pushed now and on every change; then ``synced``, if given."""
        if not self.enabled or client not in self.scheduler.client_comms:
            return
        if client not in self.clients:
            self.clients.add(client)
            self._send(client, workers=self.workers_info(self.scheduler))
        tasks = self.scheduler.tasks
        for k in keys:
            self.watchers.setdefault(k, set()).add(client)
        self._push_holders([tasks[k] for k in keys if k in tasks], to=client)
        if synced is not None:
            self._send(client, synced=synced)

    def watch_outputs(self, client, keys):
        """A mirroring client's new graph: its pinned outputs (persisted blocks) are watched."""
        if client not in self.clients:
            return
        tasks = self.scheduler.tasks
        pinned = [
            k for k in keys if (ts := tasks.get(k)) is not None and ts.worker_restrictions and not ts.loose_restrictions
        ]
        if pinned:
            self.watch(client, pinned)

    def forget(self, key):
        clients = self.watchers.pop(key, None)
        for c in clients or ():
            self._send(c, gone=(key,))

    def workers_changed(self):
        info = self.workers_info(self.scheduler)
        for c in list(self.clients):
            self._send(c, workers=info)

    def drop_client(self, client):
        self.clients.discard(client)
        for k in [k for k, cs in self.watchers.items() if client in cs]:
            self.watchers[k].discard(client)
            if not self.watchers[k]:
                del self.watchers[k]

    def _push_holders(self, tasks, to=None):
        by_client: dict = {}
        for ts in tasks:
            holders = tuple(sorted(ws.address for ws in ts.who_has or ()))
            for c in (to,) if to is not None else self.watchers.get(ts.key, ()):
                by_client.setdefault(c, []).append((ts.key, holders))
        for c, who in by_client.items():
            self._send(c, who=who)

    def _send(self, client, **msg):
        comm = self.scheduler.client_comms.get(client)
        if comm is None:
            self.drop_client(client)
        else:
            comm.send({"op": PUSH_OP, **msg})


class Mirror:
    """On the client: the workers and the holders of its watched keys, as last pushed."""

    def __init__(self, client, hold_s):
        self.client, self.hold_s = client, hold_s
        self.comm = client.scheduler_comm  # a reconnected client has another scheduler
        self.lock = threading.Lock()
        self.workers: dict | None = None
        self.who: dict = {}  # key -> (worker, ...)
        self.held_until: dict = {}  # key -> time.monotonic() until which its replicas are held
        self.suspect = self.synced = 0  # the last direct request's number; the last one synced
        client._stream_handlers[PUSH_OP] = self.update
        for name in MOVING_REQUESTS:
            self._after(name)

    def _after(self, name):
        """The client's ``name`` requests mark the mirror unsure until a query synced it."""
        request = getattr(self.client, name, None)
        if request is None:
            return

        def marked(*args, **kwargs):
            try:
                return request(*args, **kwargs)
            finally:
                self.suspect += 1

        setattr(self.client, name, marked)

    def update(self, who=(), gone=(), workers=None, synced=None):
        """A push from ``Watches`` (in the client's event loop)."""
        with self.lock:
            if workers is not None:
                self.workers = dict(workers)
            for k, holders in who:
                self.who[k] = tuple(holders)
            for k in gone:
                self.who.pop(k, None)
                self.held_until.pop(k, None)
            if synced is not None:
                self.synced = max(self.synced, synced)

    def live(self) -> bool:
        return self.workers is not None and self.client.scheduler_comm is self.comm and self.synced >= self.suspect

    def asked(self, keys):
        """A query holds ``keys``' replicas for ``hold_s`` from now (``amm.who_has_held``)."""
        until = time.monotonic() + self.hold_s - MARGIN
        with self.lock:
            for k in keys:
                self.held_until[k] = until

    def read(self, keys) -> tuple | None:
        """(workers info, {key: [worker, ...]}) if every key is in memory, on one worker or with
        its replicas held (the holds renewed); else None: ask the scheduler."""
        if not self.live():
            return None
        now = time.monotonic()
        with self.lock:
            who = {}
            for k in keys:
                holders = self.who.get(k)
                if not holders or (len(holders) > 1 and self.held_until.get(k, 0.0) < now):
                    return None
                who[k] = list(holders)
            info = dict(self.workers or {})
            until = now + self.hold_s - MARGIN
            for k in who:
                self.held_until[k] = until
        send_hold(self.client, list(who))
        return info, who


def send_hold(client, keys) -> None:
    """Ask the scheduler (one-way) to hold ``keys``' replicas: ``amm.hold``."""
    if keys:
        client._send_to_scheduler({"op": HOLD_OP, "keys": list(keys)})


def mirror_of(client, hold_s) -> Mirror:
    """The client's mirror (made on first use; another once the client reconnected)."""
    m = getattr(client, "_dask_tra_mirror", None)
    if m is None or m.comm is not client.scheduler_comm:
        m = client._dask_tra_mirror = Mirror(client, hold_s)
    return m

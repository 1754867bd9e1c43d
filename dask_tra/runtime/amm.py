"""Dask's active memory manager, taught to keep the replicas dask_tra's pinned tasks will read.

A plan's move is a dependency: the consumer pinned at the destination reads the origin's key,
and dask copies it there, leaving one replica per worker that reads it. distributed's default
policy, ``ReduceReplicas``, keeps as many replicas as a key has waiting dependents and drops
the rest from the workers with the most memory. A pinned dependent still waiting for its other
inputs is not yet "processing" on its worker, so the replica there may go, and dask fetches
it again when the dependent runs: bytes the plan never predicted.

``KeepPinnedReplicas`` never drops a replica on a worker where a waiting dependent that
dask_tra emitted (``ownership.py``) is strictly pinned, nor any replica of a key held for a
plan (``Holds``). Every other key gets exactly ``ReduceReplicas``'s suggestions: the policy
runs distributed's own and passes them through.

A plan reads where its inputs' replicas are before its graph reaches the scheduler; in
between, the policy could drop a replica the plan counted on. The placement query
(``snapshot``) holds the replicas it reports for ``HOLD_S`` seconds; once the graph arrives,
its pinned waiters keep them. Scattering from the client holds its replicas the same way (a
one-way message). Holds are bounded (``MAX_KEYS``), expire, and are purged on a timer and
when the client that asked for them leaves.
"""

from __future__ import annotations

import time

from dask.core import iskey
from distributed.active_memory_manager import ReduceReplicas, Suggestion

from . import compat
from .ownership import pinned_by_us

HOLD_S = 30.0
MAX_KEYS = 1_000_000  # keys in one query or hold message, and held at once
COMPUTING = ("waiting", "processing", "queued", "no-worker")


def bad_keys(keys) -> str | None:
    """What is wrong with a message's ``keys`` (a list of dask keys), or None."""
    if not isinstance(keys, (list, tuple)):
        return f"keys must be a list of dask keys, not {type(keys).__name__}"
    if len(keys) > MAX_KEYS:
        return f"at most {MAX_KEYS:,} keys per message, got {len(keys):,}"
    wrong = next((k for k in keys if not iskey(k)), None)
    if wrong is not None:
        return f"not a dask key: {wrong!r:.80}"
    return None


class Holds:
    """On the scheduler: keys whose replicas the policy keeps until a time, and who asked."""

    def __init__(self, seconds: float = HOLD_S):
        self.seconds = seconds
        self.until: dict = {}  # key -> time.monotonic() deadline
        self.by: dict = {}  # key -> the client that asked

    def hold(self, keys, client=None, seconds=None) -> int:
        """Hold ``keys`` for ``seconds`` (default: the table's), renewing earlier holds; returns
        how many the bound left out."""
        now = time.monotonic()
        if len(self.until) + len(keys) > MAX_KEYS:
            self.purge(now)
        room, until, skipped = MAX_KEYS - len(self.until), now + (seconds or self.seconds), 0
        for k in keys:
            if k not in self.until:
                if room <= 0:
                    skipped += 1
                    continue
                room -= 1
            self.until[k], self.by[k] = until, client
        return skipped

    def held(self, key, now) -> bool:
        return self.until.get(key, 0.0) > now

    def purge(self, now=None):
        now = time.monotonic() if now is None else now
        for k in [k for k, t in self.until.items() if t <= now]:
            self.forget(k)

    def forget(self, key):
        self.until.pop(key, None)
        self.by.pop(key, None)

    def drop_client(self, client):
        for k in [k for k, c in self.by.items() if c == client]:
            self.forget(k)

    def __len__(self):
        return len(self.until)


def workers_info(scheduler) -> dict:
    """On the scheduler: {address: {"memory_limit", "nthreads", "resources"}}: what planning
    reads of the workers (as ``Client.scheduler_info()["workers"]`` has it)."""
    return {
        a: {"memory_limit": ws.memory_limit, "nthreads": ws.nthreads, "resources": dict(ws.resources or {})}
        for a, ws in scheduler.workers.items()
    }


def snapshot(scheduler, holds: Holds | None, keys, client=None) -> dict:
    """On the scheduler, in one round trip: the workers' info, {key: [worker, ...]} for the
    ``keys`` in memory (their replicas then held in ``holds``, see the module doc; ``None``: a
    read that holds nothing), {key: [worker]} for those being computed by a task of dask_tra's
    pinned to one live worker (``bound``: a persist still running lands there), and the other
    keys being computed (e.g. persisted blocks Dask recomputes after their worker died)."""
    who, bound, computing = {}, {}, []
    for k in keys:
        ts = scheduler.tasks.get(k)
        if ts is not None and ts.who_has:
            who[k] = sorted(ws.address for ws in ts.who_has)
        elif ts is not None and ts.state in COMPUTING:
            worker = bound_worker(scheduler, ts)
            if worker is not None:
                bound[k] = [worker]
            else:
                computing.append(k)
    if holds is not None:
        holds.hold(list(who), client)
    return {"workers": workers_info(scheduler), "who_has": who, "bound": bound, "computing": computing}


def bound_worker(scheduler, ts) -> str | None:
    """The live worker a task of dask_tra's not yet run is strictly pinned to, or None."""
    if ts.state == "no-worker" or not pinned_by_us(ts) or len(ts.worker_restrictions) != 1:
        return None
    (worker,) = ts.worker_restrictions
    return worker if worker in scheduler.workers else None


class KeepPinnedReplicas(ReduceReplicas):
    """``ReduceReplicas``, except for the replicas dask_tra's pinned waiters and plans need."""

    def __init__(self, holds: Holds | None = None):
        super().__init__()
        self.holds = holds if holds is not None else Holds()

    def run(self):
        now = time.monotonic()
        ours = set()
        for ts in compat.replicated_tasks(self.manager.scheduler):
            if self.holds.held(ts.key, now):
                ours.add(ts)  # a plan being made counts on these replicas
            elif any(pinned_by_us(w) for w in ts.waiters or ()):
                ours.add(ts)
                yield from self._drop_unneeded(ts)
        theirs = ReduceReplicas.run(self)  # distributed's own suggestions for every other key
        answer = None
        while True:
            try:
                suggestion = theirs.send(answer)
            except StopIteration:
                return
            answer = None if suggestion.ts in ours else (yield suggestion)

    def _drop_unneeded(self, ts):
        """Keep one replica on each worker a waiter is pinned to or runs on, one more per
        unplaced waiter, at least one; drop the rest."""
        workers = self.manager.scheduler.workers
        needed, unplaced = set(), 0
        for waiter in ts.waiters:
            if waiter.processing_on is not None:
                needed.add(waiter.processing_on)
            elif waiter.worker_restrictions and not waiter.loose_restrictions:
                needed.update(workers[a] for a in waiter.worker_restrictions if a in workers)
            else:
                unplaced += 1
        ndrop = len(ts.who_has) - max(1, len(needed & ts.who_has) + unplaced)
        if ts in self.manager.pending:
            pending_repl, pending_drop = self.manager.pending[ts]
            ndrop += len(pending_repl) - len(pending_drop)
        candidates = ts.who_has - needed
        for _ in range(min(ndrop, len(candidates))):
            yield Suggestion("drop", ts, candidates)

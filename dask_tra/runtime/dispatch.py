"""Dask's dispatch for every registered chunk backend (``backends.on_register``).

For each backend's chunk types (installed when its library is imported, or at once if it is):

- ``dask.sizeof.sizeof``: the chunk's bytes (``Backend.sizeof``), so the scheduler's byte
  counts and ``dask_tra.diagnostics.measure()`` are exact (Dask's default counts ~80 bytes for
  a tensor);
- ``dask.array`` ``concatenate_lookup``: blocks glued in their library (``Backend.concat``);
- distributed's ``dask`` serialization family: a chunk crosses workers as its values in host
  memory plus (backend, device). A chunk in device memory (CuPy; a CUDA tensor) is copied to
  host once, explicitly (``Backend.to_numpy``), and back to the same device on arrival
  (``Backend.from_numpy``); a host chunk (a CPU tensor) goes without a copy. ``transfers()``
  counts the chunks this process serialized and deserialized and the device copies made.
  distributed's own torch serializer calls ``tensor.numpy()``,
  which fails on CUDA tensors (dask/distributed#8001); chunks that are not values only (a tensor
  with autograd state, ``Backend.is_plain``) still go through it.

Workers install the same by importing this module: ``register_worker_dispatch(client)`` adds a
worker plugin doing it (the emitters call it for plans with non-NumPy chunks).
"""

from __future__ import annotations

import sys
import weakref
from collections import Counter

from .. import backends

_COUNTS: Counter = Counter()  # this process' chunk serializations and device copies
_PREVIOUS: dict = {}  # chunk type -> (serializer, deserializer) registered before ours
_INSTALLED: set = set()


_COUNTED = ("serialized", "deserialized", "device_to_host", "host_to_device")


def transfers() -> dict:
    """What this process' chunk serializers did: chunks serialized and deserialized, and the
    device-to-host and host-to-device copies made (one each per device chunk moved)."""
    return {k: _COUNTS[k] for k in _COUNTED}


def reset_transfers() -> None:
    _COUNTS.clear()


def serialize_chunk(x):
    """distributed ``dask`` serializer of a chunk: (header, frames) of its host values."""
    from distributed.protocol.serialize import serialize

    b = backends.backend_of(x)
    if not b.is_plain(x):
        previous = _previous(type(x))
        if previous is None:  # a type distributed has no serializer of (scipy's sparray): pickled
            sub_header, frames = serialize(x, serializers=("pickle",))
            return {"sub-header": sub_header, "dask_tra-pickled": True}, frames
        return previous[0](x)

    device = b.chunk_device(x)
    host = b.to_numpy(x)  # the one explicit copy for device chunks; a view of host chunks
    _COUNTS["serialized"] += 1
    if device is not None:
        _COUNTS["device_to_host"] += 1
    sub_header, frames = serialize(host, serializers=("dask",))
    # "device" and "requires_grad" are what distributed's torch deserializer reads, so a worker
    # without dask_tra still rebuilds the tensor (on that device type)
    header = {
        "sub-header": sub_header,
        "dask_tra": [b.name, device],
        "device": (device or "cpu").partition(":")[0],
        "requires_grad": False,
    }
    return header, frames


class ChunkDeserializer:
    """distributed ``dask`` deserializer of chunk type ``t``, matching ``serialize_chunk``."""

    def __init__(self, t):
        self.t = t

    def __call__(self, header, frames):
        spec = header.get("dask_tra")
        if header.get("dask_tra-pickled"):
            from distributed.protocol.serialize import deserialize

            return deserialize(header["sub-header"], frames)
        if spec is None:  # serialized by the serializer registered before ours
            return _PREVIOUS[self.t][1](header, frames)
        from distributed.protocol.serialize import deserialize

        name, device = spec
        host = deserialize(header["sub-header"], frames)
        _COUNTS["deserialized"] += 1
        if device is not None:
            _COUNTS["host_to_device"] += 1
        return backends.get(name).from_numpy(host, device)


def _previous(t):
    for base in t.__mro__:
        if _PREVIOUS.get(base, (None,))[0] is not None:
            return _PREVIOUS[base]
    return None


def _install_types(backend):
    if backend.name in _INSTALLED:
        return
    _INSTALLED.add(backend.name)
    from dask.array.dispatch import concatenate_lookup
    from dask.sizeof import sizeof
    from distributed.protocol.serialize import dask_deserialize, dask_serialize

    for t in backend.chunk_types():
        for dispatch in (sizeof, concatenate_lookup):
            _dispatched(dispatch, t)  # Dask's own lazy registrations for the library run first
        sizeof.register(t)(backend.sizeof)
        concatenate_lookup.register(t)(_Concatenate(backend))
        if t not in _PREVIOUS:
            _PREVIOUS[t] = (_dispatched(dask_serialize, t), _dispatched(dask_deserialize, t))
        dask_serialize.register(t)(serialize_chunk)
        dask_deserialize.register(t)(ChunkDeserializer(t))


def _dispatched(dispatch, t):
    """What ``dispatch`` gives for type ``t`` now (firing Dask's or distributed's lazy registration), or None."""
    try:
        return dispatch.dispatch(t)
    except Exception:  # none, or a library module distributed cannot import
        return None


class _Concatenate:
    """``concatenate_lookup`` implementation for one backend (picklable, no closure)."""

    def __init__(self, backend):
        self.backend = backend

    def __call__(self, arrays, axis=0):
        return self.backend.concat(list(arrays), axis=axis)


def _install(backend):
    """Install the dispatch for ``backend``'s chunk types: now if its library is imported, else
    when Dask first sizes or concatenates one of its chunks (Dask's lazy registration by
    top-level module; distributed's lazy serializer registrations are left in place, so that
    ``_install_types`` finds them)."""
    if backend is backends.NUMPY:
        return
    if any(sys.modules.get(m) is not None for m in backend.chunk_modules):
        _install_types(backend)  # imported already: a lookup may have cached Dask's default
        return
    from dask.array.dispatch import concatenate_lookup
    from dask.sizeof import sizeof

    for dispatch in (sizeof, concatenate_lookup):
        for m in {m.partition(".")[0] for m in backend.chunk_modules}:  # Dask's lazy keys: top levels
            # Dask keeps one lazy registration per module: keep its own (dask.array's for CuPy
            # also registers tensordot, take, ...; cupyx's registers sparse matrices) and run it first
            previous = getattr(dispatch, "_lazy", {}).get(m)
            dispatch.register_lazy(m)(_LazyInstall(backend, previous))


class _LazyInstall:
    def __init__(self, backend, previous=None):
        self.backend, self.previous = backend, previous

    def __call__(self):
        if self.previous is not None:
            self.previous()
        _install_types(self.backend)


def install(names) -> None:
    """Install the dispatch for backends ``names`` now (importing their libraries)."""
    for name in names:
        b = backends.get(name)
        if b is not backends.NUMPY:
            _install_types(b)


backends.on_register(_install)


# ---------------------------------------------------------------- workers


class _DispatchPlugin:
    """Worker plugin: install the dispatch for some backends on every worker before their
    chunks arrive, so workers measure and deserialize them right."""

    idempotent = True

    def __init__(self, names):
        self.names = tuple(names)
        self.name = "dask_tra-chunk-backends-" + "-".join(self.names)

    def setup(self, worker):
        install(self.names)


_registered: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def register_worker_dispatch(client, names) -> None:
    """Install the dispatch for backends ``names`` here and on the cluster's workers (a worker
    plugin, so workers that join later get it too; once per client and backend)."""
    names = sorted(set(names) - {"numpy"} - _registered.setdefault(client, set()))
    if not names:
        return
    install(names)
    from distributed.diagnostics.plugin import WorkerPlugin

    plugin = type("DaskTraChunkBackends", (_DispatchPlugin, WorkerPlugin), {})(names)
    client.register_plugin(plugin, name=plugin.name)
    _registered[client].update(names)

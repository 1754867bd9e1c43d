"""The one registry of chunk backends.

A backend module ends with ``register(MyBackend())``: that names the backend, maps the
modules (or packages) owning its chunk types (``chunk_modules``) to it, and tells every subscriber. Layers
that adapt backends to another system subscribe with ``on_register`` (the Dask layer installs
``sizeof``, ``concatenate`` and serialization for each backend's chunk types), so adding a
backend touches its own module only. The modules ``dask_tra/backends/*_backend.py`` are
imported with the package; a backend living elsewhere registers when its module is imported.
"""

from __future__ import annotations

_BACKENDS: dict = {}  # name -> Backend
_BY_MODULE: dict = {}  # top-level module name of a chunk type -> Backend
_TYPE_CACHE: dict = {}  # chunk type -> Backend or None
_LISTENERS: list = []


def register(backend):
    """Register ``backend`` (replacing one of the same name) and tell the subscribers."""
    old = _BACKENDS.get(backend.name)
    if old is not None:
        for m in old.chunk_modules:
            _BY_MODULE.pop(m, None)
    _BACKENDS[backend.name] = backend
    for m in backend.chunk_modules:
        _BY_MODULE[m] = backend
    _TYPE_CACHE.clear()
    for listener in list(_LISTENERS):
        listener(backend)
    return backend


def on_register(listener) -> None:
    """Call ``listener(backend)`` for every backend registered now and later."""
    _LISTENERS.append(listener)
    for backend in list(_BACKENDS.values()):
        listener(backend)


def registered() -> dict:
    """{name: Backend} in registration order."""
    return dict(_BACKENDS)


def lookup(name):
    return _BACKENDS[name]


def owner_of_type(t):
    """The backend owning type ``t`` (by the top-level module of ``t`` or a base class), or None."""
    try:
        return _TYPE_CACHE[t]
    except KeyError:
        pass
    found = None
    for base in t.__mro__:
        found = owner_of_module(base.__module__)
        if found is not None:
            break
    _TYPE_CACHE[t] = found
    return found


def owner_of_module(module_name: str):
    """The backend whose chunk modules include ``module_name`` or a package above it (the
    longest match: ``scipy.sparse`` owns ``scipy.sparse._csr``, nothing owns ``scipy.stats``),
    or None."""
    parts = module_name.split(".")
    for n in range(len(parts), 0, -1):
        found = _BY_MODULE.get(".".join(parts[:n]))
        if found is not None:
            return found
    return None

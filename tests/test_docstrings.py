"""Every public callable has a structured docstring in NumPy's style, and its examples run.

The public callables are those of ``dask_tra.array.__all__``, the namespaces users reach under
it (``linalg``, ``fft``, ``random``, ``ma``, ``stats``, ``overlap``), ``dask_tra.__all__``,
``dask_tra.config``'s ``get``/``set`` and ``dask_tra.diagnostics.measure``; an object public
under several names is checked under the first. A function's docstring has a "Parameters"
section, a "Returns" (or "Yields") section and an example (``>>>``); a class's has
"Parameters" and an example (a class returns nothing: its methods are documented where they
are). Functions that mirror NumPy, SciPy or dask.array carry that docstring
(``dask.utils.derived_from``, as dask.array does: the original's examples are marked
``+SKIP``); dask_tra's own are written out, and their examples run here, with ``np``
(NumPy), ``da`` (``dask_tra.array``) and ``dask_tra`` in scope.
"""

from __future__ import annotations

import doctest
import importlib
import inspect

import numpy as np
import pytest

import dask_tra
import dask_tra.array as da

NAMESPACES = {  # namespace: its public names (None: its ``__all__``)
    "dask_tra.array": None,
    "dask_tra.array.linalg": None,
    "dask_tra.array.fft": None,
    "dask_tra.array.random": None,
    "dask_tra.array.ma": None,
    "dask_tra.array.stats": None,
    "dask_tra.array.overlap": None,
    "dask_tra": None,
    "dask_tra.config": ("get", "set"),
    "dask_tra.diagnostics": ("measure",),  # its ``register`` is the collection's hook, not the user's
}

# Where a structured docstring makes no sense, or the object is documented where it comes from.
# Each entry says why; keep it short: a new public function gets a docstring, not an entry here.
ALLOWED = {
    # NumPy's scalar types, re-exported as dask.array does (``da.float32``): NumPy documents them
    **{f"dask_tra.array.{t}": "NumPy's scalar type" for t in da._DTYPES},
    # dask's warning class, re-exported so one warnings filter silences both libraries
    "dask_tra.array.PerformanceWarning": "dask's class",
}


def _public():
    """{qualified public name: object} for every public callable (modules and constants left
    out), each object under the first name it is public by."""
    out, seen = {}, set()
    for ns, names in NAMESPACES.items():
        mod = importlib.import_module(ns)
        for name in mod.__all__ if names is None else names:
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            out[f"{ns}.{name}"] = obj
    return out


PUBLIC = _public()


def _missing(obj) -> list[str]:
    doc = inspect.getdoc(obj) or ""
    missing = [s for s in ("Parameters",) if s not in doc]
    if not inspect.isclass(obj) and "Returns" not in doc and "Yields" not in doc:
        missing.append("Returns")
    if ">>>" not in doc:
        missing.append("an example (>>>)")
    return missing


def test_the_namespaces_are_found():
    assert len(PUBLIC) > 300
    for name in ("dask_tra.array.from_array", "dask_tra.install", "dask_tra.diagnostics.measure"):
        assert name in PUBLIC


def test_the_allow_list_names_public_callables():
    """An entry for a name that is no longer public, or no longer lacks a section, is stale."""
    assert set(ALLOWED) <= set(PUBLIC)
    assert [n for n in ALLOWED if not _missing(PUBLIC[n])] == []


def test_copied_docstrings_keep_the_function():
    """``derived_from`` replaces a function whose original it cannot find by one raising
    NotImplementedError (dask's fallback): none of the public functions is such a stand-in, and
    each keeps its own signature."""
    for name, obj in PUBLIC.items():
        code = getattr(obj, "__code__", None)
        assert code is None or not code.co_filename.replace("\\", "/").endswith("dask/utils.py"), name
        if "This docstring was copied from" in (obj.__doc__ or "") and not inspect.isclass(obj):
            inspect.signature(obj)


@pytest.mark.parametrize("name", sorted(set(PUBLIC) - set(ALLOWED)))
def test_public_callable_has_a_structured_docstring(name):
    missing = _missing(PUBLIC[name])
    assert not missing, f"{name}'s docstring lacks: {', '.join(missing)}"


def _examples(obj):
    return doctest.DocTestFinder(recurse=False).find(obj, getattr(obj, "__name__", "obj"), globs={})


@pytest.mark.parametrize(
    "name",
    sorted({n for n, o in PUBLIC.items() if n not in ALLOWED and any(t.examples for t in _examples(o))}),
)
def test_docstring_examples_run(name):
    """The examples (dask_tra's own: those copied from NumPy or dask are skipped) give what they show."""
    obj = PUBLIC[name]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in _examples(obj):
        test.globs = {"np": np, "da": da, "dask_tra": dask_tra}
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} example(s) failed (output above)"

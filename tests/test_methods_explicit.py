"""RelArray's methods are written out: each an explicit ``def`` in its class's body with a real
signature (no method factory, no ``setattr`` loop), NumPy's parameter names where NumPy has
the method, and the same results as NumPy on ragged chunks."""

from __future__ import annotations

import ast
import inspect
import operator
import sys
from pathlib import Path

import numpy as np
import pytest

import dask_tra as dt
import dask_tra.array as da
from dask_tra.array.random import Generator

ROOT = Path(dt.__file__).resolve().parent


def _functions(cls):
    """(name, function) of every function ``cls``'s own body defines: methods, properties'
    getters and setters, static and class methods."""
    for name, value in vars(cls).items():
        if isinstance(value, staticmethod) and "." not in value.__func__.__qualname__:
            continue  # a module-level function bound as is (``__dask_scheduler__ = staticmethod(get)``)
        if isinstance(value, (staticmethod, classmethod)):
            yield name, value.__func__
        elif isinstance(value, property):
            yield from ((name, f) for f in (value.fget, value.fset, value.fdel) if f is not None)
        elif inspect.isfunction(value):
            yield name, value


def _own_classes(cls):
    return [c for c in cls.__mro__ if c.__module__.split(".")[0] == "dask_tra"]


@pytest.mark.parametrize("cls", [dt.RelArray, Generator, da.random.RandomState], ids=lambda c: c.__name__)
def test_every_method_is_defined_in_its_class_body(cls):
    """A factory-made method has a qualified name such as ``_method.<locals>.m`` and a name that
    is not its attribute's; an explicit ``def`` is ``Class.name`` in the class's own module."""
    bad = []
    for owner in _own_classes(cls):
        source = inspect.getsourcefile(owner)
        for name, f in _functions(owner):
            if f.__name__ != name and vars(owner).get(f.__name__) is vars(owner)[name]:
                name = f.__name__  # an alias in the class body (``__str__ = __repr__``)
            if f.__qualname__ != f"{owner.__qualname__}.{name}" or f.__name__ != name:
                bad.append(f"{owner.__name__}.{name} is {f.__qualname__}")
            elif inspect.getsourcefile(f) != source:
                bad.append(f"{owner.__name__}.{name} comes from {inspect.getsourcefile(f)}")
    assert not bad, "\n".join(bad)


def test_no_setattr_on_the_packages_classes():
    """No ``setattr(C, ...)`` with ``C`` a class dask_tra defines (a method factory's loop)."""
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in ROOT.rglob("*.py")}
    classes = {n.name for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.ClassDef)}
    bad = [
        f"{p.relative_to(ROOT.parent)}:{n.lineno}"
        for p, t in trees.items()
        for n in ast.walk(t)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "setattr"
        and n.args
        and isinstance(n.args[0], ast.Name)
        and (n.args[0].id in classes or n.args[0].id == "cls")
    ]
    assert not bad, bad


REAL = ["sum", "mean", "std", "var", "reshape", "transpose", "astype", "round", "clip", "__add__", "__getitem__"]


@pytest.mark.parametrize("name", REAL)
def test_signatures_are_real(name):
    params = list(inspect.signature(getattr(dt.RelArray, name)).parameters.values())
    assert params[0].name == "self"
    named = [p for p in params[1:] if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert named or name == "transpose", f"{name}{inspect.signature(getattr(dt.RelArray, name))}"
    if name == "transpose":
        assert [p.name for p in params[1:]] == ["axes"]


# NumPy's parameters that the method does not name: taken by **kwargs (and ignored or rejected
# with dask_tra's message), or not supported (dask.array's methods lack them too)
NOT_NAMED = {
    "astype": {"order", "subok"},  # order: ignored, as dask; subok: rejected
    "round": {"out"},
    "clip": {"out"},
    "ravel": {"order"},
    "flatten": {"order"},
    "copy": {"order"},
    "any": {"where"},
    "all": {"where"},
}
COMMON = [
    "all",
    "any",
    "argmax",
    "argmin",
    "astype",
    "clip",
    "conj",
    "conjugate",
    "copy",
    "cumprod",
    "cumsum",
    "dot",
    "flatten",
    "max",
    "mean",
    "min",
    "nonzero",
    "prod",
    "ravel",
    "repeat",
    "reshape",
    "round",
    "squeeze",
    "std",
    "sum",
    "swapaxes",
    "to_device",
    "transpose",
    "var",
    "view",
    "__getitem__",
    "__setitem__",
    "__add__",
    "__radd__",
    "__matmul__",
    "__eq__",
    "__neg__",
    "__bool__",
    "__array__",
    "__array_namespace__",
    "__dlpack__",
]


@pytest.mark.parametrize("name", COMMON)
def test_signatures_match_numpy(name):
    """Every parameter NumPy's method takes by name is one of ours (or listed in NOT_NAMED), and
    ours takes at least as many positional arguments as NumPy's positional-only ones."""
    try:
        theirs = inspect.signature(getattr(np.ndarray, name))
    except (ValueError, TypeError, AttributeError):
        pytest.skip(f"NumPy {np.__version__} exposes no signature for ndarray.{name}")
    ours = inspect.signature(getattr(dt.RelArray, name))
    kinds = inspect.Parameter
    their = [p for p in list(theirs.parameters.values())[1:]]
    our = list(ours.parameters.values())[1:]
    by_name = {p.name for p in our if p.kind not in (kinds.POSITIONAL_ONLY, kinds.VAR_KEYWORD)}
    named = {p.name for p in their if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)}
    missing = named - by_name - NOT_NAMED.get(name, set())
    assert not missing, f"ndarray.{name}{theirs} vs RelArray.{name}{ours}"
    star = [p.name for p in their if p.kind == kinds.VAR_POSITIONAL and p.name != "args"]  # *shape, *axes
    assert star == [p.name for p in our if p.kind == kinds.VAR_POSITIONAL and p.name in star]
    if NOT_NAMED.get(name, set()) & {"order", "where"} and name in ("astype", "any", "all"):
        assert any(p.kind == kinds.VAR_KEYWORD for p in our)  # taken, then ignored or rejected
    positional = [p for p in their if p.kind == kinds.POSITIONAL_ONLY]
    ours_positional = [p for p in our if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    assert len(ours_positional) >= len(positional) or any(p.kind == kinds.VAR_POSITIONAL for p in our)


def test_methods_have_docstrings():
    """Every method of ``array/methods.py`` (public or special) says in one line what it does."""
    from dask_tra.array.methods import ArrayMethods

    missing = [
        name
        for name, value in vars(ArrayMethods).items()
        if inspect.isfunction(value) and not (name.startswith("_") and not name.startswith("__"))
        if not (value.__doc__ or "").strip()
    ]
    assert not missing, missing


A = np.arange(1, 43, dtype=np.float64).reshape(6, 7) / 5 - 3.1  # no zero: x // x and divmod(2, x) stay finite
CHUNKS = ((1, 4, 1), (3, 1, 3))


def _x(a=A):
    return da.from_array(a, chunks=CHUNKS)


CALLS = [
    ("sum", (), {}),
    ("sum", (0,), {"keepdims": True}),
    ("prod", (1,), {}),
    ("mean", (), {"axis": 1}),
    ("var", (0,), {"ddof": 1}),
    ("std", (), {"axis": (0, 1)}),
    ("min", (1,), {}),
    ("max", (), {"keepdims": True}),
    ("argmin", (0,), {}),
    ("argmax", (), {}),
    ("cumsum", (1,), {}),
    ("cumprod", (0,), {}),
    ("cumsum", (), {}),
    ("round", (1,), {}),
    ("clip", (-1, 2), {}),
    ("clip", (), {"max": 0.5}),
    ("astype", ("i8",), {}),
    ("astype", (np.float32,), {"casting": "same_kind"}),
    ("reshape", (7, 6), {}),
    ("reshape", ((3, 14),), {}),
    ("reshape", (-1,), {"order": "C"}),
    ("transpose", (), {}),
    ("transpose", (1, 0), {}),
    ("transpose", ((1, 0),), {}),
    ("swapaxes", (0, 1), {}),
    ("ravel", (), {}),
    ("flatten", (), {}),
    ("repeat", (2,), {"axis": 1}),
    ("conj", (), {}),
    ("conjugate", (), {}),
    ("dot", (A.T,), {}),
    ("nonzero", (), {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS, ids=[f"{c[0]}{c[1]}{c[2]}" for c in CALLS])
def test_methods_equal_numpy_on_ragged_chunks(name, args, kwargs):
    expected = getattr(A, name)(*args, **kwargs)
    got = getattr(_x(), name)(*args, **kwargs)
    if isinstance(expected, tuple):
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(np.asarray(g), e)
        return
    got = np.asarray(got)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_any_all_and_moment():
    x, m = _x(), A > 0
    np.testing.assert_array_equal(np.asarray((x > 0).any(0)), m.any(0))
    np.testing.assert_array_equal(np.asarray((x > 0).all(1, keepdims=True)), m.all(1, keepdims=True))
    np.testing.assert_allclose(np.asarray((x * x).moment(3, axis=0)), ((A * A - (A * A).mean(0)) ** 3).mean(0))


BINARY = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.eq,
    operator.ne,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
]


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # negative ** 1.5
def test_operators_and_reflected_operators(op):
    other = np.linspace(0.5, 2, 7)
    np.testing.assert_allclose(np.asarray(op(_x(), other)), op(A, other))
    np.testing.assert_allclose(np.asarray(op(_x(), 1.5)), op(A, 1.5))
    np.testing.assert_allclose(np.asarray(op(1.5, _x())), op(1.5, A))  # the reflected method
    np.testing.assert_allclose(np.asarray(op(_x(), _x())), op(A, A))


def test_integer_operators_divmod_matmul_unary_and_conversions():
    i = np.arange(42).reshape(6, 7)
    xi = _x(i)
    for op in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift):
        np.testing.assert_array_equal(np.asarray(op(xi, 3)), op(i, 3))
        np.testing.assert_array_equal(np.asarray(op(3, xi)), op(3, i))
    for got, expected in zip(divmod(_x(), 2), divmod(A, 2), strict=True):
        np.testing.assert_allclose(np.asarray(got), expected)
    for got, expected in zip(divmod(2, _x()), divmod(2, A), strict=True):
        np.testing.assert_allclose(np.asarray(got), expected)
    np.testing.assert_allclose(np.asarray(_x() @ A.T), A @ A.T)
    np.testing.assert_allclose(np.asarray(A.T @ _x()), A.T @ A)
    np.testing.assert_allclose(np.asarray(-_x()), -A)
    np.testing.assert_allclose(np.asarray(+_x()), A)
    np.testing.assert_allclose(np.asarray(abs(_x())), abs(A))
    np.testing.assert_array_equal(np.asarray(~xi), ~i)
    x = _x()
    assert float(x[1, 2]) == float(A[1, 2]) and complex(x[0, 0]) == complex(A[0, 0])
    assert int(xi[2, 3]) == 17 and operator.index(xi[0, 2]) == 2 and bool(x[0, 0]) is True
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    with pytest.raises(TypeError, match="size 1"):
        float(x)
    with pytest.raises(TypeError, match="only integer arrays"):
        operator.index(x[0, 0])


def test_in_place_operators_rebind_the_name_only():
    x = _x()
    y = x
    y += 1
    y *= 2
    assert y is not x
    np.testing.assert_allclose(np.asarray(x), A)
    np.testing.assert_allclose(np.asarray(y), (A + 1) * 2)


def test_deferring_operands_and_unsupported_arguments():
    class Defers:
        __array_ufunc__ = None

        def __radd__(self, other):
            return "deferred"

        def __rsub__(self, other):
            return "deferred-sub"

    assert _x() + Defers() == "deferred"
    assert _x() - Defers() == "deferred-sub"
    assert _x().__add__(Defers()) is NotImplemented
    assert _x().__rmul__(Defers()) is NotImplemented
    with pytest.raises(TypeError, match="where=, initial= are not supported"):
        _x().sum(where=True)
    with pytest.raises(TypeError, match="subok"):
        _x().astype("i8", subok=True)
    assert hash(_x()) != hash(_x())  # __eq__ is element-wise; hashing stays by identity


def test_generator_methods_keep_their_seeds_and_parameters():
    g, h = da.random.default_rng(5), da.random.default_rng(5)
    a = g.gamma(2.0, size=(5, 4), chunks=(2, 3))
    b = h.gamma(2.0, 1.0, (5, 4), chunks=(2, 3))  # size by position, as NumPy's Generator
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert inspect.signature(Generator.beta).parameters.keys() >= {"a", "b", "size", "chunks"}
    with pytest.raises(TypeError):
        g.beta(1.0)
    with pytest.raises(TypeError, match="unexpected arguments"):
        g.poisson(1.0, size=3, nope=1)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

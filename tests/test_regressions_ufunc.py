"""dask.array's ufunc objects: ``da.add`` is a ``ufunc`` wrapper with NumPy's attributes and
``outer``, lazy on lazy inputs and NumPy's own on NumPy inputs; ``frompyfunc``; the wrapped
non-ufuncs (``real``, ``imag``, ``angle``, ``clip``, ``nan_to_num``, ``iscomplex``, ``isreal``) keep NumPy in, NumPy out;
``frexp``/``modf`` are always lazy. Values against NumPy on ragged chunks."""

import pickle
from operator import add

import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.utils import assert_eq

RNG = np.random.default_rng(11)
X = RNG.integers(1, 100, size=(9, 7))
V = RNG.integers(1, 100, size=(7,))
Z = RNG.standard_normal((9, 7)) + 1j * RNG.standard_normal((9, 7))


def _x():
    return da.from_array(X, chunks=((4, 5), (2, 5)))


@pytest.mark.parametrize("name", ["log", "add", "divmod", "isnan"])
def test_ufunc_objects_forward_numpy_attributes(name):
    f, g = getattr(da, name), getattr(np, name)
    for attr in ("nin", "nargs", "nout", "ntypes", "identity", "signature", "types"):
        assert getattr(f, attr) == getattr(g, attr)
    assert f.__name__ == name
    assert repr(f) == repr(g)
    assert {"nin", "outer"} <= set(dir(f))
    assert "This docstring was copied from numpy." + name in f.__doc__
    with pytest.raises(AttributeError):
        f.not_an_attribute


def test_ufunc_objects_pickle():
    f = pickle.loads(pickle.dumps(da.add))
    assert f.nin == 2
    assert_eq(f(_x(), 1), X + 1)


def test_numpy_in_numpy_out_lazy_in_lazy_out():
    assert isinstance(da.log(X), np.ndarray)
    assert isinstance(da.add(X, V), np.ndarray)
    assert isinstance(da.log(_x()), da.Array)
    assert_eq(da.add(_x(), V), X + V)
    for f in (da.real, da.imag, da.angle, da.nan_to_num, da.iscomplex, da.isreal):
        assert isinstance(f(Z), np.ndarray)
        assert_eq(f(da.from_array(Z, chunks=(4, 3))), getattr(np, f.__name__)(Z))
    assert isinstance(da.clip(X, 10, 20), np.ndarray)
    assert_eq(da.clip(_x(), 10, 20), np.clip(X, 10, 20))


@pytest.mark.parametrize("name", ["frexp", "modf"])
def test_frexp_modf_are_lazy_even_on_numpy(name):
    for arg in (X, _x()):
        got = getattr(da, name)(arg)
        assert all(isinstance(g, da.Array) for g in got)
        for g, e in zip(got, getattr(np, name)(X)):
            assert_eq(g, e)


def test_outer():
    x, w = _x(), da.from_array(V, chunks=((3, 4),))
    assert isinstance(da.add.outer(X, V), np.ndarray)
    cases = [((x, w), (X, V)), ((w, x), (V, X)), ((V, x), (V, X)), ((1.5, x), (1.5, X)), (([1, 2], w), ([1, 2], V))]
    cases += [((x.sum(), w), (X.sum(), V))]
    for (a, b), (ea, eb) in cases:
        got = da.add.outer(a, b)
        assert isinstance(got, da.Array)
        assert_eq(got, np.add.outer(ea, eb))
    assert_eq(da.subtract.outer(x, w, dtype="f8"), np.subtract.outer(X, V, dtype="f8"))
    with pytest.raises(ValueError, match="binary"):
        da.sin.outer(x, w)
    with pytest.raises(ValueError, match="out"):
        da.add.outer(x, w, out=X)


def test_frompyfunc():
    myadd = da.frompyfunc(add, 2, 1)
    assert myadd.nin == 2 and myadd.nout == 1
    np.testing.assert_array_equal(myadd(X, V), np.frompyfunc(add, 2, 1)(X, V))  # NumPy's object array
    with pytest.raises(TypeError, match="object"):
        myadd(_x(), V)  # dask_tra arrays hold no objects: a clear error, never a cast
    with pytest.raises(NotImplementedError):
        da.frompyfunc(lambda a, b: (a + b, a - b), 2, 2)

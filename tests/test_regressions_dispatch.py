"""NumPy's protocols as dask.array applies them: NEP 13 deferral to unregistered duck arrays,
``register_chunk_type``, NumPy functions dask_tra lacks (computed, with dask's FutureWarning)."""
import operator

import numpy as np
import pytest

import dask_tra.array as da


class Upcast(np.lib.mixins.NDArrayOperatorsMixin):
    """A duck array above RelArray in the type hierarchy: it wraps whatever it is given."""

    def __init__(self, a):
        self.a = a

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return Upcast(getattr(ufunc, method)(*(i.a if isinstance(i, Upcast) else i for i in inputs), **kwargs))


class OptsOut:
    __array_ufunc__ = None

    def __mul__(self, other):
        return 42

    __rmul__ = __mul__


@pytest.mark.parametrize("op", [operator.add, operator.mul, operator.lt, np.add, np.subtract])
def test_relarray_defers_to_an_unregistered_duck_array(op):
    x, u = da.from_array(np.arange(6.0), chunks=4), Upcast(np.ones(6))
    assert type(op(x, u)) is Upcast and type(op(u, x)) is Upcast
    assert x.__add__(u) is NotImplemented


def test_an_object_that_opts_out_of_ufuncs_answers_the_operator():
    x = da.from_array(np.arange(3), chunks=2)
    assert x * OptsOut() == 42 and OptsOut() * x == 42


def test_registered_chunk_types():
    class Chunk(np.ndarray):
        pass

    class Other:
        __array_ufunc__ = np.ndarray.__array_ufunc__

    assert da.is_valid_chunk_type(np.ndarray) and da.is_valid_array_chunk(np.arange(2))
    assert da.is_valid_chunk_type(np.ma.MaskedArray) and da.is_valid_array_chunk(None)
    assert not da.is_valid_chunk_type(da.Array) and not da.is_valid_array_chunk(0.0)
    assert not da.is_valid_chunk_type(Other)
    da.register_chunk_type(Other)
    assert da.is_valid_chunk_type(Other) and da.is_valid_array_chunk(Other())
    assert da.is_valid_chunk_type(Chunk)  # a subclass of a registered type


@pytest.mark.parametrize("dtype", ["f8", "c8", "i4"])
def test_dtype_predicates_answer_from_metadata(dtype):
    x = da.from_array(np.ones(4, dtype), chunks=3)
    assert np.iscomplexobj(x) is np.iscomplexobj(np.ones(1, dtype))
    assert np.isrealobj(x) is np.isrealobj(np.ones(1, dtype))


def test_a_numpy_function_dask_tra_lacks_is_computed_with_dasks_warning():
    a = np.random.default_rng(0).random((4, 7)) * 10
    x = da.from_array(a, chunks=(3, 2))
    with pytest.warns(FutureWarning, match="numpy.unwrap` function is not implemented"):
        got = np.unwrap(x, axis=1)
    np.testing.assert_array_equal(got, np.unwrap(a, axis=1))


def test_numpy_linalg_functions_route_to_dask_tra_linalg():
    a = np.random.default_rng(1).random((5, 5)) + 5 * np.eye(5)
    got = np.linalg.inv(da.from_array(a, chunks=2))
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), np.linalg.inv(a), rtol=1e-10)

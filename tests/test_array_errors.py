"""Bad input fails at call time (nothing is computed) with NumPy's exception types and messages."""
import dask
import dask.array
import numpy as np
import pytest

import dask_tra.array as da

CALLS = []


def _watched(shape):
    """A lazy array that records it if anything ever computes it."""
    def make():
        CALLS.append(shape)
        return np.ones(shape)
    return da.from_dask(dask.array.from_delayed(dask.delayed(make)(), shape=shape, dtype=float))


@pytest.fixture
def xy():
    CALLS.clear()
    yield _watched((3, 4)), _watched((5, 4))
    assert CALLS == [], "an error was raised only after computing"


def test_broadcast_mismatch(xy):
    x, y = xy
    with pytest.raises(ValueError, match="broadcast"):
        x + y
    with pytest.raises(ValueError, match="broadcast"):
        da.where(x > 0, y, 0)
    with pytest.raises(ValueError, match="broadcast"):
        da.broadcast_to(x, (3, 5))


def test_contraction_mismatch(xy):
    x, y = xy
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        x @ y
    with pytest.raises(ValueError, match="shape-mismatch for sum"):
        da.tensordot(x, y, axes=([1, 0], [1, 0]))
    with pytest.raises(ValueError, match="not aligned"):
        da.dot(x, y)
    with pytest.raises(ValueError, match="does not match previous terms"):
        da.einsum("ij,ij->i", x, y)
    with pytest.raises(ValueError, match="enough dimensions"):
        da.matmul(x.sum(), y)


@pytest.mark.parametrize("spec, n", [("ij->ii", 1), ("ij,jk->q", 2), ("ij,jk", 3), ("ijk", 1), ("i1", 1),
                                     ("ij.,jk", 2), ("", 1)])
def test_invalid_einsum_strings(xy, spec, n):
    x, _ = xy
    with pytest.raises(ValueError):
        da.einsum(spec, *([x] * n))


def test_einsum_bad_combine_or_aggregate(xy):
    x, y = xy
    with pytest.raises(ValueError, match="unknown aggregate"):
        da.einsum("ik,jk->ij", x, y, aggregate="median")
    with pytest.raises(ValueError, match="exactly two operands"):
        da.einsum("ik->i", x, aggregate="max")


@pytest.mark.parametrize("call", [
    lambda x: x.sum(axis=2), lambda x: x.mean(axis=-3), lambda x: x.argmax(axis=5), lambda x: x.cumsum(axis=2),
    lambda x: da.expand_dims(x, 4), lambda x: da.moveaxis(x, 0, 3), lambda x: da.concatenate([x, x], axis=2),
    lambda x: da.swapaxes(x, 0, 2), lambda x: da.squeeze(x, axis=3), lambda x: da.flip(x, 2),
    lambda x: da.stack([x, x], axis=4)])
def test_axis_out_of_range_is_numpy_axis_error(xy, call):
    x, _ = xy
    with pytest.raises(np.exceptions.AxisError, match="out of bounds"):
        call(x)


def test_unsupported_dtypes(xy):
    x, _ = xy
    with pytest.raises(TypeError, match="does not support dtype"):
        da.from_array(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="does not support dtype"):
        x.astype(object)
    with pytest.raises(TypeError, match="does not support dtype"):
        da.zeros(3, dtype="datetime64[s]")
    with pytest.raises(TypeError, match="Cannot cast"):
        x.astype(np.int32, casting="safe")
    with pytest.raises(TypeError):
        (x > 0) - (x > 1)  # NumPy refuses boolean subtraction


def test_chunks_that_do_not_fit(xy):
    x, _ = xy
    with pytest.raises(ValueError, match="Chunks do not add up"):
        da.from_array(np.ones((5, 3)), chunks=((2, 2), (3,)))
    with pytest.raises(ValueError):
        x.rechunk(((1, 1), (4,)))
    # extra entries are ignored, as dask.array's rechunk ignores them
    assert x.rechunk((2, 2, 2)).chunks == dask.array.ones(x.shape, chunks=1).rechunk((2, 2, 2)).chunks


def test_other_shape_errors(xy):
    x, y = xy
    with pytest.raises(ValueError, match="cannot reshape"):
        x.reshape(5, 3)
    with pytest.raises(ValueError, match="same shape"):
        da.stack([x, y])
    with pytest.raises(ValueError, match="must match exactly"):
        da.concatenate([x, y.T], axis=0)
    with pytest.raises(ValueError, match="size not equal to one"):
        x.squeeze(axis=0)
    with pytest.raises(ValueError, match="no identity"):
        da.zeros((0, 3)).max(axis=0)
    with pytest.raises(ValueError, match="empty sequence"):
        da.zeros((0, 3)).argmin()
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.ones(4, bool)]
    # pointwise indexing is NumPy's (tests/test_regressions_array_api.py); mismatched index shapes raise its IndexError
    assert x[[0, 1], [0, 1]].shape == (2,)
    with pytest.raises(IndexError, match="shape mismatch"):
        x[[0, 1], [0, 1, 2]]


@pytest.mark.parametrize("axis", [1.5, "0", (0, 1.0)])
def test_a_non_integer_axis_raises_numpys_type_error_at_call_time(axis):
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        da.ones((2, 3), chunks=1).sum(axis=axis)

"""Regressions found by dask's own array test suite (``python -m benchmarks dask-suite``, issue
30): errors dask.array raises at call time for invalid input, and the chunks it chooses, matched
(each checked against dask.array or NumPy, with the values still NumPy's)."""

import threading
import warnings

import dask.array
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.testing import assert_eq


def test_astype_rejects_unknown_keywords():
    x = da.ones((4, 4), chunks=2)
    with pytest.raises(TypeError, match="not_a_real_kwarg"):
        x.astype("i8", not_a_real_kwarg=1)
    assert_eq(x.astype("i8", order="C"), np.ones((4, 4), "i8"))  # order= is accepted, as dask


def test_asarray_copy_false_warns_as_dask():
    x = da.asarray(np.arange(10), chunks=5)
    with pytest.warns(FutureWarning, match="Can't acquire a memory view"):
        y = np.asarray(x, copy=False)
    np.testing.assert_array_equal(y, np.arange(10))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.asarray(x)  # no warning without copy=False


class CountingLock:
    """A lock with only acquire/release (no context manager), as dask.array's store accepts."""

    def __init__(self):
        self.lock, self.acquired, self.released = threading.Lock(), 0, 0

    def acquire(self, blocking=True, timeout=-1):
        self.acquired += 1
        return self.lock.acquire(blocking, timeout)

    def release(self):
        self.released += 1
        self.lock.release()


def test_store_takes_a_lock_with_acquire_and_release_only():
    a = np.arange(36.0).reshape(6, 6)
    target, lock = np.zeros((6, 6)), CountingLock()
    da.store(da.from_array(a, chunks=3), target, lock=lock)
    np.testing.assert_array_equal(target, a)
    assert lock.acquired == lock.released == 4  # one per block


def test_block_validates_nesting_as_numpy():
    for arrays, err, match in [
        ([], ValueError, "empty"),
        ([[1], []], ValueError, "empty"),
        ([1, [2]], ValueError, "depths are mismatched"),
        ([[1], 2], ValueError, "depths are mismatched"),
        ([[[1], [2]], [[3, 4]], [5]], ValueError, "depths are mismatched"),
        (([1, 2], [3, 4]), TypeError, "tuple"),
        ([(1, 2), (3, 4)], TypeError, "tuple"),
    ]:
        with pytest.raises(err, match=match):
            np.block(arrays)
        with pytest.raises(err, match=match):
            da.block(arrays)
    assert_eq(da.block([[1, 2], [3, 4]]), np.block([[1, 2], [3, 4]]))


def test_concatenate_of_one_nonempty_array_is_that_array():
    a = np.arange(10.0)
    y = da.from_array(a, chunks=3)
    assert da.concatenate([y, y[:0]]) is y
    assert da.block([y, y[:0]]) is y
    assert_eq(da.concatenate([da.zeros(0, dtype=float), da.zeros(1, dtype=int)]), np.zeros(1))
    assert_eq(da.concatenate([da.zeros(0), da.zeros(0)]), np.zeros(0))


def test_concatenate_and_stack_error_messages_as_dask():
    with pytest.raises(ValueError, match=r"Shapes.*\(2, 1\)"):
        da.concatenate([da.zeros((2, 1)), da.zeros((2, 3))])
    with pytest.raises(ValueError) as e:
        da.stack([da.zeros(2)] * 10 + [da.zeros(3)] * 10)
    with pytest.raises(ValueError) as d:
        dask.array.stack([dask.array.zeros(2)] * 10 + [dask.array.zeros(3)] * 10)
    assert str(e.value) == str(d.value)


def test_concatenate_stack_and_elementwise_chunks_are_dask_arrays():
    a, b = np.arange(36.0).reshape(6, 6), np.arange(36.0, 72.0).reshape(6, 6)
    for cx, cy in [((3, 3), (2, 2)), (((4, 2), (5, 1)), ((6,), (2, 4))), ((6, 6), (2, 3))]:
        x, y = da.from_array(a, chunks=cx), da.from_array(b, chunks=cy)
        dx, dy = dask.array.from_array(a, chunks=cx), dask.array.from_array(b, chunks=cy)
        for axis in (0, 1):
            z = da.concatenate([x, y], axis=axis)
            assert z.chunks == dask.array.concatenate([dx, dy], axis=axis).chunks
            assert_eq(z, np.concatenate([a, b], axis=axis))
            s = da.stack([x, y], axis=axis)
            assert s.chunks == dask.array.stack([dx, dy], axis=axis).chunks
            assert_eq(s, np.stack([a, b], axis=axis))
        assert (x + y).chunks == (dx + dy).chunks
        assert_eq(x + y, a + b)
    x, y = da.arange(10, chunks=((4, 6),)), da.ones((3, 10), chunks=((1, 2), (6, 4)))
    assert (x + y).chunks == (
        dask.array.arange(10, chunks=((4, 6),)) + dask.array.ones((3, 10), chunks=((1, 2), (6, 4)))
    ).chunks
    assert_eq(x + y, np.arange(10) + np.ones((3, 10)))


def test_map_blocks_without_array_arguments():
    def func(dtype, block_info=None):
        lo, hi = block_info[None]["array-location"][0]
        assert set(block_info) == {None}
        return np.arange(lo, hi, dtype=dtype)

    x = da.map_blocks(func, np.float32, chunks=((5, 3),), dtype=np.float32)
    assert x.chunks == ((5, 3),)
    assert_eq(x, np.arange(8, dtype=np.float32))
    assert da.map_blocks(func, np.float32, chunks=(4,), dtype=np.float32, name="foo").name == "foo"
    b = da.blockwise(lambda: np.ones((2, 3), np.float32), "ab", new_axes={"a": 2, "b": (3, 3)}, dtype=np.float32)
    assert b.chunks == ((2,), (3, 3))
    assert_eq(b, np.ones((2, 6), np.float32))


def test_map_blocks_token_and_axis_validation():
    a = np.arange(56).reshape(7, 8)
    d = da.from_array(a, chunks=(7, 4))
    assert d.map_blocks(lambda b: b + 1, token="increment").name.startswith("increment-")
    for drop_axis in (2, -3):
        with pytest.raises(ValueError, match="drop_axis"):
            d.map_blocks(lambda b: b.sum(axis=0), chunks=(4,), drop_axis=drop_axis, dtype=d.dtype)
    assert_eq(d.map_blocks(lambda b: b.sum(axis=0), chunks=(4,), drop_axis=-2, dtype=d.dtype), a.sum(axis=0))
    with pytest.raises(ValueError, match="New_axis"):
        d.map_blocks(lambda b: b, new_axis=(3, 4))
    with pytest.raises(ValueError, match="repeated"):
        da.blockwise(lambda b: b, "ii", d, "ij", dtype=d.dtype)


def test_blocks_and_vindex_errors_as_dask():
    x = da.ones((2, 2), chunks=1)
    with pytest.raises(ValueError, match="list"):
        x.blocks[np.array([0, 1]), np.array([0, 1])]
    with pytest.raises(ValueError, match="newaxis.*not supported"):
        x.blocks[None, :, :]
    r = da.from_array(np.arange(200.0).reshape(10, 20), chunks=5)
    assert r.vindex[:, :] is r and r.vindex[:10, :20] is r
    for key in [(slice(None), slice(1, None)), (slice(None), slice(0, 20, 2))]:
        with pytest.raises(IndexError):
            r.vindex[key]
    import dask.array
    for key in [np.newaxis, ([1, 2], [1, 2, 3]), ([0], dask.array.from_array([0]))]:
        with pytest.raises(IndexError):
            r.vindex[key]
    # a dask_tra indexer is evaluated (xarray's idxmin/idxmax index a coordinate with one)
    assert_eq(r.vindex[[0, 3], da.from_array([1, 7])], np.arange(200.0).reshape(10, 20)[[0, 3], [1, 7]])
    a = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    assert_eq(da.from_array(a, chunks=2).vindex[[], [], :], a[[], [], :])


def test_broadcast_to_never_rechunks():
    a = np.arange(30).reshape(5, 1, 6)
    x = da.from_array(a, chunks=(3, 1, 3))
    for chunks in [((2, 3), (1,), (3, 3)), ((3, 2), (3,), (3, 3))]:
        with pytest.raises(ValueError):
            dask.array.broadcast_to(dask.array.from_array(a, chunks=(3, 1, 3)), a.shape, chunks=chunks)
        with pytest.raises(ValueError):
            da.broadcast_to(x, a.shape, chunks=chunks)
    y = da.broadcast_to(x, (5, 3, 6), chunks=(3, 1, 3))
    assert y.chunks == ((3, 2), (1, 1, 1), (3, 3))
    assert_eq(y, np.broadcast_to(a, (5, 3, 6)))


def test_internal_callers_keep_outer_blocks_and_repeated_core_dims():
    """The public checks above must not reach dask_tra's own callers: blocked linalg selects
    blocks by several lists (outer indexing), gufuncs repeat an output core dim."""
    rng = np.random.default_rng(0)
    a = rng.random((20, 20))
    a = a @ a.T + 20 * np.eye(20)
    assert_eq(da.linalg.cholesky(da.from_array(a, chunks=10)), np.linalg.cholesky(a).T)
    x = rng.random((3, 4))
    outer = da.apply_gufunc(
        lambda v: v[..., None] * v[..., None, :], "(m)->(m,m)", da.from_array(x, chunks=(2, 4)), output_dtypes=float
    )
    assert_eq(outer, x[..., None] * x[..., None, :])
    assert_eq(da.ones((4, 4), chunks=1).blocks.outer(([0, 2], [1, 3])), np.ones((2, 2)))

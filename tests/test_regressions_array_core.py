"""Regressions from dask's own ``test_array_core.py`` (issue 30): dask.array API that
dask_tra lacked, checked against NumPy / dask.array on ragged chunks."""

from __future__ import annotations

import operator
import warnings

import dask
import dask.array as dsk
import numpy as np
import pytest

import dask_tra.array as da

RAGGED = ((3, 1, 3), (4, 2, 4))


def test_view_matches_numpy_and_dask_c_and_fortran_order():
    a = np.arange(70, dtype=np.int64).reshape(7, 10)
    x, d = da.from_array(a, chunks=RAGGED), dsk.from_array(a, chunks=RAGGED)
    for dt in ("i4", "i2", "f8", "u1"):
        got, want = x.view(dt), d.view(dt)
        assert got.chunks == want.chunks and got.dtype == want.dtype
        np.testing.assert_array_equal(got.compute(), a.view(dt))
    f = np.asfortranarray(a)
    got = da.from_array(f, chunks=RAGGED).view("i2", order="F")
    assert got.chunks == dsk.from_array(f, chunks=RAGGED).view("i2", order="F").chunks
    np.testing.assert_array_equal(got.compute(), f.T.view("i2").T)
    assert x.view().dtype == a.dtype
    small = da.from_array(np.arange(8, dtype="i1"), chunks=3)
    with pytest.raises(ValueError, match="whole number"):
        small.view("i4")  # a block of 3 bytes is not whole int32s
    with pytest.raises(ValueError, match="Order must be one of"):
        x.view("i4", order="asdf")


def test_A_partitions_name_and_read_only_chunks():
    a = np.arange(70.0).reshape(7, 10)
    x = da.from_array(a, chunks=RAGGED)
    assert x.A is x
    np.testing.assert_array_equal(x.partitions[1:, 2].compute(), a[3:, 6:])
    assert x._name == x.name
    x._name = "renamed"
    assert x.name == "renamed"
    with pytest.raises(TypeError, match=r"rechunk\(2\)"):
        x.chunks = 2
    assert x.chunks == RAGGED
    x[0, 0] = -1.0  # item assignment still rebinds the array (its chunks included)
    assert x.chunks == RAGGED and x.compute()[0, 0] == -1.0


def test_core_module_names():
    import dask_tra.array.core as core

    assert core.PerformanceWarning is dsk.core.PerformanceWarning
    a, b = np.arange(7.0), np.arange(7.0) * 2
    got = core.map_blocks(operator.add, da.from_array(a, chunks=RAGGED[0]), da.from_array(b, chunks=RAGGED[0]))
    np.testing.assert_array_equal(got.compute(), a + b)


def test_alignment_that_multiplies_blocks_warns_as_dask():
    x, y = da.ones((20, 20), chunks=(20, 1)), da.ones((20, 20), chunks=(1, 20))
    with pytest.warns(dsk.core.PerformanceWarning, match="factor of 20"):
        z = x + y
    np.testing.assert_array_equal(z.compute(), np.full((20, 20), 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        da.ones((20, 20), chunks=(5, 5)) + da.ones((20, 20), chunks=(10, 4))  # 4x: no warning


def test_to_backend_default_is_the_configured_backend():
    x = da.from_array(np.arange(7.0), chunks=RAGGED[0])
    np.testing.assert_array_equal(x.to_backend().compute(), np.arange(7.0))
    with dask.config.set({"array.backend": "numpy"}):
        assert x.to_backend() is x
    with pytest.raises(ValueError, match="No backend dispatch registered"):
        x.to_backend("missing")


def test_map_blocks_pairs_blocks_by_position_where_extents_differ():
    # dask's map_blocks: blocks matched by position; an array of one block is passed whole
    dx = da.from_array([[1, 2, 3, 4]], chunks=((1,), (2, 2)))
    dy = da.from_array([[10, 20], [30, 40]], chunks=((1, 1), (2,)))
    got = da.map_blocks(operator.add, dx, dy)
    want = dsk.map_blocks(
        operator.add, dsk.from_array([[1, 2, 3, 4]], chunks=((1,), (2, 2))),
        dsk.from_array([[10, 20], [30, 40]], chunks=((1, 1), (2,))),
    )  # fmt: skip
    assert got.chunks == want.chunks == ((1, 1), (2, 2))
    np.testing.assert_array_equal(got.compute(), want.compute())

    a, b = np.array([1, 2, 3]), np.array([0, 1, 2, 5, 6, 7])
    got = da.map_blocks(operator.add, da.from_array(a, 3), da.from_array(b, chunks=3), chunks=((3, 3),))
    np.testing.assert_array_equal(got.compute(), [1, 3, 5, 6, 8, 10])

    def maxes(p, q):
        return np.array([p.max(), q.max()])

    x, y = np.arange(11), np.arange(40, 47)
    got = da.map_blocks(maxes, da.from_array(x, chunks=(5, 2, 4)), da.from_array(y, chunks=RAGGED[0]), chunks=(2,))
    want = dsk.map_blocks(maxes, dsk.from_array(x, chunks=(5, 2, 4)), dsk.from_array(y, chunks=RAGGED[0]), chunks=(2,))
    assert got.chunks == want.chunks
    np.testing.assert_array_equal(got.compute(), want.compute())

    with pytest.raises(ValueError, match="paired by position"):
        da.map_blocks(maxes, da.from_array(x, chunks=(5, 6)), da.from_array(y, chunks=RAGGED[0]), chunks=(2,))


def test_map_blocks_block_info_of_broadcast_arrays():
    seen = {}

    def record(a, b, block_info=None):
        seen[block_info[None]["chunk-location"]] = (block_info[0], block_info[1])
        return a + b

    x = da.from_array(np.arange(3.0)[:, None] * np.ones(4), chunks=((3,), (2, 2)))
    y = da.from_array(np.arange(12.0).reshape(6, 2), chunks=((3, 3), (2,)))
    out = da.map_blocks(record, x, y, dtype=float)
    assert out.chunks == ((3, 3), (2, 2))
    out.compute(scheduler="sync")
    i0, i1 = seen[(1, 1)]
    assert i0 == {"shape": (3, 4), "num-chunks": (1, 2), "array-location": [(0, 3), (2, 4)], "chunk-location": (0, 1)}
    assert i1 == {"shape": (6, 2), "num-chunks": (2, 1), "array-location": [(3, 6), (0, 2)], "chunk-location": (1, 0)}


def test_map_blocks_extents_that_agree_are_still_aligned():
    a = np.arange(70.0).reshape(7, 10)
    row = np.arange(10.0)
    got = da.map_blocks(np.add, da.from_array(a, chunks=RAGGED), da.from_array(row, chunks=6))
    np.testing.assert_array_equal(got.compute(), a + row)


def test_blockwise_contracted_index_of_extent_one_broadcasts():
    a, b = np.arange(140.0).reshape(14, 10), np.arange(14.0)[:, None]

    def f(p, q):
        assert q.shape[1] == 1
        return (p * q).sum(axis=1)

    args = (
        f,
        "x",
        da.from_array(a, chunks=(RAGGED[0] * 2, 2)),
        "xt",
        da.from_array(b, chunks=(RAGGED[0] * 2, 1)),
        "xt",
    )
    got = da.blockwise(*args, concatenate=True, dtype=float)
    np.testing.assert_allclose(got.compute(), (a * b).sum(axis=1))
    with pytest.raises(ValueError, match="has size 10 in one array and 3 in another"):
        da.blockwise(f, "x", args[2], "xt", da.ones((14, 3)), "xt", concatenate=True, dtype=float)


def test_wrong_block_rank_says_dimension_mismatch():
    x = da.from_array(np.array([1, 2, 2, 3, 3, 3]), chunks=((1, 2, 3),))
    with pytest.raises(ValueError, match="Dimension mismatch: .*returned a block of 0 dimensions"):
        x.map_blocks(lambda b: 5, chunks=((1, 1, 1),), enforce_ndim=True).compute()


def test_store_regions_with_steps_lists_and_integers_match_numpy():
    a = np.arange(70.0).reshape(7, 10)
    x = da.from_array(a, chunks=RAGGED)
    region = (slice(None, None, 2), slice(1, None), [0, 2, 3, 5, 6, 7, 9, 11, 12, 13])
    got, want = np.zeros((14, 8, 14)), np.zeros((14, 8, 14))
    want[region] = a[:, None, :]
    da.store(x[:, None, :] * np.ones((1, 7, 1)), got, regions=region)
    want[region] = a[:, None, :] * np.ones((1, 7, 1))
    np.testing.assert_array_equal(got, want)
    got, want = np.zeros((9, 10)), np.zeros((9, 10))
    da.store(x, got, regions=slice(8, 1, -1))
    want[8:1:-1] = a
    np.testing.assert_array_equal(got, want)
    got, want = np.zeros((2, 10)), np.zeros((2, 10))
    stored = da.store(x[3], got, regions=(1,), compute=False)
    assert (got == 0).all()
    stored.compute()
    want[1] = a[3]
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="selects a shape"):
        da.store(x, np.zeros((14, 10)), regions=slice(None, None, 3))


def test_store_returns_what_dask_returns():
    x = da.from_array(np.arange(70.0).reshape(7, 10), chunks=RAGGED)
    assert x.store(np.zeros((7, 10))) is None
    one = x.store(np.zeros((7, 10)), compute=False)
    assert isinstance(one, type(x))  # one source: one array, from the method too
    two = da.store([x, x + 1], [np.zeros((7, 10)), np.zeros((7, 10))], compute=False)
    assert isinstance(two, tuple) and len(two) == 2
    t = np.zeros((7, 10))
    kept = x.store(t, return_stored=True, compute=False, lock=False)
    np.testing.assert_array_equal(kept.compute(), t)
    again = x.store(t, return_stored=True, compute=False, lock=False)
    assert set(kept.dask.keys()) == set(again.dask.keys())  # deterministic keys


def test_store_into_a_delayed_target_has_deterministic_keys():
    from dask.delayed import delayed

    x = da.from_array(np.arange(70.0).reshape(7, 10), chunks=RAGGED)
    t = delayed(np.zeros((7, 10)))
    assert set(x.store(t, compute=False, lock=False).dask.keys()) == set(
        x.store(t, compute=False, lock=False).dask.keys()
    )


def test_ufunc_names_an_unknown_keyword_and_slices_refuse_floats():
    x = da.from_array(np.arange(7.0), chunks=RAGGED[0])
    with pytest.raises(TypeError, match="minimum.*'foo'"):
        da.minimum(x, foo=None)
    assert da.add(x, 1, dtype="f4").dtype == np.float32
    for index in (1.5, slice(0, 1.5), [1, 1.5]):
        with pytest.raises(IndexError):
            x[index]
    np.testing.assert_array_equal(x[np.int64(1) : 6 : np.int32(2)].compute(), np.arange(7.0)[1:6:2])


@pytest.mark.parametrize("a, ca, b, cb", [((1, 6), (1, 2), (4, 1), (3, 1)), ((5, 6), (2, 3), (6,), (4,)),
                                          ((3,), (2,), (), ()), ((0, 4), (0, 2), (4,), (1,))])
def test_broadcast_arrays_chunk_as_dask(a, ca, b, cb):
    """Each broadcast dim took one chunk and shared dims kept each array's own chunks; dask
    unifies the shared dims and chunks a broadcast dim as the arrays spanning it (meshgrid too)."""
    rng = np.random.default_rng(3)
    x, y = rng.random(a), rng.random(b)
    got = da.broadcast_arrays(da.from_array(x, chunks=ca), da.from_array(y, chunks=cb))
    want = dsk.broadcast_arrays(dsk.from_array(x, chunks=ca), dsk.from_array(y, chunks=cb))
    assert [g.chunks for g in got] == [w.chunks for w in want]
    for g, w in zip(got, np.broadcast_arrays(x, y)):
        np.testing.assert_array_equal(g.compute(), w)
    grids = da.meshgrid(da.from_array(rng.random(2), chunks=1), da.from_array(rng.random(3), chunks=2))
    assert [g.chunks for g in grids] == [((2, 1), (1, 1))] * 2

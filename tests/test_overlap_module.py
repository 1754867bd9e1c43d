"""dask_tra.array.overlap (dask.array.overlap) against dask.array and NumPy on ragged chunks, and
map_overlap's trim of functions that change the block shape."""
import dask.array as dsk
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array import overlap as ov

RAGGED = ((5, 5, 3), (4, 9, 4))
PAD = {"reflect": "symmetric", "periodic": "wrap", "nearest": "edge"}


@pytest.fixture
def a():
    return np.random.default_rng(0).standard_normal((13, 17))


def both(a, chunks=RAGGED):
    return da.from_array(a, chunks=chunks), dsk.from_array(a, chunks=chunks)


def same(x, d):
    """``x`` (dask_tra, lazy) and ``d`` (dask.array) agree in shape, dtype, chunks and values."""
    assert isinstance(x, da.Array)
    assert x.shape == d.shape and x.dtype == d.dtype and x.chunks == d.chunks
    np.testing.assert_allclose(x.compute(), d.compute(), rtol=1e-12, atol=1e-12)


def halo_reference(a, chunks, depth, mode):
    """NumPy: every block of ``a`` extended by ``depth`` elements of ``np.pad(a, mode)``."""
    padded = np.pad(a, depth, mode=PAD.get(mode, "constant"), **({} if mode in PAD else {"constant_values": mode}))
    rows = np.cumsum((0,) + chunks[0])
    cols = np.cumsum((0,) + chunks[1])
    return np.block([[padded[r0 : r1 + 2 * depth, c0 : c1 + 2 * depth] for c0, c1 in zip(cols, cols[1:])]
                     for r0, r1 in zip(rows, rows[1:])])


@pytest.mark.parametrize("mode", ["reflect", "periodic", "nearest", 0.5])
def test_overlap_values_and_chunks(a, mode):
    x, d = both(a)
    g = ov.overlap(x, depth=2, boundary=mode)
    assert g.chunks == tuple(tuple(c + 4 for c in cs) for cs in RAGGED)
    np.testing.assert_array_equal(g.compute(), halo_reference(a, RAGGED, 2, mode))
    same(g, dsk.overlap.overlap(d, depth=2, boundary=mode))
    same(ov.trim_internal(g, {0: 2, 1: 2}, boundary=mode), d)


def test_overlap_none_and_dict_boundaries(a):
    x, d = both(a)
    spec = dict(depth={0: 1, 1: 3}, boundary={0: "none", 1: "periodic"})
    same(ov.overlap(x, **spec), dsk.overlap.overlap(d, **spec))
    same(ov.overlap_internal(x, {0: 2, 1: (1, 3)}), dsk.overlap.overlap_internal(d, {0: 2, 1: (1, 3)}))
    same(ov.trim_overlap(ov.overlap(x, **spec), spec["depth"], spec["boundary"]), d)


def test_overlap_rechunks_small_chunks_like_dask(a):
    chunks = ((1, 2, 6, 4), (2, 2, 13))
    x, d = both(a, chunks)
    same(ov.overlap(x, depth={0: 4, 1: 3}, boundary="reflect"), dsk.overlap.overlap(d, depth={0: 4, 1: 3},
                                                                                     boundary="reflect"))
    with pytest.raises(ValueError, match="allow_rechunk"):
        ov.overlap(x, depth=2, boundary="reflect", allow_rechunk=False)
    with pytest.raises(ValueError, match="overlapping depth 14"):
        ov.overlap(x, depth=14, boundary="none")
    assert ov.ensure_minimum_chunksize(10, (20, 20, 2, 20, 20, 2)) == (20, 12, 10, 20, 12, 10)


@pytest.mark.parametrize("fn", ["periodic", "reflect", "nearest"])
def test_boundary_helpers(a, fn):
    x, d = both(a)
    for axis, depth in ((0, 1), (1, 3), (-1, 2)):
        same(getattr(ov, fn)(x, axis, depth), getattr(dsk.overlap, fn)(d, axis % 2, depth))
    width = [(0, 0), (3, 3)]
    np.testing.assert_array_equal(getattr(ov, fn)(x, 1, 3).compute(), np.pad(a, width, mode=PAD[fn]))
    with pytest.raises(ValueError, match="larger than the axis"):
        getattr(ov, fn)(x, 0, 14)


def test_constant_and_boundaries(a):
    x, d = both(a)
    same(ov.constant(x, 0, 2, 7.0), dsk.overlap.constant(d, 0, 2, 7.0))
    same(ov.boundaries(x, {0: 2, 1: 1}, {0: 0, 1: "periodic"}), dsk.overlap.boundaries(d, {0: 2, 1: 1},
                                                                                        {0: 0, 1: "periodic"}))
    same(ov.boundaries(x, 2, {0: "none", 1: 33}), dsk.overlap.boundaries(d, 2, {0: "none", 1: 33}))
    assert ov.boundaries(x, 0, 0).chunks == x.chunks
    with pytest.raises(ValueError, match="unknown boundary"):
        ov.boundaries(x, 1, "mirror")


def test_coerce():
    assert ov.coerce_depth(3, {1: np.uint16(2), -1: (1, 0)}) == {0: 0, 1: 2, 2: (1, 0)}
    assert ov.coerce_depth(2, np.int64(3)) == {0: 3, 1: 3}
    assert ov.coerce_boundary(2, {1: "reflect"}) == {0: "none", 1: "reflect"}
    with pytest.raises(ValueError, match="non-negative"):
        ov.coerce_depth(1, -1)


def doubled_rows(b):
    return np.repeat(b, 2, axis=0)


def row_means(b):
    return b.mean(axis=0)


def test_map_overlap_trim_after_a_shape_changing_function(a):
    """trim cuts the depth off the declared output blocks (dask's trim_internal)."""
    x, d = both(a)
    chunks = (tuple(2 * c for c in (7, 7, 5)), (6, 11, 6))
    got = da.overlap.map_overlap(doubled_rows, x, depth=1, boundary="reflect", chunks=chunks, dtype=float)
    want = dsk.overlap.map_overlap(doubled_rows, d, depth=1, boundary="reflect", chunks=chunks, dtype=float)
    same(got, want)
    assert got.chunks == ((12, 12, 8), (4, 9, 4))
    blocks = np.pad(a, 1, mode="symmetric")
    r = np.cumsum((0, 5, 5, 3))
    rows = [np.repeat(blocks[r0 : r1 + 2], 2, axis=0)[1:-1] for r0, r1 in zip(r, r[1:])]
    np.testing.assert_allclose(got.compute(), np.concatenate(rows)[:, 1:-1])
    # drop_axis: the dropped axis' depth is left out of the trim
    same(x.map_overlap(row_means, depth={0: 0, 1: 2}, boundary="nearest", drop_axis=0, dtype=float),
         d.map_overlap(row_means, depth={0: 0, 1: 2}, boundary="nearest", drop_axis=0, dtype=float))


def test_map_overlap_several_arrays_of_other_ranks(a):
    x, d = both(a)
    v = a[0]
    y, e = da.from_array(v, chunks=(8, 9)), dsk.from_array(v, chunks=(8, 9))
    same(da.map_overlap(np.add, x, y, depth=[(1, 2), 2], boundary=[{0: 0, 1: "reflect"}, "periodic"]),
         dsk.map_overlap(np.add, d, e, depth=[(1, 2), 2], boundary=[{0: 0, 1: "reflect"}, "periodic"]))
    with pytest.raises(NotImplementedError, match="differ in length"):
        da.map_overlap(np.add, x, y, depth=[1, 2], boundary="none")
    with pytest.raises(ValueError, match="align"):
        da.map_overlap(np.add, x, y, depth=1, boundary="none", align_arrays=False)


def test_map_overlap_errors(a):
    x, _ = both(a)
    with pytest.raises(ValueError, match="cannot trim"):
        da.map_overlap(lambda b: b[:1], x, depth=1, boundary="reflect", chunks=((1, 1, 1), (1, 1, 1)), dtype=float)
    with pytest.raises(TypeError, match="must be arrays"):
        da.map_overlap(np.add, x, 1.0, depth=1)
    with pytest.raises(TypeError, match="callable"):
        da.map_overlap(3, x, depth=1)
    with pytest.warns(FutureWarning):
        y = da.map_overlap(x, lambda b: b + 1, 1, "reflect", True)
    np.testing.assert_allclose(y.compute(), a + 1)


def test_map_overlap_asymmetric_depth_with_a_boundary(a):
    """A (before, after) depth with a boundary other than "none" (dask raises NotImplementedError)."""
    x, _ = both(a)
    got = da.map_overlap(lambda b: b[2:] - b[:-2] + 0 * b.sum(), x, depth={0: (2, 0)}, boundary="periodic",
                         trim=False, dtype=float)
    np.testing.assert_allclose(got.compute(), a - np.roll(a, 2, axis=0))


@pytest.mark.parametrize("shape, chunks, window, axis", [
    ((13, 17), RAGGED, (3, 2), (0, 1)),
    ((21,), 3, (7,), (0,)),
    ((9,), 3, (3, 3), (0, -1)),
    ((30, 12), (10, 6), 12, 0),
])
def test_sliding_window_view_like_dask(shape, chunks, window, axis):
    v = np.arange(np.prod(shape), dtype=float).reshape(shape)
    x, d = da.from_array(v, chunks=chunks), dsk.from_array(v, chunks=chunks)
    got = ov.sliding_window_view(x, window, axis)
    same(got, dsk.overlap.sliding_window_view(d, window, axis))
    np.testing.assert_array_equal(got.compute(), np.lib.stride_tricks.sliding_window_view(v, window, axis))
    for bad in (0, -1):
        with pytest.raises(ValueError, match="> 0"):
            ov.sliding_window_view(x, bad, 0)


def test_add_dummy_padding(a):
    x, d = both(a)
    got = ov.add_dummy_padding(x, {0: 2, 1: 0}, {0: "none", 1: "reflect"})
    want = dsk.overlap.add_dummy_padding(d, {0: 2, 1: 0}, {0: "none", 1: "reflect"})
    assert got.chunks == want.chunks == ((7, 5, 5), (4, 9, 4))
    np.testing.assert_array_equal(got.compute()[2:-2], a)


def test_module_exposes_dasks_names():
    assert {n for n in dir(dsk.overlap) if not n.startswith("_") and callable(getattr(dsk.overlap, n))
            and getattr(getattr(dsk.overlap, n), "__module__", "").startswith("dask.array.overlap")} <= set(dir(ov))

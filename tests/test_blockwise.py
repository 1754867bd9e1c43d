"""The blockwise family against dask.array on the same inputs: ragged chunks, odd shapes."""
import dask.array as dsk
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dask_tra.array as da
from dask_tra.tra import Join, Transform

RAGGED = ((5, 5, 3), (4, 9, 4))


@pytest.fixture
def a():
    return np.random.default_rng(0).standard_normal((13, 17))


def both(a, chunks=RAGGED):
    return da.from_array(a, chunks=chunks), dsk.from_array(a, chunks=chunks)


def same(x, d, exact_chunks=True):
    """``x`` (dask_tra) and ``d`` (dask.array) agree in shape, dtype, chunks and values."""
    got, want = x.compute(), d.compute()
    assert x.shape == d.shape and x.dtype == d.dtype
    if exact_chunks:
        assert x.chunks == d.chunks
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def scale_and_center(b):
    return b * 2 - b.mean()


def location(b, block_info=None):
    info, out = block_info[0], block_info[None]
    return (b + 100 * info["chunk-location"][0] + 10 * info["chunk-location"][1]
            + out["array-location"][0][0] + 0.5 * out["array-location"][1][1]
            + 1000 * (out["chunk-shape"] == b.shape) + 7 * (out["num-chunks"] == (3, 3)))


def by_id(b, block_id=None):
    return b + block_id[0] * 10 + block_id[1]


def column_sums(b):
    return b.sum(axis=0)


def outer3(b):
    return b[..., None] * np.arange(1, 4)


def two_args(b, c, shift):
    return b * c + shift


def test_map_blocks_keeps_chunks(a):
    x, d = both(a)
    same(x.map_blocks(scale_and_center), d.map_blocks(scale_and_center))
    assert isinstance(da.map_blocks(scale_and_center, x).expr.child, type(x.expr))  # one Transform


def test_map_blocks_is_a_transform_the_optimizer_places(a):
    x, _ = both(a)
    y = x.map_blocks(scale_and_center)
    assert isinstance(y.expr, Transform) and y.expr.kernel.name == "scaleandcenter"
    assert "scaleandcenter" in str(y.explain())


def test_map_blocks_block_info_and_block_id(a):
    x, d = both(a)
    same(x.map_blocks(location, dtype=float), d.map_blocks(location, dtype=float))
    same(x.map_blocks(by_id, dtype=float), d.map_blocks(by_id, dtype=float))


def test_map_blocks_drop_axis_new_axis_and_chunks(a):
    x, d = both(a)
    same(x.map_blocks(column_sums, drop_axis=0), d.map_blocks(column_sums, drop_axis=0))
    same(x.map_blocks(outer3, new_axis=2, chunks=(5, 4, 3)), d.map_blocks(outer3, new_axis=2, chunks=(5, 4, 3)))
    same(x.map_blocks(outer3, new_axis=[2]), d.map_blocks(outer3, new_axis=[2]))
    same(x.map_blocks(np.sum, axis=1, keepdims=True, chunks=((5, 5, 3), (1, 1, 1))),
         d.map_blocks(np.sum, axis=1, keepdims=True, chunks=((5, 5, 3), (1, 1, 1))))


def test_map_blocks_several_arrays_scalars_and_kwargs(a):
    x, d = both(a)
    row = a[3]
    xr, dr = da.from_array(row, chunks=RAGGED[1]), dsk.from_array(row, chunks=RAGGED[1])
    same(da.map_blocks(two_args, x, xr, shift=2.5), dsk.map_blocks(two_args, d, dr, shift=2.5))
    same(da.map_blocks(two_args, x, x.T.T, 1), dsk.map_blocks(two_args, d, d.T.T, 1))
    y = da.map_blocks(np.add, x, da.from_array(row, chunks=6))  # unaligned: rechunked to match
    np.testing.assert_allclose(y.compute(), a + row)
    hi = da.from_array(a[:, :1] + 0.3, chunks=(RAGGED[0], 1))
    three = da.map_blocks(np.clip, x, da.from_array(row - 1, chunks=RAGGED[1]), hi)
    np.testing.assert_allclose(three.compute(), np.clip(a, row - 1, a[:, :1] + 0.3))
    assert isinstance(three.expr, Join) and three.expr.left.kernel.name == "bundle"  # 3 arrays: 2 Joins


def test_map_blocks_dtype_and_meta(a):
    x, d = both(a)
    same(x.map_blocks(np.floor, dtype=np.float32), d.map_blocks(np.floor, dtype=np.float32))
    assert x.map_blocks(np.isnan).dtype == d.map_blocks(np.isnan).dtype == bool
    assert x.map_blocks(np.rint, meta=np.array((), dtype=np.int16)).dtype == np.int16
    with pytest.raises(ValueError, match="dtype"):
        x.map_blocks(location)  # inference calls it without block_info, as dask does
    with pytest.raises(TypeError, match="callable"):
        da.map_blocks(x, scale_and_center)


def test_map_blocks_wrong_block_rank_is_an_error(a):
    x, _ = both(a)
    with pytest.raises(ValueError, match="2 dimensions|expected 2"):
        x.map_blocks(np.ravel, dtype=float).compute()


def test_blockwise_outer_and_contraction(a):
    v = a[0]
    xv, dv = da.from_array(v, chunks=(6, 6, 5)), dsk.from_array(v, chunks=(6, 6, 5))
    same(da.blockwise(np.outer, "ij", xv, "i", xv, "j", dtype=float),
         dsk.blockwise(np.outer, "ij", dv, "i", dv, "j", dtype=float))
    x, d = both(a)
    same(da.blockwise(column_sums, "j", x, "ij", dtype=float, concatenate=True),
         dsk.blockwise(column_sums, "j", d, "ij", dtype=float, concatenate=True))
    same(da.blockwise(np.transpose, "ji", x, "ij", dtype=float), dsk.blockwise(np.transpose, "ji", d, "ij", dtype=float))
    same(da.blockwise(outer3, "ijk", x, "ij", new_axes={"k": 3}, dtype=float),
         dsk.blockwise(outer3, "ijk", d, "ij", new_axes={"k": 3}, dtype=float))
    same(da.blockwise(column_sums, "j", x, "ij", dtype=float, concatenate=True, adjust_chunks={"j": lambda n: n}),
         dsk.blockwise(column_sums, "j", d, "ij", dtype=float, concatenate=True, adjust_chunks={"j": lambda n: n}))
    with pytest.raises(ValueError, match="size"):
        da.blockwise(np.add, "ij", x, "ij", x.T, "ij", dtype=float)


def laplace(b):
    return (np.roll(b, 1, 0) + np.roll(b, -1, 0) + np.roll(b, 2, 1) - 3 * b)


def laplace_trimmed(b):
    return laplace(b)[1:-1, 1:-1]


def halo_sum(b, block_info=None):
    return b + block_info[None]["chunk-location"][0]


@pytest.mark.parametrize("boundary", ["reflect", "periodic", "nearest", "none", 0.25, {0: "periodic", 1: 1.5}])
@pytest.mark.parametrize("depth", [1, (2, 1), {0: 3, 1: 0}])
def test_map_overlap_every_boundary(a, boundary, depth):
    x, d = both(a)
    same(x.map_overlap(laplace, depth=depth, boundary=boundary),
         d.map_overlap(laplace, depth=depth, boundary=boundary))


def test_map_overlap_block_info_untrimmed_and_several_arrays(a):
    x, d = both(a)
    same(x.map_overlap(halo_sum, depth=2, boundary="reflect", dtype=float),
         d.map_overlap(halo_sum, depth=2, boundary="reflect", dtype=float))
    same(da.map_overlap(laplace_trimmed, x, depth=1, boundary="nearest", trim=False),
         dsk.map_overlap(laplace_trimmed, d, depth=1, boundary="nearest", trim=False))
    b = np.random.default_rng(1).standard_normal(a.shape)
    y, e = both(b)
    same(da.map_overlap(two_args, x, y, depth=1, boundary="periodic", shift=1.0),
         dsk.map_overlap(two_args, d, e, depth=1, boundary="periodic", shift=1.0))


@settings(max_examples=15, deadline=None)
@given(n=st.integers(3, 23), c=st.integers(1, 9), depth=st.integers(0, 3),
       boundary=st.sampled_from(["reflect", "periodic", "nearest", "none", -1.0]))
def test_map_overlap_1d_matches_dask(n, c, depth, boundary):
    v = np.random.default_rng(n * 31 + c).standard_normal(n)
    chunks, i = [], 0
    while sum(chunks) < n:  # ragged: c, c + 1, c, ... cut at n
        chunks.append(min(c + i % 2, n - sum(chunks)))
        i += 1
    chunks = tuple(chunks)
    depth = min(depth, min(chunks))  # dask rechunks deeper halos; compare where it does not
    x, d = da.from_array(v, chunks=chunks), dsk.from_array(v, chunks=chunks)
    same(x.map_overlap(np.cumsum, depth=depth, boundary=boundary), d.map_overlap(np.cumsum, depth=depth,
                                                                                   boundary=boundary))


def second_and_first(v):
    return v[1:3] - v[0]


def test_apply_along_axis(a):
    """NumPy's shapes: the function is probed on a real line (dask probes a line of length 1 and
    declares (13, 1) for cumsum and (0, 17) for ``second_and_first``)."""
    x, d = both(a)
    for fn, axis in ((np.cumsum, 1), (second_and_first, 0), (np.median, -1)):
        got, want = da.apply_along_axis(fn, axis, x), np.apply_along_axis(fn, axis, a)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.compute(), want, rtol=1e-12)
    same(da.apply_along_axis(np.median, -1, x), dsk.apply_along_axis(np.median, -1, d))


def dot_last(u, v):
    return (u * v).sum(-1)


def stats(u):
    return u.mean(-1), u.std(-1)


def gram(u):
    return np.einsum("...i,...j->...ij", u, u)


def test_apply_gufunc(a):
    x, d = both(a)
    row = a[2]
    xr, dr = da.from_array(row, chunks=-1), dsk.from_array(row, chunks=-1)
    same(da.apply_gufunc(dot_last, "(i),(i)->()", x.rechunk({1: -1}), xr, output_dtypes=float),
         dsk.apply_gufunc(dot_last, "(i),(i)->()", d.rechunk({1: -1}), dr, output_dtypes=float))
    for p, q in zip(da.apply_gufunc(stats, "(i)->(),()", x, output_dtypes=(float, float), allow_rechunk=True),
                    dsk.apply_gufunc(stats, "(i)->(),()", d, output_dtypes=(float, float), allow_rechunk=True)):
        same(p, q, exact_chunks=False)  # dask also splits the loop dims when rechunking
    same(da.apply_gufunc(dot_last, "(i),(i)->()", x, x, axis=0, output_dtypes=float, allow_rechunk=True),
         dsk.apply_gufunc(dot_last, "(i),(i)->()", d, d, axis=0, output_dtypes=float, allow_rechunk=True),
         exact_chunks=False)
    same(da.apply_gufunc(gram, "(i)->(i,j)", x[:, :5].rechunk({1: -1}), output_dtypes=float,
                         output_sizes={"j": 5}),
         dsk.apply_gufunc(gram, "(i)->(i,j)", d[:, :5].rechunk({1: -1}), output_dtypes=float,
                          output_sizes={"j": 5}))
    same(da.apply_gufunc(np.sum, "(i)->()", x.rechunk({1: -1}), vectorize=True, output_dtypes=float),
         dsk.apply_gufunc(np.sum, "(i)->()", d.rechunk({1: -1}), vectorize=True, output_dtypes=float))
    with pytest.raises(ValueError, match="multiple chunks"):
        da.apply_gufunc(dot_last, "(i),(i)->()", x, x, output_dtypes=float)


@pytest.mark.parametrize("index", [1, -1, (slice(1, None), [0, 2]), (Ellipsis, 1), (slice(None, None, -1), 0),
                                   ([2, 0], slice(None))])
def test_blocks(a, index):
    x, d = both(a)
    same(x.blocks[index], d.blocks[index])
    assert x.blocks.shape == d.blocks.shape and x.blocks.size == d.blocks.size


@pytest.mark.parametrize("index", [([1, 5, 12], [0, 3, 16]), ([[0, 1], [2, -1]], 4), (slice(2, 9), [1, -3, 0]),
                                   ([0, 12, 3],)])
def test_vindex(a, index):
    x, d = both(a)
    same(x.vindex[index], d.vindex[index], exact_chunks=False)
    with pytest.raises(IndexError):
        x.vindex[[0, 13], [0, 0]]


def test_map_blocks_and_overlap_on_a_cluster(client, a):
    x, d = both(a)
    same(x.map_blocks(location, dtype=float) @ x.T, d.map_blocks(location, dtype=float) @ d.T)
    same(x.map_overlap(laplace, depth=2, boundary="periodic").sum(axis=0),
         d.map_overlap(laplace, depth=2, boundary="periodic").sum(axis=0))


def test_blockwise_an_unknown_output_index_is_named():
    a = da.ones((20, 20), chunks=10)
    with pytest.raises(ValueError, match="unknown dimension 'k'"):
        da.blockwise(np.negative, "jk", a, "ij", dtype=a.dtype)

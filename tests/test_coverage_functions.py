"""dask.array names added for coverage (#17): unify_chunks, shuffle, reshape_blockwise, push,
reduction, gufunc/as_gufunc, atop, assert_eq, fft.fft_wrap; against NumPy and dask.array on
ragged chunks and odd shapes, plus their bad inputs."""
from collections import Counter

import dask.array as dda
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.testing import assert_eq
from dask_tra.tra import Input

RNG = np.random.default_rng(17)
A = RNG.standard_normal((7, 10, 5))
CH = ((3, 4), (2, 5, 3), (4, 1))
X = da.from_array(A, chunks=CH)
Y = dda.from_array(A, chunks=CH)
TRA = {"Join", "Aggregate", "ReKey", "Filter", "Transform", "Tile", "Concat", "Input"}


def _lazy(z):
    """Built from the TRA's operators over Inputs only (nothing computed on the way)."""
    kinds = Counter(type(n).__name__ for n in z.expr.walk())
    assert set(kinds) <= TRA, kinds
    assert all(isinstance(n, Input) for n in z.expr.walk() if not n.children)


# ---------------------------------------------------------------- unify_chunks

def test_unify_chunks_matches_dask():
    b = A[0]
    z, zd = da.from_array(b, chunks=(4, (2, 3))), dda.from_array(b, chunks=(4, (2, 3)))
    w = A[:, :1, 0]  # a (7, 1) array: its size-1 dim broadcasts
    got, arrays = da.unify_chunks(X, "ijk", z, "jk", da.from_array(w, chunks=(2, 1)), "ij", 5, None)
    want, arrays_d = dda.unify_chunks(Y, "ijk", zd, "jk", dda.from_array(w, chunks=(2, 1)), "ij", 5, None)
    assert got == want
    assert [a.chunks for a in arrays[:3]] == [a.chunks for a in arrays_d[:3]]
    assert arrays[3] == 5
    for a, n in zip(arrays[:3], (A, b, w)):
        _lazy(a)
        assert_eq(a, n)
    assert da.unify_chunks() == ({}, [])


def test_unify_chunks_bad_input():
    with pytest.raises(ValueError, match="same value"):
        da.unify_chunks(X, "ijk", da.from_array(A[0, :4], chunks=2), "jk")
    with pytest.raises(ValueError, match="entries"):
        da.unify_chunks(X, "ij")
    with pytest.raises(ValueError, match="alternate"):
        da.unify_chunks(X, "ijk", X)


# ---------------------------------------------------------------- shuffle

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_shuffle_matches_dask(axis):
    n = A.shape[axis]
    perm = RNG.permutation(n).tolist()
    indexer = [perm[:2], perm[2:3], perm[3:]]
    got, want = da.shuffle(X, indexer, axis), dda.shuffle(Y, indexer, axis % 3)
    _lazy(got)
    assert got.chunks == want.chunks
    assert_eq(got, want.compute())
    assert_eq(got, np.take(A, perm, axis=axis))


def test_shuffle_long_group_splits_other_axes_like_dask():
    a = RNG.standard_normal((40, 6))
    x, y = da.from_array(a, chunks=((5, 5, 30), (4, 2))), dda.from_array(a, chunks=((5, 5, 30), (4, 2)))
    indexer = [list(range(39, 9, -1)), list(range(10))]
    got, want = da.shuffle(x, indexer, 0), dda.shuffle(y, indexer, 0)
    assert got.chunks == want.chunks
    assert_eq(got, want.compute())
    same = [list(range(3)), list(range(3, 7))]  # already in place: the array itself
    assert da.shuffle(X, same, 0) is X


def test_shuffle_bad_input():
    with pytest.raises(IndexError, match="out of bounds"):
        da.shuffle(X, [[0, 10]], 1)
    with pytest.raises(ValueError, match="list of lists"):
        da.shuffle(X, [0, 1], 1)
    with pytest.raises(np.exceptions.AxisError):
        da.shuffle(X, [[0]], 3)
    with pytest.raises(TypeError):
        da.shuffle(X, [[0]], 1.5)


# ---------------------------------------------------------------- reshape_blockwise

@pytest.mark.parametrize("shape", [(7, 50), (70, 5), (350,), -1, (1, 7, 50)])
def test_reshape_blockwise_matches_dask(shape):
    got, want = da.reshape_blockwise(X, shape), dda.reshape_blockwise(Y, shape)
    _lazy(got)
    assert got.chunks == want.chunks
    assert_eq(got, want.compute())


def test_reshape_blockwise_expands_back():
    flat = da.reshape_blockwise(X, (7, 50))
    back = da.reshape_blockwise(flat, (7, 10, 5), chunks=CH)
    want = dda.reshape_blockwise(dda.reshape_blockwise(Y, (7, 50)), (7, 10, 5), chunks=CH)
    assert back.chunks == want.chunks == CH
    assert_eq(back, A)
    v = RNG.integers(-50, 50, 12)  # one axis split into two, blocks zipped in C order
    got = da.reshape_blockwise(da.from_array(v, chunks=3), (2, 6), chunks=((1, 1), (3, 3)))
    want = dda.reshape_blockwise(dda.from_array(v, chunks=3), (2, 6), chunks=((1, 1), (3, 3)))
    assert got.chunks == want.chunks
    assert_eq(got, want.compute())
    assert da.reshape_blockwise(X, A.shape) is X


def test_reshape_blockwise_bad_input():
    with pytest.raises(ValueError, match="total size"):
        da.reshape_blockwise(X, (7, 49))
    with pytest.raises(TypeError, match="chunks"):
        da.reshape_blockwise(X, (7, 10, 5, 1))
    with pytest.raises(ValueError, match="not allowed"):
        da.reshape_blockwise(X, (70, 5), chunks=((70,), (5,)))
    with pytest.raises(ValueError, match="do not match"):
        da.reshape_blockwise(da.from_array(np.arange(12.0), chunks=(5, 7)), (2, 6), chunks=((1, 1), (6,)))
    with pytest.raises(NotImplementedError):
        da.reshape_blockwise(X, (10, 35))


# ---------------------------------------------------------------- push

def _push_reference(a, n, axis):
    """bottleneck.push in NumPy: forward fill, at most ``n`` positions past the last valid value."""
    out = np.moveaxis(a.copy(), axis, 0)
    last = np.full(out.shape[1:], np.nan)
    where = np.full(out.shape[1:], -(10 ** 9))
    for i in range(out.shape[0]):
        valid = ~np.isnan(out[i])
        last, where = np.where(valid, out[i], last), np.where(valid, i, where)
        reach = np.ones_like(valid) if n is None else (i - where) <= n
        out[i] = np.where(valid, out[i], np.where(reach, last, np.nan))
    return np.moveaxis(out, 0, axis)


@pytest.mark.parametrize("n", [None, 1, 3])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_push_matches_bottleneck_semantics(n, axis):
    a = A.copy()
    a[RNG.random(a.shape) < 0.55] = np.nan
    a[:, 2:9, 0] = np.nan  # a NaN run across several blocks
    got = da.push(da.from_array(a, chunks=CH), n, axis)
    _lazy(got)
    assert got.chunks == CH and got.dtype == a.dtype
    assert_eq(got, _push_reference(a, n, axis))


def test_push_one_block_and_float32():
    a = RNG.standard_normal(11).astype(np.float32)
    a[[0, 3, 4, 8]] = np.nan
    assert_eq(da.push(da.from_array(a, chunks=-1), None, 0), _push_reference(a, None, 0).astype(np.float32))
    assert_eq(da.push(da.from_array(a, chunks=(1, 4, 6)), 0, 0), _push_reference(a, None, 0).astype(np.float32))


def test_push_bad_input():
    with pytest.raises(np.exceptions.AxisError):
        da.push(X, None, 3)
    with pytest.raises(TypeError):
        da.push(X, 1.5, 0)
    with pytest.raises(ValueError):
        da.push(da.from_array(np.float64(1.0)), None, 0)


# ---------------------------------------------------------------- reduction

@pytest.mark.parametrize("axis", [None, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("split_every", [None, 2])
def test_reduction_matches_dask(axis, keepdims, split_every):
    got = da.reduction(X, np.sum, np.sum, axis=axis, keepdims=keepdims, dtype=A.dtype, split_every=split_every)
    want = dda.reduction(Y, np.sum, np.sum, axis=axis, keepdims=keepdims, dtype=A.dtype, split_every=split_every)
    _lazy(got)
    assert got.shape == want.shape and got.chunks == want.chunks and got.dtype == want.dtype
    assert_eq(got, want.compute(), rtol=1e-12)


def _sum_count(block, axis, keepdims):
    """A two-field partial result: (sum, count) stacked along the first reduced axis."""
    s = np.sum(block, axis=axis, keepdims=True)
    c = np.full_like(s, np.prod([block.shape[a] for a in axis]))
    return np.concatenate([s, c], axis=axis[0])


def _merge(block, axis, keepdims):
    a = axis[0]
    n = block.shape[a] // 2
    parts = block.reshape(block.shape[:a] + (n, 2) + block.shape[a + 1:])
    return parts.sum(axis=a)  # keeps the axis (combine is called with keepdims=True)


def _mean_of(block, axis, keepdims):
    total = _merge(block, axis, True)
    s, c = np.take(total, [0], axis=axis[0]), np.take(total, [1], axis=axis[0])
    out = s / c
    return out if keepdims else out.squeeze(axis[0])


def test_reduction_tree_with_combine_and_output_size():
    """A mean through (sum, count) partials: output_size=2 for the partials, a deep tree."""
    v = RNG.standard_normal((5, 37))
    x = da.from_array(v, chunks=(3, (4, 1, 6, 2, 9, 3, 5, 7)))
    y = dda.from_array(v, chunks=(3, (4, 1, 6, 2, 9, 3, 5, 7)))
    got = da.reduction(x, _sum_count, _mean_of, axis=1, combine=_merge, dtype=float, split_every=2,
                       output_size=2)
    want = dda.reduction(y, _sum_count, _mean_of, axis=1, combine=_merge, dtype=float, split_every=2,
                         output_size=2)
    assert got.chunks == want.chunks
    assert_eq(got, v.mean(axis=1), rtol=1e-12)
    assert_eq(got, want.compute(), rtol=1e-12)


def _max_of_list(parts, axis, keepdims, computing_meta=False):
    """concatenate=False: the partial results arrive as a list (one level per reduced axis)."""
    if computing_meta:  # dask's meta probe
        return np.max(parts, axis=axis, keepdims=keepdims)
    assert isinstance(parts, list)
    return np.max(np.concatenate(parts, axis=axis[0]), axis=axis, keepdims=keepdims)


def _weighted(block, weights=None, axis=None, keepdims=None):
    return np.sum(block * weights, axis=axis, keepdims=keepdims)


def test_reduction_concatenate_false_and_weights():
    got = da.reduction(X, np.max, _max_of_list, axis=1, dtype=A.dtype, concatenate=False, split_every=2)
    want = dda.reduction(Y, np.max, _max_of_list, axis=1, dtype=A.dtype, concatenate=False, split_every=2)
    assert_eq(got, want.compute())
    w = RNG.random(5)
    got = da.reduction(X, _weighted, np.sum, axis=(0, 2), dtype=A.dtype, weights=w)
    want = dda.reduction(Y, _weighted, np.sum, axis=(0, 2), dtype=A.dtype, weights=w)
    assert_eq(got, want.compute(), rtol=1e-12)
    assert_eq(got, (A * w).sum(axis=(0, 2)), rtol=1e-12)
    i = RNG.integers(-9, 9, (6, 7))
    got = da.reduction(da.from_array(i, chunks=(4, 3)), np.max, np.max, axis=0, dtype=i.dtype)
    assert_eq(got, i.max(axis=0))


def test_reduction_bad_input():
    with pytest.raises(ValueError, match="dtype"):
        da.reduction(X, np.sum, np.sum, axis=0)
    with pytest.raises(np.exceptions.AxisError):
        da.reduction(X, np.sum, np.sum, axis=3, dtype=float)
    with pytest.raises(ValueError, match="split_every"):
        da.reduction(X, np.sum, np.sum, axis=0, dtype=float, split_every="x")
    with pytest.raises(ValueError, match="broadcastable"):
        da.reduction(X, _weighted, np.sum, axis=0, dtype=float, weights=np.ones(4))
    with pytest.raises(TypeError, match="out="):
        da.reduction(X, np.sum, np.sum, axis=0, dtype=float, out=X)
    with pytest.raises(ValueError, match="output_size"):
        da.reduction(X, np.sum, np.sum, axis=0, dtype=float, output_size=0)


# ---------------------------------------------------------------- gufunc, as_gufunc, atop

def test_as_gufunc_and_gufunc():
    @da.as_gufunc("(i)->(),()", output_dtypes=(float, float), allow_rechunk=True)
    def stats(v):
        return v.mean(axis=-1), v.std(axis=-1)
    mean, std = stats(X)
    _lazy(mean)
    assert_eq(mean, A.mean(-1), rtol=1e-12)
    assert_eq(std, A.std(-1), rtol=1e-12)
    outer = da.gufunc(lambda a, b: np.einsum("...i,...j->...ij", a, b), signature="(i),(j)->(i,j)",
                      output_dtypes=float)
    b = RNG.standard_normal(3)
    got = outer(da.from_array(A[:, 0, :], chunks=(3, -1)), da.from_array(b, chunks=-1))
    assert_eq(got, np.einsum("ni,j->nij", A[:, 0, :], b), rtol=1e-12)
    assert "(i),(j)->(i,j)" in repr(outer)


def test_gufunc_bad_input():
    with pytest.raises(TypeError, match="Unsupported keyword"):
        da.as_gufunc("(i)->()", output_dtype=float)
    with pytest.raises(TypeError, match="signature"):
        da.gufunc(np.sum, signature=None)
    with pytest.raises(TypeError, match="callable"):
        da.gufunc(3, signature="(i)->()")
    with pytest.raises(ValueError, match="multiple chunks"):
        da.as_gufunc("(i)->()", output_dtypes=float)(lambda v: v.sum(-1))(X)


def test_atop_is_blockwise():
    with pytest.warns(UserWarning, match="moved to da.blockwise"):
        got = da.atop(np.add, "ij", X[:, :, 1], "ij", X[0, :, 2], "j", dtype=A.dtype)
    assert_eq(got, A[:, :, 1] + A[0, :, 2])
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="alternate"):
        da.atop(np.add, "ij", X[:, :, 1])


# ---------------------------------------------------------------- assert_eq

def test_assert_eq_like_dask():
    assert da.assert_eq(X, A)
    assert da.assert_eq(X, Y)
    assert da.assert_eq(X + 1e-9, A, atol=1e-6)
    with pytest.raises(AssertionError, match="values"):
        da.assert_eq(X, A + 1)
    with pytest.raises(AssertionError, match="shapes"):
        da.assert_eq(X[:3], A)
    with pytest.raises(AssertionError, match="dtypes"):
        da.assert_eq(X.astype(np.float32), A)
    assert da.assert_eq(X.astype(np.float32), A, check_dtype=False, rtol=1e-6)
    i = RNG.integers(0, 5, (4, 6))
    assert da.assert_eq(da.from_array(i, chunks=(3, 4)), i)
    with pytest.raises(AssertionError):
        da.assert_eq(da.from_array(i, chunks=(3, 4)), i + 1)


# ---------------------------------------------------------------- fft_wrap

@pytest.mark.parametrize("func,kw", [(np.fft.fft, {"axis": 1}), (np.fft.rfft, {"n": 8}), (np.fft.ihfft, {}),
                                     (np.fft.irfft, {"axis": 0}), (np.fft.hfft, {"n": 6, "axis": 1}),
                                     (np.fft.fft2, {}), (np.fft.rfftn, {"axes": (0, 2)}),
                                     (np.fft.irfftn, {"s": (6, 4), "axes": (1, 2)}), (np.fft.ifftn, {})])
def test_fft_wrap_matches_numpy_and_dask(func, kw):
    got = da.fft.fft_wrap(func)(X, **kw)
    _lazy(got)
    want = func(A, **kw)
    assert_eq(got, want, rtol=1e-10, atol=1e-10)
    axes = [kw["axis"]] if "axis" in kw else kw.get("axes")
    axes = axes if axes is not None else ([-1] if func.__name__[-1] == "t" else [-2, -1] if "2" in func.__name__
                                          else list(range(3)))
    y = Y.rechunk({a % 3: -1 for a in axes})
    assert got.chunks == dda.fft.fft_wrap(func)(y, **kw).chunks


def test_fft_wrap_kind_and_bad_input():
    f = da.fft.fft_wrap(lambda a, n=None, axis=-1, norm=None: np.fft.fft(a, n, axis, norm), kind="fft")
    assert_eq(f(X, axis=0, norm="ortho"), np.fft.fft(A, axis=0, norm="ortho"), rtol=1e-10, atol=1e-12)
    assert da.fft.fft_wrap(np.fft.fft).__name__ == "fft"
    with pytest.raises(ValueError, match="unknown `kind`"):
        da.fft.fft_wrap(np.sum)
    with pytest.raises(TypeError):
        da.fft.fft_wrap(3, kind="fft")
    with pytest.raises(ValueError, match="Duplicate"):
        da.fft.fft_wrap(np.fft.fftn)(X, axes=(0, 0))
    with pytest.raises(np.exceptions.AxisError):
        da.fft.fft_wrap(np.fft.fft)(X, axis=3)

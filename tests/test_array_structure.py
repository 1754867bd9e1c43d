"""dask_tra.array structure against NumPy: transpose, reshape, squeeze/expand_dims, indexing,
concatenate/stack, rechunk, flip/roll/repeat/tile, broadcast_to, tril/triu, diff."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dask_tra
import dask_tra.array as da
from dask_tra.array.testing import assert_eq, random_data, strategies

shapes, chunking, arrays = strategies()
SETTINGS = settings(max_examples=50, deadline=None)


@SETTINGS
@given(st.data(), arrays(max_dims=4, max_side=4))
def test_transpose_swapaxes_moveaxis(data, ax):
    a, x = ax
    perm = data.draw(st.permutations(range(a.ndim)))
    assert_eq(da.transpose(x, perm), np.transpose(a, perm))
    assert_eq(x.T, a.T)
    if a.ndim:
        i, j = data.draw(st.integers(-a.ndim, a.ndim - 1)), data.draw(st.integers(-a.ndim, a.ndim - 1))
        assert_eq(da.swapaxes(x, i, j), np.swapaxes(a, i, j))
        assert_eq(da.moveaxis(x, i, j), np.moveaxis(a, i, j))


@st.composite
def reshapes(draw):
    """An array and a random shape of the same size (prime factors regrouped, 1s inserted)."""
    a, x = draw(arrays(max_dims=4, min_side=0, max_side=6))
    factors = [p for n in a.shape for p in _primes(n)]
    factors = draw(st.permutations(factors)) if a.size else [0]
    cuts = sorted(draw(st.sets(st.integers(1, max(len(factors) - 1, 1)), max_size=3)))
    groups = [factors[i:j] for i, j in zip([0] + cuts, cuts + [len(factors)])]
    shape = [math.prod(g) for g in groups if g] + [1] * draw(st.integers(0, 1))
    shape = draw(st.permutations(shape))
    if shape and draw(st.booleans()) and a.size:
        shape = list(shape)
        shape[draw(st.integers(0, len(shape) - 1))] = -1
    return a, x, tuple(shape)


def _primes(n):
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@SETTINGS
@given(reshapes())
def test_reshape(problem):
    a, x, shape = problem
    try:
        want = a.reshape(shape)
    except ValueError:
        with pytest.raises(ValueError):
            x.reshape(shape)
        return
    assert_eq(x.reshape(shape), want)
    assert_eq(da.ravel(x), a.ravel())


@SETTINGS
@given(st.data(), arrays(max_dims=3, max_side=4))
def test_squeeze_expand_dims(data, ax):
    a, x = ax
    new = data.draw(st.lists(st.integers(-a.ndim - 2, a.ndim + 1), min_size=1, max_size=2, unique=True))
    try:
        want = np.expand_dims(a, tuple(new))
    except (ValueError, np.exceptions.AxisError) as e:
        with pytest.raises(type(e)):
            da.expand_dims(x, tuple(new))
        return
    y = da.expand_dims(x, tuple(new))
    assert_eq(y, want)
    assert_eq(y.squeeze(), want.squeeze())
    assert_eq(da.squeeze(y, axis=tuple(new)), a)


@st.composite
def basic_index(draw, shape):
    out = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "slice", "int", "all", "none"]))
        if kind == "int" and n:
            out.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start, stop = draw(st.integers(-n - 2, n + 2)), draw(st.integers(-n - 2, n + 2))
            out.append(slice(draw(st.one_of(st.none(), st.just(start))), draw(st.one_of(st.none(), st.just(stop))),
                             draw(st.sampled_from([None, 1, 2, 3, -1, -2]))))
        elif kind == "none":
            out += [None, slice(None)]
        else:
            out.append(slice(None))
    if out and draw(st.booleans()):
        out = out[:draw(st.integers(0, len(out) - 1))] + [Ellipsis]
    return tuple(out)


@SETTINGS
@given(st.data(), arrays(max_dims=3, max_side=6))
def test_basic_indexing(data, ax):
    a, x = ax
    index = data.draw(basic_index(a.shape))
    assert_eq(x[index], a[index])


@SETTINGS
@given(st.data(), arrays(min_dims=1, max_dims=3, min_side=1, max_side=6))
def test_integer_and_boolean_array_indexing(data, ax):
    a, x = ax
    axis = data.draw(st.integers(0, a.ndim - 1))
    n = a.shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=7)), dtype=np.int64)
    head = (slice(None),) * axis
    assert_eq(x[head + (idx,)], a[head + (idx,)])
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    assert_eq(x[head + (mask,)], a[head + (mask,)])
    full = np.random.default_rng(n).random(a.shape) > 0.5
    assert_eq(x[full], a[full])
    lead = full.reshape(-1)[:math.prod(a.shape[:axis + 1])].reshape(a.shape[:axis + 1])  # a mask on leading axes
    assert_eq(x[lead], a[lead])
    two_d = idx[: len(idx) // 2 * 2].reshape(-1, 2)
    assert_eq(x[head + (two_d,)], a[head + (two_d,)])


def test_mixed_advanced_and_integer_indices_follow_numpy_placement():
    a = np.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    x = da.from_array(a, chunks=(1, 2, 3, 2))
    for index in [(0, [1, 2]), ([1, 0], slice(None), 2), (slice(None), [2, 0], slice(None), 1),
                  (Ellipsis, [4, 0, 4]), (1, Ellipsis, None, 2), ([True, False], 0)]:
        assert_eq(x[index], a[index])


@SETTINGS
@given(st.data(), shapes(min_dims=1, max_dims=3, max_side=4), st.integers(1, 3))
def test_concatenate_and_stack(data, shape, count):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    parts, xs = [], []
    for _ in range(count):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 4))
        dtype = data.draw(st.sampled_from(["float64", "int32", "float32"]))
        p = random_data(rng, tuple(s), dtype)
        parts.append(p)
        xs.append(da.from_array(p, chunks=data.draw(chunking(tuple(s)))))
    assert_eq(da.concatenate(xs, axis=axis), np.concatenate(parts, axis=axis))
    same = [da.from_array(parts[0], chunks=data.draw(chunking(parts[0].shape))) for _ in range(count)]
    new_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_eq(da.stack(same, axis=new_axis), np.stack([parts[0]] * count, axis=new_axis))


@SETTINGS
@given(st.data(), arrays(max_dims=3, max_side=7))
def test_rechunk(data, ax):
    a, x = ax
    new = data.draw(chunking(a.shape))
    y = x.rechunk(new)
    assert y.chunks == new
    assert_eq(y, a)
    if a.ndim:
        assert da.rechunk(x, {0: -1}).chunks[0] == (a.shape[0],)


@SETTINGS
@given(st.data(), arrays(min_dims=1, max_dims=3, max_side=5))
def test_flip_roll_repeat_tile(data, ax):
    a, x = ax
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    assert_eq(da.flip(x, axis), np.flip(a, axis))
    shift = data.draw(st.integers(-7, 7))
    assert_eq(da.roll(x, shift, axis), np.roll(a, shift, axis))
    assert_eq(da.roll(x, shift), np.roll(a, shift))
    r = data.draw(st.integers(0, 3))
    assert_eq(da.repeat(x, r, axis), np.repeat(a, r, axis))
    reps = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    assert_eq(da.tile(x, reps), np.tile(a, reps))


@SETTINGS
@given(st.data(), arrays(min_dims=2, max_dims=3, max_side=6, dtypes=["float64", "int32"]))
def test_tril_triu_diff_broadcast_to(data, ax):
    a, x = ax
    k = data.draw(st.integers(-4, 4))
    assert_eq(da.tril(x, k), np.tril(a, k))
    assert_eq(da.triu(x, k), np.triu(a, k))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    assert_eq(da.diff(x, axis=axis), np.diff(a, axis=axis))
    assert_eq(da.diff(x, n=2, axis=axis, prepend=0), np.diff(a, n=2, axis=axis, prepend=0))
    target = (3,) + tuple(1 if n == 1 else n for n in a.shape)
    b = a[(slice(0, 1),) + (slice(None),) * (a.ndim - 1)]
    assert_eq(da.broadcast_to(x[:1], target), np.broadcast_to(b, target))


def test_structure_across_sites():
    a = np.random.default_rng(5).standard_normal((6, 8))
    x = da.from_array(a, chunks=(4, 3))
    with dask_tra.config.set(sites=3):
        y = da.concatenate([x.T[2:6], x[:, ::-2].T], axis=1).reshape(4, 3, 4)
        assert_eq(y, np.concatenate([a.T[2:6], a[:, ::-2].T], axis=1).reshape(4, 3, 4))


def test_stacking_helpers():
    rng = np.random.default_rng(6)
    a, b, v = rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), rng.standard_normal(4)
    x, y, w = da.from_array(a, chunks=2), da.from_array(b, chunks=(1, 3)), da.from_array(v, chunks=3)
    assert_eq(da.vstack([x, y, w]), np.vstack([a, b, v]))
    assert_eq(da.hstack([x, x[:, :1]]), np.hstack([a, a[:, :1]]))
    assert_eq(da.hstack([w, w]), np.hstack([v, v]))
    assert_eq(da.dstack([x, x]), np.dstack([a, a]))
    assert_eq(da.atleast_3d(w), np.atleast_3d(v))
    assert_eq(da.atleast_2d(w), np.atleast_2d(v))


def test_concatenating_many_arrays_joins_them_as_a_balanced_tree():
    """Each block is copied log2(n) times, not up to n times as along a chain (xarray stacks a
    resample's 24 monthly means)."""
    from dask_tra.array.kernels import Concatenate
    from dask_tra.tra import Join

    parts = [np.full((2, 3), float(i)) for i in range(24)]
    y = da.concatenate([da.from_array(p, chunks=(2, 3)) for p in parts])
    np.testing.assert_array_equal(y.compute(scheduler="sync"), np.concatenate(parts))
    depth = {}
    for node in y.expr.walk():
        below = max((depth.get(id(c), 0) for c in node.children), default=0)
        depth[id(node)] = below + (isinstance(node, Join) and isinstance(node.kernel, Concatenate))
    assert max(depth.values()) == 5  # ceil(log2(24))


def test_the_real_part_of_real_data_is_the_data():
    """NumPy's ``.real`` of real data is the data; xarray asks every array for ``.real`` when it
    checks its type, so it must cost no operation."""
    a = np.arange(12.0).reshape(3, 4)
    x = da.from_array(a, chunks=2) + 1
    assert x.real.expr is x.expr and x.real.dtype == x.dtype
    assert_eq(x.real, a + 1)
    c = da.from_array(a + 1j * a, chunks=2)
    assert_eq(c.real, a)
    assert_eq(c.imag, a)
    assert_eq(x.imag, np.zeros_like(a))

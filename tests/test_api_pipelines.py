"""Random chains of user-level operations against NumPy: slices, transposes, broadcasting,
reductions, cumulative and contraction operators, concatenation, reshapes, rechunks, fancy
indexing and assignment composed at random on ragged chunks, so that the rewrite pass and the
planner meet them in combinations no hand-written test lists. Value, shape and dtype must be
NumPy's, on the synchronous scheduler and on a 4-worker cluster (distributed plans)."""

import random

import numpy as np
import pytest
from distributed import Client, LocalCluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dask_tra.array as da


def _chunks(r: random.Random, n: int) -> tuple:
    out, left = [], n
    while left:
        out.append(r.randint(1, min(left, 4)))
        left -= out[-1]
    return tuple(out)


def _array(r: random.Random, shape=None, dtype=None):
    shape = shape or tuple(r.randint(1, 8) for _ in range(r.choice([1, 2, 2, 3])))
    rng = np.random.default_rng(r.randrange(2**31))
    dtype = dtype or r.choice(["f8", "f8", "f4", "i8"])
    a = rng.integers(-5, 6, shape).astype(dtype) if dtype == "i8" else (rng.random(shape) * 4 - 2).astype(dtype)
    return da.from_array(a, chunks=tuple(_chunks(r, s) for s in shape)), a


def _axis(r, nd):
    return r.randrange(nd) - (nd if r.random() < 0.3 else 0)


def _slice(r, x, a):
    idx = []
    for s in a.shape:
        lo, hi = sorted((r.randint(-s - 1, s + 1), r.randint(-s - 1, s + 1)))
        step = r.choice([1, 1, 2, -1, -2])
        idx.append(r.randrange(-s, s) if r.random() < 0.2 else slice(lo, hi, step) if step > 0 else slice(hi, lo, step))
    if r.random() < 0.2:
        idx.insert(r.randrange(len(idx) + 1), None)
    idx = tuple(idx)
    return x[idx], a[idx]


def _transpose(r, x, a):
    perm = list(range(a.ndim))
    r.shuffle(perm)
    return x.transpose(perm), a.transpose(perm)


def _elementwise(r, x, a):
    shape = [1 if r.random() < 0.3 else s for s in a.shape][r.randint(0, 1) if a.ndim > 1 else 0 :]
    y, b = (x.T, a.T) if a.ndim == 2 and a.shape[0] == a.shape[1] and r.random() < 0.5 else _array(r, tuple(shape))
    f = r.choice(["add", "multiply", "maximum", "subtract"])
    return getattr(da, f)(da.sin(x), y), getattr(np, f)(np.sin(a), b)


def _reduce(r, x, a):
    f = r.choice(["sum", "mean", "max", "min", "std", "var", "prod", "argmax"])
    axis = _axis(r, a.ndim) if r.random() < 0.7 or f == "argmax" else None
    kw = {} if f == "argmax" else {"keepdims": r.random() < 0.3}
    return getattr(da, f)(x, axis=axis, **kw), getattr(np, f)(a, axis=axis, **kw)


def _nanreduce(r, x, a):
    mask = np.random.default_rng(r.randrange(2**31)).random(a.shape) < 0.3
    x, a = da.where(da.from_array(mask, chunks=x.chunks), np.nan, x), np.where(mask, np.nan, a)
    f = r.choice(["nansum", "nanmean", "nanmax", "nancumsum", "nanvar"])
    axis = _axis(r, a.ndim)
    return getattr(da, f)(x, axis=axis), getattr(np, f)(a, axis=axis)


def _cumulative(r, x, a):
    f, axis = r.choice(["cumsum", "cumprod"]), _axis(r, a.ndim)
    return getattr(da, f)(da.clip(x, -1.5, 1.5), axis=axis), getattr(np, f)(np.clip(a, -1.5, 1.5), axis=axis)


def _concatenate(r, x, a):
    axis = _axis(r, a.ndim)
    shape = list(a.shape)
    shape[axis] = r.randint(1, 4)
    y, b = _array(r, tuple(shape), a.dtype.str[1:])
    return da.concatenate([x, y], axis=axis), np.concatenate([a, b], axis=axis)


def _reshape(r, x, a):
    n = a.size
    shapes = [(n,), (1, n)] + [(d, n // d) for d in range(2, n + 1) if n % d == 0]
    shape = r.choice(shapes)
    return x.reshape(shape), a.reshape(shape)


def _rechunk(r, x, a):
    return x.rechunk(tuple(_chunks(r, s) for s in a.shape)), a


def _matmul(r, x, a):
    y, b = _array(r, (a.shape[-1], r.randint(1, 5)), "f8")
    return x @ y, a @ b


def _fancy(r, x, a):
    axis = r.randrange(a.ndim)
    idx = np.array([r.randrange(-a.shape[axis], a.shape[axis]) for _ in range(r.randint(1, 5))])
    index = (slice(None),) * axis + (idx,)
    return x[index], a[index]


def _setitem(r, x, a):
    x, a = x + 0, a + 0
    x[x > 0.5], a[a > 0.5] = 7, 7
    return x, a


def _roll_pad(r, x, a):
    if r.random() < 0.5:
        shift, axis = r.randint(-6, 6), _axis(r, a.ndim)
        return da.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis)
    mode = r.choice(["constant", "edge", "reflect", "wrap"])
    if min(a.shape) < 2:
        mode = "constant"
    return da.pad(x, 1, mode=mode), np.pad(a, 1, mode=mode)


OPS = (_slice, _transpose, _elementwise, _reduce, _nanreduce, _cumulative, _concatenate, _reshape, _rechunk,
       _matmul, _fancy, _setitem, _roll_pad)


def _pipeline(r: random.Random):
    """A chain of 1-6 operations on a random array, with its NumPy value, the steps taken and
    whether a float32 value was made on the way (its rounding carries into a float64 result)."""
    x, a = _array(r)
    steps, single = [], a.dtype == np.float32
    for _ in range(r.randint(1, 6)):
        op = r.choice(OPS)
        if a.ndim == 0 or a.size == 0 or (op is _nanreduce and a.dtype.kind != "f"):
            break
        with np.errstate(all="ignore"):
            x, a = op(r, x, a)
        a = np.asarray(a)
        steps.append(op.__name__)
        single = single or a.dtype == np.float32
    return x, a, steps, single


def _check(got, want, steps, single):
    """``got`` equals NumPy's ``want`` up to the rounding of the least precise dtype made on the
    way: a float32 sum summed in another order, then cast to float64, differs at float32's."""
    got = np.asarray(got)
    assert got.shape == want.shape, steps
    assert got.dtype == want.dtype, steps
    np.testing.assert_allclose(got, want, rtol=1e-4 if single else 1e-9, atol=1e-6, equal_nan=True, err_msg=str(steps))


@settings(max_examples=80, deadline=None)
@given(st.randoms(use_true_random=False))
def test_random_pipelines_match_numpy(r):
    x, a, steps, single = _pipeline(r)
    with np.errstate(all="ignore"):
        _check(x.compute(scheduler="sync"), a, steps, single)


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=4, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        yield c


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.randoms(use_true_random=False))
def test_random_pipelines_match_numpy_on_a_cluster(client, r):
    x, a, steps, single = _pipeline(r)
    with np.errstate(all="ignore"):
        _check(x.compute(), a, steps, single)

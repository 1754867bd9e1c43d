"""``dt.block_sparse_random(..., pattern=)``: "random" (unchanged), "banded" and "power-law"
sparsity patterns: deterministic per seed, at the asked density, banded keys inside the band,
power-law row degrees skewed, argument errors, and matmul results vs NumPy on each pattern."""
import collections

import numpy as np
import pytest

import dask_tra as dt
from dask_tra.array.blocksparse import PATTERNS, band_halfwidth, power_law_degrees
from dask_tra.array.testing import assert_eq

SHAPE, CHUNKS = (96, 96), 4  # a 24 x 24 block grid
GRID = (24, 24)


def keys(x):
    return x.sparse_expr.type.keys


def dense_of(x):
    """The dense equivalent, assembled by NumPy from the held blocks (not by dask_tra)."""
    out = np.zeros(x.shape)
    src = x.sources[x.sparse_expr.name]
    starts = [np.concatenate([[0], np.cumsum(c)]) for c in x.chunks]
    for k in keys(x):
        out[tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, k))] = src.chunk(k)
    return out


@pytest.mark.parametrize("pattern", PATTERNS)
def test_deterministic_per_seed(pattern):
    x = dt.block_sparse_random(SHAPE, CHUNKS, 0.2, seed=5, pattern=pattern)
    y = dt.block_sparse_random(SHAPE, CHUNKS, 0.2, seed=5, pattern=pattern)
    assert keys(x) == keys(y)
    np.testing.assert_array_equal(x.compute(), y.compute())
    if pattern != "banded":  # the band is fixed by the density; only its edge's ties vary
        assert keys(dt.block_sparse_random(SHAPE, CHUNKS, 0.2, seed=6, pattern=pattern)) != keys(x)


def test_random_is_the_default_and_unchanged():
    x = dt.block_sparse_random(SHAPE, CHUNKS, 0.3, seed=11)
    y = dt.block_sparse_random(SHAPE, CHUNKS, 0.3, seed=11, pattern="random")
    assert keys(x) == keys(y)
    held = np.random.default_rng(11).random(GRID) < 0.3  # the draw made before `pattern` existed
    assert keys(x) == frozenset(tuple(int(i) for i in k) for k in np.argwhere(held))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("density", [0.0, 0.05, 0.3, 0.5, 1.0])
def test_density_within_tolerance(pattern, density):
    n = GRID[0] * GRID[1]
    for seed in range(3):
        x = dt.block_sparse_random(SHAPE, CHUNKS, density, seed=seed, pattern=pattern)
        if pattern == "random":  # Bernoulli per block: within 4 standard deviations
            assert abs(x.nnzblocks - density * n) <= 4 * np.sqrt(n * density * (1 - density)) + 1e-9
        else:  # exact count
            assert x.nnzblocks == round(density * n)


@pytest.mark.parametrize("density", [0.05, 0.1, 0.3, 0.6])
def test_banded_keys_lie_in_the_band(density):
    x = dt.block_sparse_random(SHAPE, CHUNKS, density, seed=1, pattern="banded")
    held = keys(x)
    width = band_halfwidth(GRID, held)
    # the band is as narrow as the count allows: every block strictly nearer the diagonal than
    # the farthest held one is held
    for i in range(GRID[0]):
        for j in range(GRID[1]):
            if abs(j - i) < width - 1e-9:
                assert (i, j) in held
    assert all(abs(j - i) <= width + 1e-9 for i, j in held)
    assert width <= density * GRID[1]  # a band of half-width w holds about (2w + 1) blocks a row
    assert all((i, i) in held for i in range(GRID[0])) or x.nnzblocks < GRID[0]


def test_banded_on_a_rectangular_grid_follows_the_diagonal():
    x = dt.block_sparse_random((40, 120), (4, 4), 0.1, seed=0, pattern="banded")  # 10 x 30 blocks
    held = keys(x)
    assert x.nnzblocks == 30
    rows = collections.Counter(i for i, _ in held)
    assert set(rows) == set(range(10)) and max(rows.values()) - min(rows.values()) <= 1
    for i, j in held:
        assert abs(j - ((i + 0.5) * 3 - 0.5)) <= 2


@pytest.mark.parametrize("density", [0.05, 0.1, 0.3])
def test_power_law_row_degrees_are_skewed(density):
    for seed in range(3):
        x = dt.block_sparse_random((400, 96), (4, 4), density, seed=seed, pattern="power-law")
        deg = collections.Counter(i for i, _ in keys(x))
        d = np.array([deg.get(i, 0) for i in range(100)])
        assert d.sum() == round(density * 100 * 24)
        assert d.max() <= 24
        assert d.max() >= 5 * max(np.median(d), 1)  # max row degree >> median
        # Zipf: the busiest tenth of the rows hold far more than a tenth of the blocks
        assert np.sort(d)[-10:].sum() >= 0.25 * d.sum()  # 2.5x their uniform share


def test_power_law_degrees_capped_and_exact():
    rng = np.random.default_rng(0)
    for total in (0, 1, 7, 100, 239, 240):
        d = power_law_degrees(10, 24, total, rng)
        assert d.sum() == total and d.max(initial=0) <= 24 and d.min() >= 0


def test_power_law_columns_uniform():
    counts = np.zeros(24)
    for seed in range(20):
        x = dt.block_sparse_random((400, 96), (4, 4), 0.1, seed=seed, pattern="power-law")
        for _, j in keys(x):
            counts[j] += 1
    assert counts.min() > 0.5 * counts.mean() and counts.max() < 1.5 * counts.mean()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(pattern="diagonal"), "pattern.*'diagonal'"),
        (dict(pattern=None), "pattern.*None"),
        (dict(density=1.5), "density.*1.5"),
        (dict(density=-0.1), "density.*-0.1"),
        (dict(density="x"), "density.*'x'"),
        (dict(density=float("nan")), "density.*nan"),
        (dict(seed=-1), "seed.*-1"),
        (dict(seed=1.5), "seed.*1.5"),
    ],
)
def test_bad_arguments_name_the_value(kwargs, match):
    args = dict(shape=SHAPE, chunks=CHUNKS, density=0.1, seed=0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        dt.block_sparse_random(**args)


@pytest.mark.parametrize("pattern", ["banded", "power-law"])
def test_patterns_need_two_dims(pattern):
    with pytest.raises(ValueError, match="2-D"):
        dt.block_sparse_random((8, 8, 8), 2, 0.2, seed=0, pattern=pattern)
    dt.block_sparse_random((8, 8, 8), 2, 0.2, seed=0)  # "random" has any number of dims


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("density", [0.05, 0.3])
def test_matmul_vs_numpy(pattern, density):
    a = dt.block_sparse_random((48, 40), (4, 5), density, seed=3, pattern=pattern)
    b = dt.random.uniform(-1, 1, (40, 12), chunks=(5, 6), seed=4)
    c = dt.block_sparse_random((40, 36), (5, 6), density, seed=5, pattern=pattern)
    A, B, C = dense_of(a), b.compute(), dense_of(c)
    assert_eq(a @ b, A @ B, rtol=1e-12, atol=1e-12)
    assert_eq(a @ c, A @ C, rtol=1e-12, atol=1e-12)
    assert_eq(a.T @ a, A.T @ A, rtol=1e-12, atol=1e-12)

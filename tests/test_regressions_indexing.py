"""Regressions: integer-array item assignment, dask's chunks for reshape and integer indexing,
``x.shuffle``, and indexing a huge generated input without making its other blocks.
Values are checked against NumPy on random data with ragged chunks."""

import resource

import numpy as np
import pytest

import dask_tra.array as da

CHUNKS = ((3, 1, 3), (5, 2, 4))  # shape (7, 11)


def _pair(seed=0):
    a = np.random.default_rng(seed).normal(size=(7, 11))
    return a, da.from_array(a.copy(), chunks=CHUNKS)


def _lazy(k):
    return da.from_array(np.asarray(k), chunks=2) if isinstance(k, list) else k


KEYS = [
    ([1, 3], -1.0),
    ([1, 3, 1], np.arange(33.0).reshape(3, 11)),  # a repeated row: the last value wins (NumPy)
    ([6, -1, 0], np.arange(33.0).reshape(3, 11)),
    ((slice(None), [9, 8, 8]), [-80.0, -81, 91]),
    (([-1, 0, 1], 2), [-30.0, -31, -32]),
    ((slice(2, 5), [10, 0, 4]), np.arange(9.0).reshape(3, 3)),
    (([True, False, False, False, True, False, True], 2), [5.0, 6, 7]),
    ((slice(2, 4), [False, False, True, True, False, False, True, False, False, True, False]), np.ones((2, 4))),
    ((3, [True, True, False, True, True, False, True, False, True, True, False]), -1.0),
]


@pytest.mark.parametrize("lazy_key", [False, True])
@pytest.mark.parametrize("lazy_value", [False, True])
@pytest.mark.parametrize("key, value", KEYS)
def test_setitem_with_integer_arrays_and_1d_masks(key, value, lazy_key, lazy_value):
    a, x = _pair()
    want = a.copy()
    items = key if isinstance(key, tuple) else (key,)
    want[tuple(np.asarray(k) if isinstance(k, list) else k for k in items)] = value
    k = key
    if lazy_key:
        k = tuple(_lazy(k) for k in key) if isinstance(key, tuple) else _lazy(key)
    x[k] = da.from_array(np.asarray(value), chunks=2) if lazy_value else value
    assert x.chunks == CHUNKS
    np.testing.assert_array_equal(x.compute(), want)


def test_setitem_lazy_index_is_lazy_and_errors_when_computed():
    x = da.from_array(np.zeros(6), chunks=4)
    x[da.from_array(np.array([7, 1]), chunks=1)] = 5.0  # out of bounds: only known when computed
    with pytest.raises(IndexError):
        x.compute()
    y = da.from_array(np.zeros((6, 2)), chunks=4)
    y[da.from_array(np.array([True, False, True, False, False, False]), chunks=3)] = np.ones((3, 2))
    with pytest.raises(ValueError):  # 3 values for 2 selected rows
        y.compute()


def test_setitem_errors_as_dask():
    a, x = _pair()
    with pytest.raises(NotImplementedError):
        x[[1, 2], [2, 3]] = 6
    with pytest.raises(IndexError):
        x[[[1, 2, 3]], 0] = 5
    with pytest.raises(IndexError):
        x[[0, 7]] = 1
    with pytest.raises(ValueError):
        x[[1, 2]] = np.ones((3, 11))


def test_setitem_ambiguous_mask_value_raises_instead_of_differing_from_numpy():
    a = np.arange(6.0).reshape(2, 3)
    x = da.from_array(a, chunks=2)
    with pytest.raises(ValueError, match="ambiguous"):
        x[a > 2] = np.arange(3.0)  # 3 true values: NumPy assigns one per true element
    y = da.from_array(a, chunks=2)
    y[y > 2] = np.arange(3.0)
    with pytest.raises(ValueError, match="ambiguous"):
        y.compute()


@pytest.mark.parametrize(
    "inshape, inchunks, outshape",
    [
        ((2, 3, 4), ((1, 1), (1, 2), (2, 2)), (6, 4)),
        ((2, 3, 4), ((1, 1), (1, 2), (2, 2)), (24,)),
        ((10, 400), (5, (20,) * 19 + (19, 1)), (10, 2, 25, 8)),
        ((64,), ((20, 44),), (4, 4, 4)),
        ((30, 10, 20), (30, 2, 1), (30, 200)),
        ((6, 5, 4), ((4, 2), (2, 3), (1, 3)), (4, 5, 6)),  # dask cannot: the old grouping
    ],
)
def test_reshape_values_and_dask_chunks(inshape, inchunks, outshape):
    import dask.array as dda

    a = np.random.default_rng(1).normal(size=inshape)
    for merge in (True, False):
        y = da.from_array(a, chunks=inchunks).reshape(outshape, merge_chunks=merge)
        np.testing.assert_array_equal(y.compute(), a.reshape(outshape))
        try:
            want = dda.from_array(a, chunks=inchunks).reshape(outshape, merge_chunks=merge).chunks
        except NotImplementedError:
            continue
        assert y.chunks == want


@pytest.mark.parametrize(
    "key",
    [[5, 1, 12, 3], [1, 3, 5, 12], [0] * 30, np.arange(13) % 3 == 0, np.arange(12, -1, -1), (slice(None), [9, 0, 1])],
)
def test_integer_indexing_values_and_dask_chunks(key):
    import dask.array as dda

    a = np.random.default_rng(2).normal(size=(13, 10))
    chunks = ((3, 1, 5, 4), (4, 2, 4))
    y = da.from_array(a, chunks=chunks)[key]
    np.testing.assert_array_equal(y.compute(), a[key])
    assert y.chunks == dda.from_array(a, chunks=chunks)[key].chunks


def test_full_slices_return_x_itself():
    x = da.ones((24, 16), chunks=((4, 8, 8, 4), (2, 6, 6, 2)))
    assert x[:] is x and x[...] is x and x[0 : len(x) : 1] is x
    assert x[None, ...] is not x and x[::-1] is not x


def test_shuffle_method():
    a = np.arange(24).reshape(8, 3).T.copy()
    x = da.from_array(a, chunks=((2, 1), (4, 4)))
    y = x.shuffle([[1, 5, 6], [0, 3], [4, 2, 7]], axis=1)
    np.testing.assert_array_equal(y.compute(), a[:, [1, 5, 6, 0, 3, 4, 2, 7]])
    assert y.chunks == ((2, 1), (5, 3))


@pytest.mark.parametrize(
    "make",
    [
        lambda: da.arange(10**12, chunks=10**6),
        lambda: da.ones(10**12, chunks=10**6),
        lambda: da.random.random(10**12, chunks=10**6, seed=0),
    ],
)
def test_indexing_a_huge_generated_input_makes_only_its_blocks(make):
    x = make()
    for key in ([5, 10**11], slice(10**11, 10**11 + 5), 10**12 - 1, np.array([10**12 - 1, 3, 3])):
        y = x[key]
        assert len(dict(y.__dask_graph__())) <= 4  # the blocks used (and the gather), not 10**6
        assert y.compute().shape == y.shape
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 4 * 2**20  # KiB: well under 4 GiB
    np.testing.assert_array_equal(da.arange(10**12, chunks=10**6)[[5, 10**11, 7]].compute(), [5, 10**11, 7])
    y = da.take(da.arange(10**12, chunks=10**6), [7, 10**12 - 1])
    np.testing.assert_array_equal(y.compute(), [7, 10**12 - 1])


def test_narrowed_generated_inputs_keep_values():
    r = da.random.random((13, 10), chunks=((3, 1, 5, 4), (4, 2, 4)), seed=3)
    e = da.eye(13, chunks=4, M=10)
    for x in (r, e, da.arange(130.0, chunks=7).reshape(13, 10)):
        a = x.compute()
        for key in ([5, 1, 12], (slice(2, 9, 3), [9, 0]), (-1, slice(None, None, -2)), np.arange(13) % 4 == 1):
            np.testing.assert_array_equal(x[key].compute(), a[key])
        np.testing.assert_array_equal(x[2:][[3, 0]][1:].compute(), a[2:][[3, 0]][1:])


@pytest.mark.parametrize(
    "key, cuts",
    [
        ((slice(1, 3), slice(5, 7)), 2),  # inside block (0, 1)
        ((slice(None), slice(None, None, 4)), 1),  # position 0 of every column block
        ((slice(4, 3, -1), 9), 2),  # one position of one block on each axis
        ((slice(None, None, 2), slice(None)), 0),  # positions differ between row blocks: pieces
    ],
)
def test_slices_inside_blocks_cut_each_block_with_no_piece_relation(key, cuts):
    """Where each new block is one piece of its own old block, at the same positions in each,
    the slice is a per-block ``Cut`` (no piece relation joined); values and chunks as dask's.
    A block that keeps its number is not relabelled: no ReKey places it where it was."""
    import dask.array as dda

    from dask_tra.array.kernels import Cut, Take
    from dask_tra.tra import ReKey
    from dask_tra.tra.dag import walk_many

    a = np.random.default_rng(3).normal(size=(13, 12))
    chunks = ((3, 1, 5, 4), (4, 4, 4))
    y = da.from_array(a, chunks=chunks)[key]
    np.testing.assert_array_equal(y.compute(), a[key])
    assert y.chunks == dda.from_array(a, chunks=chunks)[key].chunks
    kernels = [getattr(n, "kernel", None) for n in walk_many([y.expr])]
    assert sum(isinstance(k, Cut) for k in kernels) == cuts
    assert any(isinstance(k, Take) for k in kernels) == (cuts == 0)
    placed = [n for n in walk_many([y.expr]) if isinstance(n, ReKey) and n.key_fn.name.startswith("placeBlocks")]
    renumbered = [n for n in placed if any(n.key_fn(k) != k for k in n.child.type.iter_keys())]
    assert placed == renumbered

"""rechunk's argument forms as dask.array reads them."""
import numpy as np
import pytest

import dask.array as dask_da
import dask_tra.array as da


@pytest.mark.parametrize("sizes", [(2, 2, 3), [1, 5, 1], (7,), (3, 4), (2, 2)])
def test_flat_sizes_on_a_1d_array_are_read_as_dask_reads_them(sizes):
    """dask's rechunk zips the entries with the axes: a 1-d array takes the first as its size."""
    a = np.random.default_rng(0).random(7)
    x = da.from_array(a, chunks=3).rechunk(sizes)
    assert x.chunks == dask_da.from_array(a, chunks=3).rechunk(sizes).chunks
    np.testing.assert_array_equal(x.compute(), a)


def test_nested_block_sizes_of_a_1d_array():
    a = np.random.default_rng(1).random(7)
    x = da.from_array(a, chunks=3).rechunk(((2, 2, 3),))
    assert x.chunks == ((2, 2, 3),)
    np.testing.assert_array_equal(x.compute(), a)


@pytest.mark.parametrize("chunks", [-3, (-3, 2), {0: -2}])
def test_a_negative_chunk_size_other_than_minus_one_raises_naming_it(chunks):
    with pytest.raises(ValueError, match="positive, -1 .* got -[23]"):
        da.ones((4, 4), chunks=2).rechunk(chunks)


@pytest.mark.parametrize("shape, old, new", [((220,), 100, 100), ((210, 210), 100, (100, -1)), ((13,), 4, 4),
                                             ((100,), 12, 12), ((990,), 100, 495), ((37, 5), (7, 2), (10, 2))])
def test_balance_evens_out_the_blocks_as_dask(shape, old, new):
    """``balance=True`` was accepted and ignored: the blocks were not dask's."""
    a = np.random.default_rng(2).random(shape)
    x = da.from_array(a, chunks=old).rechunk(new, balance=True)
    assert x.chunks == dask_da.from_array(a, chunks=old).rechunk(new, balance=True).chunks
    np.testing.assert_array_equal(x.compute(), a)


def test_balance_warns_where_no_even_split_has_as_many_blocks():
    x = da.ones((100,), chunks=95)
    with pytest.warns(UserWarning, match="chunk size balancing not possible"):
        y = x.rechunk(98, balance=True)
    assert y.chunks == ((98, 2),)


@pytest.mark.parametrize(
    "n, old, new", [(730, 92, 1), (730, 92, 23), (9, (4, 2, 3), 2), (11, (4, 4, 3), 2), (10, (6, 4), 3)]
)
def test_blocks_cut_into_equal_tiles_take_tiles_when_a_block_is_shorter(n, old, new):
    """Blocks cut in order into tiles of one size, a shorter block into fewer (730 days in 92-day
    blocks, cut into days), are tiled (views), not gathered piece by piece (a take per piece);
    values and chunks as dask's."""
    from dask_tra.array.kernels import Take
    from dask_tra.tra import Tile
    from dask_tra.tra.dag import walk_many

    a = np.random.default_rng(4).random((n, 3))
    x = da.from_array(a, chunks=(old, 3)).rechunk((new, 3))
    assert x.chunks == dask_da.from_array(a, chunks=(old, 3)).rechunk((new, 3)).chunks
    np.testing.assert_array_equal(x.compute(), a)
    nodes = walk_many([x.expr])
    assert any(isinstance(node, Tile) for node in nodes)
    assert not any(isinstance(getattr(node, "kernel", None), Take) for node in nodes)

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

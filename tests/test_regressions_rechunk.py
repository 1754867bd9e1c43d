"""rechunk's argument forms as dask.array reads them."""
import numpy as np
import pytest

import dask_tra.array as da


@pytest.mark.parametrize("sizes", [(2, 2, 3), [1, 5, 1], (7,), (3, 4)])
def test_a_1d_arrays_block_sizes_given_flat(sizes):
    a = np.random.default_rng(0).random(7)
    x = da.from_array(a, chunks=3).rechunk(sizes)
    assert x.chunks == (tuple(sizes),)
    np.testing.assert_array_equal(x.compute(), a)


def test_flat_sizes_that_do_not_add_up_raise():
    with pytest.raises(ValueError, match="do not add up"):
        da.ones(7, chunks=3).rechunk((2, 2))


@pytest.mark.parametrize("chunks", [-3, (-3, 2), {0: -2}])
def test_a_negative_chunk_size_other_than_minus_one_raises_naming_it(chunks):
    with pytest.raises(ValueError, match="positive, -1 .* got -[23]"):
        da.ones((4, 4), chunks=2).rechunk(chunks)

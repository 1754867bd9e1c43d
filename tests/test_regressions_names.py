"""Array names as dask's: ``<operation>-<token>``, the same for the same operations on the same
data (``dask.base.tokenize``, equal keys), different otherwise."""
import numpy as np
import pytest
from dask.base import tokenize

import dask_tra.array as da


def _keys(x):
    return sorted(map(str, x.__dask_graph__()))


@pytest.fixture
def data():
    return np.random.default_rng(0).random((7, 5))


def test_the_same_pipeline_twice_has_the_same_name_and_keys(data):
    def build():
        x = da.from_array(data, chunks=(3, 2))
        return ((x - x.mean(axis=0)) @ x.T).sum(axis=1)

    a, b = build(), build()
    assert a.name == b.name and tokenize(a) == tokenize(b)
    assert _keys(a) == _keys(b)
    np.testing.assert_allclose(a.compute(), b.compute())


@pytest.mark.parametrize(
    "change",
    [
        lambda d: da.from_array(d + 1, chunks=(3, 2)),  # other data
        lambda d: da.from_array(d, chunks=(2, 2)),  # other chunks
        lambda d: da.from_array(d.astype("f4"), chunks=(3, 2)),  # other dtype
    ],
)
def test_other_data_chunks_or_dtype_give_other_names(data, change):
    x = da.from_array(data, chunks=(3, 2))
    assert change(data).name != x.name
    assert (change(data) + 1).name != (x + 1).name


def test_other_operations_or_constants_give_other_names(data):
    x = da.from_array(data, chunks=(3, 2))
    names = {(x + 1).name, (x + 2).name, (x * 1).name, x.sum().name, x.sum(0).name, x.T.name, (x @ x.T).name}
    assert len(names) == 7


def test_names_say_the_last_operation(data):
    x = da.from_array(data, chunks=(3, 2))
    assert x.name.startswith("array-") and (x @ x.T).name.startswith("matmul-")
    assert x.sum().name.startswith("sum-") and da.sin(x).name.startswith("sin-")
    assert da.ones_like(x).name.startswith("ones_like-") and da.zeros(3).name.startswith("zeros-")


def test_random_arrays_are_named_by_their_seed():
    a, b = da.random.random((5, 4), chunks=2, seed=3), da.random.random((5, 4), chunks=2, seed=3)
    assert a.name == b.name
    np.testing.assert_array_equal(a.compute(), b.compute())
    assert da.random.random((5, 4), chunks=2, seed=4).name != a.name
    assert da.random.random((5, 4), chunks=2).name != da.random.random((5, 4), chunks=2).name


def test_a_given_name_is_kept():
    assert da.zeros((4, 4), chunks=2, name="my-name").name == "my-name"
    np.testing.assert_array_equal(da.full((3,), 5, chunks=2, name="fives").compute(), [5, 5, 5])


def test_arrays_of_equal_names_in_one_computation_are_one(data):
    x, y = da.from_array(data, chunks=3), da.from_array(data.copy(), chunks=3)
    np.testing.assert_allclose((x + y).compute(), 2 * data)
    z = da.from_array(data[::-1].copy(), chunks=3)  # other contents: another input
    np.testing.assert_allclose((x + z).compute(), data + data[::-1])


def test_a_deep_chain_is_named(data):
    x = da.from_array(data, chunks=3)
    y = x
    for _ in range(1000):
        y = y + 1
    z = x
    for _ in range(1000):
        z = z + 1
    assert y.name == z.name
    np.testing.assert_allclose(y.compute(), data + 1000)


def test_from_array_name_names_the_array_never_the_input(tmp_path):
    x = np.arange(10.0)
    a, b = da.from_array(x, chunks=3, name="x"), da.from_array(x + 1, chunks=3, name="x")
    assert a.name == b.name == "x"
    np.testing.assert_array_equal((a + b).compute(), 2 * x + 1)  # two inputs, though one name
    assert da.from_array(x, name=False).name != da.from_array(x, name=False).name
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f["a"], f["b"] = x, 10 * x
    with h5py.File(tmp_path / "f.h5", "r") as f:
        u, v = da.from_array(f["a"], chunks=4, name="same"), da.from_array(f["b"], chunks=4, name="same")
        np.testing.assert_array_equal((u + v).compute(), 11 * x)


def test_repr_names_the_chunk_type():
    assert "chunktype=numpy.ndarray" in repr(da.ones((4, 4), chunks=2))


def test_internal_map_blocks_results_are_named_by_content():
    """dask's map_blocks(name=) names the result exactly (helpers pass token=, a prefix): two
    different stores, forward fills or sliding windows computed together were one key set, so
    dask computed one and returned it twice."""
    import dask
    from dask import delayed
    a, b = da.ones((4, 5), chunks=(3, 2)) + 1, da.ones((4, 5), chunks=(2, 4)) + 2
    stored = da.store([a, b], [delayed(np.zeros)((4, 5)), delayed(np.ones)((4, 5))], return_stored=True,
                      compute=False)
    got = dask.compute(*stored)
    np.testing.assert_array_equal(got[1], np.full((4, 5), 3.0))
    assert stored[0].name != stored[1].name
    x, y = da.arange(10.0, chunks=4), da.arange(10.0, chunks=4) * 2
    w1, w2 = da.sliding_window_view(x, 3), da.sliding_window_view(y, 3)
    assert w1.name != w2.name
    r1, r2 = dask.compute(w1, w2)
    np.testing.assert_array_equal(r2, np.lib.stride_tricks.sliding_window_view(np.arange(10.0) * 2, 3))


def test_block_functions_name_their_arrays_by_what_they_compute():
    """dask's ``same_keys``: the same block function with the same arguments names its array
    alike, another argument or function otherwise (a kernel is named by its class and fields;
    functions by content, never by their address)."""
    x = da.from_array(np.arange(10, dtype="i8"), chunks=2)

    def func(block, block_id=None, c=0):
        return np.ones_like(block) * sum(block_id) + c

    def other(block, block_id=None, c=0):
        return np.ones_like(block) * sum(block_id) - c

    names = [x.map_blocks(f, dtype="i8", c=c).name for f, c in ((func, 0), (func, 0), (func, 1), (other, 0))]
    assert names[0] == names[1] and len(set(names)) == 3
    assert (x + 1).name == (x + 1).name
    assert len({(x + 1).name, (x + 2).name, (x * 1).name, (x + 1.0).name, (x + np.float32(1)).name}) == 5


def _twice(block):
    return block * 2


def _thrice(block):
    return block * 3


def test_module_functions_name_arrays_by_their_import_path():
    """A function its module exports (outside ``__main__``) is named by its import path, as
    dask's pickle by reference; two such functions never share a name."""
    from dask_tra.array.naming import _norm

    x = da.from_array(np.arange(10.0), chunks=5)
    assert _norm(_twice, 0) == f"function:{__name__}._twice"
    assert x.map_blocks(_twice).name == x.map_blocks(_twice).name
    assert x.map_blocks(_twice).name != x.map_blocks(_thrice).name
    np.testing.assert_array_equal((x.map_blocks(_twice) + x.map_blocks(_thrice)).compute(), np.arange(10.0) * 5)

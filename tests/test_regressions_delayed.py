"""``dask.delayed`` objects where dask.array takes them.

- a Delayed argument of ``map_blocks``/``blockwise`` (positional, keyword, or inside a list/dict)
  raised TypeError (``from_dask expects a dask.array.Array``); dask passes its computed value
  whole to every call, and its key joins the graph: so now (a 0-d input bound to that key).
- ``store`` into Delayed targets raised TypeError; dask computes the target and writes each
  block into it: so now. A NumPy source (not a lazy array) raises dask's ValueError.
- ``from_delayed`` with an unknown (NaN or Delayed) size failed with an unrelated error; it
  names what is unsupported.
"""

from __future__ import annotations

import gc
from operator import add

import dask
import numpy as np
import pytest
from dask import delayed

import dask_tra.array as da


def test_map_blocks_delayed_argument_is_passed_whole():
    x = da.ones((10, 10), chunks=(4, 6))
    y = np.arange(1.0, 5.0)
    yy = delayed(y)
    z = x.map_blocks(lambda b, v: b * v.sum(), yy, dtype=x.dtype)
    np.testing.assert_array_equal(z.compute(), np.full((10, 10), 10.0))
    assert yy.key in z.dask
    block = delayed(np.ones)((5, 5))
    w = da.ones((10, 10), chunks=(5, 5)).map_blocks(add, block, dtype=float)
    da.assert_eq(w, np.full((10, 10), 2.0))


def test_blockwise_delayed_positional_and_keyword():
    x = da.arange(10, chunks=(3, 7))
    y = dask.delayed(lambda: 100)()
    da.assert_eq(da.blockwise(add, "i", x, "i", y, None, dtype=x.dtype), np.arange(10) + 100)
    da.assert_eq(da.blockwise(lambda a, y: a + y, "i", x, "i", y=y, dtype=x.dtype), np.arange(10) + 100)


def test_delayed_inside_containers_and_with_arrays():
    x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=(2, 3))
    k = delayed(lambda: 3.0)()
    z = x.map_blocks(lambda b, d, lst: b * d["k"] + lst[0], {"k": k}, [delayed(1.0)], dtype=float)
    np.testing.assert_array_equal(z.compute(), np.arange(12.0).reshape(3, 4) * 3 + 1)


def test_store_into_delayed_targets():
    a, b = da.ones((4, 5), chunks=(3, 2)) + 1, da.ones((4, 5), chunks=(2, 4)) + 2
    targets = {}

    def make(name):
        targets[name] = np.zeros((4, 5))
        return targets[name]

    assert da.store([a, b], [delayed(make)("a"), delayed(make)("b")]) is None
    np.testing.assert_array_equal(targets["a"], np.full((4, 5), 2.0))
    np.testing.assert_array_equal(targets["b"], np.full((4, 5), 3.0))
    targets.clear()
    stored = da.store([a, b], [delayed(make)("a"), delayed(make)("b")], return_stored=True, compute=False)
    got = dask.compute(*stored)
    np.testing.assert_array_equal(got[0], np.full((4, 5), 2.0))
    np.testing.assert_array_equal(targets["b"], np.full((4, 5), 3.0))


def test_store_into_delayed_target_with_region():
    out = np.zeros((6, 7))
    da.store(da.ones((4, 5), chunks=(3, 2)), delayed(out), regions=(slice(2, 6), slice(1, 6)))
    expected = np.zeros((6, 7))
    expected[2:6, 1:6] = 1
    np.testing.assert_array_equal(out, expected)


def test_store_numpy_source_raises_as_dask():
    with pytest.raises(ValueError, match="All sources must be dask array objects"):
        da.store(np.ones(3), np.zeros(3))


@pytest.mark.parametrize("shape", [(np.nan,), (delayed(10),)])
def test_from_delayed_unknown_size_is_named(shape):
    with pytest.raises(NotImplementedError, match="unknown size"):
        da.from_delayed(delayed(np.ones(10)), shape=shape, dtype=float)


def test_from_delayed_of_a_future():
    """dask wraps a Future given to from_delayed in a Delayed; dask_tra refused it."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster, Client(cluster) as client:
        f = client.scatter(np.arange(6.0).reshape(2, 3))
        x = da.from_delayed(f, (2, 3), dtype=float)
        np.testing.assert_array_equal((x + 1).compute(), np.arange(6.0).reshape(2, 3) + 1)
        # the array keeps the Future alive; the reference check computes it where it is (dask's
        # sync scheduler cannot read a Future: a KeyError)
        del f
        gc.collect()
        da.assert_eq(x * 2, np.arange(6.0).reshape(2, 3) * 2, scheduler=client)

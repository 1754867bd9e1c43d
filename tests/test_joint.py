"""Several arrays planned as one DAG: ``dt.compute``/``dt.persist``/``Joint`` (multi-root plans)."""

import dask
from dask.core import flatten
import numpy as np
import pytest
from dask.task_spec import Alias

import dask_tra as dt
from dask_tra.array.core import RelArray
from dask_tra.tra import Transform
from dask_tra.tra import kernels as K

rng = np.random.default_rng(31)


class Counted:
    """A picklable identity kernel function counting its calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, c):
        self.calls.append(c.shape)
        return c


def counted(x, counter):
    return RelArray(Transform(x.expr, K.Custom("counted", counter)), x.sources)


def shared_program():
    X = rng.standard_normal((7, 5))
    counter = Counted()
    x = counted(dt.from_array(X, chunks=((3, 4), (2, 3))), counter)
    y = x @ x.T
    return X, counter, (y.sum(0), y + 1.5, (2 * y)[1:, ::2])


def test_compute_plans_several_arrays_as_one_dag_and_computes_shared_nodes_once():
    X, counter, outs = shared_program()
    a, b, c = dt.compute(*outs, scheduler="sync")
    Y = X @ X.T
    np.testing.assert_allclose(a, Y.sum(0))
    np.testing.assert_allclose(b, Y + 1.5)
    np.testing.assert_allclose(c, (2 * Y)[1:, ::2])
    assert len(counter.calls) == 4  # each of x's 4 chunks once, for all three outputs
    counter.calls.clear()
    dask.compute(*outs, scheduler="sync")  # dask plans each collection on its own
    assert len(counter.calls) > 4


def test_compute_keeps_the_structure_of_its_arguments():
    X, _, (a, b, c) = shared_program()
    Y = X @ X.T
    (got_list, got_dict, got_one) = dt.compute([a, b], {"c": c}, a, scheduler="sync")
    assert isinstance(got_list, list) and set(got_dict) == {"c"}
    np.testing.assert_allclose(got_list[1], Y + 1.5)
    np.testing.assert_allclose(got_dict["c"], (2 * Y)[1:, ::2])
    np.testing.assert_allclose(got_one, Y.sum(0))


def test_compute_of_other_collections_is_dask_compute():
    import dask.array as da

    x = da.ones(4, chunks=2)
    (got,) = dt.compute(x, scheduler="sync")
    np.testing.assert_array_equal(got, np.ones(4))


def test_joint_outputs_are_the_plan_tasks_themselves():
    """Each output block is the task computing it (no token tasks, no aliases), under the keys
    the array has alone; the same array twice is computed once."""
    _, _, (a, b, c) = shared_program()
    joint = dt.Joint(a, b, c)
    graph = dict(joint.__dask_graph__())
    outputs = list(flatten(joint.__dask_keys__()))
    assert len(outputs) == a.npartitions + b.npartitions + c.npartitions == 10
    assert not any(isinstance(graph[k], Alias) for k in outputs)
    twice = dt.Joint(a, a)
    graph = dict(twice.__dask_graph__())
    assert twice.__dask_keys__()[0] == twice.__dask_keys__()[1] == a.__dask_keys__()
    assert not any(isinstance(v, Alias) for v in graph.values())


def test_persist_of_several_arrays_gives_persisted_relarrays():
    X, counter, (a, b, _) = shared_program()
    pa, pb = dt.persist(a, b, scheduler="sync")
    assert isinstance(pa, RelArray) and isinstance(pb, RelArray)
    assert len(counter.calls) == 4
    np.testing.assert_allclose(pb.compute(), X @ X.T + 1.5)
    np.testing.assert_allclose((pa + 1).compute(), (X @ X.T).sum(0) + 1)


def test_joint_refuses_what_is_not_an_array():
    with pytest.raises(TypeError, match="argument 1"):
        dt.Joint(dt.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="at least one"):
        dt.Joint()


def test_block_sparse_arrays_keep_their_holes_through_compute_and_persist():
    a = dt.block_sparse_random((40, 30), chunks=10, density=0.3, seed=4)
    b = dt.random.uniform(-1, 1, (30, 20), chunks=10, seed=5)
    z = a @ b
    za, zz = dt.compute(a, z, scheduler="sync")
    np.testing.assert_allclose(zz, za @ b.compute())
    pa, pz = dt.persist(a, z, scheduler="sync")
    assert pa.nnzblocks == a.nnzblocks < a.npartitions and pz.nnzblocks == z.nnzblocks
    np.testing.assert_allclose(pz.compute(), zz)

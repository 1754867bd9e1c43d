"""pydata ``sparse`` chunks (``dask_tra/backends/sparse_backend.py``): every result compared
with NumPy on the same random data, with ragged chunks; chunk types as dask.array gives them;
clear errors where ``sparse`` has no implementation."""

import numpy as np
import pytest

import dask_tra.array as da
from dask_tra import backends

sparse = pytest.importorskip("sparse")

SHAPE, CHUNKS = (3, 5, 4), ((1, 2), (2, 1, 2), (3, 1))


def data(seed=0, nan=False):
    x = np.random.default_rng(seed).random(SHAPE)
    x[x < 0.6] = 0
    if nan:
        x[x > 0.9] = np.nan
    return x


def as_sparse(x, chunks=CHUNKS):
    """A RelArray of sparse.COO chunks holding ``x``."""
    return da.from_array(x, chunks=chunks).map_blocks(sparse.COO.from_numpy)


def check(result, expected, chunk_type=None):
    """``result`` computes to ``expected`` (values, shape, dtype, also its declared ones)."""
    v = result.compute()
    if chunk_type is not None:
        assert isinstance(v, chunk_type), type(v)
    dense = v.todense() if isinstance(v, sparse.SparseArray) else np.asarray(v)
    expected = np.asarray(expected)
    assert dense.shape == expected.shape == result.shape
    assert dense.dtype == expected.dtype == result.dtype
    np.testing.assert_allclose(dense, expected, equal_nan=True)


ELEMENTWISE = {
    "scale": lambda a: 2 * a / 3,
    "square": lambda a: a**2 + a * a,
    "expm1": np.expm1,
    "abs_neg": lambda a: abs(-a),
    "compare": lambda a: a > 0.7,
    "round": lambda a: a.round(1),
    "astype": lambda a: a.astype(np.complex128),
    "isneginf": np.isneginf,
}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise(name):
    f, x = ELEMENTWISE[name], data()
    check(f(as_sparse(x)), f(x), sparse.COO)


REDUCTIONS = {
    "sum": lambda m, a: m.sum(a),
    "sum_axes": lambda m, a: m.sum(a, axis=(1, 2)),
    "max0": lambda m, a: m.max(a, axis=0),
    "min": lambda m, a: m.min(a),
    "prod1": lambda m, a: m.prod(a, axis=1),
    "mean1": lambda m, a: m.mean(a, axis=1),
    "var": lambda m, a: m.var(a),
    "std_ddof": lambda m, a: m.std(a, axis=2, ddof=1),
    "any": lambda m, a: m.any(a > 0.9, axis=0),
    "nansum": lambda m, a: m.nansum(a, axis=0),
    "nanmean": lambda m, a: m.nanmean(a, axis=1),
    "nanmax": lambda m, a: m.nanmax(a),
    "nanmin2": lambda m, a: m.nanmin(a, axis=2),
    "nanprod": lambda m, a: m.nanprod(a, axis=0),
    "nanvar": lambda m, a: m.nanvar(a, axis=(0, 2)),
    "nanstd": lambda m, a: m.nanstd(a),
}


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name):
    f, x = REDUCTIONS[name], data(1, nan=name.startswith("nan"))
    check(f(da, as_sparse(x)), f(np, x))


@pytest.mark.parametrize("order", [0, 2, 3])
def test_moment_method(order):
    x = data(16)
    expected = np.mean((x - x.mean()) ** order)
    check(as_sparse(x).moment(order=order), expected)


STRUCTURE = {
    "index": lambda a: a[1],
    "slices": lambda a: a[:2, None, 1:4, ::-2],
    "fancy": lambda a: a[[2, 0, 1]],
    "transpose": lambda a: a.transpose((1, 2, 0)),
    "reshape": lambda a: a.reshape((15, 4)),
    "rechunk": lambda a: a.rechunk((2, 2, 4)),
    "concatenate": lambda a: da.concatenate([a, a[:1]], axis=0),
    "stack": lambda a: da.stack([a, 2 * a], axis=1),
}


@pytest.mark.parametrize("name", STRUCTURE)
def test_structure(name):
    f, x = STRUCTURE[name], data(2)
    npf = {
        "rechunk": lambda a: a,
        "concatenate": lambda a: np.concatenate([a, a[:1]]),
        "stack": lambda a: np.stack([a, 2 * a], axis=1),
    }
    check(f(as_sparse(x)), npf.get(name, f)(x), sparse.COO)


def test_products_with_dense_give_dense_chunks_as_dask():
    x = data(3)
    dense = np.random.default_rng(4).random((4, 2))
    y = as_sparse(x)
    check(y @ dense, x @ dense, np.ndarray)
    assert isinstance((y @ dense)._meta, np.ndarray)
    check(y.dot(np.arange(4.0)), x.dot(np.arange(4.0)), np.ndarray)
    check(da.tensordot(y, np.ones((3, 5)), axes=[(0, 1), (0, 1)]), np.tensordot(x, np.ones((3, 5)), axes=[(0, 1), (0, 1)]))


def test_products_of_sparse_stay_sparse():
    x, z = data(5), data(6).transpose(2, 1, 0)
    y, w = as_sparse(x), as_sparse(z, chunks=((2, 2), (1, 4), (3,)))
    check(da.tensordot(y, w, axes=(2, 0)), np.tensordot(x, z, axes=(2, 0)), sparse.COO)
    check(da.einsum("ijk,ijk->i", y, y), np.einsum("ijk,ijk->i", x, x), sparse.COO)


def test_meta_is_sparse():
    y = as_sparse(data(7))
    z = sparse.COO.from_numpy(data(8))
    for v in (y, y + 1, y - z, y.sum(axis=0), y.var(axis=0), y[:2, ::2], y.rechunk(2), y.persist(),
              da.concatenate([y, y[:0]]), da.stack([y[:0], y[:0]]), da.ones_like(y)):
        assert isinstance(v._meta, sparse.COO), v
    assert isinstance(da.from_array(z, chunks=2)._meta, sparse.COO)
    one = da.from_delayed(__import__("dask").delayed(lambda: z)(), shape=z.shape, meta=z[:0, :0, :0])
    assert isinstance(one._meta, sparse.COO)
    check(one, data(8), sparse.COO)
    assert isinstance(da.utils.meta_from_array(z, ndim=2), sparse.COO)


def test_html_repr_names_coo_without_bytes():
    text = as_sparse(data(9))._repr_html_()
    assert "sparse.COO" in text and "Bytes" not in text
    assert "Bytes" in da.ones((4, 4), chunks=2)._repr_html_()


@pytest.mark.parametrize("axis", [None, 0, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_numel_and_nannumel_match_dask(axis, keepdims):
    from dask.array import reductions as dr

    from dask_tra.array.reductions import nannumel, numel

    x = data(10, nan=True)
    for v in (x, sparse.COO.from_numpy(x)):
        for ours, theirs in ((numel, dr.numel), (nannumel, dr.nannumel)):
            a, b = ours(v, axis=axis, keepdims=keepdims), theirs(v, axis=axis, keepdims=keepdims)
            assert type(a) is type(b) and np.shape(a) == np.shape(b) and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_concatenate_aligns_fill_values():
    x = data(11)
    y = as_sparse(x)
    check(da.concatenate([y + 1, y], axis=2), np.concatenate([x + 1, x], axis=2), sparse.COO)


def test_sizeof_counts_stored_elements():
    import dask.sizeof

    c = sparse.COO.from_numpy(np.eye(100))
    assert backends.sizeof(c) == c.nbytes == 100 * (8 + 2 * 8)
    from dask_tra.runtime import dispatch

    dispatch.install(["sparse"])
    assert dask.sizeof.sizeof(c) == c.nbytes


@pytest.mark.parametrize(
    "op, what",
    [
        (lambda a: da.cumsum(a, axis=0), "cumsum"),
        (lambda a: da.median(a, axis=0), "median"),
        (lambda a: a.argmax(axis=1), "take_along_axis"),
        (lambda a: da.isin(a, [0.0]), "isin"),
    ],
)
def test_unsupported_operations_say_so(op, what):
    with pytest.raises(NotImplementedError, match=what):
        op(as_sparse(data(12))).compute()


# ---------------------------------------------------------------- scipy.sparse chunks


@pytest.mark.parametrize("container", ["csr_matrix", "csc_array"])
def test_scipy_sparse_blocks_slice_join_and_compute(container):
    sp = pytest.importorskip("scipy.sparse")
    cls = getattr(sp, container)
    x = data(14)[0].T.copy()  # (4, 5)
    y = da.from_array(x, chunks=((1, 3), (2, 3))).map_blocks(cls)
    assert sp.issparse(y._meta)  # a csr_matrix: the relation type names the library, not the format
    for v, expected in (
        (y, x),
        (y[[3, 0]], x[[3, 0]]),
        (y[np.array([True, False, True, True]), 1:4], x[np.array([True, False, True, True]), 1:4]),
        (da.concatenate([y, y[:2]], axis=0), np.concatenate([x, x[:2]])),
        (da.concatenate([y, y], axis=1), np.concatenate([x, x], axis=1)),
    ):
        got = v.compute()
        assert isinstance(got, cls) and got.shape == expected.shape == v.shape
        np.testing.assert_array_equal(got.toarray(), expected)
    assert backends.sizeof(cls(x)) < x.nbytes + 64
    like = da.asarray([[1, 2]], dtype=np.float32, like=y)
    assert isinstance(like.compute(), sp.spmatrix) and like.compute().dtype == np.float32


def test_scipy_sparse_refuses_numpy_functions_by_name():
    sp = pytest.importorskip("scipy.sparse")
    y = da.from_array(data(15)[0], chunks=2).map_blocks(sp.csr_matrix)
    with pytest.raises(NotImplementedError, match="scipy.sparse"):
        da.exp(y).compute()


def test_on_a_cluster(small_client):
    """Last in the module: the module's cluster stays the default scheduler once started. Chunks
    cross worker processes (distributed's sparse serializer; pickle for scipy's sparray)."""
    x = data(13)
    y = as_sparse(x)
    check(2 * y, 2 * x, sparse.COO)  # few sparse functions: each worker compiles (numba) its own
    sp = pytest.importorskip("scipy.sparse")
    z = da.from_array(x[0], chunks=((2, 3), (1, 3))).map_blocks(sp.csc_array)
    got = da.concatenate([z, z[::-1]], axis=1).compute()
    assert isinstance(got, sp.csc_array)
    np.testing.assert_array_equal(got.toarray(), np.concatenate([x[0], x[0][::-1]], axis=1))


def test_other_scipy_objects_are_not_sparse_chunks():
    """Only scipy.sparse owns chunks: a scipy.stats result (a tuple) is an array-like operand, as
    in NumPy (dask's stats tests compare them with allclose)."""
    import scipy.sparse
    import scipy.stats

    from dask_tra.backends import registry

    r = scipy.stats.ttest_ind(np.arange(10.0), np.arange(10.0)[::-1] ** 1.5)
    assert registry.owner_of_type(type(r)) is None
    assert registry.owner_of_type(scipy.sparse.csr_matrix) is not None
    assert bool(da.allclose(r, tuple(r)).compute())
    np.testing.assert_allclose(da.asarray(r).compute(), np.asarray(r))

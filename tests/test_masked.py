"""dask_tra.array.ma and masked blocks, against numpy.ma, on random data with random masks and
ragged chunks."""

import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.utils import assert_eq

CHUNKS = ((3, 1, 4), (2, 5))


def _data(seed=0, p=0.4):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(8, 7))
    mask = rng.random((8, 7)) < p
    mask[:3, :2] = True  # one block entirely masked: its partial result must not mask a total
    return np.ma.masked_array(x, mask=mask)


def _same(res, expected):
    """``res`` (computed) equals numpy.ma's ``expected``: type, mask and unmasked values."""
    if expected is np.ma.masked:
        assert res is np.ma.masked
        return
    assert isinstance(res, np.ma.MaskedArray), type(res)
    np.testing.assert_array_equal(np.ma.getmaskarray(res), np.ma.getmaskarray(expected))
    np.testing.assert_allclose(np.ma.filled(res, 0), np.ma.filled(expected, 0))


def test_from_array_keeps_the_mask():
    m = _data()
    res = da.from_array(m, chunks=CHUNKS).compute()
    _same(res, m)


def test_elementwise_and_structure():
    m = _data(1)
    d = da.from_array(m, chunks=CHUNKS)
    for f in (lambda v: v * 2 + 1, np.abs, lambda v: v.T, lambda v: v[1:6, ::2]):
        _same(f(d).compute(), f(m))
    _same(d.rechunk(((1, 2, 1, 4), (2, 5))).compute(), m)  # splitting blocks keeps the mask
    _same(da.concatenate([d, d], axis=1).compute(), np.ma.concatenate([m, m], axis=1))


@pytest.mark.parametrize("chunks", [(4, 3), (7, 1), (2, 5)])
def test_rechunk_merging_blocks_keeps_the_mask(chunks):
    m = _data(1)
    _same(da.from_array(m, chunks=CHUNKS).rechunk(chunks).compute(), m)


def test_concatenate_keeps_the_mask():
    m = _data(2)
    x = da.from_array(m, chunks=CHUNKS)
    _same(da.concatenate([x, x[:3]], axis=0).compute(), np.ma.concatenate([m, m[:3]], axis=0))


@pytest.mark.parametrize("op", ["matmul", "einsum"])
def test_products_of_masked_chunks_raise_rather_than_lose_the_mask(op):
    x = da.from_array(_data(3), chunks=CHUNKS)
    y = x @ x.T if op == "matmul" else da.einsum("ij,kj->ik", x, x)
    with pytest.raises(NotImplementedError, match="masked arrays is not supported"):
        y.compute()


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "any", "all"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_skip_masked(op, axis):
    m = _data(2)
    if op == "prod":
        m = m / 2 + 1
    d = da.from_array(m, chunks=CHUNKS)
    for keepdims in (False, True):
        res = getattr(da, op)(d, axis=axis, keepdims=keepdims).compute()
        expected = getattr(np.ma, op)(m, axis=axis, keepdims=keepdims)
        if axis is None and not keepdims:
            assert np.isclose(res, expected)
        else:
            _same(res, expected)


def test_fully_masked_partial_does_not_poison_and_fully_masked_result_is_masked():
    m = _data(3)
    m[:, 4] = np.ma.masked  # column 4: every element masked
    d = da.from_array(m, chunks=CHUNKS)
    _same(d.sum(axis=0).compute(), m.sum(axis=0))  # column 0, 1: a fully masked first block
    assert d.sum(axis=0).compute().mask[4]
    allmasked = da.from_array(np.ma.masked_array([1.0, 2.0, 3.0], mask=True), chunks=2)
    assert allmasked.max().compute() is np.ma.masked
    assert allmasked.sum().compute() is np.ma.masked


def test_ma_functions():
    x = np.random.default_rng(4).integers(-3, 4, (8, 7))
    d = da.from_array(x, chunks=CHUNKS)
    _same(da.ma.masked_equal(d, 0).compute(), np.ma.masked_equal(x, 0))
    _same(da.ma.masked_greater(d, 1).compute(), np.ma.masked_greater(x, 1))
    _same(da.ma.masked_inside(d, -1, 1).compute(), np.ma.masked_inside(x, -1, 1))
    _same(da.ma.masked_where(d > 2, d).compute(), np.ma.masked_where(x > 2, x))
    mx = np.ma.masked_less(x, 0)
    md = da.ma.masked_less(d, 0)
    np.testing.assert_array_equal(da.ma.filled(md, 99).compute(), np.ma.filled(mx, 99))
    np.testing.assert_array_equal(da.ma.getmaskarray(md).compute(), np.ma.getmaskarray(mx))
    np.testing.assert_array_equal(da.ma.count(md, axis=0).compute(), np.ma.count(mx, axis=0))
    with pytest.raises(ValueError):
        da.ma.masked_equal(d, d)


def test_assert_eq_compares_masks():
    m = _data(5)
    d = da.from_array(m, chunks=CHUNKS)
    assert_eq(d, m)
    other = m.copy()
    other[0, 6] = np.ma.masked if not m.mask[0, 6] else 0.0
    with pytest.raises(AssertionError, match="mask"):
        assert_eq(d, other)


@pytest.mark.parametrize("op", ["mean", "var", "std", "argmin", "argmax"])
def test_unsupported_reductions_raise(op):
    d = da.from_array(_data(6), chunks=CHUNKS)
    with pytest.raises(NotImplementedError, match="masked"):
        getattr(da, op)(d, axis=0).compute()


def test_unsupported_entry_points_raise():
    m = _data(7)
    d = da.from_array(np.zeros((8, 7)), chunks=CHUNKS)
    with pytest.raises(NotImplementedError, match="masked"):
        d + m  # a masked NumPy operand of an elementwise operation
    with pytest.raises(NotImplementedError, match="masked"):
        d[0, 0] = np.ma.masked
    with pytest.raises(NotImplementedError, match="masked"):
        da.full((3,), np.ma.masked)


def test_map_blocks_keeps_the_mask_its_function_returns():
    """A block function returning a masked block (``x * 2`` of one) keeps its mask: it was
    converted to a plain array, silently dropping the mask."""
    a = np.random.default_rng(2).random((5, 7))
    a[a < 0.4] = 0
    m = np.ma.masked_equal(a, 0)
    y = da.ma.masked_equal(da.from_array(a, chunks=((2, 3), (3, 4))), 0)
    got = y.map_blocks(lambda b: b * 2).compute()
    assert isinstance(got, np.ma.MaskedArray)
    np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(m))
    np.testing.assert_array_equal(got.filled(-1), (m * 2).filled(-1))

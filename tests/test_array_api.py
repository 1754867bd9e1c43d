"""The namespace as a whole: NumPy protocols, the Array API namespace, Jupyter display, and
that every operation lowers to the seven TRA operators over Inputs."""
from collections import Counter

import numpy as np
import pytest

import dask_tra
import dask_tra.array as da
from dask_tra.array.testing import assert_eq
from dask_tra.tra import OPERATORS, Input

TRA = {cls.__name__ for cls in OPERATORS} | {"Input"}


def _kinds(x):
    return Counter(type(n).__name__ for n in x.expr.walk())


def test_every_operation_lowers_to_tra_operators():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((9, 6)), rng.standard_normal((6, 4))
    x, y = da.from_array(a, chunks=(4, 4)), da.from_array(b, chunks=(3, 2))
    programs = {
        "standardize": ((x - x.mean(axis=0)) / x.std(axis=0), (a - a.mean(0)) / a.std(0)),
        "contract": (da.einsum("ij,jk,kl->il", x, y, y.T) + np.exp(x @ y @ y.T),
                     a @ b @ b.T + np.exp(a @ b @ b.T)),
        "structure": (da.concatenate([x[::2, 1:], x[1:4, :5].T[::-1][:, :3].T], axis=0).reshape(2, 4, 5).sum(1),
                      np.concatenate([a[::2, 1:], a[1:4, :5].T[::-1][:, :3].T]).reshape(2, 4, 5).sum(1)),
        "indexing": (da.where(x[[0, 2, 2], None] > 0, x.argmax(axis=1)[:3, None, None],
                              x.cumsum(axis=0)[5:8, None]),
                     np.where(a[[0, 2, 2], None] > 0, a.argmax(1)[:3, None, None], a.cumsum(0)[5:8, None])),
        "random": (da.random.random((8, 6), chunks=4, seed=1).rechunk((2, 3)) * 0
                   + x[:8, ::-1].var(axis=1, keepdims=True),
                   a[:8, ::-1].var(axis=1, keepdims=True) * np.ones((8, 6))),
    }
    seen = Counter()
    for name, (z, want) in programs.items():
        kinds = _kinds(z)
        assert set(kinds) <= TRA, (name, kinds)
        assert all(isinstance(n, Input) for n in z.expr.walk() if not n.children), name
        seen.update(kinds)
        assert_eq(z, want)
    assert set(seen) == TRA  # these programs use every operator


def test_ufuncs_and_array_functions_return_relarrays():
    a = np.random.default_rng(1).standard_normal((5, 4))
    x = da.from_array(a, chunks=2)
    calls = [np.exp(x), np.add(x, a), np.tensordot(x, x, axes=([0], [0])), np.transpose(x), np.mean(x, axis=1),
             np.concatenate([x, x]), np.where(x > 0, x, 0), np.einsum("ij->j", x), np.clip(x, -1, 1),
             np.reshape(x, (4, 5)), np.stack([x, x]), np.argmax(x, axis=0), np.cumsum(x), np.dot(x, x.T),
             np.outer(x[0], x[1]), np.moveaxis(x, 0, 1), np.squeeze(x[None]), np.round(x, 2), np.var(x)]
    for c in calls:
        assert isinstance(c, dask_tra.RelArray), c
    assert_eq(calls[2], np.tensordot(a, a, axes=([0], [0])))
    assert np.shape(x) == (5, 4) and np.ndim(x) == 2
    assert np.result_type(x, np.float32) == np.float64
    assert np.allclose(x, a) and np.array_equal(x, a)
    np.testing.assert_allclose(np.asarray(x), a)
    with pytest.warns(FutureWarning, match="trim_zeros` function is not implemented"):  # dask's fallback
        np.testing.assert_array_equal(np.trim_zeros(x[0]), np.trim_zeros(a[0]))
    assert_eq(np.sort(x), np.sort(np.asarray(x)))


def test_array_api_namespace():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 5)).astype(np.float32)
    x = da.from_array(a, chunks=(4, 2))
    xp = x.__array_namespace__()
    assert xp.__array_api_version__ == "2024.12" and x.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="1999.01")

    def standardize(v):  # written against the standard only
        ns = v.__array_namespace__()
        m = ns.mean(v, axis=0, keepdims=True)
        s = ns.std(v, axis=0, keepdims=True, correction=1)
        return ns.where(s > 0, (v - m) / s, ns.zeros_like(v))
    assert_eq(standardize(x), (a - a.mean(0)) / a.std(0, ddof=1), rtol=1e-5)
    assert_eq(xp.permute_dims(x, (1, 0)), a.T)
    assert_eq(xp.concat([x, x], axis=None), np.concatenate([a.ravel(), a.ravel()]))
    assert_eq(xp.matrix_transpose(x) @ x, a.T @ a, rtol=1e-5)
    assert_eq(xp.vecdot(x, x), np.sum(a * a, axis=-1), rtol=1e-5)
    assert_eq(xp.acos(xp.clip(x, min=-0.5, max=0.5)), np.arccos(np.clip(a, -0.5, 0.5)), rtol=1e-6)
    assert_eq(xp.pow(x, 2), a ** 2)
    assert_eq(xp.cumulative_sum(x, axis=1, include_initial=True), np.cumulative_sum(a, axis=1, include_initial=True),
              rtol=1e-4)
    assert_eq(xp.astype(x, xp.int16), a.astype(np.int16))
    assert_eq(xp.floor(xp.asarray(np.arange(4, dtype=np.int32))), np.arange(4, dtype=np.int32))
    assert_eq(xp.eye(3, 4, k=1), np.eye(3, 4, k=1))
    assert_eq(xp.arange(2, 11, 3), np.arange(2, 11, 3))
    assert_eq(xp.linspace(0, 1, 5, endpoint=False), np.linspace(0, 1, 5, endpoint=False))
    assert_eq(xp.take(x, np.array([4, 0]), axis=1), a[:, [4, 0]])
    assert_eq(xp.unstack(x)[2], a[2])
    assert_eq(xp.count_nonzero(x > 0), np.count_nonzero(a > 0))
    g = xp.meshgrid(xp.arange(3), xp.arange(4))
    assert_eq(g[0], np.meshgrid(np.arange(3), np.arange(4))[0])
    assert xp.result_type(x, xp.float64) == np.float64 and xp.can_cast(x, xp.float64)
    assert xp.isdtype(x.dtype, "real floating") and xp.finfo(x).bits == 32
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["integral"] == np.int64 and info.devices() == ["cpu"]
    assert x.device == "cpu" and x.to_device("cpu") is x and x.mT.shape == (5, 6)
    a = np.asarray(x)
    for got, want in zip(xp.nonzero(x > 0), np.nonzero(a > 0)):
        assert_eq(got, want)
    values, inverse = xp.unique_inverse(xp.round(x))
    np.testing.assert_array_equal(np.asarray(values)[np.asarray(inverse)], np.round(a))
    assert_eq(xp.sort(x, axis=0, descending=True), -np.sort(-a, axis=0))
    assert_eq(xp.take_along_axis(x, xp.argsort(x), axis=-1), np.sort(a))


def test_python_scalar_conversions_and_len():
    x = da.from_array(np.array([[2.5]]), chunks=1)
    assert float(x) == 2.5 and int(x) == 2 and bool(x) and complex(x) == 2.5
    assert len(da.ones((4, 2), chunks=2)) == 4
    assert [float(v.sum()) for v in da.arange(6.0, chunks=4).reshape(3, 2)] == [1.0, 5.0, 9.0]
    with pytest.raises(TypeError):
        float(da.ones(3))
    x[0, 0] = 1  # item assignment rebinds x (dask's semantics; tests/test_setitem.py)
    assert float(x) == 1.0


def test_repr_html_shows_grid_bytes_and_pending_operators():
    x = da.ones((100, 50), chunks=(30, 20))
    html = x._repr_html_()
    assert "(100, 50)" in html and "(30, 20)" in html and "39.06 kiB" in html and "<svg" in html
    assert "0 pending" in html and "12 chunks" in html
    y = (x.T @ x).sum(axis=0)
    html = y._repr_html_()
    ops = sum(1 for n in y.expr.walk() if n.children)
    assert f"{ops} pending" in html and "Aggregate" in html and "Join" in html
    assert "tra_ops=" in repr(y)
    assert "<table>" in da.from_array(np.float64(3))._repr_html_()

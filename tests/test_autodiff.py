"""dask_tra.grad / value_and_grad: gradients against PyTorch's autograd and finite differences,
for every supported kernel and TRA operator, on ragged chunkings."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dask_tra as da
from dask_tra import autodiff as ad
from dask_tra.autodiff import nn
from dask_tra.core import RelArray
from dask_tra.tra import Concat, Filter, ReKey, Tile, Transform
from dask_tra.tra import kernels as K
from dask_tra.tra.keyfuncs import KeyMap, KeyPred

try:  # torch is an oracle here (autograd), never needed: without it, NumPy finite differences are
    import torch
except ImportError:
    torch = None


def needs_torch():
    if torch is None:
        pytest.skip("torch is not installed")


if torch is not None:
    torch.set_default_dtype(torch.float64)


    class T:
        """The same model code, run by PyTorch (NumPy-style names)."""

        exp, log, tanh, sqrt, sin, cos, abs = torch.exp, torch.log, torch.tanh, torch.sqrt, torch.sin, torch.cos, torch.abs
        expm1, log1p, negative, square, einsum = torch.expm1, torch.log1p, torch.negative, torch.square, torch.einsum
        sigmoid, relu = torch.sigmoid, torch.relu

        @staticmethod
        def sum(x, axis=None, keepdims=False):
            return x.sum() if axis is None else x.sum(dim=axis, keepdim=keepdims)

        @staticmethod
        def mean(x, axis=None, keepdims=False):
            return x.mean() if axis is None else x.mean(dim=axis, keepdim=keepdims)

        @staticmethod
        def max(x, axis=None, keepdims=False):
            return x.amax() if axis is None else x.amax(dim=axis, keepdim=keepdims)

        @staticmethod
        def min(x, axis=None, keepdims=False):
            return x.amin() if axis is None else x.amin(dim=axis, keepdim=keepdims)

        @staticmethod
        def maximum(a, b):
            return torch.maximum(a, b if torch.is_tensor(b) else torch.tensor(float(b)))

        @staticmethod
        def minimum(a, b):
            return torch.minimum(a, b if torch.is_tensor(b) else torch.tensor(float(b)))

        @staticmethod
        def transpose(x, axes=None):
            return x.permute(*axes) if axes else x.T

        @staticmethod
        def reshape(x, s):
            return x.reshape(s)

        @staticmethod
        def concatenate(xs, axis=0):
            return torch.cat(xs, dim=axis)

        @staticmethod
        def stack(xs, axis=0):
            return torch.stack(xs, dim=axis)

        @staticmethod
        def broadcast_to(x, s):
            return torch.broadcast_to(x, s)

        @staticmethod
        def flip(x, axis):
            return torch.flip(x, dims=(axis,))

        @staticmethod
        def tril(x, k=0):
            return torch.tril(x, k)

        @staticmethod
        def repeat(x, r, axis):
            return torch.repeat_interleave(x, r, dim=axis)

        @staticmethod
        def where(c, a, b):
            return torch.where(c, a, torch.tensor(float(b)) if not torch.is_tensor(b) else b)

        softplus = staticmethod(torch.nn.functional.softplus)

        @staticmethod
        def softmax(x, axis=-1):
            return torch.softmax(x, dim=axis)

        @staticmethod
        def log_softmax(x, axis=-1):
            return torch.log_softmax(x, dim=axis)

        @staticmethod
        def logsumexp(x, axis=-1, keepdims=False):
            return torch.logsumexp(x, dim=axis, keepdim=keepdims)

        @staticmethod
        def cross_entropy(z, y):
            return -(y * torch.log_softmax(z, dim=-1)).sum(-1).mean()

        @staticmethod
        def bce(z, y):
            return torch.nn.functional.binary_cross_entropy_with_logits(z, y)


class N:
    """The same model code, run by NumPy (the finite-difference oracle)."""

    exp, log, tanh, sqrt, sin, cos, abs, expm1, log1p = np.exp, np.log, np.tanh, np.sqrt, np.sin, np.cos, np.abs, \
        np.expm1, np.log1p
    negative, square, einsum, sum, mean, max, min = np.negative, np.square, np.einsum, np.sum, np.mean, np.max, np.min
    maximum, minimum, transpose, reshape, concatenate, stack = np.maximum, np.minimum, np.transpose, np.reshape, \
        np.concatenate, np.stack
    broadcast_to, where, flip, tril, repeat = np.broadcast_to, np.where, np.flip, np.tril, np.repeat

    @staticmethod
    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    @staticmethod
    def relu(x):
        return np.maximum(x, 0)

    @staticmethod
    def softplus(x):
        return np.logaddexp(0, x)

    @staticmethod
    def logsumexp(x, axis=-1, keepdims=False):
        m = np.max(x, axis=axis, keepdims=True)
        out = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
        return out if keepdims else np.squeeze(out, axis=axis)

    @staticmethod
    def log_softmax(x, axis=-1):
        return x - N.logsumexp(x, axis=axis, keepdims=True)

    @staticmethod
    def softmax(x, axis=-1):
        return np.exp(N.log_softmax(x, axis=axis))

    @staticmethod
    def cross_entropy(z, y):
        return -(y * N.log_softmax(z)).sum(-1).mean()

    @staticmethod
    def bce(z, y):
        return np.mean(N.softplus(z) - y * z)


class D:
    """The frontend, with the names above."""

    exp, log, tanh, sqrt, sin, cos, abs, expm1, log1p = da.exp, da.log, da.tanh, da.sqrt, da.sin, da.cos, da.abs, \
        da.expm1, da.log1p
    negative, square, einsum, sum, mean, max, min = da.negative, da.square, da.einsum, da.sum, da.mean, da.max, da.min
    maximum, minimum, transpose, reshape, concatenate, stack = da.maximum, da.minimum, da.transpose, da.reshape, \
        da.concatenate, da.stack
    broadcast_to, where, flip, tril, repeat = da.broadcast_to, da.where, da.flip, da.tril, da.repeat
    sigmoid, relu, softplus, softmax, log_softmax, logsumexp = nn.sigmoid, nn.relu, nn.softplus, nn.softmax, \
        nn.log_softmax, nn.logsumexp
    cross_entropy, bce = nn.cross_entropy, nn.binary_cross_entropy_with_logits


def torch_grads(f, arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    loss = f(T, *ts)
    loss.backward()
    return loss.item(), [t.grad.numpy() for t in ts]


def numpy_grads(f, arrays, eps=1e-6):
    """(loss, gradients) of ``f(N, *arrays)`` by central differences, one element at a time."""
    arrays = [np.array(a, dtype=float) for a in arrays]
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            x0 = a[i]
            a[i] = x0 + eps
            up = float(f(N, *arrays))
            a[i] = x0 - eps
            down = float(f(N, *arrays))
            a[i] = x0
            g[i] = (up - down) / (2 * eps)
        grads.append(g)
    return float(f(N, *arrays)), grads


def reference_grads(f, arrays):
    """(loss, gradients, rtol): PyTorch's autograd, or NumPy finite differences without torch."""
    if torch is not None:
        return (*torch_grads(f, arrays), 1e-10)
    return (*numpy_grads(f, arrays), 1e-6)


def ours(f, arrays, chunks, to_chunk=np.asarray):
    ras = [da.from_array(to_chunk(a), chunks=c) for a, c in zip(arrays, chunks)]
    loss, grads = da.value_and_grad(f(D, *ras), ras)
    for g, r in zip(grads, ras):
        assert g.shape == r.shape and g.chunks == r.chunks and g.dtype == r.dtype
    lv, gv = ad.compute(loss, grads)
    return lv, gv


def check(f, arrays, chunks):
    lv, gv = ours(f, arrays, chunks)
    tl, tg, rtol = reference_grads(f, arrays)
    np.testing.assert_allclose(lv, tl, rtol=1e-10, atol=1e-10)
    for a, b in zip(gv, tg):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-11 if rtol < 1e-9 else 1e-7)


rng = np.random.default_rng(7)
M = ((5, 7), ((2, 3), (4, 3)))          # ragged blocks
M2 = ((5, 7), ((3, 2), (1, 6)))         # the same shape chunked differently (rechunk gathers)
V = ((7,), ((3, 4),))
C = ((5, 1), ((2, 3), (1,)))

CASES = {
    # elementwise: unary, with baked scalars, binary, broadcasting
    "exp": (lambda m, x: m.sum(m.exp(x)), [M], False),
    "log": (lambda m, x: m.sum(m.log(x)), [M], True),
    "tanh": (lambda m, x: m.sum(m.tanh(x) ** 2), [M], False),
    "sqrt": (lambda m, x: m.sum(m.sqrt(x)), [M], True),
    "trig": (lambda m, x: m.sum(m.sin(x) * m.cos(x)), [M], False),
    "abs": (lambda m, x: m.sum(m.abs(x)), [M], False),
    "expm1-log1p": (lambda m, x: m.sum(m.expm1(x) + m.log1p(x)), [M], True),
    "negative-square": (lambda m, x: m.sum(m.negative(m.square(x))), [M], False),
    "scalars": (lambda m, x: m.sum((1 - x) * 2.5 / 3 + 3 / x - x ** 3 + 2 ** x), [M], True),
    "relu": (lambda m, x: m.sum(m.maximum(x, 0.0) + m.relu(x) + m.minimum(x, 0.3)), [M], False),
    "sigmoid-softplus": (lambda m, x: m.sum(m.sigmoid(x) * m.softplus(x)), [M], False),
    "arithmetic": (lambda m, x, y: m.sum(x * y + x / y - (x - y) ** 2 + m.maximum(x, y) - m.minimum(x, y)),
                   [M, M2], True),
    "power-arrays": (lambda m, x, y: m.sum(x ** y), [M, M2], True),
    "broadcast-row": (lambda m, x, v: m.sum(m.exp(x * v + v)), [M, V], False),
    "broadcast-column": (lambda m, x, c: m.sum(x * c - c / x), [M, C], True),
    "used-twice": (lambda m, x: m.sum(x * x + m.exp(x)) * m.sum(x), [M], False),
    "where": (lambda m, x, y: m.sum(m.where(x > 0, x * y, 0.0)), [M, M], False),
    "broadcast_to": (lambda m, v: m.sum(m.exp(m.broadcast_to(v, (5, 7))) * 2), [V], False),
    # contractions
    "matmul": (lambda m, a, b: m.sum(m.tanh(a @ b)), [M, ((7, 4), ((4, 3), (1, 3)))], False),
    "matmul-rechunked": (lambda m, a, b: m.sum(m.tanh(a @ b)), [M, ((7, 4), ((2, 5), (1, 3)))], False),
    "matvec": (lambda m, a, v: m.sum((a @ v) ** 2), [M, V], False),
    "gram": (lambda m, a: m.sum((m.transpose(a) @ a) ** 2), [M], False),
    "einsum-rowdot": (lambda m, a, b: m.sum(m.einsum("ij,ij->i", a, b) ** 2), [M, M], False),
    "einsum-abt": (lambda m, a, b: m.sum(m.einsum("ij,kj->ik", a, b) ** 2), [M, ((4, 7), ((3, 1), (4, 3)))], False),
    "einsum-3d": (lambda m, a, b: m.sum(m.einsum("ijk,jk->i", a, b) ** 2),
                  [((3, 4, 5), ((2, 1), (2, 2), (3, 2))), ((4, 5), ((2, 2), (3, 2)))], False),
    "einsum-colsum": (lambda m, a: m.sum(m.einsum("ij->j", a) ** 2), [M], False),
    "einsum-diagonal": (lambda m, a: m.sum(m.einsum("ii->i", a) ** 2), [((6, 6), ((2, 4), (2, 4)))], False),
    "outer": (lambda m, a, b: m.sum(m.einsum("i,j->ij", a, b) ** 2), [V, ((4,), ((1, 3),))], False),
    "batched-matmul": (lambda m, a, b: m.sum(m.tanh(m.einsum("bij,bjk->bik", a, b))),
                       [((3, 4, 5), ((1, 2), (2, 2), (3, 2))), ((3, 5, 2), ((1, 2), (3, 2), (1, 1)))], False),
    "vector-dot": (lambda m, a, b: m.sum(a * b) ** 2, [V, ((7,), ((2, 5),))], False),
    "0-d-scalar": (lambda m, a, b: m.sum(m.exp(a * b)), [M, ((), ())], False),
    # reductions
    "sums": (lambda m, x: m.sum(m.sum(x, axis=0) ** 2) + m.sum(m.sum(x, axis=1, keepdims=True) ** 3), [M], False),
    "means": (lambda m, x: m.mean(m.mean(x, axis=1) ** 2) + m.mean(x), [M], False),
    "max-min": (lambda m, x: m.max(x) + m.sum(m.max(x, axis=1) ** 2) + m.sum(m.min(x, axis=0, keepdims=True)),
                [M], False),
    # structure: transpose, reshape (Concat), slicing and rechunking (gathers, Filter), stacking
    "transpose": (lambda m, x: m.sum(m.exp(m.transpose(x)) * m.transpose(x)), [M], False),
    "reshape-flat": (lambda m, x: m.sum(m.reshape(x, (35,)) ** 2 * m.exp(m.reshape(x, (35,)))), [M], False),
    "reshape": (lambda m, x: m.sum(m.tanh(m.reshape(x, (7, 5)))), [M], False),
    "slice": (lambda m, x: m.sum(m.exp(x[1:4, 2:])), [M], False),
    "slice-blocks": (lambda m, x: m.sum(m.exp(x[2:, 4:])), [M], False),
    "slice-step": (lambda m, x: m.sum(m.exp(x[::2, 1::3])), [M], False),
    "slice-in-blocks": (lambda m, x: m.sum(m.exp(x[:1, 1:3])) + m.sum(x[:, ::4] ** 2), [M], False),  # Cut
    "int-index": (lambda m, x: m.sum(m.exp(x[1])) + m.sum(x[:, 2] ** 2), [M], False),
    "fancy-index-repeats": (lambda m, x: m.sum(m.exp(x[[0, 2, 2, 4]])) + m.sum(m.repeat(x, 2, 0) ** 2), [M], False),
    "flip": (lambda m, x: m.sum(m.flip(x, 1) * m.exp(x)), [M], False),
    "tril": (lambda m, x: m.sum(m.exp(m.tril(x, -1))), [((6, 6), ((2, 4), (3, 3)))], False),
    "concatenate": (lambda m, x, y: m.sum(m.exp(m.concatenate([x, y], axis=1))), [M, ((5, 3), ((2, 3), (1, 2)))],
                    False),
    "stack": (lambda m, x, y: m.sum(m.tanh(m.stack([x, y], axis=0))), [M, M2], False),
    # nn
    "softmax": (lambda m, x: m.sum(m.softmax(x) ** 2), [M], False),
    "log_softmax": (lambda m, x: m.sum(m.log_softmax(x, axis=0) * m.log_softmax(x)), [M], False),
    "logsumexp": (lambda m, x: m.sum(m.logsumexp(x) ** 2), [M], False),
    "cross_entropy": (lambda m, z, y: m.cross_entropy(z, y), [M, M2], False),
    "bce_with_logits": (lambda m, z, y: m.bce(z, y), [M, M2], False),
}


def case_arrays(name):
    f, specs, positive = CASES[name]
    arrays = []
    for shape, _ in specs:
        a = rng.standard_normal(shape)
        arrays.append(np.abs(a) + 0.5 if positive else a)
    return f, arrays, [c for _, c in specs]


@pytest.mark.parametrize("name", list(CASES))
def test_against_reference(name):
    """Against PyTorch's autograd (NumPy finite differences where torch is not installed)."""
    check(*case_arrays(name))


@pytest.mark.parametrize("name", ["matmul", "log_softmax", "fancy-index-repeats"])
def test_finite_difference_oracle_agrees_with_torch(name):
    needs_torch()
    f, arrays, _ = case_arrays(name)
    (nl, ng), (tl, tg) = numpy_grads(f, arrays), torch_grads(f, arrays)
    np.testing.assert_allclose(nl, tl, rtol=1e-12)
    for a, b in zip(ng, tg):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def _directional(f, arrays, chunks, eps=1e-6):
    """(<grad, v>, central difference of the loss along v), v random."""
    _, gv = ours(f, arrays, chunks)
    vs = [rng.standard_normal(a.shape) for a in arrays]

    def value(shift):
        ras = [da.from_array(a + shift * v, chunks=c) for a, v, c in zip(arrays, vs, chunks)]
        return float(f(D, *ras).compute())
    fd = (value(eps) - value(-eps)) / (2 * eps)
    return sum(float(np.sum(g * v)) for g, v in zip(gv, vs)), fd


@pytest.mark.parametrize("name", ["matmul", "softmax", "max-min", "slice", "reshape", "concatenate",
                                  "broadcast-column", "cross_entropy"])
def test_finite_differences(name):
    f, specs, positive = CASES[name]
    arrays = [np.abs(rng.standard_normal(s)) + 0.5 if positive else rng.standard_normal(s) for s, _ in specs]
    ad_val, fd = _directional(f, arrays, [c for _, c in specs])
    assert abs(ad_val - fd) <= 1e-6 * max(1.0, abs(fd))


@st.composite
def chunking(draw, n):
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=min(3, n - 1))))
    return tuple(np.diff([0] + cuts + [n]).tolist())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mlp_ragged_chunkings(data):
    """A small MLP with softmax cross-entropy, every operand chunked at random (keep=2: the
    plan search is the slow part here, and not what is tested)."""
    n, d, h, k = 6, 5, 4, 3
    ch = {s: data.draw(chunking(s), label=f"chunks{s}") for s in (n, d, h, k)}
    arrays = [rng.standard_normal(s) for s in ((n, d), (d, h), (h,), (h, k), (n, k))]
    arrays[-1] = np.eye(k)[rng.integers(0, k, n)]
    chunks = [(ch[n], ch[d]), (data.draw(chunking(d)), ch[h]), (ch[h],), (ch[h], ch[k]), (ch[n], ch[k])]

    def f(m, x, w1, b1, w2, y):
        return m.cross_entropy(m.tanh(x @ w1 + b1) @ w2, y)
    with da.config.set(keep=2):
        check(f, arrays, chunks)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), op=st.sampled_from(["exp", "relu", "sigmoid-softplus", "arithmetic", "broadcast-row",
                                           "matmul", "einsum-abt", "max-min", "means", "slice", "reshape",
                                           "concatenate", "log_softmax"]))
def test_kernels_ragged_chunkings(data, op):
    f, specs, positive = CASES[op]
    arrays, chunks = [], []
    for shape, _ in specs:
        a = rng.standard_normal(shape)
        arrays.append(np.abs(a) + 0.5 if positive else a)
        chunks.append(tuple(data.draw(chunking(s)) for s in shape))
    with da.config.set(keep=2):
        check(f, arrays, chunks)


# ---------------------------------------------------------------- TRA operators directly

def _relarray(x, expr):
    return RelArray(expr, x.sources)


def _check_expr(build, X, chunks, ref=lambda m, t: t):
    """grad of sum(tanh(build(x))**2) against the reference's (PyTorch, or NumPy finite
    differences) for the same function ``ref(namespace, t)``."""
    x = da.from_array(X, chunks=chunks)
    y = _relarray(x, build(x.expr))
    loss = da.sum(da.tanh(y) ** 2)
    lv, g = ad.compute(*da.value_and_grad(loss, x))
    tl, (tg,), rtol = reference_grads(lambda m, t: m.sum(m.tanh(ref(m, t)) ** 2), [X])
    np.testing.assert_allclose(lv, tl, rtol=1e-12)
    np.testing.assert_allclose(g, tg, rtol=rtol, atol=1e-12 if rtol < 1e-9 else 1e-7)
    return y


def test_tile_and_structural_rekey():
    """Tile (RJP: Concat) then a ReKey interleaving the tiles (RJP: its inverse)."""
    X = rng.standard_normal((5, 8))

    def build(e):
        t = Tile(e, 1, 2)  # (i, j, tile): 4-wide blocks into two 2-wide tiles
        return ReKey(t, KeyMap(lambda k: (k[0], 2 * k[1] + k[2]), "interleave"))
    _check_expr(build, X, ((2, 3), (4, 4)))


@pytest.mark.parametrize("cols", [(2, 2, 2), (3, 1, 2)])
def test_concat(cols):
    """Concat of column blocks (RJP: Tile for equal pieces, a join with offsets for ragged ones)."""
    X = rng.standard_normal((5, 6))

    def build(e):
        c = Concat(e, 1, 1)  # (i,) with whole rows
        return ReKey(c, KeyMap(lambda k: (k[0], 0), "key[0,0]"))
    _check_expr(build, X, ((2, 3), cols))


def test_filter_holes():
    """Filter leaving holes (RJP: zeros on the filtered keys, made explicit by densify), then a
    ReKey renumbering the rest."""
    X = rng.standard_normal((5, 7))

    def build(e):
        f = Filter(e, KeyPred(lambda k: k[1] != 1, "notBlock1", frozenset({1})))
        return ReKey(f, KeyMap(lambda k: (k[0], 0 if k[1] == 0 else 1), "renumber"))
    x_cols = (2, 3, 2)
    keep = list(range(0, 2)) + list(range(5, 7))
    _check_expr(build, X, ((2, 3), x_cols), lambda m, t: t[:, keep])


def test_filter_diagonal_blocks():
    """Filter to the diagonal blocks (holes everywhere off the diagonal)."""
    X = rng.standard_normal((6, 6))
    sizes = (2, 4)

    def build(e):
        f = Filter(e, KeyPred(lambda k: k[0] == k[1], "isEq", frozenset({0, 1})))
        s = Transform(f, K.Reduce("sum", (1,), keepdims=True))
        return ReKey(s, KeyMap(lambda k: (k[0], 0), "diag"))

    def ref(m, t):
        return m.concatenate([m.sum(t[:2, :2], axis=1, keepdims=True), m.sum(t[2:, 2:], axis=1, keepdims=True)])
    _check_expr(build, X, (sizes, sizes), ref)


def test_reverse_blocks_rekey():
    X = rng.standard_normal((5, 7))

    def build(e):
        return ReKey(e, KeyMap(lambda k: (k[0], 2 - k[1]), "reverse"))
    perm = list(range(5, 7)) + list(range(2, 5)) + list(range(0, 2))
    _check_expr(build, X, ((2, 3), (2, 3, 2)), lambda m, t: t[:, perm])


def test_aggregate_maximum_ties_share():
    """max with ties: the gradient is shared evenly (like torch.amax / jax.numpy.max)."""
    X = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 0.0, 2.0]])
    x = da.from_array(X, chunks=((1, 1), (2, 2)))
    g = da.grad(da.sum(da.max(x, axis=1)), x).compute()
    np.testing.assert_allclose(g, [[0, 0.5, 0.5, 0], [1 / 3, 1 / 3, 0, 1 / 3]])


# ---------------------------------------------------------------- API behaviour

def test_value_and_grad_structure_and_lazy():
    x = da.from_array(rng.standard_normal((4, 3)), chunks=2)
    w = da.from_array(rng.standard_normal(3), chunks=2)
    loss = da.sum((x @ w) ** 2)
    l2, grads = da.value_and_grad(loss, {"x": x, "w": w})
    assert l2 is loss and set(grads) == {"x", "w"}
    assert isinstance(grads["w"], RelArray)  # lazy
    t = da.grad(loss, (w,))
    assert isinstance(t, tuple) and len(t) == 1
    single = da.grad(loss, w)
    np.testing.assert_allclose(single.compute(), grads["w"].compute())


def test_gradient_dtype_follows_wrt():
    X = rng.standard_normal((4, 6)).astype(np.float32)
    x = da.from_array(X, chunks=(2, 3))
    loss = da.sum(da.exp(x).astype(np.float64))
    g = da.grad(loss, x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.compute(), np.exp(X), rtol=1e-6)


def test_wrt_intermediate():
    X, W = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    x, w = da.from_array(X, chunks=2), da.from_array(W, chunks=2)
    h = x @ w
    loss = da.sum(da.tanh(h))
    gh, gw = da.grad(loss, [h, w])
    np.testing.assert_allclose(gh.compute(), 1 - np.tanh(X @ W) ** 2)
    np.testing.assert_allclose(gw.compute(), X.T @ (1 - np.tanh(X @ W) ** 2))


def test_seed_vector_jacobian_product():
    X = rng.standard_normal((4, 5))
    S = rng.standard_normal((4, 5))
    x = da.from_array(X, chunks=(2, 3))
    y = da.exp(x) * 2
    g = da.grad(y, x, seed=S)
    np.testing.assert_allclose(g.compute(), S * 2 * np.exp(X))
    with pytest.raises(ValueError, match="scalar loss"):
        da.grad(y, x)
    with pytest.raises(ValueError, match="seed has shape"):
        da.grad(y, x, seed=np.ones((5, 4)))


def test_unused_wrt_zero_or_error():
    x = da.from_array(rng.standard_normal((4, 3)), chunks=2)
    z = da.from_array(rng.standard_normal((4, 3)), chunks=(3, 2))
    loss = da.sum(x * x)
    g = da.grad(loss, z)
    assert g.chunks == z.chunks and not g.compute().any()
    with pytest.raises(ValueError, match="not part of the loss"):
        da.grad(loss, z, allow_unused=False)
    cut = da.sum(da.astype(z > 0, float))  # only through a comparison: no gradient flows
    assert not da.grad(cut, z).compute().any()
    with pytest.raises(ValueError, match="non-differentiable"):
        da.grad(cut, z, allow_unused=False)


def test_errors():
    x = da.from_array(rng.standard_normal((4, 3)), chunks=2)
    with pytest.raises(TypeError, match="floating-point loss"):
        da.grad(da.argmax(x), x)
    with pytest.raises(TypeError, match="floating-point loss"):
        da.grad(da.sum(x > 0), x)
    with pytest.raises(TypeError, match="only floating-point"):
        da.grad(da.sum(x), da.from_array(np.arange(4), chunks=2))
    with pytest.raises(ad.GradError, match="cumsum"):
        da.grad(da.sum(da.cumsum(x, axis=0)), x)
    with pytest.raises(ad.GradError, match="not differentiable"):
        da.grad(da.sum(da.var(x, axis=0)), x)


def test_stop_gradient():
    X = rng.standard_normal((4, 3))
    x = da.from_array(X, chunks=2)
    g = da.grad(da.sum(x * ad.stop_gradient(x)), x).compute()
    np.testing.assert_allclose(g, X)


def test_register_vjp_for_custom_kernel():
    cube = K.Custom("cube", lambda c: c ** 3)
    ad.register_vjp(cube, lambda node, g, x, y: ad.zip_terms(
        g, x, ad.GradKernel("dcube", lambda gc, xc: gc * 3 * xc ** 2, 2)))
    X = rng.standard_normal((4, 3))
    x = da.from_array(X, chunks=2)
    y = RelArray(Transform(x.expr, cube), x.sources)
    np.testing.assert_allclose(da.grad(da.sum(y), x).compute(), 3 * X ** 2)


def test_backward_is_tra_over_the_same_nodes():
    """The gradient is a TRA expression whose DAG contains the forward nodes themselves."""
    x = da.from_array(rng.standard_normal((6, 4)), chunks=(3, 2))
    w = da.from_array(rng.standard_normal((4, 2)), chunks=2)
    h = da.tanh(x @ w)
    loss = da.sum(h)
    gw = da.grad(loss, w)
    back = {id(n) for n in gw.expr.walk()}
    assert id(h.expr) in back  # dtanh reads the forward tanh output
    kinds = {type(n).__name__ for n in gw.expr.walk()}
    assert {"Join", "Aggregate"} <= kinds
    # gW = Xᵀ·G is itself a join-aggregation (a contraction the optimizer plans)
    assert "einsum" in gw.explain(sites=4).__str__()


# ---------------------------------------------------------------- reuse: one plan, no recomputation

def _counting_input(x, counter):
    def count(c):
        counter.append(1)
        return c
    return RelArray(Transform(x.expr, K.Custom("counted", count)), x.sources)


def test_joint_plan_computes_forward_once():
    import dask
    calls = []
    X, W = rng.standard_normal((6, 8)), rng.standard_normal((8, 3))
    x = da.from_array(X, chunks=((2, 4), (3, 5)))
    w = da.from_array(W, chunks=((3, 5), (2, 1)))
    xc = _counting_input(x, calls)  # read by the forward (X·W) and the backward (Xᵀ·G)
    h = da.tanh(xc @ w)
    loss, gw = da.value_and_grad(da.sum(h * h), w)
    lv, g = ad.compute(loss, gw)
    assert len(calls) == 4  # each of x's 4 chunks once
    np.testing.assert_allclose(g, X.T @ (2 * np.tanh(X @ W) * (1 - np.tanh(X @ W) ** 2)))
    calls.clear()
    dask.compute(loss, gw)  # two plans: the forward is computed twice
    assert len(calls) == 8


def test_joint_graph_has_each_forward_operator_once():
    X, W1, W2 = rng.standard_normal((8, 16)), rng.standard_normal((16, 4)), rng.standard_normal((4, 12))
    x = da.from_array(X, chunks=(8, 4))
    w1 = da.from_array(W1, chunks=(4, 4))
    w2 = da.from_array(W2, chunks=(4, 3))
    a1 = nn.relu(x @ w1)
    z2 = a1 @ w2
    loss = da.sum(nn.softplus(z2)) / 8
    l, grads = da.value_and_grad(loss, [w1, w2])
    joint = ad.Joint(l, *grads)
    graph = dict(joint.__dask_graph__())
    layers = {}
    for k in graph:
        if isinstance(k, tuple):
            layers.setdefault(k[0].rsplit("-", 2)[0], set()).add(k[0])
    # one IA node (one layer) for each forward Transform: relu, softplus; tuples computed once
    for stage, n_tuples in (("relu", 1 * 1), ("softplus", 1 * 4)):
        assert len(layers[stage]) == 1
        assert sum(1 for k in graph if isinstance(k, tuple) and k[0].rsplit("-", 2)[0] == stage) == n_tuples
    # the forward matmuls: X·W1 and a1·W2, one layer each; the backward's are einsums
    assert len(layers["matmul"]) == 2
    lv, g1, g2 = joint.compute()
    z1 = X @ W1
    a = np.maximum(z1, 0)
    dz = 1 / (1 + np.exp(-(a @ W2))) / 8
    np.testing.assert_allclose(g2, a.T @ dz)
    np.testing.assert_allclose(g1, X.T @ ((dz @ W2.T) * (z1 > 0)))

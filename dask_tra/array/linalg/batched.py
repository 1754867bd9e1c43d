"""Stacks of small matrices: NumPy's batched linalg applied per chunk.

The last two axes are rechunked into one block (each matrix whole in one chunk); then one
``Transform`` per output runs ``numpy.linalg.<op>`` on the chunk's stack of matrices. The
leading (batch) axes keep their chunks, so the work spreads over their blocks. A
factorization with several outputs runs once per output used (``Transform(svd.U)``,
``Transform(svd.S)``): these are for small matrices; large 2-d ones go through the blocked
algorithms (TSQR, blocked Cholesky and LU).
"""

from __future__ import annotations

import numpy as np

from ...tra import Join, Transform
from ...tra.relation import ChunkAxis
from ..creation import asarray
from ..relations import rekey, wrap
from .kernels import _Host, float_dtype
from .qr import rechunked

# op -> (output core shapes as functions of (m, n), output dtype kind: "f" float, "r" real, "i" int)
_SHAPES = {
    "det": ([()], "f"),
    "slogdet": ([(), ()], "fr"),
    "inv": ([("m", "m")], "f"),
    "cholesky": ([("m", "m")], "f"),
    "eigh": ([("m",), ("m", "m")], "rf"),
    "eigvalsh": ([("m",)], "r"),
    "svd": ([("m", "m"), ("k",), ("n", "n")], "frf"),
    "svd_reduced": ([("m", "k"), ("k",), ("k", "n")], "frf"),
    "svdvals": ([("k",)], "r"),
    "qr": ([("m", "k"), ("k", "n")], "ff"),
    "qr_complete": ([("m", "m"), ("m", "n")], "ff"),
    "pinv": ([("n", "m")], "f"),
    "matrix_rank": ([()], "i"),
    "matrix_power": ([("m", "m")], "="),
}


def _out_dtype(kind, dtype):
    dtype = np.dtype(dtype)
    if kind == "=":
        return dtype
    if kind == "i":
        return np.dtype(np.int64)
    f = float_dtype(dtype)
    return np.finfo(f).dtype if kind == "r" else f


class Batched(_Host):
    """Output ``part`` of ``numpy.linalg.<op>`` on a chunk holding a stack of whole matrices."""

    def __init__(self, op, part, dtype, **params):
        self.op, self.part, self.params = op, int(part), tuple(sorted(params.items()))
        shapes, kinds = _SHAPES[op]
        self.core = shapes[self.part]
        self.in_dtype = np.dtype(dtype)
        self.dtype = _out_dtype(kinds[self.part], dtype)
        self.name = op if len(shapes) == 1 else f"{op}.{self.part}"

    def _run(self, a):
        kw = dict(self.params)
        if self.op != "matrix_power":
            a = np.asarray(a, dtype=float_dtype(self.in_dtype))
        out = _compute(self.op, a, kw)
        out = out[self.part] if isinstance(out, tuple) else out
        return np.asarray(out, dtype=self.dtype)

    def out_axes(self, frontier, axes):
        m, n = (ax.constant for ax in axes[-2:])
        ext = {"m": m, "n": n, "k": min(m, n)}
        return tuple(axes[:-2]) + tuple(ChunkAxis.const(ext[c]) for c in self.core)


def _compute(op, a, kw):
    if op == "svd":
        return tuple(np.linalg.svd(a, full_matrices=True))
    if op == "svd_reduced":
        return tuple(np.linalg.svd(a, full_matrices=False))
    if op == "svdvals":
        return np.linalg.svd(a, compute_uv=False)
    if op == "qr":
        return tuple(np.linalg.qr(a))
    if op == "qr_complete":
        return tuple(np.linalg.qr(a, mode="complete"))
    if op == "slogdet":
        return tuple(np.linalg.slogdet(a))
    if op == "eigh":
        return tuple(np.linalg.eigh(a))
    if op == "matrix_rank":
        return np.linalg.matrix_rank(a, **_rank_kw(a, kw))
    if op == "pinv":
        return np.linalg.pinv(a, **_rank_kw(a, kw, "rcond"))
    return getattr(np.linalg, op)(a, **kw)


def _rank_kw(a, kw, name="tol"):
    """The Array API's ``rtol`` (relative to the largest singular value) as NumPy's argument."""
    rtol = kw.get("rtol")
    if rtol is None:
        return {"rtol": None} if name == "rcond" else {}
    if name == "rcond":
        return {"rcond": rtol}
    s = np.linalg.svd(a, compute_uv=False)
    smax = s.max(axis=-1, keepdims=True) if s.size else s[..., :1]
    return {"tol": np.asarray(rtol)[..., None] * smax if np.ndim(rtol) else rtol * smax[..., 0]}


def batched(op, x, part=0, **params):
    """Output ``part`` of ``numpy.linalg.<op>`` of a stack of matrices ``x`` (..., m, n)."""
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"{op}: expected an array of matrices (at least 2 dimensions), got {x.ndim}")
    b = x.ndim - 2
    x = rechunked(x, {b: (x.shape[-2],), b + 1: (x.shape[-1],)})
    kernel = Batched(op, part, x.dtype, **params)
    expr = Transform(x.expr, kernel)
    return wrap(rekey(expr, list(range(b + len(kernel.core)))), x)


class BatchedSolve(_Host):
    """``numpy.linalg.solve`` on chunks holding whole matrices and right-hand sides."""

    arity = 2

    def __init__(self, dtype, vector):
        self.dtype, self.vector, self.name = float_dtype(dtype), bool(vector), "solve"

    def compute(self, a, b):
        return np.linalg.solve(a, b[..., None])[..., 0] if self.vector else np.linalg.solve(a, b)

    def out_axes(self, frontier, a, b):
        return tuple(b)


def batched_solve(a, b):
    """``x`` with ``a x = b`` for stacks (the Array API's ``linalg.solve``: b a vector when 1-d)."""
    from ..manipulation import broadcast_to

    a, b = asarray(a), asarray(b)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"solve: x1 must be a stack of square matrices, got shape {a.shape}")
    vector = b.ndim == 1
    if vector:
        if b.shape[0] != a.shape[-1]:
            raise ValueError(f"solve: x2 of shape {b.shape} does not match x1 of shape {a.shape}")
        shape = a.shape[:-1]
    else:
        if b.shape[-2] != a.shape[-1]:
            raise ValueError(f"solve: x2 of shape {b.shape} does not match x1 of shape {a.shape}")
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        shape, a = batch + b.shape[-2:], broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, shape)
    dt = np.result_type(float_dtype(a.dtype), float_dtype(b.dtype))
    a, b = a.astype(dt), b.astype(dt)
    nb = a.ndim - 2
    a = rechunked(a, {nb: (a.shape[-2],), nb + 1: (a.shape[-1],)})
    core = {d: (b.shape[d],) for d in range(nb, b.ndim)}
    b = rechunked(b, {**core, **{d: a.chunks[d] for d in range(nb)}})
    keys = list(range(nb + 1))  # batch dims and a's row dim against b's
    expr = Join(a.expr, b.expr, keys, keys, BatchedSolve(dt, vector))
    return wrap(rekey(expr, keys if vector else keys + [nb + 2]), a, b)


__all__ = ["batched", "batched_solve"]

"""The papers' workloads, scaled to a 2-core machine, written once against an array namespace.

Each computation is a function ``fn(xp, inputs, barrier)`` run with ``xp`` = ``dask_tra``
(on RelArrays), ``dask.array`` (on the same blocks via ``.to_dask()``) or ``numpy``.
Several outputs (the FFNN's two updated weight matrices) are planned by dask_tra as one
computation with ``dask_tra``'s ``Joint`` where it exists; without it, ``barrier(*arrays)``
marks where intermediates both outputs read are materialised (persisted, then planned as
placed inputs) so they are not computed once per output. For dask.array and NumPy it does
nothing.

Sizes are the papers' shapes scaled down (ratios kept where they matter); ``--quick``
shrinks every dim about 3×; ``--size large`` runs the three matmuls at the demo's shapes
(4000³, 1000×64000×1000, 8000×1000×8000 in 1000² blocks), where communication dominates. Inputs are ``dt.random`` arrays with fixed seeds, so every
system computes on identical data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

LR = 1e-3


@dataclass
class Workload:
    name: str
    title: str
    group: str
    dims: dict                      # full-size dims
    quick: dict                     # --quick dims
    inputs: Callable                # (dims) -> {name: (shape, chunks, low, high)}
    fn: Callable                    # (xp, inputs, barrier) -> tuple of outputs
    torch_fn: Callable | None = None  # (torch, inputs as tensors) -> tuple of outputs
    needs: tuple = ()               # dask_tra features used (checked before running)
    contraction: bool = True        # forced strategies apply
    note: str = ""
    flops: Callable | None = None
    kind_of_output: str = "array"
    extra: dict = field(default_factory=dict)
    large: dict | None = None        # --size large dims (where communication dominates)

    def size(self, quick: bool, large: bool = False) -> dict:
        if large:
            return self.large if self.large is not None else self.dims
        return self.quick if quick else self.dims


def blocks(n, k):
    """Chunk size cutting n into k blocks (k capped at n)."""
    return -(-n // max(1, min(k, n)))


# -- 1. matrix multiplication (TRA paper §6.1) -------------------------------------------------

def _mm_inputs(d):
    i, k, j = d["I"], d["K"], d["J"]
    bi, bk, bj = d.get("bi", 4), d.get("bk", 8), d.get("bj", 4)
    return {"A": ((i, k), (blocks(i, bi), blocks(k, bk)), -1, 1),
            "B": ((k, j), (blocks(k, bk), blocks(j, bj)), -1, 1)}


def matmul(xp, x, barrier):
    return (x["A"] @ x["B"],)


def _mm_flops(d):
    return 2 * d["I"] * d["K"] * d["J"]


# -- 2. nearest neighbour in a Riemannian metric (TRA paper §6.2) ------------------------------

def _nn_inputs(d):
    n, dd = d["N"], d["D"]
    bn, bd = d.get("bn", 8), d.get("bd", 4)
    return {"X": ((n, dd), (blocks(n, bn), blocks(dd, bd)), -1, 1),
            "xq": ((1, dd), (1, blocks(dd, bd)), -1, 1),
            "A": ((dd, dd), (blocks(dd, bd), blocks(dd, bd)), 0, 1)}


def nearest(xp, x, barrier):
    """argmin_i (x_i - x_q) A (x_i - x_q)^T."""
    diff = x["X"] - x["xq"]
    proj = diff @ x["A"]
    dist = (proj * diff).sum(axis=1)
    return (xp.argmin(dist),)


def _nn_flops(d):
    return 2 * d["N"] * d["D"] ** 2


# -- 3. one SGD step of a two-layer FFNN (TRA paper §6.3) --------------------------------------

def _ffnn_inputs(d):
    n, dd, h, l = d["N"], d["D"], d["H"], d["L"]
    bn, bd, bh, bl = d.get("bn", 4), d.get("bd", 4), d.get("bh", 4), d.get("bl", 4)
    return {"X": ((n, dd), (blocks(n, bn), blocks(dd, bd)), 0, 1),
            "Y": ((n, l), (blocks(n, bn), blocks(l, bl)), 0, 1),   # soft targets in [0, 1]
            "W1": ((dd, h), (blocks(dd, bd), blocks(h, bh)), -0.05, 0.05),
            "W2": ((h, l), (blocks(h, bh), blocks(l, bl)), -0.05, 0.05)}


def ffnn_step(xp, x, barrier, lr=LR):
    """Forward relu(X W1) -> sigmoid(A1 W2); gradients of the summed binary cross-entropy by
    hand; returns the updated (W1, W2)."""
    X, Y, W1, W2 = x["X"], x["Y"], x["W1"], x["W2"]
    a1, = barrier(xp.maximum(X @ W1, 0))
    g2, = barrier(1 / (1 + xp.exp(-(a1 @ W2))) - Y)     # dLoss/dZ2
    w2 = W2 - lr * (a1.T @ g2)
    w1 = W1 - lr * (X.T @ ((g2 @ W2.T) * (a1 > 0)))
    return w1, w2


def ffnn_torch(torch, x, lr=LR):
    X, Y = x["X"], x["Y"]
    W1 = x["W1"].clone().requires_grad_(True)
    W2 = x["W2"].clone().requires_grad_(True)
    z2 = torch.relu(X @ W1) @ W2
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z2, Y, reduction="sum")
    loss.backward()
    with torch.no_grad():
        return W1 - lr * W1.grad, W2 - lr * W2.grad


def _ffnn_flops(d):
    n, dd, h, l = d["N"], d["D"], d["H"], d["L"]
    return 2 * (2 * n * dd * h + 3 * n * h * l)


# -- 4. EinDecomp's matrix chain (A×B)+(C×(D×E)) (EinDecomp paper §9, experiment 1) -----------

def _chain_inputs(d):
    s, skew, b = d["s"], d["skew"], d.get("b", 4)
    if skew:
        t, w = max(1, s // 10), 10 * s
        shapes = {"A": (s, t), "B": (t, s), "C": (s, t), "D": (t, w), "E": (w, s)}
    else:
        shapes = {k: (s, s) for k in "ABCDE"}
    nb = {s: b, 10 * s: 2 * b, max(1, s // 10): max(1, b // 2)}  # blocks per dim by its length
    return {k: (sh, tuple(blocks(n, nb[n]) for n in sh), -1, 1) for k, sh in shapes.items()}


def chain(xp, x, barrier):
    return ((x["A"] @ x["B"]) + (x["C"] @ (x["D"] @ x["E"])),)


def _chain_flops(d):
    s = d["s"]
    if d["skew"]:
        t, w = s // 10, 10 * s
        return 2 * (s * t * s + t * w * s + s * t * s)
    return 3 * 2 * s ** 3


# -- 5. blocked linear algebra (issue 17): TSQR, SVD, Cholesky, solve ---------------------------

def _tall_inputs(d):
    return {"A": ((d["M"], d["K"]), (blocks(d["M"], d.get("b", 8)), d["K"]), -1, 1)}


def _square_inputs(d):
    n, b = d["N"], blocks(d["N"], d.get("b", 4))
    return {"A": ((n, n), (b, b), -1, 1), "B": ((n, d.get("R", 8)), (b, d.get("R", 8)), -1, 1)}


def _linalg(xp):
    return xp.linalg


def qr_tall(xp, x, barrier):
    return tuple(_linalg(xp).qr(x["A"]))


def svd_tall(xp, x, barrier):
    kw = {"full_matrices": False} if xp.__name__ == "numpy" else {}
    return tuple(_linalg(xp).svd(x["A"], **kw))


def _eye_like(xp, a):
    n = a.shape[0]
    return xp.eye(n) if xp.__name__ == "numpy" else xp.eye(n, chunks=a.chunks[0][0])


def cholesky_spd(xp, x, barrier):
    a = x["A"]
    return (_linalg(xp).cholesky(a @ a.T + a.shape[0] * _eye_like(xp, a)),)


def solve_general(xp, x, barrier):
    a = x["A"]
    return (_linalg(xp).solve(a + a.shape[0] * _eye_like(xp, a), x["B"]),)


def _mm(name, title, full, quick, note, large):
    return Workload(name, title, "matmul", full, quick, _mm_inputs, matmul, needs=("matmul",),
                    note=note, flops=_mm_flops, large=large)


SUITES = {
    "paper": [
        _mm("mm-general", "Matmul: two general matrices", dict(I=1600, K=1600, J=1600),
            dict(I=500, K=500, J=500), "paper: I=K=J=4e4",
            dict(I=4000, K=4000, J=4000, bi=4, bk=4, bj=4)),
        _mm("mm-common-large", "Matmul: a common large dim", dict(I=400, K=25600, J=400),
            dict(I=128, K=8192, J=128), "paper: I=J=1e4, K=6.4e5",
            dict(I=1000, K=64000, J=1000, bi=1, bk=64, bj=1)),
        _mm("mm-two-large", "Matmul: two large dims", dict(I=3200, K=400, J=3200),
            dict(I=1024, K=128, J=1024), "paper: I=J=8e4, K=1e4",
            dict(I=8000, K=1000, J=8000, bi=8, bk=1, bj=8)),
        Workload("nn-large", "Nearest neighbour, Riemannian metric: Large (many points)", "nn",
                 dict(N=16000, D=640), dict(N=4000, D=200), _nn_inputs, nearest,
                 needs=("subtract", "matmul", "multiply", "sum", "argmin"),
                 note="paper: N=1.5e5, D=6e3", flops=_nn_flops, kind_of_output="index"),
        Workload("nn-wide", "Nearest neighbour, Riemannian metric: Wide (many features)", "nn",
                 dict(N=600, D=3000), dict(N=200, D=1000), _nn_inputs, nearest,
                 needs=("subtract", "matmul", "multiply", "sum", "argmin"),
                 note="paper: N=6e3, D=3e4", flops=_nn_flops, kind_of_output="index"),
        Workload("ffnn-speech", "FFNN SGD step: wide hidden layer, small input (speech-like)", "ffnn",
                 dict(N=1600, D=320, H=4000, L=10), dict(N=512, D=100, H=1200, L=10),
                 _ffnn_inputs, ffnn_step, ffnn_torch,
                 needs=("matmul", "T", "maximum", "exp", "greater", "multiply", "subtract", "divide"),
                 note="paper: N=1e4, D=1600, H=1e5..2e5, L=10", flops=_ffnn_flops),
        Workload("ffnn-xml", "FFNN SGD step: huge input/output layers (extreme-classification-like)",
                 "ffnn", dict(N=256, D=32000, H=256, L=4000), dict(N=128, D=8000, H=128, L=1000),
                 _ffnn_inputs, ffnn_step, ffnn_torch,
                 needs=("matmul", "T", "maximum", "exp", "greater", "multiply", "subtract", "divide"),
                 note="paper: N=1e3, D=597540, H=1e3..7e3, L=14588 (sparse X there, dense here)",
                 flops=_ffnn_flops),
        Workload("chain-square", "Matrix chain (A×B)+(C×(D×E)), square", "chain",
                 dict(s=1200, skew=False), dict(s=400, skew=False), _chain_inputs, chain,
                 needs=("matmul", "add"), note="EinDecomp exp. 1: all s×s", flops=_chain_flops),
        Workload("chain-skewed", "Matrix chain (A×B)+(C×(D×E)), skewed", "chain",
                 dict(s=1200, skew=True), dict(s=400, skew=True), _chain_inputs, chain,
                 needs=("matmul", "add"),
                 note="EinDecomp exp. 1: A s×.1s, B .1s×s, C s×.1s, D .1s×10s, E 10s×s",
                 flops=_chain_flops),
    ],
    "linalg": [
        Workload("tsqr", "QR of a tall-and-skinny matrix (TSQR)", "linalg", dict(M=200000, K=100, b=8),
                 dict(M=40000, K=50, b=8), _tall_inputs, qr_tall, contraction=False),
        Workload("svd-tall", "SVD of a tall-and-skinny matrix (through TSQR)", "linalg",
                 dict(M=200000, K=100, b=8), dict(M=40000, K=50, b=8), _tall_inputs, svd_tall, contraction=False),
        Workload("cholesky", "Blocked Cholesky of A Aᵀ + n I", "linalg", dict(N=4000, b=4), dict(N=1200, b=3),
                 _square_inputs, cholesky_spd, contraction=False),
        Workload("solve", "Blocked LU solve of (A + n I) X = B", "linalg", dict(N=4000, b=4, R=8),
                 dict(N=1200, b=3, R=8), _square_inputs, solve_general, contraction=False),
    ],
}


def missing_features(w: Workload) -> list[str]:
    """The dask_tra features ``w`` needs that are absent, found by trying each on tiny arrays."""
    import numpy as np

    import dask_tra as dt
    try:
        a = dt.from_array(np.ones((2, 2)), chunks=1)
        v = dt.from_array(np.ones((1, 2)), chunks=1)
    except Exception as e:  # noqa: BLE001
        return [f"from_array ({e})"]
    probes = {
        "matmul": lambda: a @ a,
        "T": lambda: a.T,
        "add": lambda: a + a,
        "subtract": lambda: a - v,
        "multiply": lambda: a * a,
        "divide": lambda: 1 / (1 + a),
        "maximum": lambda: dt.maximum(a, 0),
        "exp": lambda: dt.exp(-a),
        "greater": lambda: a * (a > 0),
        "sum": lambda: a.sum(axis=1),
        "argmin": lambda: dt.argmin(a.sum(axis=1)),
    }
    out = []
    for f in w.needs:
        try:
            r = probes[f]()
            if not hasattr(r, "expr"):
                out.append(f"{f} (returned {type(r).__name__}, not a RelArray)")
        except Exception as e:  # noqa: BLE001
            out.append(f"{f} ({type(e).__name__}: {e})")
    return out


def make_inputs(w: Workload, dims: dict, seed: int = 0) -> dict:
    """Fresh lazily-created dask_tra inputs (new names each call, identical values per seed)."""
    import dask_tra as dt
    out = {}
    for i, (name, (shape, chunks, low, high)) in enumerate(sorted(w.inputs(dims).items())):
        out[name] = dt.random.uniform(low, high, shape, chunks=chunks, seed=1000 * seed + i + 1)
    return out


def describe_dims(w: Workload, dims: dict) -> str:
    specs = w.inputs(dims)
    return ", ".join(f"{n} {'×'.join(map(str, s[0]))}" for n, s in sorted(specs.items()))


def input_bytes(w: Workload, dims: dict) -> int:
    return sum(8 * math.prod(s[0]) for s in w.inputs(dims).values())

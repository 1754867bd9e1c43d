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

Suite ``sparse`` (issue 14): block-sparse inputs (``dt.block_sparse_random`` with a density and
a row pattern; an input spec then has a fifth element ``{"density": .., "pattern": ..}``, and
dask.array reads the same blocks through ``.to_dask()``, missing ones as zeros), and a dense
matmul whose persisted inputs are moved to an irregular placement by ``client.rebalance()``
before the timed run (``Workload.after_persist``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from dask_tra.backends.cluster import workers_info

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
    # (client, {name: persisted input}) -> None: run after the inputs are persisted and before
    # the timed run, for every cluster competitor alike (e.g. to move the inputs' blocks)
    after_persist: Callable | None = None

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


# -- 6. block-sparse and irregular placement (issue 14) -----------------------------------------

def _sparse_mm_inputs(d):
    """A: N×N block-sparse (``density``, ``pattern``); B: N×M dense (``dense_b``) or N×M
    block-sparse at ``density_b`` (random pattern)."""
    n, m, b, bm = d["N"], d["M"], d["b"], d.get("bm", d["b"])
    a = ((n, n), (b, b), 0, 1, {"density": d["density"], "pattern": d.get("pattern", "random")})
    if d.get("density_b") is None:
        bb = ((n, m), (b, bm), -1, 1)
    else:
        bb = ((n, m), (b, bm), 0, 1, {"density": d["density_b"], "pattern": "random"})
    return {"A": a, "B": bb}


def _sparse_mm_flops(d):  # of the dense equivalent
    return 2 * d["N"] * d["N"] * d["M"]


def _pile_then_loosen(dask_scheduler, keys):
    """On the scheduler: move every block of ``keys`` to the first worker (as if earlier work
    left them there), and let ``rebalance`` move data whatever the workers' memory use (by
    default it moves nothing while every worker is below 30% of its memory limit). Returns the
    settings it changed, for ``_restore``."""
    import asyncio
    workers = sorted(dask_scheduler.workers)
    target = dask_scheduler.workers[workers[0]]
    msgs = []
    for k in keys:
        ts = dask_scheduler.tasks.get(k)
        if ts is not None and ts.who_has and target not in ts.who_has:
            msgs.append((next(iter(ts.who_has)), target, ts))
    old = {a: getattr(dask_scheduler, a) for a in _LOOSE}
    for a, v in _LOOSE.items():
        setattr(dask_scheduler, a, v)

    async def move():
        if msgs:
            await dask_scheduler._rebalance_move_data(msgs, stimulus_id="bench-pile")
        return old
    return asyncio.ensure_future(move())


_LOOSE = {"MEMORY_REBALANCE_MEASURE": "managed", "MEMORY_REBALANCE_SENDER_MIN": 0.0,
          "MEMORY_REBALANCE_RECIPIENT_MAX": 1.0, "MEMORY_REBALANCE_HALF_GAP": 0.0025}


def _restore(dask_scheduler, old):
    for a, v in old.items():
        setattr(dask_scheduler, a, v)


_REBALANCED: dict = {}  # (workers, blocks) -> {(input, block index): worker}, per process


def rebalance_irregular(client, x):
    """Pile the persisted inputs on one worker, then ``client.rebalance()`` them: the blocks
    spread least-recently-inserted first until each worker holds about the same bytes, an
    irregular placement no whole-relation partitioning matches.

    ``rebalance`` is not repeatable (which blocks move depends on the order they arrived), so
    only the first call for a set of blocks and workers runs it and records where each block
    landed; every later call (the other competitors, the repeats) moves each block back to its
    recorded worker, and all compare their plans on one placement."""
    from distributed import futures_of

    from dask_tra.runtime.session import ensure_installed
    futs = {(name, f.key[1:]): f for name, a in x.items() for f in futures_of(a)}
    ensure_installed(client)  # the policy ``_hold`` relies on (dask_tra installs it on first use)
    client.run_on_scheduler(_hold, keys=[f.key for f in futs.values()])
    sig = (tuple(sorted(workers_info(client))), tuple(sorted(futs)))
    placed = _REBALANCED.get(sig)
    if placed is None:
        async def pile(dask_scheduler, keys):
            return await _pile_then_loosen(dask_scheduler, keys)
        old = client.run_on_scheduler(pile, keys=[f.key for f in futs.values()])
        try:
            client.rebalance(list(futs.values()))
        finally:
            client.run_on_scheduler(_restore, old=old)
        who = client.who_has(list(futs.values()))
        _REBALANCED[sig] = {b: who[f.key][0] for b, f in futs.items()}
        return
    dest = {f.key: placed[b] for b, f in futs.items()}
    client.run_on_scheduler(_move_to, dest=dest)
    who = client.who_has(list(futs.values()))
    wrong = [k for k, w in dest.items() if list(who[k]) != [w]]
    if wrong:
        raise RuntimeError(f"{len(wrong)} blocks not on their recorded worker after the replay, e.g. {wrong[0]}")


def _hold(dask_scheduler, keys):
    """On the scheduler: keep the active memory manager from dropping any replica of ``keys`` for
    a while (dask_tra's policy, ``dask_tra.runtime.amm``). A move copies a block, then deletes the
    sender's copy; at 250 Mbit/s the policy could drop the new copy in between, and the block
    was lost and recomputed."""
    from dask_tra.runtime.plugin import NAME
    dask_scheduler.plugins[NAME].holds.hold(keys, seconds=120.0)


async def _move_to(dask_scheduler, dest):
    """On the scheduler: move each key to the worker ``dest`` names (and only there)."""
    msgs = []
    for k, w in dest.items():
        ts = dask_scheduler.tasks[k]
        target = dask_scheduler.workers[w]
        if target not in ts.who_has:
            msgs.append((next(iter(ts.who_has)), target, ts))
    if msgs:
        await dask_scheduler._rebalance_move_data(msgs, stimulus_id="bench-replay")
    extra = {}
    for k, w in dest.items():
        for ws in dask_scheduler.tasks[k].who_has:
            if ws.address != w:
                extra.setdefault(ws.address, []).append(k)
    for addr, keys in extra.items():
        await dask_scheduler.delete_worker_data(addr, keys, stimulus_id="bench-replay")


def placement_summary(client, x) -> str:
    """Blocks per worker of the inputs ``x`` (for the log)."""
    from distributed import futures_of
    who = client.who_has([f for a in x.values() for f in futures_of(a)])
    count = {}
    for ws in who.values():
        for w in ws:
            count[w] = count.get(w, 0) + 1
    return " ".join(str(count.get(w, 0)) for w in sorted(workers_info(client)))


def _sparse_mm(name, title, density, pattern, note=""):
    full = dict(N=4800, M=800, b=200, bm=400, density=density, pattern=pattern)
    quick = dict(N=1600, M=400, b=200, bm=200, density=density, pattern=pattern)
    return Workload(name, title, "sparse", full, quick, _sparse_mm_inputs, matmul, needs=("matmul",),
                    note=note or f"{density:.0%} of A's blocks, {pattern} rows; B dense",
                    flops=_sparse_mm_flops)


SPARSE = [
    _sparse_mm(f"sp{round(100 * dens)}-{pat}", f"Block-sparse ({dens:.0%}, {pat}) × dense matmul", dens, pat)
    for dens in (0.05, 0.30) for pat in ("random", "banded", "power-law")
] + [
    Workload("sp10-x-sp10", "Block-sparse × block-sparse matmul (10% × 10%, random)", "sparse",
             dict(N=2400, M=2400, b=150, density=0.10, density_b=0.10),
             dict(N=1200, M=1200, b=100, density=0.10, density_b=0.10), _sparse_mm_inputs, matmul,
             needs=("matmul",), note="10% of A's and of B's blocks, random", flops=_sparse_mm_flops),
    Workload("mm-rebalanced", "Dense matmul from persisted inputs after client.rebalance()", "sparse",
             dict(I=2400, K=2400, J=2400, bi=6, bk=6, bj=6), dict(I=1200, K=1200, J=1200, bi=4, bk=4, bj=4),
             _mm_inputs, matmul, needs=("matmul",), flops=_mm_flops, after_persist=rebalance_irregular,
             note="inputs piled on one worker, then client.rebalance(): an irregular placement"),
]


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
    "sparse": SPARSE,
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
    for i, (name, spec) in enumerate(sorted(w.inputs(dims).items())):
        shape, chunks, low, high = spec[:4]
        if len(spec) > 4:  # block-sparse: uniform [0, 1) in the held blocks
            sp = spec[4]
            out[name] = dt.block_sparse_random(shape, chunks, sp["density"], seed=1000 * seed + i + 1,
                                               pattern=sp.get("pattern", "random"))
        else:
            out[name] = dt.random.uniform(low, high, shape, chunks=chunks, seed=1000 * seed + i + 1)
    return out


def describe_dims(w: Workload, dims: dict) -> str:
    specs = w.inputs(dims)
    def one(n, s):
        text = f"{n} {'×'.join(map(str, s[0]))}"
        if len(s) > 4:
            text += f" ({s[4]['density']:.0%} of {'×'.join(map(str, s[1]))} blocks, {s[4].get('pattern', 'random')})"
        return text
    return ", ".join(one(n, s) for n, s in sorted(specs.items()))


def input_bytes(w: Workload, dims: dict) -> int:
    """Dense bytes of the inputs (a block-sparse one: times its density)."""
    return int(sum(8 * math.prod(s[0]) * (s[4]["density"] if len(s) > 4 else 1) for s in w.inputs(dims).values()))

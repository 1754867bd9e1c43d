"""The demo: matrix multiply as a TRA expression, checked against NumPy."""
from __future__ import annotations

import time

import numpy as np

from .tra import Aggregate, Input, Join, assemble, evaluate, split
from .tra import kernels as K

SHAPES = {  # the TRA paper's three shapes, scaled to one machine
    "general": (4000, 4000, 4000),
    "common large dim": (1000, 64000, 1000),
    "two large dims": (8000, 1000, 8000),
}


def run_demo(scheduler=None, workers=4, scale=1.0) -> int:
    rng = np.random.default_rng(0)
    for name, (i, k, j) in SHAPES.items():
        i, k, j = (max(1, int(n * scale)) for n in (i, k, j))
        a, b = rng.uniform(-1, 1, (i, k)), rng.uniform(-1, 1, (k, j))
        ta, ra = split(a, (-(-i // 4), -(-k // 4)))
        tb, rb = split(b, (-(-k // 4), -(-j // 4)))
        expr = Aggregate(Join(Input("A", ta), Input("B", tb), (1,), (0,), K.matmul), (0, 2), K.add)
        t0 = time.perf_counter()
        out = assemble(expr.type, evaluate(expr, {"A": ra, "B": rb}))
        dt = time.perf_counter() - t0
        err = np.abs(out - a @ b).max()
        print(f"{name:18s} {i}x{k}x{j}: {expr!r}\n{'':18s} reference executor {dt:.2f}s, max |err| vs NumPy {err:.1e}")
        if not np.allclose(out, a @ b):
            return 1
    return 0

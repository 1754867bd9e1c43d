"""Logistic regression trained by gradient descent with dask_tra's relational autodiff.

The model is written with the NumPy-style frontend; ``dask_tra.value_and_grad`` turns the
loss expression into the gradients' TRA expressions (sharing the forward nodes), and
``dask_tra.autodiff.compute`` runs loss and gradients as ONE plan per step.

    python examples/logistic_regression.py             # threaded scheduler
    python examples/logistic_regression.py --cluster   # a small LocalCluster (2 workers)
"""
from __future__ import annotations

import sys
import time

import numpy as np

import dask_tra as da
from dask_tra import autodiff as ad
from dask_tra.autodiff import nn


def make_data(n=4000, d=20, seed=0):
    """Two noisy classes separated by a random hyperplane."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w_true = rng.standard_normal(d)
    y = (X @ w_true + 0.3 + 0.5 * rng.standard_normal(n) > 0).astype(np.float64)
    return X, y


def loss_fn(x, y, w, b, l2):
    """Mean logistic loss (log(1 + e^z) - y·z, z = x·w + b) plus an L2 penalty on w."""
    z = x @ w + b
    return da.mean(nn.softplus(z) - y * z) + 0.5 * l2 * da.sum(w * w)


def step(params, x, y, lr, l2=1e-3):
    """One gradient-descent step; params are NumPy arrays, x and y RelArrays (the data stay
    chunked as they are). Returns (loss, new params)."""
    w, b = params
    wr = da.from_array(w, chunks=(x.chunks[1],))
    br = da.from_array(b)
    loss, grads = da.value_and_grad(loss_fn(x, y, wr, br, l2), [wr, br])
    lv, (gw, gb) = ad.compute(loss, grads)  # forward and backward: one plan
    return float(lv), (w - lr * gw, b - lr * gb)


def numpy_step(params, X, y, lr, l2=1e-3):
    """The same step by hand, for comparison."""
    w, b = params
    z = X @ w + b
    p = 1 / (1 + np.exp(-z))
    loss = np.mean(np.logaddexp(0, z) - y * z) + 0.5 * l2 * np.sum(w * w)
    gz = (p - y) / len(y)
    return float(loss), (w - lr * (X.T @ gz + l2 * w), b - lr * np.sum(gz))


def main(steps=60, lr=1.0):
    X, y = make_data()
    n, d = X.shape
    x = da.from_array(X, chunks=((1000,) * 4, (12, 8)))  # ragged feature blocks
    yy = da.from_array(y, chunks=(x.chunks[0],))
    params = (np.zeros(d), np.zeros(()))
    ref = params
    start = time.time()
    for it in range(steps):
        loss, params = step(params, x, yy, lr)
        ref_loss, ref = numpy_step(ref, X, y, lr)
        if it % 10 == 0 or it == steps - 1:
            print(f"step {it:3d}  loss {loss:.6f}  (NumPy {ref_loss:.6f})")
    w, b = params
    acc = np.mean(((X @ w + b) > 0) == (y > 0.5))
    print(f"{steps} steps in {time.time() - start:.1f}s; training accuracy {acc:.3f}; "
          f"max |w - w_numpy| = {np.abs(w - ref[0]).max():.2e}")


if __name__ == "__main__":
    if "--cluster" in sys.argv:
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster, Client(cluster):
            main(steps=30)
    else:
        main()

"""The two-layer FFNN of the TRA paper (§6.3), trained by SGD on synthetic data shaped like
its extreme multi-label classification task (AmazonCat-14K: many sparse features, many
labels, a narrow hidden layer), scaled down.

    a1 = relu(X · W1)                 X: N×D features, W1: D×H
    z2 = a1 · W2                      W2: H×L (the huge weight matrix of the task)
    loss = Σ_labels [softplus(z2) − Y∘z2] / N     (sigmoid cross-entropy, Y: N×L multi-hot)

The gradients are not written by hand: ``dask_tra.value_and_grad`` derives them as TRA
expressions over the same forward nodes (∇z2 = (σ(z2) − Y)/N, ∇W2 = a1ᵀ·∇z2,
∇W1 = Xᵀ·((∇z2·W2ᵀ) ∘ relu′), the thesis's formulas), and ``dask_tra.autodiff.Joint``
plans the forward and backward passes as ONE computation. The first step prints that plan:
with W1 cut by rows (features) and W2 by columns (labels) the optimizer picks the paper's
model-parallel plan (TRA-MP): the small activations are broadcast, the weights never move.

    python examples/ffnn_extreme_classification.py             # threaded scheduler
    python examples/ffnn_extreme_classification.py --cluster   # a small LocalCluster
"""
from __future__ import annotations

import sys
import time

import numpy as np

import dask_tra as da
from dask_tra import autodiff as ad
from dask_tra.autodiff import nn

SHAPE = dict(N=128, D=8192, H=64, L=4096)  # AmazonCat-14K: N=1000, D=597540, H=1000..7000, L=14588


def make_data(N, D, L, batches=4, density=0.01, labels_per_row=4, seed=0):
    """Sparse non-negative features and multi-hot labels from a hidden sparse teacher."""
    rng = np.random.default_rng(seed)
    teacher = (rng.random((D, L)) < 0.002) * rng.random((D, L))
    out = []
    for _ in range(batches):
        X = (rng.random((N, D)) < density) * rng.random((N, D))
        scores = X @ teacher + 1e-3 * rng.random((N, L))
        top = np.argsort(-scores, axis=1)[:, :labels_per_row]
        Y = np.zeros((N, L))
        np.put_along_axis(Y, top, 1.0, axis=1)
        out.append((X, Y))
    return out


def init_params(D, H, L, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((D, H)) * np.sqrt(2.0 / (D * 0.01)) / 4, rng.standard_normal((H, L)) * 0.05


def loss_fn(x, y, w1, w2):
    a1 = nn.relu(x @ w1)
    z2 = a1 @ w2
    return da.sum(nn.softplus(z2) - y * z2) / x.shape[0]


def model(params, X, Y, blocks=4):
    """(loss, [∇W1, ∇W2]) as lazy RelArrays. W1 is cut into row blocks (features), W2 into
    column blocks (labels); X and Y are cut alike."""
    W1, W2 = params
    (N, D), L = X.shape, Y.shape[1]
    x = da.from_array(X, chunks=(N, -(-D // blocks)))
    y = da.from_array(Y, chunks=(N, -(-L // blocks)))
    w1 = da.from_array(W1, chunks=(x.chunks[1], W1.shape[1]))
    w2 = da.from_array(W2, chunks=(W2.shape[0], y.chunks[1]))
    return da.value_and_grad(loss_fn(x, y, w1, w2), [w1, w2])


def step(params, X, Y, lr, blocks=4, show_plan=False):
    """One SGD step: loss and both gradients in one plan; returns (loss, new params)."""
    loss, grads = model(params, X, Y, blocks)
    joint = ad.Joint(loss, *grads)
    if show_plan:
        print(joint.explain())
    lv, g1, g2 = joint.compute()
    W1, W2 = params
    return float(lv), (W1 - lr * g1, W2 - lr * g2)


def numpy_step(params, X, Y, lr):
    """The same step by hand (the thesis's backpropagation formulas), for comparison."""
    W1, W2 = params
    N = X.shape[0]
    z1 = X @ W1
    a1 = np.maximum(z1, 0)
    z2 = a1 @ W2
    loss = np.sum(np.logaddexp(0, z2) - Y * z2) / N
    dz2 = (np.where(z2 >= 0, 1 / (1 + np.exp(-np.abs(z2))), np.exp(-np.abs(z2)) / (1 + np.exp(-np.abs(z2))))
           - Y) / N
    g2 = a1.T @ dz2
    g1 = X.T @ ((dz2 @ W2.T) * (z1 > 0))
    return float(loss), (W1 - lr * g1, W2 - lr * g2)


def main(steps=8, lr=0.1, shape=SHAPE):
    N, D, H, L = shape["N"], shape["D"], shape["H"], shape["L"]
    data = make_data(N, D, L)
    params = init_params(D, H, L)
    print(f"FFNN {D} -> {H} -> {L}, batch {N}, {steps} SGD steps, lr {lr}")
    start = time.time()
    for it in range(steps):
        X, Y = data[it % len(data)]
        loss, params = step(params, X, Y, lr, show_plan=(it == 0))
        print(f"step {it}  loss {loss:.4f}  ({time.time() - start:.1f}s)")


if __name__ == "__main__":
    if "--cluster" in sys.argv:
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster, Client(cluster):
            main(steps=4)
    else:
        main()

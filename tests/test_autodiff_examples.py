"""The autodiff examples: their training steps equal NumPy implementations step by step."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ffnn_steps_equal_numpy_and_loss_decreases():
    F = _load("ffnn_extreme_classification")
    N, D, H, L = 16, 256, 8, 96
    data = F.make_data(N, D, L, batches=1, density=0.05, labels_per_row=2)
    X, Y = data[0]
    params = ref = F.init_params(D, H, L)
    losses = []
    for _ in range(3):
        loss, params = F.step(params, X, Y, lr=0.1)
        ref_loss, ref = F.numpy_step(ref, X, Y, lr=0.1)
        losses.append(loss)
        assert loss == pytest.approx(ref_loss, rel=1e-12)
        for p, r in zip(params, ref):
            np.testing.assert_allclose(p, r, rtol=1e-10, atol=1e-13)
    assert losses[0] > losses[1] > losses[2]


def test_ffnn_plan_is_model_parallel(capsys):
    """W2 cut by label columns stays where it is: the activations move, not the weights."""
    import dask_tra as da
    from dask_tra import autodiff as ad
    F = _load("ffnn_extreme_classification")
    N, D, H, L = 32, 2048, 16, 1024
    (X, Y), = F.make_data(N, D, L, batches=1)
    loss, grads = F.model(F.init_params(D, H, L), X, Y, blocks=4)
    with da.config.set(sites=4, bandwidth=1e6):  # a network slow enough that bytes matter
        report = ad.Joint(loss, *grads).explain()
    w2_bytes = H * L * 8
    # data parallel would send W2 (and its gradient) to every site: each would receive more than W2
    assert report.breakdown["busiest_site_bytes"] < w2_bytes
    assert "bmm" in str(report.view(detail="algebra"))  # the algebra's name; the default says what it does


def test_logistic_regression_steps_equal_numpy():
    import dask_tra as da
    LR = _load("logistic_regression")
    X, y = LR.make_data(n=300, d=7)
    x = da.from_array(X, chunks=((100, 120, 80), (4, 3)))
    yy = da.from_array(y, chunks=(x.chunks[0],))
    params = ref = (np.zeros(7), np.zeros(()))
    losses = []
    for _ in range(3):
        loss, params = LR.step(params, x, yy, lr=0.5)
        ref_loss, ref = LR.numpy_step(ref, X, y, lr=0.5)
        losses.append(loss)
        assert loss == pytest.approx(ref_loss, rel=1e-12)
        np.testing.assert_allclose(params[0], ref[0], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(params[1], ref[1], rtol=1e-10, atol=1e-14)
    assert losses[0] > losses[1] > losses[2]

"""Drop-in: realistic dask.array scripts run unchanged except the import line.

Each script below is written against ``dask.array``. The test runs it twice, once as written
and once with ``import dask.array as da`` replaced by ``import dask_tra.array as da`` (on 3
sites), and checks both against NumPy on the same data.
"""
import numpy as np
import pytest

import dask_tra

STANDARDIZE = """
import dask.array as da
X = da.from_array(data, chunks=(37, 3))
mu = X.mean(axis=0)
sigma = X.std(axis=0)
Z = (X - mu) / sigma
result = Z.compute()
"""

COVARIANCE = """
import dask.array as da
X = da.from_array(data, chunks=(50, 4))
Xc = X - X.mean(axis=0)
cov = Xc.T @ Xc / (X.shape[0] - 1)
result = cov.compute()
"""

LEAST_SQUARES = """
import numpy as np
import dask.array as da
X = da.from_array(data, chunks=(64, 5))
y = da.from_array(target, chunks=64)
gram = (X.T @ X).compute()
rhs = X.T.dot(y).compute()
result = np.linalg.solve(gram, rhs)
"""

PAIRWISE_DISTANCES = """
import dask.array as da
A = da.from_array(data[:60], chunks=(20, 7))
B = da.from_array(data[60:95], chunks=(15, 7))
D = da.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=-1))
result = D.compute()
"""

KMEANS_STEP = """
import dask.array as da
X = da.from_array(data[:, :2], chunks=(25, 2))
C = da.from_array(centers, chunks=(3, 2))
d2 = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
labels = d2.argmin(axis=1)
onehot = labels[:, None] == da.arange(C.shape[0])[None, :]
counts = onehot.sum(axis=0)
new_centers = (onehot.T.astype(float) @ X) / da.maximum(counts, 1)[:, None]
labels_out, centers_out = da.compute(labels, new_centers)
result = (labels_out, centers_out)
"""

ATTENTION = """
import numpy as np
import dask.array as da
Q = da.from_array(q, chunks=(16, 8))
K = da.from_array(k, chunks=(24, 8))
V = da.from_array(v, chunks=(24, 5))
scores = Q @ K.T / np.sqrt(Q.shape[1])
scores = scores - scores.max(axis=-1, keepdims=True)
weights = da.exp(scores)
weights = weights / weights.sum(axis=-1, keepdims=True)
out = weights @ V
result = out.compute()
"""

RANDOM_STATS = """
import dask.array as da
state = da.random.RandomState(7)
X = state.random_sample((120, 6), chunks=(50, 4))
Xv = X.compute()
summary = da.stack([X.min(axis=0), X.max(axis=0), X.mean(axis=0), X.var(axis=0)])
result = (Xv, summary.compute())
"""


def _data():
    rng = np.random.default_rng(11)
    data = rng.standard_normal((128, 7)) * rng.uniform(0.5, 3, 7) + rng.uniform(-2, 2, 7)
    return {"data": data, "target": data[:, :5] @ rng.standard_normal(5) + 0.1 * rng.standard_normal(128),
            "centers": data[[0, 1, 2], :2], "q": rng.standard_normal((48, 8)),
            "k": rng.standard_normal((72, 8)), "v": rng.standard_normal((72, 5))}


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _kmeans(d):
    x, c = d["data"][:, :2], d["centers"]
    labels = ((x[:, None] - c[None]) ** 2).sum(2).argmin(1)
    onehot = labels[:, None] == np.arange(3)
    return labels, (onehot.T.astype(float) @ x) / np.maximum(onehot.sum(0), 1)[:, None]


EXPECTED = {
    STANDARDIZE: lambda d: (d["data"] - d["data"].mean(0)) / d["data"].std(0),
    COVARIANCE: lambda d: np.cov(d["data"], rowvar=False),
    LEAST_SQUARES: lambda d: np.linalg.lstsq(d["data"], d["target"], rcond=None)[0],
    PAIRWISE_DISTANCES: lambda d: np.sqrt(((d["data"][:60, None] - d["data"][None, 60:95]) ** 2).sum(-1)),
    KMEANS_STEP: _kmeans,
    ATTENTION: lambda d: _softmax(d["q"] @ d["k"].T / np.sqrt(8)) @ d["v"],
    RANDOM_STATS: None,
}
NAMES = ["standardize", "covariance", "least_squares", "pairwise_distances", "kmeans_step", "attention",
         "random_stats"]


def _run(script, module):
    ns = _data()
    source = script.replace("import dask.array as da", f"import {module} as da")
    assert source.count(module) == 1
    exec(compile(source, f"<{module} script>", "exec"), ns)
    return ns["result"]


def _check(script, got, data):
    if script is RANDOM_STATS:
        xv, summary = got
        want = np.stack([xv.min(0), xv.max(0), xv.mean(0), xv.var(0)])
        assert 0 <= xv.min() and xv.max() < 1 and xv.std() > 0.2
        np.testing.assert_allclose(summary, want, rtol=1e-10)
        return
    want = EXPECTED[script](data)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("script", list(EXPECTED), ids=NAMES)
@pytest.mark.parametrize("module", ["dask.array", "dask_tra.array"])
def test_dask_array_script_runs_unchanged(script, module):
    with dask_tra.config.set(sites=3):
        got = _run(script, module)
    _check(script, got, _data())

"""Test helpers: ``assert_eq`` (a RelArray against NumPy, through Dask and through the TRA
reference executor) and Hypothesis strategies for random shapes, dtypes and ragged chunks."""

from __future__ import annotations

import numpy as np

from .. import backends
from ..tra import assemble, evaluate

DTYPES = ("float64", "float32", "int64", "int32", "bool", "complex128")


def reference(x):
    """``x`` evaluated by the TRA reference executor (strict: every chunk's shape and dtype is
    checked against the metadata) and assembled into one array."""
    inputs = {name: {k: src.chunk(k) for k in src.type.iter_keys()} for name, src in x.sources.items()}
    rel = evaluate(x.expr, inputs)
    for k, c in rel.items():
        dt = backends.dtype_of(c) if hasattr(c, "dtype") else np.asarray(c).dtype
        assert dt == x.dtype, f"chunk {k} has dtype {dt}, metadata {x.dtype}"
    return assemble(x.expr.type, {k: backends.to_numpy(c) for k, c in rel.items()}).reshape(x.shape)


def assert_eq(x, expected, rtol=1e-7, atol=1e-12, check_dtype=True, check_reference=True):
    """``x`` (a RelArray) equals ``expected`` (NumPy) in shape, dtype and values (NaNs equal)."""
    expected = np.asarray(expected)
    assert x.shape == expected.shape, f"shape {x.shape} != {expected.shape}"
    if check_dtype:
        assert x.dtype == expected.dtype, f"dtype {x.dtype} != {expected.dtype}"
    got = x.compute()
    lib = backends.backend_of_type(got)
    assert lib in ("numpy", x.expr.type.backend), f"computed a {lib} array, metadata says {x.expr.type.backend}"
    got = backends.to_numpy(got)
    assert got.shape == expected.shape, f"computed shape {got.shape} != {expected.shape}"
    assert got.dtype == x.dtype, f"computed dtype {got.dtype} != metadata dtype {x.dtype}"
    _close(got, expected, rtol, atol)
    if check_reference:
        _close(reference(x), expected, rtol, atol)


def _close(got, expected, rtol, atol):
    if expected.dtype.kind in "fc" or got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def random_data(rng, shape, dtype):
    """Random values of ``dtype`` (never only zeros or ones)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        return rng.integers(-9 if dtype.kind == "i" else 0, 10, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def strategies():
    """Hypothesis strategies: ``shapes``, ``chunking``, ``arrays`` (imports hypothesis lazily)."""
    from hypothesis import strategies as st

    def shapes(min_dims=0, max_dims=3, min_side=0, max_side=6):
        return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)

    @st.composite
    def chunking(draw, shape):
        """Ragged dask-style chunks for ``shape``."""
        out = []
        for n in shape:
            cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=3))) if n > 1 else []
            edges = [0] + cuts + [n]
            out.append(tuple(b - a for a, b in zip(edges, edges[1:])) or (0,))
        return tuple(out)

    @st.composite
    def arrays(draw, shape=None, dtype=None, dtypes=DTYPES, **shape_kw):
        """(NumPy array, RelArray over it with random ragged chunks)."""
        from .creation import from_array

        shape = draw(shapes(**shape_kw)) if shape is None else shape
        dtype = draw(st.sampled_from(dtypes)) if dtype is None else dtype
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        a = random_data(rng, shape, dtype)
        return a, from_array(a, chunks=draw(chunking(shape)))

    return shapes, chunking, arrays


__all__ = ["assert_eq", "reference", "random_data", "strategies", "DTYPES"]

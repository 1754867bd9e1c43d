"""dask_tra.array contractions against NumPy: einsum (implicit output, ellipsis, repeated and
broadcast indices, several operands), matmul, dot, tensordot, outer, and the extended einsum."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dask_tra
import dask_tra.array as da
from dask_tra.array.testing import assert_eq, random_data, strategies

shapes, chunking, arrays = strategies()
SETTINGS = settings(max_examples=50, deadline=None)


@st.composite
def einsum_problem(draw):
    """Random subscripts over 'abcd' (repeats allowed), sizes, size-1 broadcasts, chunks."""
    sizes = {c: draw(st.integers(1, 4)) for c in "abcd"}
    n_ops = draw(st.integers(1, 3))
    subs = [draw(st.lists(st.sampled_from("abcd"), max_size=3)) for _ in range(n_ops)]
    letters = sorted(set().union(*map(set, subs)))
    explicit = draw(st.booleans())
    out = draw(st.permutations(letters)).__getitem__(slice(draw(st.integers(0, len(letters))))) if explicit else None
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(["float64", "int64", "complex128"]))
    ops = []
    for s in subs:
        shape = tuple(1 if s.count(c) == 1 and draw(st.integers(0, 4)) == 0 else sizes[c] for c in s)
        a = random_data(rng, shape, dtype)
        ops.append((a, da.from_array(a, chunks=draw(chunking(shape)))))
    spec = ",".join("".join(s) for s in subs) + ("->" + "".join(out) if explicit else "")
    return spec, ops


@SETTINGS
@given(einsum_problem())
def test_einsum_matches_numpy(problem):
    spec, ops = problem
    want = np.einsum(spec, *[a for a, _ in ops])
    assert_eq(da.einsum(spec, *[x for _, x in ops]), want, rtol=1e-9, atol=1e-9)


def test_einsum_ellipsis_and_np_dispatch():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((3, 5, 2))
    x, y = da.from_array(a, chunks=(1, 2, 3, 2)), da.from_array(b, chunks=(2, 3, 1))
    assert_eq(da.einsum("...ij,...jk->...ik", x, y), np.einsum("...ij,...jk->...ik", a, b))
    assert_eq(da.einsum("...ii->...i", x[..., :4]), np.einsum("...ii->...i", a[..., :4]))
    out = np.einsum("abcd,bdx->acx", x, y)
    assert isinstance(out, dask_tra.RelArray)
    assert_eq(out, np.einsum("abcd,bdx->acx", a, b))


@SETTINGS
@given(st.data(), shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
       shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
def test_matmul_with_batch_broadcasting(data, sa, sb):
    k = data.draw(st.integers(1, 4))
    sa = sa[:-2] + (sa[-2], k) if len(sa) > 1 else (k,)
    sb = sb[:-2] + (k, sb[-1]) if len(sb) > 1 else (k,)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    x = da.from_array(a, chunks=data.draw(chunking(sa)))
    y = da.from_array(b, chunks=data.draw(chunking(sb)))
    try:
        a @ b
    except ValueError:  # batch dims that do not broadcast: refused at call time, as NumPy does
        with pytest.raises(ValueError):
            x @ y
        return
    assert_eq(x @ y, a @ b)
    assert_eq(np.matmul(x, y), np.matmul(a, b))


@SETTINGS
@given(st.data(), arrays(dtypes=["float64", "int32"], min_dims=1, max_dims=3, min_side=1, max_side=4))
def test_tensordot_dot_inner_outer(data, ax):
    a, x = ax
    n = data.draw(st.integers(0, a.ndim))
    rng = np.random.default_rng(0)
    extra = data.draw(shapes(max_dims=2, min_side=1, max_side=3))
    b = random_data(rng, a.shape[a.ndim - n:] + extra, "float64")
    y = da.from_array(b, chunks=data.draw(chunking(b.shape)))
    assert_eq(da.tensordot(x, y, axes=n), np.tensordot(a, b, axes=n))
    picked = data.draw(st.permutations(range(a.ndim)))[:n]  # contract these axes of a, in this order
    b2 = random_data(rng, tuple(a.shape[p] for p in picked) + extra, "float64")
    y2 = da.from_array(b2, chunks=data.draw(chunking(b2.shape)))
    axes = (list(picked), list(range(n)))
    assert_eq(np.tensordot(x, y2, axes=axes), np.tensordot(a, b2, axes=axes))
    v = random_data(rng, a.shape[-1:], "float64")
    w = da.from_array(v, chunks=data.draw(chunking(v.shape)))
    assert_eq(da.dot(x, w), np.dot(a, v))
    assert_eq(x.dot(w), a.dot(v))
    assert_eq(da.inner(x, w), np.inner(a, v))
    assert_eq(da.outer(x, w), np.outer(a, v))


def test_dot_of_matrices_and_scalars():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((2, 5, 3))
    x, y = da.from_array(a, chunks=2), da.from_array(b, chunks=(1, 3, 2))
    assert_eq(da.dot(x, y), np.dot(a, b))
    assert_eq(da.dot(x, 2.0), np.dot(a, 2.0))
    assert_eq(da.vecdot(x, x[..., :5]), np.vecdot(a, a))


COMBINES = {"sqdiff": lambda u, v: (u - v) ** 2, "absdiff": lambda u, v: np.abs(u - v),
            "maximum": np.maximum, "subtract": np.subtract}
AGGS = {"sum": np.sum, "max": np.max, "min": np.min}


@SETTINGS
@given(st.data(), st.integers(1, 6), st.integers(1, 5), st.integers(1, 6),
       st.sampled_from(sorted(COMBINES)), st.sampled_from(sorted(AGGS)))
def test_extended_einsum(data, i, k, j, comb, agg):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, b = rng.standard_normal((i, k)), rng.standard_normal((j, k))
    x = da.from_array(a, chunks=data.draw(chunking((i, k))))
    y = da.from_array(b, chunks=data.draw(chunking((j, k))))
    want = AGGS[agg](COMBINES[comb](a[:, None, :], b[None, :, :]), axis=-1)
    z = dask_tra.einsum("ik,jk->ij", x, y, combine=comb, aggregate=agg)
    assert_eq(z, want)
    assert any(type(n).__name__ == "Aggregate" and n.kernel.name == {"sum": "add", "max": "maximum",
                                                                       "min": "minimum"}[agg]
               for n in z.expr.walk())


def test_extended_einsum_with_callables_and_kernels():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    x, y = da.from_array(a, chunks=2), da.from_array(b, chunks=3)
    z = da.einsum("ik,jk->ij", x, y, combine=lambda u, v: np.abs(u - v), aggregate=np.maximum)
    assert_eq(z, np.abs(a[:, None] - b[None]).max(-1))
    z = da.einsum("ik,jk->i", x, y, combine="sqdiff")  # j summed too
    assert_eq(z, ((a[:, None] - b[None]) ** 2).sum((1, 2)))


def test_matrix_product_lowers_to_the_papers_join_and_aggregate():
    a, b = np.ones((6, 4)), np.ones((4, 5))
    z = da.from_array(a, chunks=(3, 2)) @ da.from_array(b, chunks=(2, 5))
    assert repr(z.expr).startswith("Aggregate([0, 2],add)(Join([1],[0],matmul)(")
    with dask_tra.config.set(sites=3):
        assert "matmul" in str(z.explain())
        assert_eq(z, a @ b)


def test_misaligned_contraction_chunks_are_rechunked():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((7, 9)), rng.standard_normal((9, 4))
    x, y = da.from_array(a, chunks=(3, 4)), da.from_array(b, chunks=((2, 3, 4), 2))
    z = x @ y
    assert_eq(z, a @ b)
    assert {type(n).__name__ for n in z.expr.walk()} >= {"Join", "Aggregate", "ReKey"}


@pytest.mark.parametrize("spec", ["ij,jk->ik", "ij,jk", "ii", "ij->", "i,i", "ij,kj->ikj", "bij,bjk->bik"])
def test_einsum_specs_three_sites(spec):
    rng = np.random.default_rng(4)
    sizes = dict(zip("ijkb", (4, 4, 3, 2)))
    ins = spec.split("->")[0].split(",")
    ops = [rng.standard_normal([sizes[c] for c in s]) for s in ins]
    with dask_tra.config.set(sites=3):
        assert_eq(da.einsum(spec, *[da.from_array(o, chunks=2) for o in ops]), np.einsum(spec, *ops))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_einsum_subscripts_read_as_numpy_does(data):
    """Our subscript reader against NumPy's einsum on random specs: implicit and explicit
    outputs, ellipses of different widths, repeated letters; errors where NumPy errs."""
    from dask_tra.array.subscripts import read_subscripts
    n_ops = data.draw(st.integers(1, 3))
    letters = "abcdeA"
    subs, shapes, sizes = [], [], {c: data.draw(st.integers(1, 3)) for c in letters}
    for _ in range(n_ops):
        sub = "".join(data.draw(st.lists(st.sampled_from(letters), max_size=3)))
        if data.draw(st.booleans()):
            ell = data.draw(st.integers(0, 2))
            pos = data.draw(st.integers(0, len(sub)))
            subs.append(sub[:pos] + "..." + sub[pos:])
            shapes.append(tuple(sizes[c] for c in sub[:pos]) + (2,) * ell + tuple(sizes[c] for c in sub[pos:]))
        else:
            subs.append(sub)
            shapes.append(tuple(sizes[c] for c in sub))
    spec = ",".join(subs)
    if data.draw(st.booleans()):
        used = sorted(set("".join(subs).replace(".", "")))
        out = "".join(data.draw(st.permutations(used))[:data.draw(st.integers(0, len(used)))])
        spec += "->" + ("..." if any("..." in s for s in subs) and data.draw(st.booleans()) else "") + out
    rng = np.random.default_rng(len(spec))
    arrays = [rng.standard_normal(s) for s in shapes]
    try:
        want = np.einsum(spec, *arrays)
    except ValueError:
        with pytest.raises(ValueError):
            ins, out = read_subscripts(spec, [a.ndim for a in arrays])
            np.einsum(",".join(ins) + "->" + out, *arrays)
        return
    ins, out = read_subscripts(spec, [a.ndim for a in arrays])
    assert all("." not in i for i in ins)
    np.testing.assert_allclose(np.einsum(",".join(ins) + "->" + out, *arrays), want, rtol=1e-12)

"""Kernels: results, facts, and behaviour after pickling (as Dask ships them to workers)."""
import cloudpickle
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dask_tra.tra import kernels as K


def shipped(kernel):
    return cloudpickle.loads(cloudpickle.dumps(kernel))


def test_plain_einsum_keeps_its_fast_path_after_pickling(monkeypatch):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    k = shipped(K.matmul)

    def refuse(*args):
        raise AssertionError("plain matmul took the broadcast-and-reduce path")
    monkeypatch.setattr(k, "_extended", refuse)
    np.testing.assert_allclose(k(a, b), a @ b)


@pytest.mark.parametrize("kernel,ref", [
    (K.add, np.add), (K.mul, np.multiply), (K.sub, np.subtract), (K.maximum, np.maximum),
    (K.matmul, np.matmul), (K.Einsum("ab,cb->ac"), lambda x, y: np.einsum("ab,cb->ac", x, y)),
])
def test_binary_kernels_survive_pickling(kernel, ref):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    np.testing.assert_allclose(shipped(kernel)(a, b), ref(a, b))
    assert shipped(kernel) == kernel


def test_extended_einsum_custom_combine_and_aggregate():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    sqdiff = K.Elementwise("sqdiff", lambda xp, a, b: (a - b) ** 2, 2)
    absdiff = K.Elementwise("absdiff", lambda xp, a, b: abs(a - b), 2)
    d2 = K.Einsum("ik,jk->ij", combine=sqdiff, aggregate=K.add)
    dmax = K.Einsum("ik,jk->ij", combine=absdiff, aggregate=K.maximum)
    np.testing.assert_allclose(shipped(d2)(x, y), ((x[:, None] - y[None]) ** 2).sum(-1))
    np.testing.assert_allclose(shipped(dmax)(x, y), np.abs(x[:, None] - y[None]).max(-1))
    assert d2.distributes(K.add) and dmax.distributes(K.maximum) and not dmax.distributes(K.add)
    assert K.matmul.distributes(K.add)


def test_facts():
    assert K.add.associative and K.add.commutative and not K.sub.commutative
    assert K.mul.distributes(K.add) and not K.add.distributes(K.mul)
    assert K.matmul.flops((3, 4), (4, 5)) == 2 * 3 * 4 * 5


@pytest.mark.parametrize(
    "subscripts, matmul",
    [
        ("ik,kj->ij", True),
        ("ab,bc->ac", True),  # any letters
        ("ab,bc->ca", False),  # the product transposed
        ("ij,ij->ij", False),  # elementwise
        ("ab,bc->abc", False),  # no sum
        ("abc,cd->abd", False),  # batched
    ],
)
def test_a_matrix_product_is_known_by_its_structure_not_its_letters(subscripts, matmul):
    k = K.Einsum(subscripts)
    assert k.is_matmul is matmul
    assert (k.name == "matmul") is matmul
    a = np.arange(6.0).reshape(2, 3) if subscripts != "ij,ij->ij" else np.arange(6.0).reshape(3, 2)
    b = np.arange(12.0).reshape(3, 4) if subscripts[:2] != "ij" else np.arange(6.0).reshape(3, 2)
    if subscripts.startswith("abc"):
        a = np.arange(24.0).reshape(2, 3, 4)
        b = np.arange(20.0).reshape(4, 5)
    np.testing.assert_allclose(k(a, b), np.einsum(subscripts, a, b))


def test_kernels_compare_by_what_they_compute_not_by_their_name():
    """A kernel named like one of the TRA's is another kernel: it gets neither its partial
    derivatives (a gradient would be silently wrong) nor its place in a table."""
    from dask_tra.tra.vjp import partials_for

    fake = K.Elementwise("add", lambda xp, a, b: a * b, 2)
    assert fake != K.add and len({fake, K.add}) == 2
    assert partials_for(K.add) is not None and partials_for(fake) is None
    assert K.Einsum("ij,jk->ik", combine=fake) != K.Einsum("ij,jk->ik", combine=K.add)
    assert K.Einsum("ij,jk->ik", combine=K.add) == K.Einsum("ij,jk->ik", combine=K.add)
    assert cloudpickle.loads(cloudpickle.dumps(K.add)) == K.add


class _Fields(K.Kernel):
    """A kernel whose one parameter is a dict: compared as a value, whatever its order."""

    def __init__(self, table):
        self.table = table


_FIELD_VALUES = st.one_of(st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=False, width=32),
                          st.tuples(st.integers(0, 3)), st.builds(slice, st.integers(0, 3), st.integers(0, 3)),
                          st.builds(lambda v: np.arange(v), st.integers(0, 3)))


@given(st.dictionaries(st.sampled_from("abcde"), _FIELD_VALUES, min_size=1), st.randoms(use_true_random=False))
def test_kernels_with_equal_fields_are_equal_whatever_the_fields_order(table, r):
    items = list(table.items())
    r.shuffle(items)
    same, other = _Fields(table), _Fields(dict(items))
    assert same == other and other == same
    if all(not isinstance(v, slice) for v in table.values()):  # a slice is unhashable: so is its kernel
        assert hash(same) == hash(other)
    key = r.choice(sorted(table))
    changed = dict(table)
    changed[key] = "another value"
    assert _Fields(changed) != same and same != _Fields(changed)
    assert _Fields({**table, "f": 0}) != same

"""The kernel-derivative registry (dask_tra/tra/vjp.py): rules are registered by the module that
defines each frontend kernel class (the TRA's kernels' by the backward pass,
dask_tra/autodiff/kernels.py) and found by kernel type, never by display name."""
import ast
from pathlib import Path

import numpy as np
import pytest

from dask_tra.array import kernels as AK
from dask_tra.tra import kernels as K
from dask_tra.tra import vjp as V


def _home(rule):
    return getattr(rule, "rule", rule).__module__


@pytest.mark.parametrize("kernel, kind, home", [
    (K.add, "transform", "dask_tra.autodiff.kernels"),
    (K.mul, "join", "dask_tra.autodiff.kernels"),
    (K.Einsum("ij->j"), "transform", "dask_tra.autodiff.kernels"),
    (K.matmul, "join", "dask_tra.autodiff.kernels"),
    (K.Reduce("sum", [0]), "transform", "dask_tra.autodiff.kernels"),
    (AK.Permute([1, 0]), "transform", "dask_tra.array.kernels"),
    (AK.Reshape([4]), "transform", "dask_tra.array.kernels"),
    (K.Reduce("sum", [0], keepdims=True, dtype=np.float64), "transform", "dask_tra.autodiff.kernels"),  # the frontend's
    (AK.ElementwiseOp("exp", AK.Op(np.exp), [AK.ARRAY], np.float64), "transform", "dask_tra.array.kernels"),
    (AK.Concatenate(0, [4]), "join", "dask_tra.array.kernels"),
    (AK.Triangle("tril", np.float64), "join", "dask_tra.array.kernels"),
])
def test_rules_are_found_by_kernel_type(kernel, kind, home):
    rule = V.vjp_for(kernel, kind)
    assert rule is not None and _home(rule) == home


def test_take_rule_is_registered_with_its_kernel():
    take = AK.Take(0, [[2, 2]], 1, np.float64)
    assert _home(V.vjp_for(take, "join")) == "dask_tra.array.kernels"
    assert V.vjp_for(take, "transform") is None


def test_subclass_finds_base_rule_and_kernel_rule_wins():
    ext = AK.ExtendedEinsum("ik,kj->ij", K.sub, K.add, np.float64)
    assert V.vjp_for(ext, "join") is V.vjp_for(K.matmul, "join")  # Einsum's rule, along the MRO

    class Flip(K.Kernel):
        def __init__(self, axis):
            self.axis, self.name = axis, f"flip[{axis}]"

    @V.register_vjp(Flip)
    def flip_vjp(node, g, x, y):
        return g.map(Flip(node.kernel.axis))

    special = Flip(1)
    V.register_vjp(special, lambda node, g, x, y: None)
    assert V.vjp_for(Flip(0), "transform").rule is flip_vjp
    assert V.vjp_for(Flip(1), "transform").rule is not flip_vjp  # by equality, ahead of the class


def test_register_vjp_checks_its_arguments():
    with pytest.raises(TypeError, match="kernel class or a kernel"):
        V.register_vjp("exp", lambda *a: None)
    with pytest.raises(ValueError, match="kind must be"):
        V.register_vjp(K.Custom, lambda *a: None, kind="aggregate")


def test_registry_imports_nothing_above_it():
    """tra/vjp.py is imported by the kernel modules: it may import only tra/errors.py."""
    tree = ast.parse(Path(V.__file__).read_text(encoding="utf-8"))
    local = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level}
    assert local == {"errors"}


def test_autodiff_reexports_the_registry():
    from dask_tra import autodiff as ad

    assert ad.register_vjp is V.register_vjp and ad.register_partials is V.register_partials
    assert ad.GradError is V.GradError and ad.GradKernel is K.GradKernel

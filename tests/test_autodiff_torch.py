"""Autodiff on torch chunks: every gradient case of tests/test_autodiff.py, with the inputs'
chunks torch tensors, gives torch tensors equal to PyTorch's autograd (skipped without torch)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_autodiff import CASES, case_arrays, ours, torch_grads  # noqa: E402


@pytest.mark.parametrize("name", list(CASES))
def test_torch_chunks_against_torch_autograd(name):
    f, arrays, chunks = case_arrays(name)
    lv, gv = ours(f, arrays, chunks, to_chunk=torch.from_numpy)
    tl, tg = torch_grads(f, arrays)
    np.testing.assert_allclose(float(lv), tl, rtol=1e-10, atol=1e-10)
    for a, b in zip(gv, tg):
        assert isinstance(a, torch.Tensor)
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-10, atol=1e-11)

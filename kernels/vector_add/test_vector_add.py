"""Vector add's own CUDA tests (on a GPU): the op is exact on awkward and misaligned sizes, and
names itself in its errors. The generic tests are in tests/test_families.py."""

from __future__ import annotations

import pytest
import torch

from kernellab.engine.testing import empty_like_nan, randn_cuda


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n,misalign", [(1, False), (7, False), (1000003, False), (4099, True)])
def test_gpu_cuda_op(kl_ops, dtype, n, misalign):
    a, b = randn_cuda((n,), dtype, 1, misalign=misalign), randn_cuda((n,), dtype, 2, misalign=misalign)
    out = empty_like_nan(a, misalign)
    kl_ops.vector_add(a, b, out, "vec4")
    assert torch.equal(out, (a.float() + b.float()).to(dtype))


@pytest.mark.gpu
def test_gpu_errors_name_the_op(kl_ops):
    x = torch.randn(10, device="cuda")
    with pytest.raises(RuntimeError, match="vector_add: b has shape"):
        kl_ops.vector_add(x, x[:5], torch.empty_like(x), "vec4")

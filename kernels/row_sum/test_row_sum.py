"""Row sum's own tests: a skipped last row fails, strided rows, the sm_90 code's loads, and
(on a GPU) the CUDA op. The generic tests are in tests/test_families.py."""

from __future__ import annotations

import math

import pytest
import torch

from kernellab.engine import runtime, testing
from kernellab.engine.testing import check, cuda_rel_err, randn_cuda, rel_error

from . import FAMILY as fam

DEVICE = runtime.device()


def test_skipped_last_row_fails():
    (x,) = fam.make_inputs((7, 33), "fp32", DEVICE, 0)
    out = fam.out_like(x).fill_(math.nan)
    fam.impls["triton"].fn(out[:-1], x[:-1])
    assert rel_error(out, fam.reference(x.double())) == math.inf


def test_output_is_fp32():
    for dtype in fam.dtypes:
        (x,) = fam.make_inputs((3, 5), dtype, DEVICE, 0)
        assert fam.out_like(x).dtype == torch.float32


def test_row_stride():
    """A view with a row stride larger than its width (the last column cut off)."""
    x = fam.make_inputs((5, 40), "fp32", DEVICE, 3)[0][:, :33]
    for key in (k for k, i in fam.impls.items() if i.backend == "triton"):
        out = fam.out_like(x).fill_(math.nan)
        check(fam, fam.impls[key].fn(out, x), (x,), out, (5, 33), "fp32")


def test_bytes_and_flops():
    assert fam.bytes_moved((8, 100), "bf16") == 800 * 2 + 8 * 4
    assert fam.flops((8, 100), "fp32") >= 800


def test_sm90_only_16_byte_loads(sm90_ptx):
    testing.assert_sm90_16_byte_loads(sm90_ptx, fam.name)


def test_sm90_loads_evict_first(sm90_ptx):
    """The row is read once: every global load of the sm_90 code asks the L2 to evict it first."""
    for label, loads in testing.sm90_global_loads(sm90_ptx, fam.name).items():
        assert loads and all("evict_first" in op for op in loads), f"{label}: {sorted(set(loads))}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (3, 1000), (5, 1001), (1000, 33), (2, 70000), (9, 0)])
def test_gpu_cuda_op(kl_ops, dtype, shape):
    x = randn_cuda(shape, dtype, 12, offset=0.5)
    out = torch.full((shape[0],), float("nan"), device="cuda")
    kl_ops.row_sum(x, out, "warp")
    ref = x.double().sum(-1)
    if shape[1] == 0:
        assert torch.equal(out, torch.zeros_like(out))
    else:
        assert cuda_rel_err(out, ref) < 1e-5

"""RMS norm's own tests: strided rows, the sm_90 code's loads, and (on a GPU) the CUDA op.
The generic tests are in tests/test_families.py."""

from __future__ import annotations

import math

import pytest
import torch

from kernellab.engine import runtime, testing
from kernellab.engine.testing import check, cuda_rel_err, cuda_tol, empty_like_nan, randn_cuda

from . import FAMILY as fam

DEVICE = runtime.device()


def test_row_stride():
    """A view with a row stride larger than its width (the last column cut off)."""
    x, w = fam.make_inputs((5, 40), "fp32", DEVICE, 3)
    x, w = x[:, :33], w[:33].contiguous()
    for key in (k for k, i in fam.impls.items() if i.backend == "triton" and i.pass_ == "forward"):
        out = fam.out_like(x, w).fill_(math.nan)
        check(fam, fam.impls[key].fn(out, x, w), (x, w), out, (5, 33), "fp32")


def test_bytes_and_flops():
    assert fam.bytes_moved((8, 100), "fp32") == (2 * 800 + 100) * 4
    assert fam.flops((8, 100), "fp32") >= 800


def test_sm90_only_16_byte_loads(sm90_ptx):
    testing.assert_sm90_16_byte_loads(sm90_ptx, fam.name)


@testing.row_ladder_cases(fam)
def test_gpu_cuda_op(kl_ops, dtype, shape, step):
    """Every step of the CUDA ladder, on rows that take its own path and rows that fall back."""
    x = randn_cuda(shape, dtype, 8, scale=2.0, offset=0.5)
    w = randn_cuda(shape[-1:], dtype, 9, offset=1.0)
    out = empty_like_nan(x)
    kl_ops.rms_norm(x, w, out, 1e-6, step)
    xd = x.double()
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
    assert cuda_rel_err(out, ref) < cuda_tol(dtype)


@pytest.mark.parametrize("known_trip", [False, True])
@pytest.mark.parametrize("even", [True, False])
def test_looped_path_in_chunks(even, known_trip):
    """The looped path over several chunks, mask-free (EVEN: the row a power of two) or masked;
    KNOWN_TRIP bounds the loops by the padded row where EVEN, and is ignored where not."""
    from kernellab.kit.triton import launch

    from . import rms_norm_kernel

    cols = 64 if even else 61
    x, w = fam.make_inputs((3, cols), "fp32", DEVICE, 5)
    out = fam.out_like(x, w).fill_(math.nan)
    launch(rms_norm_kernel, (3,), x, w, out, 3, cols, x.stride(0), out.stride(0), 1e-6,
           BLOCK_COLS=64, TILE=16, LOOPED=True, EVEN=even, KNOWN_TRIP=known_trip, num_warps=1)
    check(fam, out, (x, w), out, (3, cols), "fp32")


# ---- the Triton backward ladder -------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7, 33), (1, 5), (9, 64)])
def test_triton_backward_steps_match_autograd_and_a_wrong_dw_is_named(shape):
    """Every Triton backward step's dx and dw against autograd's float64 gradients in both dtypes; a
    dw off by 1% fails, naming dw alone."""
    from kernellab.engine.testing import check_backward, wrong_gradient

    for impl in fam.ladders()["triton_bwd"]:
        for dtype in fam.dtypes:
            row = check_backward(fam, impl, shape, dtype)
            assert row["status"] == "ok", (impl.key, dtype, row["reason"])
        row = check_backward(fam, wrong_gradient(impl, 1), shape, "fp32")
        assert row["status"] == "failed" and row["reason"].startswith("dw: relative error"), row
        assert "dx" not in row["reason"]

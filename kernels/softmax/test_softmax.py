"""Softmax's own tests: rows sum to one, large offsets do not overflow, a skipped last row or
column fails, strided rows, the sm_90 code's loads, and (on a GPU) the CUDA op.
The generic tests (every implementation against the reference, every autotune config) are in
tests/test_families.py."""

from __future__ import annotations

import math

import torch

from kernellab.engine import runtime, testing
from kernellab.engine.testing import check, cuda_rel_err, cuda_tol, empty_like_nan, randn_cuda, rel_error

from . import FAMILY as fam

DEVICE = runtime.device()
TRITON = [k for k, i in fam.impls.items() if i.backend == "triton" and i.pass_ == "forward"]


def test_rows_sum_to_one():
    x = fam.make_inputs((6, 8193), "fp32", DEVICE, 1)[0]
    for key in TRITON:
        out = fam.out_like(x).fill_(math.nan)
        y = fam.impls[key].fn(out, x).double()
        assert torch.allclose(y.sum(-1), torch.ones(6, dtype=torch.float64), atol=1e-5), key
        assert bool((y >= 0).all()), key


def test_large_offsets_do_not_overflow():
    """exp(x - max): rows of values near 1000 (exp(1000) overflows fp32) stay finite."""
    x = fam.make_inputs((3, 1000), "fp32", DEVICE, 2)[0] + 1000.0
    ref = fam.reference(x.double())
    for key in TRITON:
        out = torch.full_like(x, math.nan)
        assert rel_error(fam.impls[key].fn(out, x), ref) <= 1e-5, key


def test_skipped_last_row_or_column_fails():
    """An implementation that does not write its last row, or its last column, fails."""
    fn = fam.impls["triton@autotuned"].fn
    (x,) = fam.make_inputs((3, 1000), "fp32", DEVICE, 0)
    ref = fam.reference(x.double())
    out = fam.out_like(x).fill_(math.nan)
    fn(out[:-1], x[:-1])
    assert rel_error(out, ref) == math.inf
    out = fam.out_like(x).fill_(math.nan)
    fn(out[:, :-1], x[:, :-1])
    assert rel_error(out, ref) == math.inf
    fn(out, x)
    assert rel_error(out, ref) <= 1e-5  # the same call on everything passes


def test_row_stride():
    """A view with a row stride larger than its width (the last column cut off)."""
    x = fam.make_inputs((5, 40), "fp32", DEVICE, 3)[0][:, :33]
    for key in TRITON:
        out = fam.out_like(x).fill_(math.nan)
        check(fam, fam.impls[key].fn(out, x), (x,), out, (5, 33), "fp32")


def test_bytes_and_flops():
    assert fam.bytes_moved((4096, 1000), "fp32") == 2 * 4096 * 1000 * 4
    assert fam.flops((8, 100), "fp32") >= 800


def test_sm90_only_16_byte_loads(sm90_ptx):
    testing.assert_sm90_16_byte_loads(sm90_ptx, fam.name)


@testing.row_ladder_cases(fam, testing.ROW_SHAPES[:8])
def test_gpu_cuda_op(kl_ops, dtype, shape, step):
    """Every step of the CUDA ladder, on rows that take its own path and rows that fall back."""
    x = randn_cuda(shape, dtype, 4, scale=4.0)
    out = empty_like_nan(x)
    kl_ops.softmax(x, out, step)
    assert cuda_rel_err(out, torch.softmax(x.double(), dim=-1)) < cuda_tol(dtype)



# ---- the backward --------------------------------------------------------------------------------
BACKWARD = [k for k, i in fam.impls.items() if i.pass_ == "backward" and i.backend in ("torch", "triton")]


def test_backward_long_rows_in_chunks_and_wrong_dx_named(monkeypatch):
    """The Triton backward over rows longer than a chunk (two passes) and rows in registers, in both
    dtypes, against autograd's float64 gradient; a dx off by 1% fails, naming dx."""
    from kernellab.engine.testing import check_backward, wrong_gradient

    from . import backward

    for chunk in (backward.MAX_CHUNK, 64):  # 64: rows of 200 columns in four chunks, the last partial
        monkeypatch.setattr(backward, "MAX_CHUNK", chunk)
        for dtype in fam.dtypes:
            row = check_backward(fam, fam.impls["triton.bwd"], (3, 200), dtype)
            assert row["status"] == "ok", (chunk, dtype, row["reason"])
    for key in BACKWARD:
        row = check_backward(fam, wrong_gradient(fam.impls[key], 0), (4, 37), "fp32")
        assert row["status"] == "failed" and row["reason"].startswith("dx: relative error"), (key, row)


def test_backward_byte_model_reads_y_and_dy_writes_dx():
    assert fam.case_bytes("backward", (8, 100), "bf16") == 3 * 800 * 2
    assert fam.case_bytes("forward+backward", (8, 100), "fp32") == (2 + 3) * 800 * 4

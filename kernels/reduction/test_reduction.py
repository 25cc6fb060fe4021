"""The reduction's own tests: a skipped last element fails, the output is zeroed first, its
tolerance grows like sqrt(n), one atomic in its sm_90 code, and (on a GPU)
large sums and the CUDA op's steps. The generic tests are in tests/test_families.py."""

from __future__ import annotations

import math
import re

import pytest
import torch

from kernellab.engine import runtime
from kernellab.engine.harness import check_against_reference
from kernellab.engine.testing import check, cuda_rel_err, randn_cuda, rel_error, run

from . import FAMILY as fam

DEVICE = runtime.device()


def test_skipping_last_element_fails():
    """Positive data: one element missing out of 1000 is a 1e-3 relative error."""
    (x,) = fam.make_inputs((1000,), "fp32", DEVICE, 0)
    assert bool((x > 0).all())
    out = fam.out_like(x).fill_(math.nan)
    got = fam.impls["triton"].fn(out, x[:-1])
    assert rel_error(got, fam.reference(x.double())) > runtime.TOLERANCE["fp32"]


def test_zeroes_out_first():
    """The atomic-add kernel accumulates into out: calling twice must not double."""
    (x,) = fam.make_inputs((4096,), "fp32", DEVICE, 0)
    out = fam.out_like(x).fill_(123.0)
    fam.impls["triton"].fn(out, x)
    fam.impls["triton"].fn(out, x)
    assert rel_error(out, fam.reference(x.double())) <= 1e-5


def test_output_is_one_fp32_element():
    for dtype in fam.dtypes:
        (x,) = fam.make_inputs((33,), dtype, DEVICE, 0)
        out = fam.out_like(x)
        assert out.dtype == torch.float32 and out.numel() == 1


def test_tolerance_grows_like_sqrt_n_and_still_catches_a_stuck_accumulator():
    tol = fam.tolerance
    assert tol((4099,), "fp32") == 1e-5  # small sums: the dtype's tolerance
    assert tol((2**28,), "fp32") == pytest.approx(2**14 * 2**-24)  # ~1e-3
    assert tol((2**28,), "bf16") == 2e-2
    ref = torch.tensor([2.0**28], dtype=torch.float64)
    pairwise_ish = torch.tensor([2.0**28 * (1 + 3e-5)])  # atomics over block partials
    stuck = torch.tensor([2.0**25])  # one fp32 running sum of 2^28 ones stops at 2^25
    assert check_against_reference(pairwise_ish, ref, "fp32", tol((2**28,), "fp32"))["status"] == "ok"
    assert check_against_reference(pairwise_ish, ref, "fp32")["status"] == "failed"
    assert check_against_reference(stuck, ref, "fp32", tol((2**28,), "fp32"))["status"] == "failed"


def test_bytes_and_flops():
    assert fam.bytes_moved((1 << 20,), "bf16") == (1 << 20) * 2 + 4
    assert fam.flops((800,), "fp32") >= 800


def test_sm90_one_atomic(sm90_ptx):
    labels = [label for label in sm90_ptx if label.startswith(f"{fam.name}/")]
    assert labels
    for label in labels:
        assert len(re.findall(r"\batom\.global", sm90_ptx[label])) == 1, label


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", fam.dtypes)
def test_gpu_large_sums(dtype):
    """Every implementation on 2^24 elements (the atomic CUDA step, one fp32 add per element,
    passes 1e-5 only up to about 2^16 by design)."""
    shape = (1 << 24,)
    for key, impl in fam.impls.items():
        if impl.backend == "cuda":
            from kernellab.engine import cuda_ext
            from kernellab.errors import Unavailable

            try:
                cuda_ext.ops()
            except Unavailable:
                continue
        if key == "cuda@atomic":
            continue
        got, inputs, out = run(fam, impl.fn, shape, dtype)
        check(fam, got, inputs, out, shape, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("step", [s.step for s in fam.ladders()["cuda_reduction"]])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
# 2^26: past 2^25 an fp32 running sum of these (mean 0.5) stalls; the atomic step must not
@pytest.mark.parametrize("n,misalign", [(1, False), (1000, False), (1000003, False), (70001, True), (1 << 26, False)])
def test_gpu_cuda_op(kl_ops, step, dtype, n, misalign):
    x = randn_cuda((n,), dtype, 11, offset=0.5, misalign=misalign)
    out = torch.full((1,), 12345.0, device="cuda")  # the op zeroes it first
    kl_ops.reduce_sum(x, out, step)
    # fp32 accumulation in a step-dependent order: sqrt(n) roundings of size 2^-24 at most
    tol = max(1e-5, 4 * math.sqrt(n) * 2.0**-24)
    assert cuda_rel_err(out, x.double().sum().reshape(1)) < tol


@pytest.mark.gpu
def test_gpu_errors_name_the_op(kl_ops):
    x = torch.randn(10, device="cuda")
    with pytest.raises(RuntimeError, match="reduce_sum: out must be one fp32 element"):
        kl_ops.reduce_sum(x, torch.empty_like(x), "vec4")


def test_vec4_register_budget(cuda_resources):
    """One full wave of 2048 resident threads per SM needs at most 32 registers per thread."""
    regs = [r["registers"] for r in cuda_resources["rows"] if r["base"] == "reduce_sum_vec4"]
    assert regs and max(regs) <= 32

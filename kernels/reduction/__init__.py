"""Total sum of a 1-D tensor, accumulated and returned in fp32 (output: 1 element).

Memory-bound: each element read once, 4 bytes written (bytes = n * element size + 4),
one FLOP per element. At 2^28 fp32 elements that is 1 GiB, about 0.26 ms at 4.2 TB/s;
at 2^16 elements (256 KiB) launch latency (a few us) dominates.

Inputs are drawn from uniform(0.5, 1.5), not from a normal distribution: the sum of
zero-mean data is near 0, so a relative error against it says nothing (it would be
error / sqrt(n) instead of error / n). With positive data |sum| = sum(|x|), so the
harness's relative error is the error relative to sum(|x|), the scale that fp32
rounding works at. It also exposes a real failure mode: a kernel that adds elements one
by one into one fp32 float rounds at every add (relative error about 1e-5 * sqrt(n /
2^20), the fp32 tolerance near 2^20 elements) and stalls once the running sum reaches
2^25 (an increment below 2, half an ulp there, rounds away). The reference is x.sum()
in float64.

The CUDA ladder (ladder ``cuda_reduction``) follows the classic reduction course:
atomics, a shared-memory tree, warp shuffles, then 16-byte loads. The Triton kernel is a
persistent grid-stride loop over autotuned tiles, one fp32 atomic add per program.
"""

from __future__ import annotations

import functools
import math

import torch
import triton
import triton.language as tl

from kernellab.kit import (
    TOLERANCE,
    CompileSpec,
    Family,
    autotune,
    compiled,
    cuda_op,
    element_size,
    generator,
    launch,
    numel,
    returns_new,
    torch_dtype,
    triton_type,
)


def reference(x):
    """Float64 reference, shape (1,) like the output."""
    return x.sum().reshape(1)


def tolerance(shape, dtype) -> float:
    """Relative tolerance of a sum of n terms: the dtype's, or sqrt(n) * 2^-24 if larger.

    Any fp32 summation order rounds at each of its n - 1 additions; with the errors
    behaving like random signs, the error of the sum grows like sqrt(n) * u (u = 2^-24,
    fp32's unit roundoff). At 2^28 terms that is 1e-3 while the fp32 tolerance is 1e-5: a
    kernel that adds its blocks' partial sums with atomics lands near 3e-5 there, and is
    right. An accumulator that stops growing is still caught: one fp32 running sum of
    2^28 ones near 1 sticks at 2^25 (adding 1 rounds away), a relative error of 0.875.
    """
    return max(TOLERANCE[dtype], math.sqrt(numel(shape)) * 2.0**-24)


def sum_naive(x):
    """Cast to fp32 (a kernel and a copy for bf16), then sum."""
    return x.float().sum().reshape(1)


def sum_fused(out, x):
    return torch.sum(x, dim=0, keepdim=True, dtype=torch.float32, out=out)


def triton_configs():
    """Tile per loop iteration x warps x resident programs per SM (grid = SMs * PROGRAMS_PER_SM)."""
    return [
        triton.Config({"BLOCK": block, "PROGRAMS_PER_SM": pps}, num_warps=warps)
        for block in (4096, 8192, 2048, 16384)
        for warps, pps in ((8, 4), (4, 8), (8, 2), (16, 2))
    ]


@autotune(configs=triton_configs(), key=["n"], reset_to_zero=["out_ptr"])
@triton.jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, PROGRAMS_PER_SM: tl.constexpr):
    """Persistent grid-stride loop: each program sums its tiles into a BLOCK-wide fp32
    accumulator, reduces it once and adds it to out with one atomic (out zeroed first).
    PROGRAMS_PER_SM only sizes the grid."""
    pid = tl.program_id(0).to(tl.int64)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(pid * BLOCK, n, step):
        idx = start + offs
        acc += tl.load(x_ptr + idx, mask=idx < n, other=0.0).to(tl.float32)
    tl.atomic_add(out_ptr, tl.sum(acc, axis=0), sem="relaxed")


@functools.cache
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of ``device`` (4 on the CPU, where the interpreter runs)."""
    if device.type != "cuda":
        return 4
    return _sm_count(device.index if device.index is not None else torch.cuda.current_device())


def sum_triton(out, x):
    n = x.numel()
    sms = sm_count(x.device)
    out.zero_()  # the kernel accumulates into out with atomics
    launch(sum_kernel,
           lambda meta: (max(1, min(triton.cdiv(n, meta["BLOCK"]), sms * meta["PROGRAMS_PER_SM"])),),
           x, out, n)
    return out


def compile_specs(dtype: str):
    ty = triton_type(dtype)
    return [CompileSpec(sum_kernel, {"x_ptr": f"*{ty}", "out_ptr": "*fp32", "n": "i32"},
                        {"BLOCK": 8192, "PROGRAMS_PER_SM": 4}, num_warps=8,
                        label="BLOCK=8192, 4 programs per SM, num_warps=8")]


def make_inputs(shape, dtype, device, seed):
    """uniform(0.5, 1.5): positive, so the relative error is relative to sum(|x|)."""
    x = torch.rand(tuple(shape), generator=generator(device, seed), dtype=torch.float32, device=device) + 0.5
    return (x.to(device=device, dtype=torch_dtype(dtype)),)


def out_like(x):
    return torch.empty(1, dtype=torch.float32, device=x.device)


FAMILY = Family(
    title="Sum of a vector (fp32 accumulation)",
    bound="memory",
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=lambda shape, dtype, **_: numel(shape) * element_size(dtype) + 4,
    flops=lambda shape, dtype, **_: numel(shape),
    out_like=out_like,
    tolerance=tolerance,
    shape_rank=(1,),
    description="A whole tensor down to one number: atomics, trees, shuffles, vector loads.",
    # each CUDA step (cuda_reduction/<step>.cu) runs as the `reduce_sum` op of binding.cpp with the step's name
    cuda_step=lambda family, step: cuda_op(family, "reduce_sum", step),
)

FAMILY.add("torch_naive", returns_new(sum_naive))
FAMILY.add("torch_fused", sum_fused)
FAMILY.add("triton", sum_triton, triton_kernels=(sum_kernel,), compile_specs=compile_specs)
FAMILY.add("compiled", compiled(sum_naive))
# The CUDA ladder cuda_reduction, at 2^28 fp32 (1 GiB, floor about 0.26 ms at 4.2 TB/s): one file per
# step in cuda_reduction/ (what they share in reduction.cuh), in ladder.yaml's order.

"""SiLU, out = x * sigmoid(x): an example of a user's own kernel family (README, "Add your own
kernel"). Memory-bound: one read and one write per element, about 4 FLOPs.

This folder is all of it: the definition and float64 reference, the PyTorch and Triton
implementations and the Triton backward (here), a CUDA ladder of two steps (one file each in cuda_silu/, what they share
in silu.cuh, the op in binding.cpp) and the ladder's order and texts (ladder.yaml). Point
``kernel_dirs`` at the folder above it to measure it.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import (
    CompileSpec,
    Family,
    autotune,
    compiled,
    cuda_op,
    elementwise_bytes,
    launch,
    numel,
    randn,
    returns_new,
    triton_type,
)


def reference(x):
    return x * torch.sigmoid(x)


def silu_naive(x):
    return x * torch.sigmoid(x)


def silu_fused(x):
    return torch.nn.functional.silu(x)


@autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (1024, 4096) for w in (4, 8)], key=["n"])
@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * tl.sigmoid(x)).to(out_ptr.dtype.element_ty), mask=mask)


def silu_triton(out, x):
    n = x.numel()
    launch(silu_kernel, lambda meta: (triton.cdiv(n, meta["BLOCK"]),), x, out, n)
    return out


@triton.jit
def silu_bwd_kernel(x_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask).to(tl.float32)
    s = tl.sigmoid(x)
    tl.store(dx_ptr + offs, (dy * s * (1 + x * (1 - s))).to(dx_ptr.dtype.element_ty), mask=mask)


def silu_backward(out, dy, saved, x):
    """dx = dy * silu'(x) = dy * s * (1 + x * (1 - s)), s = sigmoid(x); out = (dx,), empty like x."""
    (dx,) = out
    launch(silu_bwd_kernel, (triton.cdiv(x.numel(), 1024),), x, dy, dx, x.numel(), BLOCK=1024)
    return dx


def compile_specs(dtype: str):
    """What the ptx rule cross-compiles for the report's PTX/SASS: one config of the kernel."""
    ty = triton_type(dtype)
    return [CompileSpec(silu_kernel, {"x_ptr": f"*{ty}", "out_ptr": f"*{ty}", "n": "i32"}, {"BLOCK": 4096},
                        num_warps=8, label="BLOCK=4096, num_warps=8")]


FAMILY = Family(
    title="SiLU (an example of your own kernel)",
    bound="memory",
    make_inputs=lambda shape, dtype, device, seed: (randn(shape, dtype, device, seed, scale=3.0),),
    reference=reference,
    bytes_moved=elementwise_bytes(1),
    flops=lambda shape, dtype, **_: 4 * numel(shape),
    out_like=lambda x: torch.empty_like(x),
    description="x * sigmoid(x), the activation of SwiGLU.",
    grads=("dx",),  # the backward: x's gradient, checked against autograd through `reference`
    backward_bytes=elementwise_bytes(2),  # x and dy read, dx written
    # each CUDA step (cuda_silu/<step>.cu) runs as the `silu` op of binding.cpp with the step's name
    cuda_step=lambda family, step: cuda_op(family, "silu", step),
)

FAMILY.add("torch_naive", returns_new(silu_naive))
FAMILY.add("torch_fused", returns_new(silu_fused))
FAMILY.add("triton", silu_triton, triton_kernels=(silu_kernel,), compile_specs=compile_specs)
FAMILY.add("compiled", compiled(silu_naive))
# the backward: autograd through the naive forward, and the Triton kernel (it saves nothing from a
# forward, so it runs as a backward alone: a forward+backward of it would time no forward)
FAMILY.add_autograd("torch_naive", silu_naive)
FAMILY.add_backward("triton", silu_backward, passes=("backward",))

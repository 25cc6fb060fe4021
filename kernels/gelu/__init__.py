"""GeLU, tanh approximation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).

Memory-bound: one read and one write per element, about 10 FLOPs. At 2^28 fp32
elements that is 2 GiB moved, about 0.5 ms at 4.2 TB/s; the FLOPs are noise.
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
    elementwise_bytes,
    elementwise_configs,
    launch,
    numel,
    randn,
    returns_new,
    triton_type,
)

from . import backward

SQRT_2_OVER_PI = 0.79788456
COEFF = 0.044715


def reference(x):
    """Float64 reference, shared by tests and benchmarks."""
    return 0.5 * x * (1.0 + torch.tanh(SQRT_2_OVER_PI * (x + COEFF * x * x * x)))


def error_floor(x):
    """A quarter of the input's norm. For negative x, 1 + tanh(...) cancels and gelu(x)
    shrinks towards 0 while each step still rounds at the scale of x: an error relative to
    |gelu(x)| alone fails any dtype on one input near -3 (n = 1). |gelu(x)| <= |x|, and for
    random data ||gelu(x)|| is about 0.65 ||x||, so the floor only counts where outputs
    cancel."""
    return 0.25 * float(torch.linalg.vector_norm(x))


def gelu_naive(x):
    """The formula as separate PyTorch ops: each op reads and writes the whole tensor."""
    cube = x * x * x
    inner = x + COEFF * cube
    t = torch.tanh(SQRT_2_OVER_PI * inner)
    return 0.5 * x * (1.0 + t)


def gelu_op(x):
    """PyTorch's GeLU (its autograd is the fused backward)."""
    return torch.nn.functional.gelu(x, approximate="tanh")


def gelu_fused(out, x):
    return gelu_op(x)


@autotune(configs=elementwise_configs(), key=["n"])
@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    inner = 0.79788456 * (x + 0.044715 * x * x * x)
    # tanh(y) = 1 - 2 / (exp(2y) + 1), exact to fp32 rounding; clamping keeps exp finite
    inner = tl.minimum(tl.maximum(inner, -20.0), 20.0)
    t = 1.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0)
    y = 0.5 * x * (1.0 + t)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def gelu_triton(out, x):
    n = x.numel()
    launch(gelu_kernel, lambda meta: (triton.cdiv(n, meta["BLOCK"]),), x, out, n)
    return out


def compile_specs(dtype: str):
    ty = triton_type(dtype)
    return [
        CompileSpec(gelu_kernel, {"x_ptr": f"*{ty}", "out_ptr": f"*{ty}", "n": "i32"},
                    {"BLOCK": 4096}, num_warps=8, label="BLOCK=4096, num_warps=8")
    ]


def make_inputs(shape, dtype, device, seed):
    return (randn(shape, dtype, device, seed, scale=3.0),)


def out_like(x):
    return torch.empty_like(x)


FAMILY = Family(
    title="GeLU (tanh approximation)",
    bound="memory",
    make_inputs=make_inputs,
    reference=reference,
    error_floor=error_floor,
    bytes_moved=elementwise_bytes(1),
    flops=lambda shape, dtype, **_: 10 * numel(shape),
    out_like=out_like,
    description="Elementwise GeLU; the course's first CUDA kernel and the first ladder.",
    grads=("dx",),
    backward_bytes=backward.backward_bytes,
    backward_flops=lambda shape, dtype, **_: 18 * numel(shape),
    backward_error_floor=backward.backward_error_floor,
)

FAMILY.add("torch_naive", returns_new(gelu_naive))
FAMILY.add("torch_fused", gelu_fused)
FAMILY.add("triton", gelu_triton, triton_kernels=(gelu_kernel,), compile_specs=compile_specs)
FAMILY.add("compiled", compiled(gelu_naive))
# the backward: autograd through the naive chain, through PyTorch's GeLU, through torch.compile's;
# Triton's elementwise from x and dy (backward.py)
FAMILY.add_pytorch_backwards(gelu_naive, gelu_op)
FAMILY.add_backward("triton", backward.gelu_backward_triton, compile_specs=backward.backward_specs)
# The CUDA ladder cuda_gelu: one file per step in cuda_gelu/ (what they share in gelu.cuh), in
# ladder.yaml's order; each step runs as the `gelu` op of binding.cpp with the step's name. Its
# idea and prediction are printed in KERNEL_LOG.md beside the measured outcome.

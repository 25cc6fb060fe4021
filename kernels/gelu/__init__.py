"""GeLU, tanh approximation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).

Memory-bound: one read and one write per element, about 10 FLOPs. At 2^28 fp32
elements that is 2 GiB moved, about 0.5 ms at 4.2 TB/s; the FLOPs are noise.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import compiled, cuda_op, elementwise_bytes, numel, randn, returns_new
from kernellab.registry import Family, Impl, register_family
from kernellab.triton_utils import CompileSpec, autotune, launch, triton_type

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


def gelu_fused(out, x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def triton_configs():
    return [
        triton.Config({"BLOCK": block}, num_warps=warps)
        for block in (1024, 2048, 4096, 8192)
        for warps in (4, 8)
    ]


@autotune(configs=triton_configs(), key=["n"])
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


FAMILY = register_family(
    Family(
        name="gelu",
        title="GeLU (tanh approximation)",
        bound="memory",
        dtypes=("fp32", "bf16"),
        make_inputs=make_inputs,
        reference=reference,
        error_floor=error_floor,
        bytes_moved=elementwise_bytes(1),
        flops=lambda shape, dtype, **_: 10 * numel(shape),
        out_like=out_like,
        description="Elementwise GeLU; the course's first CUDA kernel and the first ladder.",
    )
)

FAMILY.add(Impl("gelu", "torch_naive", "torch", returns_new(gelu_naive)))
FAMILY.add(Impl("gelu", "torch_fused", "torch", gelu_fused))
FAMILY.add(Impl("gelu", "triton", "triton", gelu_triton,
                triton_kernels=(gelu_kernel,), compile_specs=compile_specs))
FAMILY.add(Impl("gelu", "compiled", "compile", compiled(gelu_naive)))

# The CUDA ladder. Each step is its own implementation; its idea and prediction are
# printed in KERNEL_LOG.md beside the measured outcome.
CUDA_STEPS = [
    (
        "course",
        "The course's kernel: one element per thread, 1024 threads per block; its double "
        "literals (0.5, 1.0, tanh of a double) promote the arithmetic to fp64.",
        "Baseline. Two numbers at 2^28 fp32: 2 GiB over 4.2 TB/s is 0.51 ms; an fp64 tanh "
        "is a software routine of roughly 30-40 fp64 operations, ~10 GFLOP over the H200's "
        "~34 TFLOP/s of fp64 is ~0.3 ms, so memory still bounds it but the fp64 work eats "
        "into the overlap: 40-90% of the copy bandwidth.",
        None,
        (40.0, 90.0),
    ),
    (
        "vec4",
        "fp32 arithmetic with float literals and tanhf, and 16-byte loads and stores "
        "(float4, or 8 bf16 as one uint4): a quarter of the memory instructions.",
        "Purely memory-bound: 85-95% of the copy bandwidth at 2^28, 1.0-2.0x the course "
        "step; LDG.E.128 / STG.E.128 in SASS and no fp64 instructions.",
        (1.0, 2.0),
        (85.0, 95.0),
    ),
    (
        "vec4_ilp",
        "vec4 plus four 16-byte vectors in flight per thread (all loads issued before any "
        "use), a grid of a few waves per SM, and cheaper transcendentals: for fp32, "
        "x / (1 + exp(-2u)) with ex2.approx and a fast divide (~1e-6 relative error); for "
        "bf16 the hardware tanh.approx.f32 (2^-11 relative error, far inside bf16's).",
        "More bytes in flight per SM hides DRAM latency: 0-10% over vec4, 88-97% of the "
        "copy bandwidth; ex2.approx (fp32) and tanh.approx.f32 (bf16) in PTX.",
        (1.0, 1.1),
        (88.0, 97.0),
    ),
]
for order, (step, idea, prediction, speedup, pct) in enumerate(CUDA_STEPS, start=1):
    FAMILY.add(
        Impl("gelu", "cuda", "cuda", cuda_op("gelu", step), step=step, ladder="cuda_gelu",
             cuda_kernels=(f"gelu_{step}",))
    )

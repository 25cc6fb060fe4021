"""Vector add: out = a + b.

Memory-bound: two reads and one write per element, one FLOP. At 2^28 fp32 elements
that is 3 GiB, about 0.77 ms at 4.2 TB/s.
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
    elementwise_configs,
    launch,
    numel,
    randn,
    returns_new,
    triton_type,
)


def reference(a, b):
    return a + b


def add_naive(a, b):
    return a + b


def add_fused(out, a, b):
    return torch.add(a, b, out=out)


@autotune(configs=elementwise_configs(), key=["n"])
@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (a + b).to(out_ptr.dtype.element_ty), mask=mask)


def add_triton(out, a, b):
    n = a.numel()
    launch(add_kernel, lambda meta: (triton.cdiv(n, meta["BLOCK"]),), a, b, out, n)
    return out


def compile_specs(dtype: str):
    ty = triton_type(dtype)
    return [
        CompileSpec(add_kernel, {"a_ptr": f"*{ty}", "b_ptr": f"*{ty}", "out_ptr": f"*{ty}", "n": "i32"},
                    {"BLOCK": 4096}, num_warps=8, label="BLOCK=4096, num_warps=8")
    ]


def make_inputs(shape, dtype, device, seed):
    return (randn(shape, dtype, device, seed), randn(shape, dtype, device, seed + 7919))


FAMILY = Family(
    title="Vector add",
    bound="memory",
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=elementwise_bytes(2),
    flops=lambda shape, dtype, **_: numel(shape),
    out_like=lambda a, b: torch.empty_like(a),
    description="The first kernel of every course: pure bandwidth.",
)

FAMILY.add("torch_naive", returns_new(add_naive))
FAMILY.add("torch_fused", add_fused)
FAMILY.add("triton", add_triton, triton_kernels=(add_kernel,), compile_specs=compile_specs)
FAMILY.add("compiled", compiled(add_naive))
FAMILY.add("cuda", cuda_op("vector_add", "vector_add", "vec4"), cuda_kernels=("vector_add_vec4",))

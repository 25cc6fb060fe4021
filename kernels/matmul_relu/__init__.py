"""Matrix multiply with a ReLU epilogue: C (M, N) = relu(A (M, K) @ B (K, N)), shape "MxNxK".

Compute-bound like ``matmul``: 2*M*N*K + M*N FLOPs, (M*K + K*N + M*N) elements moved
when the ReLU is fused. At 4096^3 in bf16: 137.4 GFLOP and 101 MB, about 183 us at the
~750 TFLOP/s cuBLAS reaches on the H200. Unfused, the ReLU is a second kernel that
reads and writes C again: 2 * 4096^2 * 2 B = 67 MB, about 16 us at 4.2 TB/s, roughly
9% on top of the GEMM; that is what fusing the epilogue saves.
"""

from __future__ import annotations

import functools

import torch

from kernellab.kit import Family, builds_on, compiled, returns_new

matmul = builds_on("matmul")  # the GEMM, its inputs and byte count: the matmul family's
launch_matmul, make_compile_specs, matmul_kernel = matmul.launch_matmul, matmul.make_compile_specs, matmul.matmul_kernel
make_inputs, matmul_bytes, out_like = matmul.make_inputs, matmul.matmul_bytes, matmul.out_like


def reference(a, b):
    """Float64 reference, shared by tests and benchmarks."""
    return torch.relu(a @ b)


def matmul_relu_naive(a, b):
    """Two kernels: the cuBLAS GEMM writes C, then relu reads it and writes a new tensor."""
    return torch.relu(a @ b)


def matmul_relu_fused(out, a, b):
    """The best eager PyTorch has: cuBLAS into ``out``, then an in-place ReLU over it.

    Still two kernels (PyTorch has no GEMM with a ReLU epilogue in its public ops), but
    no extra allocation: C is written once, then read and written once more in place.
    """
    torch.matmul(a, b, out=out)
    return out.relu_()


@functools.lru_cache(maxsize=16)
def _zero_bias(n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The bias the cuBLASLt path needs, made once per (N, dtype, device) outside the timed call."""
    return torch.zeros(n, dtype=dtype, device=device)


def matmul_relu_cublaslt(out, a, b):
    """cuBLASLt's GEMM with the ReLU in its epilogue: one kernel. ``torch._addmm_activation`` sends
    a call through cuBLASLt with the activation fused only with a 1-D bias and beta 1 (ATen's
    ``isInputCompliesAddmmCudaLt``), hence the zero bias; elsewhere (a CPU) it is matmul then ReLU."""
    return torch._addmm_activation(_zero_bias(b.shape[1], b.dtype, b.device), a, b, out=out)


def matmul_relu_triton(out, a, b):
    """The shared Triton GEMM with the ReLU applied to the fp32 accumulator before the store."""
    return launch_matmul(out, a, b, activation="relu")


def compile_specs(dtype: str):
    return make_compile_specs(dtype, activation="relu")


def matmul_relu_flops(shape, dtype, **_):
    M, N, K = (int(d) for d in shape)
    return 2 * M * N * K + M * N


FAMILY = Family(
    title="Matrix multiply + ReLU",
    bound="compute",
    dtypes=("fp16", "bf16", "fp32", "tf32"),
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=matmul_bytes,
    flops=matmul_relu_flops,
    out_like=out_like,
    shape_rank=(3,),
    description="relu(A @ B): a fused epilogue in Triton against cuBLAS + a separate ReLU.",
)

FAMILY.add("torch_naive", returns_new(matmul_relu_naive))
FAMILY.add("torch_fused", matmul_relu_fused)
FAMILY.add("torch_fused", matmul_relu_cublaslt, step="cublaslt", ladder="pytorch")
FAMILY.add("triton", matmul_relu_triton, triton_kernels=(matmul_kernel,), compile_specs=compile_specs)
FAMILY.add("compiled", compiled(matmul_relu_naive))

"""Matrix multiply: C (M, N) = A (M, K) @ B (K, N), shape written "MxNxK".

Compute-bound at the sizes that matter: 2*M*N*K FLOPs against (M*K + K*N + M*N)
elements moved. At 4096^3 that is 137.4 GFLOP and 101 MB in bf16: about 183 us at the
~750 TFLOP/s cuBLAS reaches on the H200 in bf16, while the bytes alone would take
24 us at 4.2 TB/s. At 8192^3: 1.1 TFLOP, about 1.47 ms in bf16. In fp32 (TF32 off,
CUDA cores, cuBLAS ~51 TFLOP/s) 4096^3 takes about 2.7 ms.

dtypes: ``fp32`` is float32 with TF32 off (IEEE fp32 FMAs), ``tf32`` is float32 with
the TF32 tensor cores allowed. The tensors are the same; what differs is the process
flag ``torch.backends.cuda.matmul.allow_tf32``, which the harness sets around every call
with ``runtime.matmul_precision(dtype)``. cuBLAS (torch_naive, torch_fused) and
torch.compile read that flag themselves; the Triton launcher reads it too
(``input_precision``), so all implementations of a case do the same arithmetic.

The Triton kernel (``matmul_kernel``) is shared with ``matmul_relu``: its ``ACTIVATION``
meta-parameter applies the epilogue in registers before the one store.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernellab.ops._common import compiled, cuda_op, randn, returns_new
from kernellab.registry import Family, Impl, register_family
from kernellab.runtime import element_size
from kernellab.triton_utils import CompileSpec, launch, triton_type


def reference(a, b):
    """Float64 reference, shared by tests and benchmarks."""
    return a @ b


def matmul_naive(a, b):
    """``a @ b``: cuBLAS on the GPU.

    The literal "separate ops" matmul, ``(a.unsqueeze(2) * b.unsqueeze(0)).sum(1)``,
    materialises an M x K x N temporary: 2^36 elements (256 GiB in fp32) at 4096^3, so
    it cannot run at the benchmark sizes. For a lone matmul there is nothing to fuse,
    so torch_naive is the same cuBLAS call as torch_fused (without ``out=``); the
    naive/fused distinction matters for the epilogue family ``matmul_relu``.
    """
    return a @ b


def matmul_naive_max_autotune(a, b):
    """``a @ b`` again, as its own function for ``compiled_max_autotune``.

    Dynamo keeps compiled code per Python code object and counts every recompilation
    of it against one limit (``recompile_limit``, 8), falling back to eager beyond it.
    Compiling ``matmul_naive`` twice (default and max-autotune, 4 dtypes, several
    shapes) would share that budget; a separate function has its own.
    """
    return a @ b


def matmul_fused(out, a, b):
    """cuBLAS writing straight into ``out``."""
    return torch.matmul(a, b, out=out)


# ---------------------------------------------------------------------------- Triton
# Autotune configs, one list per kind of arithmetic. A single autotuned kernel holds
# them all (so the autotune rule, which forces every config through the launcher,
# sees one kernel); ``prune_configs`` keeps the list that fits the call at hand.
#   (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps)
_TILES = {
    # bf16/fp16 on the tensor cores. On sm_90 a tl.dot with BLOCK_M >= 64 and a
    # software pipeline (num_stages >= 3) lowers to asynchronous wgmma; 128x256x64 with
    # 8 warps (two warpgroups of 64x256) and 3 stages (48 KiB of A and B per stage) is
    # the Hopper tile of Triton's matmul tutorial and of tritonbench. The 16/32-row
    # tiles are for skinny M (16x4096x4096): narrow BLOCK_N to get enough programs.
    "16bit": [
        (128, 256, 64, 3, 8),
        (256, 128, 64, 3, 8),
        (128, 256, 64, 4, 8),
        (128, 128, 64, 4, 8),
        (128, 128, 64, 3, 4),
        (128, 128, 64, 4, 4),
        (64, 256, 64, 4, 4),
        (128, 64, 64, 4, 4),
        (64, 128, 64, 4, 4),
        (64, 64, 64, 4, 4),
        (16, 32, 256, 4, 4),
        (16, 64, 128, 4, 4),
        (16, 128, 128, 4, 4),
    ],
    # fp32 storage on the TF32 tensor cores: 4-byte elements, so BLOCK_K = 32 keeps the
    # same bytes per stage as the 16-bit tiles (128x256x32: 48 KiB per stage).
    "tf32": [
        (128, 256, 32, 3, 8),
        (256, 128, 32, 3, 8),
        (128, 128, 32, 4, 8),
        (128, 128, 32, 3, 4),
        (64, 128, 32, 4, 4),
        (128, 64, 32, 4, 4),
        (64, 64, 32, 4, 4),
        (16, 64, 64, 4, 4),
        (16, 32, 128, 4, 4),
    ],
    # IEEE fp32 on the CUDA cores (FMA): no tensor cores, so register-bound; smaller
    # tiles and K-steps (tl.dot needs BLOCK_K >= 16).
    "ieee": [
        (128, 128, 16, 3, 8),
        (128, 128, 32, 3, 8),
        (64, 128, 32, 3, 4),
        (128, 64, 32, 3, 4),
        (64, 64, 32, 3, 4),
        (64, 64, 16, 4, 4),
        (32, 64, 32, 3, 4),
        (16, 64, 32, 3, 4),
        (16, 32, 64, 3, 2),
    ],
}
GROUP_M = 8  # programs that walk down a column of C tiles before moving right (L2 reuse)


def _config(tile) -> triton.Config:
    bm, bn, bk, stages, warps = tile
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M},
                         num_stages=stages, num_warps=warps)


def triton_configs() -> list[triton.Config]:
    """Every config, 16-bit tensor-core tiles first (the interpreter runs the first)."""
    return [_config(t) for kind in ("16bit", "tf32", "ieee") for t in _TILES[kind]]


def config_kind(element_bytes: int, precision: str) -> str:
    """Which config list suits a call: ``16bit``, ``tf32`` or ``ieee``."""
    if element_bytes == 2:
        return "16bit"
    return "tf32" if precision == "tf32" else "ieee"


def _tile_of(config) -> tuple:
    kw = config.kwargs
    return (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], config.num_stages, config.num_warps)


def prune_configs(configs, named_args, **kwargs):
    """``early_config_prune``: keep the configs of the list that fits this call."""
    kind = config_kind(named_args["a_ptr"].element_size(), kwargs.get("INPUT_PRECISION", "tf32"))
    wanted = set(_TILES[kind])
    kept = [c for c in configs if _tile_of(c) in wanted]
    return kept or list(configs)


def configs_for(dtype: str) -> list[triton.Config]:
    """The configs the autotuner considers for one dtype name (fp32 | tf32 | bf16 | fp16)."""
    kind = config_kind(element_size(dtype), "tf32" if dtype == "tf32" else "ieee")
    wanted = set(_TILES[kind])
    return [c for c in matmul_kernel.configs if _tile_of(c) in wanted]


# INPUT_PRECISION is in the key because fp32 and tf32 calls pass the same float32
# tensors: without it a config tuned for one would be reused for the other.
@triton.autotune(configs=triton_configs(), key=["M", "N", "K", "INPUT_PRECISION"],
                 prune_configs_by={"early_config_prune": prune_configs})
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """C = act(A @ B), one BLOCK_M x BLOCK_N tile of C per program, fp32 accumulator.

    Programs are numbered in groups of GROUP_M tile-rows: consecutive programs share a
    column of B tiles and GROUP_M rows of A tiles, so those stay in L2 while they are
    reused. Rows and columns past M and N are read wrapped (``% M``, ``% N``: valid
    addresses, results discarded by the masked store) so the main-loop loads need no
    M/N mask; the K tail is masked with zeros.
    """
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Row/column indices fit int32 (< M, N); the products with strides are int64.
    rows_a = (offs_m % M).to(tl.int64)
    cols_b = (offs_n % N).to(tl.int64)
    a_ptrs = a_ptr + rows_a[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols_b[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c = acc.to(c_ptr.dtype.element_ty)

    offs_cm = offs_m.to(tl.int64)
    offs_cn = offs_n.to(tl.int64)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def input_precision(a) -> str:
    """tl.dot's ``input_precision`` matching what cuBLAS does for ``a`` right now.

    float32 inputs: ``"tf32"`` when the process allows TF32 matmuls (the harness sets
    ``runtime.matmul_precision("tf32")``), ``"ieee"`` otherwise. 16-bit inputs go to the
    tensor cores as they are; ``"tf32"`` is Triton's default there and changes nothing.
    """
    if a.dtype != torch.float32:
        return "tf32"
    try:
        allowed = bool(torch.backends.cuda.matmul.allow_tf32)
    except RuntimeError:  # the new fp32_precision API was used; the legacy getter refuses
        allowed = torch.backends.cuda.matmul.fp32_precision == "tf32"
    return "tf32" if allowed else "ieee"


def launch_matmul(out, a, b, activation: str = ""):
    """Launch ``matmul_kernel`` for ``out = activation(a @ b)``; any strides."""
    M, K = a.shape
    K2, N = b.shape
    if K != K2 or tuple(out.shape) != (M, N):
        raise ValueError(f"shapes do not match: a {tuple(a.shape)}, b {tuple(b.shape)}, "
                         f"out {tuple(out.shape)}")

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    launch(matmul_kernel, grid, a, b, out, M, N, K,
           a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
           ACTIVATION=activation, INPUT_PRECISION=input_precision(a))
    return out


def matmul_triton(out, a, b):
    return launch_matmul(out, a, b)


def make_compile_specs(dtype: str, activation: str = "") -> list[CompileSpec]:
    """Specs as the JIT would build them for contiguous row-major inputs at the default
    power-of-two shapes: unit strides specialised to the constant 1, sizes and leading
    strides multiples of 16."""
    ty = triton_type(dtype)
    kind = config_kind(element_size(dtype), "tf32" if dtype == "tf32" else "ieee")
    tile = {"16bit": (128, 256, 64, 3, 8), "tf32": (128, 128, 32, 4, 8), "ieee": (128, 128, 32, 3, 8)}[kind]
    bm, bn, bk, stages, warps = tile
    precision = "ieee" if kind == "ieee" else "tf32"
    signature = {"a_ptr": f"*{ty}", "b_ptr": f"*{ty}", "c_ptr": f"*{ty}", "M": "i32", "N": "i32", "K": "i32",
                 "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    constexprs = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1,
                  "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M,
                  "ACTIVATION": activation, "INPUT_PRECISION": precision}
    label = f"BLOCK={bm}x{bn}x{bk}, num_stages={stages}, num_warps={warps}, input_precision={precision}"
    return [CompileSpec(matmul_kernel, signature, constexprs, num_warps=warps, num_stages=stages, label=label,
                        divisible=("M", "N", "K", "stride_am", "stride_bk", "stride_cm"))]


def compile_specs(dtype: str) -> list[CompileSpec]:
    return make_compile_specs(dtype)


# ---------------------------------------------------------------------------- family
def make_inputs(shape, dtype, device, seed):
    """a ~ N(0, 1), b ~ N(0, 1/K): every entry of a @ b is ~N(0, 1) whatever K is."""
    M, N, K = (int(d) for d in shape)
    a = randn((M, K), dtype, device, seed)
    b = randn((K, N), dtype, device, seed + 7919, scale=1.0 / math.sqrt(K))
    return a, b


def out_like(a, b):
    return torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)


def matmul_bytes(shape, dtype, **_):
    M, N, K = (int(d) for d in shape)
    return (M * K + K * N + M * N) * element_size(dtype)


def matmul_flops(shape, dtype, **_):
    M, N, K = (int(d) for d in shape)
    return 2 * M * N * K


FAMILY = register_family(
    Family(
        name="matmul",
        title="Matrix multiply",
        bound="compute",
        dtypes=("fp16", "bf16", "fp32", "tf32"),
        make_inputs=make_inputs,
        reference=reference,
        bytes_moved=matmul_bytes,
        flops=matmul_flops,
        out_like=out_like,
        shape_rank=(3,),
        description="C = A @ B against cuBLAS: a tiled Triton GEMM and the CUDA SGEMM ladder.",
    )
)

FAMILY.add(Impl("matmul", "torch_naive", "torch", returns_new(matmul_naive)))
FAMILY.add(Impl("matmul", "torch_fused", "torch", matmul_fused))
FAMILY.add(Impl("matmul", "triton", "triton", matmul_triton,
                triton_kernels=(matmul_kernel,), compile_specs=compile_specs))
FAMILY.add(Impl("matmul", "compiled", "compile", compiled(matmul_naive)))
# max-autotune without CUDA graphs: Inductor benchmarks its Triton GEMM templates
# against cuBLAS and keeps the fastest. Plain "max-autotune" would also replay the
# call as a CUDA graph (copying the inputs into static buffers on every call and
# recycling the output buffer between calls), which measures something else; the
# harness reports graph replays of every implementation separately (graph_us).
FAMILY.add(Impl("matmul", "compiled_max_autotune", "compile",
                compiled(matmul_naive_max_autotune, mode="max-autotune-no-cudagraphs")))

# The CUDA SGEMM ladder (fp32, TF32 off): siboehm's "How to optimize a CUDA matmul
# kernel for cuBLAS-like performance" kernels 1-10, re-measured on the H200. Numbers at
# 4096^3 (137.4 GFLOP) against cuBLAS fp32 at ~51 TFLOP/s (2.7 ms); the datasheet
# fp32 FMA peak is ~67 TFLOP/s. Percentages are of cuBLAS (the measured ceiling).
SGEMM_STEPS = [
    (
        "naive",
        "One thread per element of C, threadIdx.x walking down a column of C: the 32 "
        "threads of a warp read 32 different rows of A (stride K, 32 sectors per load) "
        "and write C with stride N. Every operand comes from global memory (L1/L2).",
        "Baseline, latency- and L1-bound by the uncoalesced A loads: about 0.3-1 TFLOP/s, "
        "0.5-2% of cuBLAS (roughly 150-400 ms at 4096^3).",
        None,
        (0.5, 2.0),
    ),
    (
        "coalesced",
        "Swap the thread-to-element mapping so a warp computes 32 consecutive columns of "
        "one row of C: the B loads and C stores become one 128-byte transaction per warp "
        "and the A element is a broadcast.",
        "5-8x over naive (siboehm: 6.4x): each FMA still needs two L1 loads, so LSU-bound "
        "at about 3-6 TFLOP/s, 6-12% of cuBLAS.",
        (5.0, 8.0),
        (6.0, 12.0),
    ),
    (
        "smem_tiling",
        "A 32x32 block of C per 1024-thread block: stage 32x32 tiles of A and B in shared "
        "memory once (coalesced), then each thread does 32 FMAs from shared memory.",
        "1.3-1.6x over coalesced (siboehm: 1.5x). Still two shared-memory loads per FMA, so "
        "LDS-bound near 1/8 of the FMA peak: 8-18% of cuBLAS.",
        (1.3, 1.6),
        (8.0, 18.0),
    ),
    (
        "blocktile_1d",
        "BM=64, BN=64, BK=8, TM=8: each thread computes 8 results down a column, reusing "
        "one B value from shared memory across 8 FMAs (arithmetic intensity per LDS up 4x).",
        "2-3x over smem_tiling (siboehm: 2.8x): 30-40% of cuBLAS, about 15-20 TFLOP/s.",
        (2.0, 3.0),
        (30.0, 40.0),
    ),
    (
        "blocktile_2d",
        "BM=BN=128, BK=8, TM=TN=8: each thread computes an 8x8 outer product from 8 A and "
        "8 B values held in registers: 64 FMAs per 16 shared loads.",
        "1.6-2.2x over blocktile_1d (siboehm: 1.9x): 55-70% of cuBLAS, about 28-36 TFLOP/s.",
        (1.6, 2.2),
        (55.0, 70.0),
    ),
    (
        "vectorized",
        "blocktile_2d with float4 (16-byte) global loads and stores, and A stored "
        "transposed in shared memory so the per-thread A fragment is read with LDS.128.",
        "1.05-1.3x over blocktile_2d (siboehm: 1.14x): 65-80% of cuBLAS; LDG.E.128 and "
        "LDS.128 in SASS.",
        (1.05, 1.3),
        (65.0, 80.0),
    ),
    (
        "warptile",
        "A warp-level tile between the block tile and the thread tile: each warp owns a "
        "sub-tile of C, so a warp's shared-memory reads hit few banks and registers are "
        "reused across the warp's iterations (siboehm kernel 10).",
        "1.05-1.25x over vectorized (siboehm: 1.19x): at least 80% of cuBLAS, about "
        "41-48 TFLOP/s (80-95%).",
        (1.05, 1.25),
        (80.0, 95.0),
    ),
]
for order, (step, idea, prediction, speedup, pct) in enumerate(SGEMM_STEPS, start=1):
    FAMILY.add(
        Impl("matmul", "cuda", "cuda", cuda_op("sgemm", step), step=step, order=order, ladder="cuda_sgemm",
             idea=idea, prediction=prediction, expect_speedup=speedup, expect_pct_of_peak=pct,
             dtypes=("fp32",), cuda_kernels=(f"sgemm_{step}",))
    )

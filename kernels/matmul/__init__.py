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

The Triton kernel (``matmul_kernel``, in ``triton_matmul.py`` beside this file) is shared
with ``matmul_relu``: its ``ACTIVATION`` meta-parameter applies the epilogue in registers
before the one store. The CUDA SGEMM ladder is in ``cuda_sgemm/``, one .cu file per step.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import torch

from kernellab.kit import Family, compiled, cuda_op, cuda_ops, element_size, randn, returns_new

from .configs import (  # noqa: F401
    FLAVOURS,
    GROUP_M,
    META_DEFAULTS,
    SKINNY_M,
    _tile_of,
    config_kind,
    config_of,
    flavour_of,
    prune_configs,
    triton_configs,
    uses_tma,
)
from .hopper import HOPPER_STEPS, hopper_step, unsupported_shape  # noqa: F401

# The Triton side, re-exported: matmul_relu imports launch_matmul, make_compile_specs and
# matmul_kernel from here, and the tests reach the rest as attributes of this module.
from .launch import (  # noqa: F401
    B_LAYOUTS,
    b_kmajor,
    compile_specs,
    configs_for,
    input_precision,
    kmajor_copy,
    launch_matmul,
    make_compile_specs,
    matmul_grid,
    matmul_triton,
    split_k_buffers,
    tma_ok,
)
from .triton_matmul import (  # noqa: F401
    matmul_kernel,
)


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


FAMILY = Family(
    title="Matrix multiply",
    bound="compute",
    dtypes=("fp16", "bf16", "fp32", "tf32"),
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=matmul_bytes,
    flops=matmul_flops,
    out_like=out_like,
    shape_rank=(3,),
    cuda_step=lambda family, step: hopper_step(family, step) if step in HOPPER_STEPS else sgemm_step(family, step),
    cuda_dtypes={"cuda_sgemm": ("fp32",), "cuda_hopper": ("bf16", "fp16")},
    description="C = A @ B against cuBLAS: a tiled Triton GEMM, the CUDA SGEMM ladder and the Hopper bf16 ladder.",
)

FAMILY.add("torch_naive", returns_new(matmul_naive))
FAMILY.add("torch_fused", matmul_fused)
FAMILY.add("triton", matmul_triton, triton_kernels=(matmul_kernel,), compile_specs=compile_specs)
FAMILY.add("compiled", compiled(matmul_naive))
# max-autotune without CUDA graphs: Inductor benchmarks its Triton GEMM templates
# against cuBLAS and keeps the fastest. Plain "max-autotune" would also replay the
# call as a CUDA graph (copying the inputs into static buffers on every call and
# recycling the output buffer between calls), which measures something else; the
# harness reports graph replays of every implementation separately (graph_us).
FAMILY.add("compiled_max_autotune", compiled(matmul_naive_max_autotune, mode="max-autotune-no-cudagraphs"))
# No QuACK here (kernellab.kit.peers): its GEMM (quack.gemm_interface.gemm, 0.6.5) takes fp16, bf16 and
# fp8 operands only, not our fp32 or tf32 (GemmSm90.is_valid_dtypes), and loads them by TMA, which
# needs 16-byte row strides: the check shape 127x129x65 (K = 65) is not one. Its autotuner also
# compiles a CuTe kernel per config at each new shape. cuBLAS (torch_fused) is the GEMM to beat.

# The CUDA SGEMM ladder (fp32, TF32 off): siboehm's "How to optimize a CUDA matmul
# kernel for cuBLAS-like performance" kernels 1-10, re-measured on the H200; one .cu file
# per step in cuda_sgemm/, run by the `sgemm` op (sgemm_step below). Its ideas and predictions
# (at 4096^3, as a share of cuBLAS fp32, ~51 TFLOP/s) are in ladder.yaml.

SGEMM_HEADER = Path(__file__).resolve().parent / "cuda_sgemm" / "sgemm.h"


def sgemm_autotuned_configs(header: Path = SGEMM_HEADER) -> tuple[str, ...]:
    """The autotuned step's tile shapes, kl::kSgemmAutotunedConfigs of cuda_sgemm/sgemm.h in its
    order, read from the header (their one list): "autotuned:<index>" runs one of them; plain
    "autotuned" lets the launcher pick by the number of tiles."""
    found = re.search(r"kSgemmAutotunedConfigs\[\]\s*=\s*\{([^}]*)\}", header.read_text())
    if found is None:
        raise ValueError(f"{header}: no 'kSgemmAutotunedConfigs[] = {{\"<name>\", ...}}' list")
    return tuple(re.findall(r'"([^"]+)"', found.group(1)))


SGEMM_AUTOTUNED_CONFIGS = sgemm_autotuned_configs()
_sgemm_best: dict[tuple, int] = {}  # (M, N, K, vec, device) -> config index


def sgemm_autotune(ops, out, a, b, reps: int = 10) -> int:
    """Index of the fastest SGEMM_AUTOTUNED_CONFIGS entry for this call's shape and alignment,
    timed on the first call (one warm-up call per config, then one timed call, and ``reps``
    more in one batch when that took under a millisecond) and cached for the process.
    -1 (the launcher's own pick) while a CUDA graph is being captured."""
    (m, k), n = a.shape, b.shape[1]
    vec = n % 4 == 0 and b.data_ptr() % 16 == 0 and out.data_ptr() % 16 == 0
    key = (m, n, k, vec, a.device.index)
    if key in _sgemm_best:
        return _sgemm_best[key]
    if torch.cuda.is_current_stream_capturing():
        return -1
    times = []
    with torch.cuda.device(a.device):
        for i in range(len(SGEMM_AUTOTUNED_CONFIGS)):
            step = f"autotuned:{i}"
            try:
                ops.sgemm(a, b, out, step)  # warm-up (and the shared-memory opt-in)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                ops.sgemm(a, b, out, step)
                end.record()
                end.synchronize()
                ms = start.elapsed_time(end)
                if ms < 1.0:
                    start.record()
                    for _ in range(reps):
                        ops.sgemm(a, b, out, step)
                    end.record()
                    end.synchronize()
                    ms = start.elapsed_time(end) / reps
            except RuntimeError:  # a size this tile cannot index (grid too tall)
                ms = math.inf
            times.append(ms)
    best = min(range(len(times)), key=times.__getitem__)
    if math.isinf(times[best]):
        raise RuntimeError(f"kernellab.sgemm: no autotuned config runs {m}x{n}x{k}")
    _sgemm_best[key] = best
    return best


def sgemm_step(family: str, step: str):
    """The runner of an SGEMM step: the `sgemm` op with the step's name; the autotuned step picks
    its tile shape on first use."""
    return sgemm_autotuned if step == "autotuned" else cuda_op(family, "sgemm", step)


def sgemm_autotuned(out, a, b):
    """The ladder's last step: the fastest tile shape for this (M, N, K), picked on first use."""
    ops = cuda_ops("matmul")  # Unavailable without a GPU and the built extension
    best = sgemm_autotune(ops, out, a, b)
    ops.sgemm(a, b, out, "autotuned" if best < 0 else f"autotuned:{best}")
    return out


# The Triton ladders (texts: ladder.yaml), one file per step in triton_hopper/, triton_skinny/ and
# triton_tf32/: each step one fixed config of ``matmul_kernel`` (no autotuning) in one dtype, so a
# step differs from the one before in one technique. "triton_hopper" and "triton_tf32" are read at
# the profile shape (4096^3), "triton_skinny" at M = 128 (config: ladder_shapes); the family's
# ``triton`` row is the autotuned pick. A tf32 step also says what to do with a row-major B (see
# launch_matmul). No compile_specs: the ptx rule's dumps of the family's configs cover these bodies.
def triton_step(entry, b_layout: str = "transpose"):
    config = config_of(entry)

    def run(out, a, b):
        return launch_matmul(out, a, b, config=config, b_layout=b_layout)

    run.__name__ = f"matmul_triton_{'x'.join(map(str, entry[:3]))}_{entry[5] if len(entry) > 5 else 'ptr'}"
    return run

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

import functools
import math

import torch
import triton
import triton.language as tl

from kernellab.kit import compiled, cuda_op, randn, returns_new
from kernellab.registry import Family, Impl, register_family
from kernellab.runtime import element_size, triton_interpreted
from kernellab.triton_utils import CompileSpec, autotune, launch, triton_type


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
# One autotuned kernel, ``matmul_kernel``, with two bodies chosen at compile time:
#
# * the pointer body (any strides, any dtype, the interpreter's too): one C tile per
#   program, operands fetched with ``tl.load`` (cp.async + wgmma on sm_90);
# * the TMA body (fp16/bf16 whose rows start on 16-byte boundaries, sm_90+): persistent
#   (one program per SM walking the tiles in grouped order), operands fetched by the
#   Tensor Memory Accelerator through device-side tensor descriptors
#   (``tl.make_tensor_descriptor``: zero padding past the edges, so no masks), the tile
#   loop flattened into the K loop so that the next tile's loads are in flight during
#   this tile's epilogue, and C written by TMA stores in sub-tiles (less shared memory
#   for the epilogue, leaving room for the operand pipeline).
#
# A config asks for the TMA body (``TMA=True``); the launcher says whether this call
# can have it (``TMA_OK``). A TMA config on a call that cannot (odd row strides, fp32)
# runs the pointer body with the same tile, one program per tile, so every config works
# on every call (the interpreter's autotuning forces each one through the launcher).
#
# Autotune configs, one list per kind of arithmetic. A single autotuned kernel holds
# them all (so the autotune table sees one kernel); ``prune_configs`` keeps the list that
# fits the call at hand.
#   (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps[, variant])
# Variants (default "ptr", the pointer body) set these meta-parameters:
VARIANTS = {
    "ptr": {},
    # persistent TMA, flattened tile loop, epilogue in two halves of BLOCK_N / 2 columns
    "tma": {"TMA": True, "EPILOGUE_SUBTILE": 2},
    # the same with one whole-tile TMA store (64 KiB of shared memory at 128x256)
    "tma_nosub": {"TMA": True, "EPILOGUE_SUBTILE": 1},
    # persistent TMA without flattening (tile loop around the K loop)
    "tma_noflat": {"TMA": True, "EPILOGUE_SUBTILE": 2, "FLATTEN": False},
    # TMA loads and stores, one program per tile (not persistent)
    "tma_grid": {"TMA": True, "PERSISTENT": False, "EPILOGUE_SUBTILE": 1, "FLATTEN": False},
    # Persistent TMA with Triton's Hopper warp specialization: a producer warpgroup
    # issues the TMA loads, two consumer warpgroups run wgmma on BLOCK_M / 2 rows each
    # and the epilogue. num_warps=4 is one consumer's worth: the kernel runs 12 warps
    # (with num_warps=8 Triton 3.6 does not specialize at all). On sm_90 Triton 3.6
    # only specializes an unflattened loop (with flatten it ignores the request) and its
    # pass fails on the sub-tiled epilogue (reshape/permute/split), hence these flags.
    "tma_ws": {"TMA": True, "EPILOGUE_SUBTILE": 1, "WARP_SPECIALIZE": True, "FLATTEN": False},
    # the same, one program per tile
    "tma_ws_grid": {"TMA": True, "PERSISTENT": False, "EPILOGUE_SUBTILE": 1, "WARP_SPECIALIZE": True,
                    "FLATTEN": False},
}
META_DEFAULTS = {"TMA": False, "PERSISTENT": True, "EPILOGUE_SUBTILE": 1, "WARP_SPECIALIZE": False,
                 "FLATTEN": True}
_TILES = {
    # bf16/fp16 on the tensor cores. 128x256x64 (48 KiB of A and B per stage) is the
    # Hopper tile; with the pointer body it won every large shape (8 warps: two
    # warpgroups of 64x256 wgmma, 3 and 4 stages). Here it runs on TMA, persistent:
    # 3 stages + a 64 KiB whole-tile epilogue = 208 KiB of shared memory; warp-specialized
    # (4 warps per consumer warpgroup, 3 warpgroups) with a whole-tile store, 208 KiB.
    # On calls that cannot use TMA the first falls back to the pointer body with its
    # tile (the measured winner); the warp-specialized one is pruned there (4 warps for
    # a 128x256 pointer tile would spill). 64x128 / 64x64: 1024^3 and M=128 (more
    # programs than SMs). 16-row tiles: skinny M (16x4096x4096), narrow BLOCK_N to get
    # enough programs.
    "16bit": [
        # measured on the H200 (bf16 4096^3, L2 cleared): whole-tile store 96% of cuBLAS,
        # two-half store 91%; at 8192^3 the warp-specialized config below wins (93%)
        (128, 256, 64, 3, 8, "tma_nosub"),
        (128, 256, 64, 3, 4, "tma_ws"),
        (64, 128, 64, 4, 4),
        (64, 64, 64, 4, 4),
        (16, 32, 256, 4, 4),
        (16, 64, 128, 4, 4),
        (16, 128, 128, 4, 4),
    ],
    # fp32 storage on the TF32 tensor cores, pointer body (wgmma takes TF32 operands only
    # K-major from shared memory; B here is N-major, which TMA would copy as it is).
    # 4-byte elements, so BLOCK_K = 32 keeps the bytes per stage of the 16-bit tiles.
    "tf32": [
        (256, 128, 32, 3, 8),
        (128, 128, 32, 4, 8),
        (128, 128, 32, 3, 4),
        (128, 64, 32, 4, 4),
        (16, 64, 64, 4, 4),
        (16, 32, 128, 4, 4),
    ],
    # IEEE fp32 on the CUDA cores (FMA): no tensor cores, so register-bound; smaller
    # tiles and K-steps (tl.dot needs BLOCK_K >= 16).
    "ieee": [
        (128, 128, 32, 3, 8),
        (64, 128, 32, 3, 4),
        (128, 64, 32, 3, 4),
        (64, 64, 32, 3, 4),
        (16, 64, 32, 3, 4),
    ],
}
GROUP_M = 8  # programs that walk down a column of C tiles before moving right (L2 reuse)


def _config(tile) -> triton.Config:
    bm, bn, bk, stages, warps = tile[:5]
    variant = tile[5] if len(tile) > 5 else "ptr"
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M, **VARIANTS[variant]},
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
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps) of a config."""
    kw = config.kwargs
    return (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], config.num_stages, config.num_warps)


def variant_of(config) -> str:
    """The name in ``VARIANTS`` of a config's meta-parameters ("ptr" for none)."""
    meta = {k: v for k, v in config.kwargs.items() if k in META_DEFAULTS and v != META_DEFAULTS[k]}
    for name, kw in VARIANTS.items():
        if {k: v for k, v in kw.items() if v != META_DEFAULTS[k]} == meta:
            return name
    return "custom"


def _entry_of(config) -> tuple:
    """A config as written in ``_TILES``: the tile, then the variant unless "ptr"."""
    variant = variant_of(config)
    return _tile_of(config) + (() if variant == "ptr" else (variant,))


def uses_tma(meta) -> bool:
    """Whether a launch with these meta-parameters runs the TMA body."""
    return bool(meta.get("TMA", False)) and bool(meta.get("TMA_OK", False))


def prune_configs(configs, named_args, **kwargs):
    """``early_config_prune``: keep the configs of the list that fits this call. A call
    that cannot use TMA (``TMA_OK=False``) runs TMA configs on the pointer body, so only
    the first config of each tile is kept then, and none of the warp-specialized ones."""
    kind = config_kind(named_args["a_ptr"].element_size(), kwargs.get("INPUT_PRECISION", "tf32"))
    wanted = set(_TILES[kind])
    kept = [c for c in configs if _entry_of(c) in wanted]
    if not kwargs.get("TMA_OK", True):
        seen, unique = set(), []
        for c in kept:
            if _tile_of(c) not in seen and not c.kwargs.get("WARP_SPECIALIZE", False):
                seen.add(_tile_of(c))
                unique.append(c)
        kept = unique
    return kept or list(configs)


def configs_for(dtype: str) -> list[triton.Config]:
    """The configs the autotuner considers for one dtype name (fp32 | tf32 | bf16 | fp16)."""
    kind = config_kind(element_size(dtype), "tf32" if dtype == "tf32" else "ieee")
    wanted = set(_TILES[kind])
    return [c for c in matmul_kernel.configs if _entry_of(c) in wanted]


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(row, column) of C tile number ``tile_id`` in grouped order: consecutive tiles
    share a column of B tiles and GROUP_M rows of A tiles, so those stay in L2."""
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _activation(acc, ACTIVATION: tl.constexpr):
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    return acc


@triton.jit
def _matmul_pointers(a_ptr, b_ptr, c_ptr, M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """One BLOCK_M x BLOCK_N tile of C per program. Rows and columns past M and N are
    read wrapped (``% M``, ``% N``: valid addresses, results discarded by the masked
    store) so the main-loop loads need no M/N mask; the K tail is masked with zeros."""
    pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)

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

    acc = _activation(acc, ACTIVATION)
    c = acc.to(c_ptr.dtype.element_ty)

    offs_cm = offs_m.to(tl.int64)
    offs_cn = offs_n.to(tl.int64)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def _matmul_tma(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                EPILOGUE_SUBTILE: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr):
    """Tiles start_pid, start_pid + P, ... (P programs) of C: A, B and C through TMA
    descriptors built on the device (the unit strides are those of row-major tensors;
    the launcher checked them and the 16-byte alignment TMA needs)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BLOCK_M, BLOCK_N // EPILOGUE_SUBTILE])
    start_pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    # The epilogue recomputes its tile from a counter of its own rather than reusing
    # the loop's (as Triton's persistent-matmul tutorial does): values live across the
    # flattened loop's prologue and epilogue trouble the pipeliner.
    tile_id_c = start_pid - num_programs
    for tile_id in tl.range(start_pid, num_tiles, num_programs, flatten=FLATTEN,
                            warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_K
            a = a_desc.load([offs_m, offs_k])
            b = b_desc.load([offs_k, offs_n])
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)

        tile_id_c += num_programs
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        offs_cm = pid_m * BLOCK_M
        offs_cn = pid_n * BLOCK_N
        acc = _activation(acc, ACTIVATION)
        if EPILOGUE_SUBTILE == 2:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(halves)
            c_desc.store([offs_cm, offs_cn], acc0.to(c_desc.dtype))
            c_desc.store([offs_cm, offs_cn + BLOCK_N // 2], acc1.to(c_desc.dtype))
        else:
            c_desc.store([offs_cm, offs_cn], acc.to(c_desc.dtype))


# INPUT_PRECISION is in the key because fp32 and tf32 calls pass the same float32
# tensors: without it a config tuned for one would be reused for the other. TMA_OK too:
# the same shape with and without aligned rows runs different code. ``autotune`` is
# Triton's with the project's shorter per-config benchmark (triton_utils.bench_config).
@autotune(configs=triton_configs(), key=["M", "N", "K", "INPUT_PRECISION", "TMA_OK"],
          prune_configs_by={"early_config_prune": prune_configs})
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                  TMA_OK: tl.constexpr = False, TMA: tl.constexpr = False, PERSISTENT: tl.constexpr = True,
                  EPILOGUE_SUBTILE: tl.constexpr = 1, WARP_SPECIALIZE: tl.constexpr = False,
                  FLATTEN: tl.constexpr = True):
    """C = act(A @ B) with an fp32 accumulator: the TMA body when the config asks for it
    (TMA) and the call allows it (TMA_OK), else the pointer body. PERSISTENT only
    changes the grid (``matmul_grid``): the TMA body walks its tiles with a stride of
    the number of programs, whatever that is."""
    if TMA and TMA_OK:
        _matmul_tma(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, ACTIVATION, INPUT_PRECISION,
                    EPILOGUE_SUBTILE, WARP_SPECIALIZE, FLATTEN)
    else:
        _matmul_pointers(a_ptr, b_ptr, c_ptr, M, N, K,
                         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, ACTIVATION, INPUT_PRECISION)


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


INTERPRETER_SMS = 3  # "SMs" under the interpreter: persistent programs walk several tiles


@functools.cache
def _device_props(index: int) -> tuple[int, int]:
    """(multiprocessor count, major compute capability) of CUDA device ``index``."""
    props = torch.cuda.get_device_properties(index)
    return int(props.multi_processor_count), int(props.major)


def _props(t) -> tuple[int, int]:
    if triton_interpreted() or t.device.type != "cuda":
        return INTERPRETER_SMS, 9
    index = t.device.index if t.device.index is not None else torch.cuda.current_device()
    return _device_props(index)


def tma_ok(a, b, out) -> bool:
    """Whether this call can take the TMA body: 16-bit operands on sm_90+ (or the
    interpreter, which emulates descriptors), unit inner strides, row strides and base
    addresses multiples of 16 bytes (what a TMA descriptor requires)."""
    if a.dtype not in (torch.float16, torch.bfloat16) or b.dtype != a.dtype or out.dtype != a.dtype:
        return False
    if _props(a)[1] < 9:
        return False
    for t in (a, b, out):
        rows, cols = t.shape
        if rows == 0 or cols == 0 or t.stride(1) != 1 or t.stride(0) < cols:
            return False
        if (t.stride(0) * t.element_size()) % 16 or t.data_ptr() % 16:
            return False
    return True


def _scratch(size: int, alignment: int, stream):
    """Global memory for the device-side tensor descriptors (128 bytes per program)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _ensure_allocator() -> None:
    """``tl.make_tensor_descriptor`` needs ``triton.set_allocator``; set ours unless
    the process set one (the setting is per thread: a context variable)."""
    try:
        from triton.runtime import _allocation

        if not isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
            return
    except (ImportError, AttributeError):
        pass
    triton.set_allocator(_scratch)


def matmul_grid(M: int, N: int, num_sms: int):
    """The launch grid for meta-parameters ``meta``: one program per C tile, or one per
    SM (at most one per tile) when the TMA body runs persistent."""

    def grid(meta):
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        if uses_tma(meta) and meta.get("PERSISTENT", META_DEFAULTS["PERSISTENT"]):
            return (min(num_sms, tiles),)
        return (tiles,)

    return grid


def launch_matmul(out, a, b, activation: str = ""):
    """Launch ``matmul_kernel`` for ``out = activation(a @ b)``; any strides."""
    M, K = a.shape
    K2, N = b.shape
    if K != K2 or tuple(out.shape) != (M, N):
        raise ValueError(f"shapes do not match: a {tuple(a.shape)}, b {tuple(b.shape)}, "
                         f"out {tuple(out.shape)}")
    ok = tma_ok(a, b, out)
    if ok and not triton_interpreted():
        _ensure_allocator()
    launch(matmul_kernel, matmul_grid(M, N, _props(a)[0]), a, b, out, M, N, K,
           a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
           ACTIVATION=activation, INPUT_PRECISION=input_precision(a), TMA_OK=ok)
    return out


def matmul_triton(out, a, b):
    return launch_matmul(out, a, b)


def make_compile_specs(dtype: str, activation: str = "") -> list[CompileSpec]:
    """Specs as the JIT would build them for contiguous row-major inputs at the default
    power-of-two shapes: unit strides specialised to the constant 1, sizes and leading
    strides multiples of 16. 16-bit dtypes get two: the TMA body (the one large aligned
    shapes run on Hopper) then the pointer body with the same tile (odd strides)."""
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
    divisible = ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    pointer = CompileSpec(matmul_kernel, signature, constexprs, num_warps=warps, num_stages=stages, label=label,
                          divisible=divisible)
    if kind != "16bit":
        return [pointer]
    # The pointer spec stays last: the sm_90 tests read the last spec of a dtype.
    tma_meta = {**META_DEFAULTS, **VARIANTS["tma_nosub"], "TMA_OK": True}
    tma = CompileSpec(matmul_kernel, signature, {**constexprs, **tma_meta}, num_warps=warps, num_stages=stages,
                      label=f"TMA persistent, epilogue subtile {tma_meta['EPILOGUE_SUBTILE']}, {label}",
                      divisible=divisible)
    return [tma, pointer]


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
    (
        "autotuned",
        "One templated warp-tiled kernel instantiated for 8 tile shapes (128x128, 128x256, "
        "256x128, 128x64, 64x128, 64x64; BK 8 or 16; up to 8x16 = 128 results per thread), "
        "timed on the first call of each (M, N, K) and the fastest kept. Besides the choice: "
        "an S-stage cp.async ring (A transposed by 4-byte copies, B by 16-byte ones), the "
        "shared -> register fragments double-buffered across k, one barrier per BK tile, no "
        "bounds checks in the main loop (edge rows and columns clamped, only the last K tile "
        "zero-filled). On Hopper every non-FFMA instruction takes an FFMA issue slot, and "
        "8x16 per thread needs 6 LDS.128 per 128 FFMAs instead of warptile's 4 per 64.",
        "warptile measured 3.82 ms (71% of cuBLAS), vectorized 3.99 ms. Expect a 128x128 "
        "tile with 128 threads x 128 accumulators (cuBLAS's own fp32 SIMT shape) to win at "
        "4096^3: 1.10-1.30x over warptile, about 2.95-3.45 ms, 80-92% of cuBLAS; the main "
        "loop is ~90% FFMA in SASS against ~82% for warptile. Below one wave of 128x128 tiles "
        "(1024^3) the 64-wide tiles should win instead.",
        (1.10, 1.30),
        (80.0, 92.0),
    ),
]

# kl::kSgemmAutotunedConfigs (kernels/cuda/launchers.h), in order: "autotuned:<index>" runs
# one of them; plain "autotuned" lets the launcher pick by the number of tiles.
SGEMM_AUTOTUNED_CONFIGS = (
    "128x128x8_w64x64_t128_s4", "128x128x16_w64x64_t128_s3", "128x256x8_w64x64_t256_s3",
    "256x128x8_w64x64_t256_s3", "128x128x16_w64x32_t256_s3", "128x64x16_w64x32_t128_s3",
    "64x128x16_w32x64_t128_s3", "64x64x16_w32x32_t128_s3",
)
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
            variant = f"autotuned:{i}"
            try:
                ops.sgemm(a, b, out, variant)  # warm-up (and the shared-memory opt-in)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                ops.sgemm(a, b, out, variant)
                end.record()
                end.synchronize()
                ms = start.elapsed_time(end)
                if ms < 1.0:
                    start.record()
                    for _ in range(reps):
                        ops.sgemm(a, b, out, variant)
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


def sgemm_autotuned(out, a, b):
    """The ladder's last step: the fastest tile shape for this (M, N, K), picked on first use."""
    from kernellab import cuda_ext

    ops = cuda_ext.ops()  # Unavailable without a GPU and the built extension
    best = sgemm_autotune(ops, out, a, b)
    ops.sgemm(a, b, out, "autotuned" if best < 0 else f"autotuned:{best}")
    return out


for order, (step, idea, prediction, speedup, pct) in enumerate(SGEMM_STEPS, start=1):
    fn = sgemm_autotuned if step == "autotuned" else cuda_op("sgemm", step)
    FAMILY.add(
        Impl("matmul", "cuda", "cuda", fn, step=step, ladder="cuda_sgemm",
             dtypes=("fp32",), cuda_kernels=(f"sgemm_{step}",))
    )

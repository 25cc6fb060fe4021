"""The Triton matmul of the matmul family (and of ``matmul_relu``): ``matmul_kernel``, its
autotune configs and its launcher, ``launch_matmul``.

The kernel is shared with ``matmul_relu``: its ``ACTIVATION`` meta-parameter applies the
epilogue in registers before the one store. fp32 calls follow the process's TF32 flag
(``input_precision``), as cuBLAS does, so every implementation of a case does the same
arithmetic.
"""

from __future__ import annotations

import functools
import weakref

import torch
import triton
import triton.language as tl

from kernellab.engine.runtime import element_size, triton_interpreted
from kernellab.kit import CompileSpec, autotune, forced_config, launch, launch_config, triton_type

# One autotuned kernel, ``matmul_kernel``, with two bodies chosen at compile time:
#
# * the pointer body (any strides, any dtype, the interpreter's too): one C tile per
#   program, operands fetched with ``tl.load`` (cp.async + wgmma on sm_90);
# * the TMA body (fp16/bf16, or fp32 on the TF32 tensor cores with B K-major, rows
#   starting on 16-byte boundaries, sm_90+): persistent (one program per SM walking the
#   tiles, and with SPLIT_K the K pieces of each, in grouped order), operands fetched by the
#   Tensor Memory Accelerator through device-side tensor descriptors
#   (``tl.make_tensor_descriptor``: zero padding past the edges, so no masks), the tile
#   loop flattened into the K loop so that the next tile's loads are in flight during
#   this tile's epilogue, and C written by TMA stores in sub-tiles (less shared memory
#   for the epilogue, leaving room for the operand pipeline).
#
# A config asks for the TMA body (``TMA=True``); the launcher says whether this call
# can have it (``TMA_OK``). A TMA config on a call that cannot (odd row strides, IEEE fp32)
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
    # Split-K for skinny M: each C tile's K range cut in SPLIT_K pieces taken by different
    # programs, so M = 128 keeps every SM streaming B. Each piece writes its fp32 partial
    # tile to a workspace and counts itself on a per-tile semaphore; the last to arrive
    # sums all the partials in split order (the same bits whichever program is last) and
    # stores C: a serial fix-up in one kernel, no atomics on C.
    "tma_split2": {"TMA": True, "EPILOGUE_SUBTILE": 1, "FLATTEN": False, "SPLIT_K": 2},
}
META_DEFAULTS = {"TMA": False, "PERSISTENT": True, "EPILOGUE_SUBTILE": 1, "WARP_SPECIALIZE": False,
                 "FLATTEN": True, "SPLIT_K": 1}
SKINNY_M = 256  # calls with M at most this tune over the skinny list (split-K, narrow tiles)
_TILES = {
    # bf16/fp16 on the tensor cores, M above SKINNY_M. 128x256x64 (48 KiB of A and B per
    # stage) is the Hopper tile; with the pointer body it won every large shape (8 warps:
    # two warpgroups of 64x256 wgmma, 3 and 4 stages). Here it runs on TMA, persistent:
    # 3 stages + a 64 KiB whole-tile epilogue = 208 KiB of shared memory; warp-specialized
    # (4 warps per consumer warpgroup, 3 warpgroups) with a whole-tile store, 208 KiB.
    # On calls that cannot use TMA the first falls back to the pointer body with its
    # tile (the measured winner); the warp-specialized one is pruned there (4 warps for
    # a 128x256 pointer tile would spill). 64x128 / 64x64: 1024^3 (more programs than SMs).
    "16bit": [
        # measured on the H200 (bf16 4096^3, L2 cleared): whole-tile store 96% of cuBLAS,
        # two-half store 91%; at 8192^3 the warp-specialized config below wins (93%)
        (128, 256, 64, 3, 8, "tma_nosub"),
        (128, 256, 64, 3, 4, "tma_ws"),
        (64, 128, 64, 4, 4),
        (64, 64, 64, 4, 4),
    ],
    # bf16/fp16 with M <= SKINNY_M (LLM decode and small batches): B dominates the bytes,
    # so what counts is every SM streaming B. A 128x256 tile would leave most SMs idle at
    # M = 128 (32 tiles at N = 8192); narrow TMA tiles and split-K give 128-256 programs,
    # and deep pipelines (BLOCK_K 128, 4-6 stages: 192 KiB of A and B in flight per SM)
    # keep each one's loads coming (KERNEL_LOG: triton_skinny). 16-row tiles (mma.sync):
    # M = 16.
    "16bit_skinny": [
        (64, 64, 128, 6, 4, "tma_nosub"),
        (64, 128, 128, 4, 4, "tma_nosub"),
        (128, 128, 64, 4, 8, "tma_split2"),
        (64, 128, 128, 3, 4, "tma_split2"),
        (64, 128, 64, 4, 4),
        (16, 32, 256, 4, 4),
        (16, 64, 128, 4, 4),
        (16, 128, 128, 4, 4),
    ],
    # fp32 storage on the TF32 tensor cores. wgmma takes TF32 operands only K-major, so
    # the launcher hands the kernel B transposed ([N, K] rows, a copy inside the call
    # unless B already is) and TMA brings both operands in K-major; the pointer body
    # (calls TMA cannot take) reads the same K-major B with 16-byte copies. 4-byte
    # elements, so BLOCK_K = 32 keeps the bytes per stage of the 16-bit tiles.
    "tf32": [
        (128, 256, 32, 3, 8, "tma"),
        (128, 128, 32, 4, 8, "tma_nosub"),
        (128, 128, 32, 4, 4, "tma_ws"),
        (128, 64, 32, 4, 4, "tma_nosub"),
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


def config_of(tile) -> triton.Config:
    bm, bn, bk, stages, warps = tile[:5]
    variant = tile[5] if len(tile) > 5 else "ptr"
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M, **VARIANTS[variant]},
                         num_stages=stages, num_warps=warps)


def triton_configs() -> list[triton.Config]:
    """Every config, 16-bit tensor-core tiles first (the interpreter runs the first)."""
    entries = [t for kind in _TILES for t in _TILES[kind]]
    return [config_of(t) for i, t in enumerate(entries) if t not in entries[:i]]


def config_kind(element_bytes: int, precision: str, m: int | None = None) -> str:
    """Which config list suits a call: ``16bit`` (``16bit_skinny`` when M <= SKINNY_M),
    ``tf32`` or ``ieee``."""
    if element_bytes == 2:
        return "16bit_skinny" if m is not None and m <= SKINNY_M else "16bit"
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
    kind = config_kind(named_args["a_ptr"].element_size(), kwargs.get("INPUT_PRECISION", "tf32"),
                       named_args.get("M"))
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


def configs_for(dtype: str, m: int | None = None) -> list[triton.Config]:
    """The configs the autotuner considers for one dtype name (fp32 | tf32 | bf16 | fp16)
    and M (None: M above SKINNY_M)."""
    kind = config_kind(element_size(dtype), "tf32" if dtype == "tf32" else "ieee", m)
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
def _matmul_tma(a_ptr, b_ptr, c_ptr, ws_ptr, lock_ptr, M, N, K, stride_am, stride_bk, stride_bn, stride_cm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                B_KMAJOR: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
                FLATTEN: tl.constexpr, SPLIT_K: tl.constexpr):
    """Work items start_pid, start_pid + P, ... (P programs), one per C tile and K split:
    A, B and C through TMA descriptors built on the device (the unit strides are those of
    row-major tensors, or of B's transpose when B_KMAJOR; the launcher checked them and the
    16-byte alignment TMA needs)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    if B_KMAJOR:  # B stored as its transpose: N rows of K
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_bn, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                           block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BLOCK_M, BLOCK_N // EPILOGUE_SUBTILE])
    start_pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_work = num_pid_m * num_pid_n * SPLIT_K
    k_tiles = tl.cdiv(K, BLOCK_K)
    k_per_split = tl.cdiv(k_tiles, SPLIT_K)
    # The epilogue recomputes its tile from a counter of its own rather than reusing
    # the loop's (as Triton's persistent-matmul tutorial does): values live across the
    # flattened loop's prologue and epilogue trouble the pipeliner.
    work_c = start_pid - num_programs
    for work in tl.range(start_pid, num_work, num_programs, flatten=FLATTEN,
                         warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_coords(work // SPLIT_K, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        k_first = (work % SPLIT_K) * k_per_split
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_first, tl.minimum(k_first + k_per_split, k_tiles)):
            offs_k = ki * BLOCK_K
            a = a_desc.load([offs_m, offs_k])
            if B_KMAJOR:
                b = b_desc.load([offs_n, offs_k]).T
            else:
                b = b_desc.load([offs_k, offs_n])
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)

        work_c += num_programs
        tile_c = work_c // SPLIT_K
        pid_m, pid_n = _tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M)
        offs_cm = pid_m * BLOCK_M
        offs_cn = pid_n * BLOCK_N
        last = True
        if SPLIT_K > 1:
            acc, last = _split_k_fixup(acc, ws_ptr, lock_ptr, tile_c, work_c % SPLIT_K,
                                       BLOCK_M, BLOCK_N, SPLIT_K)
        if last:
            acc = _activation(acc, ACTIVATION)
            if EPILOGUE_SUBTILE == 2:
                halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
                acc0, acc1 = tl.split(halves)
                c_desc.store([offs_cm, offs_cn], acc0.to(c_desc.dtype))
                c_desc.store([offs_cm, offs_cn + BLOCK_N // 2], acc1.to(c_desc.dtype))
            else:
                c_desc.store([offs_cm, offs_cn], acc.to(c_desc.dtype))


@triton.jit
def _split_k_fixup(acc, ws_ptr, lock_ptr, tile, split, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   SPLIT_K: tl.constexpr):
    """Write this split's fp32 partial of C tile ``tile`` to the workspace and count it on
    the tile's semaphore. The last of the SPLIT_K to arrive gets (the sum of all partials,
    in split order, True) and resets the semaphore for the next launch; the others get
    (acc, False) and store nothing."""
    idx = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tile_ws = ws_ptr + tile.to(tl.int64) * (SPLIT_K * BLOCK_M * BLOCK_N)
    tl.store(tile_ws + split * (BLOCK_M * BLOCK_N) + idx, acc)
    tl.debug_barrier()  # every thread's partial written before the release below
    arrived = tl.atomic_add(lock_ptr + tile, 1, sem="acq_rel", scope="gpu")
    last = arrived == SPLIT_K - 1
    if last:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for s in tl.static_range(SPLIT_K):
            # .cg: from L2, never a stale L1 line of another SM's partial
            acc += tl.load(tile_ws + s * (BLOCK_M * BLOCK_N) + idx, cache_modifier=".cg")
        tl.atomic_xchg(lock_ptr + tile, 0)
    return acc, last


# INPUT_PRECISION is in the key because fp32 and tf32 calls pass the same float32
# tensors: without it a config tuned for one would be reused for the other. TMA_OK too:
# the same shape with and without aligned rows runs different code. ``autotune`` is
# Triton's with the project's shorter per-config benchmark (kit.triton.bench_config).
@autotune(configs=triton_configs(), key=["M", "N", "K", "INPUT_PRECISION", "TMA_OK", "B_KMAJOR"],
          prune_configs_by={"early_config_prune": prune_configs})
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, ws_ptr, lock_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                  TMA_OK: tl.constexpr = False, B_KMAJOR: tl.constexpr = False, TMA: tl.constexpr = False,
                  PERSISTENT: tl.constexpr = True, EPILOGUE_SUBTILE: tl.constexpr = 1,
                  WARP_SPECIALIZE: tl.constexpr = False, FLATTEN: tl.constexpr = True,
                  SPLIT_K: tl.constexpr = 1):
    """C = act(A @ B) with an fp32 accumulator: the TMA body when the config asks for it
    (TMA) and the call allows it (TMA_OK), else the pointer body. PERSISTENT only
    changes the grid (``matmul_grid``): the TMA body walks its tiles with a stride of
    the number of programs, whatever that is."""
    if TMA and TMA_OK:
        _matmul_tma(a_ptr, b_ptr, c_ptr, ws_ptr, lock_ptr, M, N, K, stride_am, stride_bk, stride_bn, stride_cm,
                    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, ACTIVATION, INPUT_PRECISION, B_KMAJOR,
                    EPILOGUE_SUBTILE, WARP_SPECIALIZE, FLATTEN, SPLIT_K)
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


def b_kmajor(b) -> bool:
    """Whether B ([K, N]) is stored as its transpose: K contiguous, rows of K for each n."""
    return b.stride(0) == 1 and b.shape[1] > 1 and b.stride(1) >= b.shape[0]


def tma_ok(a, b, out, precision: str = "tf32") -> bool:
    """Whether this call can take the TMA body on sm_90+ (or the interpreter, which
    emulates descriptors): 16-bit operands, or fp32 on the TF32 tensor cores with B
    K-major; unit inner strides (B's along K when K-major), row strides and base
    addresses multiples of 16 bytes (what a TMA descriptor requires)."""
    if b.dtype != a.dtype or out.dtype != a.dtype:
        return False
    if a.dtype == torch.float32:
        if precision != "tf32" or not b_kmajor(b):
            return False
    elif a.dtype not in (torch.float16, torch.bfloat16):
        return False
    if _props(a)[1] < 9:
        return False
    for t in (a, b.t() if b_kmajor(b) else b, out):
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
    """The launch grid for meta-parameters ``meta``: one program per C tile (per tile and
    K split), or one per SM (at most one per work item) when the TMA body runs persistent."""

    def grid(meta):
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        if not uses_tma(meta):
            return (tiles,)
        work = tiles * meta.get("SPLIT_K", META_DEFAULTS["SPLIT_K"])
        if meta.get("PERSISTENT", META_DEFAULTS["PERSISTENT"]):
            return (min(num_sms, work),)
        return (work,)

    return grid


@functools.cache
def split_k_sizes(M: int, N: int, config: triton.Config | None = None) -> tuple[int, int]:
    """(workspace elements, semaphores) that every split-K config that may run at M x N
    needs: ``config``, else the autotuner's (whose split-K configs are only kept for M up
    to SKINNY_M); (1, 1) when none splits K. Cached: the launcher asks on every call."""
    configs = [config] if config is not None else (matmul_kernel.configs if M <= SKINNY_M else [])
    splits = [c.kwargs for c in configs if c.kwargs.get("SPLIT_K", 1) > 1]
    tiles = [triton.cdiv(M, kw["BLOCK_M"]) * triton.cdiv(N, kw["BLOCK_N"]) for kw in splits]
    ws_elems = max((t * kw["SPLIT_K"] * kw["BLOCK_M"] * kw["BLOCK_N"] for t, kw in zip(tiles, splits, strict=True)),
                   default=1)
    return ws_elems, max(tiles, default=1)


def split_k_buffers(M: int, N: int, device, config: triton.Config | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(fp32 workspace, int32 semaphores) of ``split_k_sizes``, kept per device and grown on
    demand: the semaphores start at zero and the kernel leaves them at zero."""
    ws_elems, locks_n = split_k_sizes(M, N, config)
    key = torch.device(device)
    ws, locks = _SPLIT_BUFFERS.get(key, (None, None))
    if ws is None or ws.numel() < ws_elems:
        ws = torch.empty(ws_elems, dtype=torch.float32, device=device)
    if locks is None or locks.numel() < locks_n:
        locks = torch.zeros(locks_n, dtype=torch.int32, device=device)
    _SPLIT_BUFFERS[key] = (ws, locks)
    return ws, locks


_SPLIT_BUFFERS: dict = {}


B_LAYOUTS = ("transpose", "as_is", "cached")


@triton.jit
def _transpose_kernel(src_ptr, dst_ptr, R, C, stride_src, stride_dst,
                      BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """dst (C x R, row stride stride_dst) = src (R x C, row stride stride_src) transposed, one
    BLOCK_R x BLOCK_C tile per program; tl.trans goes through shared memory so that both
    the loads and the stores are coalesced."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < R) & (cols[None, :] < C)
    tile = tl.load(src_ptr + rows[:, None].to(tl.int64) * stride_src + cols[None, :], mask=mask)
    tl.store(dst_ptr + cols[:, None].to(tl.int64) * stride_dst + rows[None, :], tl.trans(tile),
             mask=tl.trans(mask))


TRANSPOSE_TILE = (64, 64)  # 16 KiB of fp32 per program


def kmajor_copy(b, cached: bool = False):
    """B ([K, N]) as a K-major view of a transposed copy ([N, K] rows). Our own transpose
    kernel: ``b.t().contiguous()`` ran at about a third of copy speed on the H100
    (140 us for 4096^2 fp32). ``cached``: keep the copy for the next call with this same
    tensor object, unmodified (version counter), as a model keeps its weights transposed
    once; one entry."""
    if cached:
        hit = _BT_CACHE.get("entry")
        if hit is not None and hit[0]() is b and hit[1] == b._version:
            return hit[2]
    K, N = b.shape
    bt = torch.empty((N, K), dtype=b.dtype, device=b.device)
    if b.stride(1) == 1 and K * N > 0:
        br, bc = TRANSPOSE_TILE
        launch(_transpose_kernel, (triton.cdiv(K, br), triton.cdiv(N, bc)), b, bt, K, N, b.stride(0), bt.stride(0),
               BLOCK_R=br, BLOCK_C=bc)
    else:
        bt.copy_(b.t())
    if cached:
        _BT_CACHE["entry"] = (weakref.ref(b), b._version, bt.t())
    return bt.t()


_BT_CACHE: dict = {}


def launch_matmul(out, a, b, activation: str = "", config: triton.Config | None = None,
                  b_layout: str = "transpose"):
    """Launch ``matmul_kernel`` for ``out = activation(a @ b)``; any strides. ``config``
    runs that one config instead of the autotuner's pick (the ladder's fixed steps).

    fp32 on the TF32 tensor cores needs B K-major (wgmma's rule for 32-bit operands).
    ``b_layout`` says what to do when B is not: ``transpose`` it here, inside the call
    (and timed with it) when M is above SKINNY_M, keep a transposed copy across calls
    (``cached``), or hand it over ``as_is`` (Triton then transposes each tile on its way
    to shared memory)."""
    M, K = a.shape
    K2, N = b.shape
    if K != K2 or tuple(out.shape) != (M, N):
        raise ValueError(f"shapes do not match: a {tuple(a.shape)}, b {tuple(b.shape)}, "
                         f"out {tuple(out.shape)}")
    if b_layout not in B_LAYOUTS:
        raise ValueError(f"b_layout {b_layout!r}: expected one of {', '.join(B_LAYOUTS)}")
    precision = input_precision(a)
    if a.dtype == torch.float32 and precision == "tf32" and not b_kmajor(b) and M * N * K > 0:
        # a transpose per call reads and writes all of B: it pays only when there are enough
        # rows of A to use each element of B many times (measured: at M = 16 and 128 the copy
        # alone took longer than the whole GEMM on B as it is)
        if b_layout == "cached" or (b_layout == "transpose" and M > SKINNY_M):
            b = kmajor_copy(b, cached=b_layout == "cached")
    ok = tma_ok(a, b, out, precision)
    if ok and not triton_interpreted():
        _ensure_allocator()
    ws, locks = split_k_buffers(M, N, a.device, config or forced_config(matmul_kernel))
    args = (a, b, out, ws, locks, M, N, K,
            a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
    meta = {"ACTIVATION": activation, "INPUT_PRECISION": precision, "TMA_OK": ok, "B_KMAJOR": b_kmajor(b)}
    grid = matmul_grid(M, N, _props(a)[0])
    if config is None:
        launch(matmul_kernel, grid, *args, **meta)
    else:
        launch_config(matmul_kernel, config, grid, *args, **meta)
    return out


def matmul_triton(out, a, b):
    return launch_matmul(out, a, b)


# What the ptx rule compiles per dtype: the config large aligned shapes run on Hopper, then
# the pointer body with the same tile (calls TMA cannot take). The pointer spec stays
# last: the sm_90 tests read the last spec of a dtype.
SPEC_ENTRIES = {
    "16bit": [(128, 256, 64, 3, 8, "tma_nosub"), (128, 256, 64, 3, 8)],
    "tf32": [(128, 128, 32, 4, 8, "tma_nosub"), (128, 128, 32, 4, 8)],
    "ieee": [(128, 128, 32, 3, 8)],
}


def make_compile_specs(dtype: str, activation: str = "") -> list[CompileSpec]:
    """Specs as the JIT would build them for contiguous row-major A and C at the default
    power-of-two shapes: unit strides specialised to the constant 1, sizes and leading
    strides multiples of 16; B row-major, or K-major for tf32 (what the launcher hands
    the kernel), one per SPEC_ENTRIES config of the dtype's kind."""
    ty = triton_type(dtype)
    kind = config_kind(element_size(dtype), "tf32" if dtype == "tf32" else "ieee")
    precision = "ieee" if kind == "ieee" else "tf32"
    kmajor = kind == "tf32"
    b_stride = "stride_bn" if kmajor else "stride_bk"
    signature = {"a_ptr": f"*{ty}", "b_ptr": f"*{ty}", "c_ptr": f"*{ty}", "ws_ptr": "*fp32", "lock_ptr": "*i32",
                 "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", b_stride: "i32", "stride_cm": "i32"}
    divisible = ("M", "N", "K", "stride_am", b_stride, "stride_cm")
    specs = []
    for entry in SPEC_ENTRIES[kind]:
        bm, bn, bk, stages, warps = entry[:5]
        variant = entry[5] if len(entry) > 5 else "ptr"
        constexprs = {"stride_ak": 1, "stride_bk" if kmajor else "stride_bn": 1, "stride_cn": 1,
                      "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M,
                      "ACTIVATION": activation, "INPUT_PRECISION": precision, "B_KMAJOR": kmajor}
        label = f"BLOCK={bm}x{bn}x{bk}, num_stages={stages}, num_warps={warps}, input_precision={precision}"
        if kmajor:
            label += ", B K-major"
        if variant != "ptr":
            constexprs.update({**META_DEFAULTS, **VARIANTS[variant], "TMA_OK": True})
            label = f"{variant}, {label}"
        specs.append(CompileSpec(matmul_kernel, signature, constexprs, num_warps=warps, num_stages=stages,
                                 label=label, divisible=divisible))
    return specs


def compile_specs(dtype: str) -> list[CompileSpec]:
    return make_compile_specs(dtype)

"""The Triton matmul's configs: the tile shapes and flavours ``matmul_kernel`` is tuned over, one list
per kind of arithmetic, and the pruning that keeps the list fitting a call (triton_matmul.py holds the
kernel, launch.py its launcher)."""

from __future__ import annotations

import triton

# One autotuned kernel, ``matmul_kernel``, with two bodies chosen at compile time:
#
# * the pointer body (any strides, any dtype, the interpreter's too): one C tile per
#   program, operands fetched with ``tl.load`` (cp.async + wgmma on sm_90);
# * the TMA body (fp16/bf16, or fp32 on the TF32 tensor cores, rows starting on 16-byte
#   boundaries, sm_90+): persistent (one program per SM walking the
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
#   (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps[, flavour])
# Flavours (default "ptr", the pointer body) set these meta-parameters:
FLAVOURS = {
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
    # split-K on the pointer body (IEEE fp32 on the FMA units, which TMA does not take)
    "split2": {"SPLIT_K": 2},
    "split4": {"SPLIT_K": 4},
    # the same, one program per work item (tile and K piece): a tile small enough for two
    # programs to share an SM gets two there (a persistent grid holds one per SM)
    "tma_split2_grid": {"TMA": True, "PERSISTENT": False, "EPILOGUE_SUBTILE": 1, "FLATTEN": False, "SPLIT_K": 2},
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
    # above SKINNY_M the launcher hands the kernel B transposed ([N, K] rows, a copy inside
    # the call unless B already is) and TMA brings both operands in K-major; the pointer body
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
    # tf32 with M <= SKINNY_M: B is read as it is (N-major: at M = 128 its copy alone took
    # longer than the GEMM). The pointer body's 4-byte copies of such a B left 128-row cells at
    # 0.40-0.46 of cuBLAS; these TMA configs bring B's tiles N-major at full width and Triton
    # turns each one K-major in shared memory for wgmma (sm_90 PTX: cp.async.bulk.tensor, no
    # cp.async; 131-213 KiB of shared memory with that staging copy), with the 16-bit skinny
    # list's narrow tiles and split-K. 16-row tiles (pointer body): M = 16, as in "tf32".
    "tf32_skinny": [
        (64, 64, 64, 6, 4, "tma_nosub"),
        (64, 128, 32, 4, 4, "tma_nosub"),
        (128, 128, 32, 4, 8, "tma_split2"),
        (64, 128, 32, 4, 4, "tma_split2"),
        (128, 64, 32, 4, 4, "tma_split2"),
        # two programs per SM (106 and 82 KiB of shared memory against 131 KiB above): at
        # 128x8192x8192 the one-program config above waited on each K-step's loads and
        # re-layout with 4 warps per SM (cuBLAS keeps 8)
        (128, 64, 32, 3, 4, "tma_split2_grid"),
        (64, 64, 32, 4, 4, "tma_split2_grid"),
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
    # IEEE fp32 with M <= SKINNY_M: at M = 128 and N = 4096 the 64x64 tiles are 128 programs of
    # 4 warps, under one per SM; K cut in 2 or 4 pieces gives every SM two to four of them
    # (compute-bound: the partials' round trip through L2 is 2-4 fp32 tiles per tile of C)
    "ieee_skinny": [
        (64, 128, 32, 3, 4),
        (64, 64, 32, 3, 4),
        (16, 64, 32, 3, 4),
        (64, 128, 32, 3, 4, "split2"),
        (64, 64, 32, 3, 4, "split2"),
        (64, 64, 32, 3, 4, "split4"),
        (128, 64, 32, 3, 4, "split4"),
    ],
}
GROUP_M = 8  # programs that walk down a column of C tiles before moving right (L2 reuse)


def config_of(tile) -> triton.Config:
    bm, bn, bk, stages, warps = tile[:5]
    flavour = tile[5] if len(tile) > 5 else "ptr"
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M, **FLAVOURS[flavour]},
                         num_stages=stages, num_warps=warps)


def triton_configs() -> list[triton.Config]:
    """Every config, 16-bit tensor-core tiles first (the interpreter runs the first)."""
    entries = [t for kind in _TILES for t in _TILES[kind]]
    return [config_of(t) for i, t in enumerate(entries) if t not in entries[:i]]


def config_kind(element_bytes: int, precision: str, m: int | None = None) -> str:
    """Which config list suits a call: ``16bit``, ``tf32`` or ``ieee`` (``16bit_skinny``,
    ``tf32_skinny``, ``ieee_skinny`` when M <= SKINNY_M)."""
    skinny = "_skinny" if m is not None and m <= SKINNY_M else ""
    if element_bytes == 2:
        return "16bit" + skinny
    return ("tf32" if precision == "tf32" else "ieee") + skinny


def _tile_of(config) -> tuple:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps) of a config."""
    kw = config.kwargs
    return (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], config.num_stages, config.num_warps)


def flavour_of(config) -> str:
    """The name in ``FLAVOURS`` of a config's meta-parameters ("ptr" for none)."""
    meta = {k: v for k, v in config.kwargs.items() if k in META_DEFAULTS and v != META_DEFAULTS[k]}
    for name, kw in FLAVOURS.items():
        if {k: v for k, v in kw.items() if v != META_DEFAULTS[k]} == meta:
            return name
    return "custom"


def _entry_of(config) -> tuple:
    """A config as written in ``_TILES``: the tile, then the flavour unless "ptr"."""
    flavour = flavour_of(config)
    return _tile_of(config) + (() if flavour == "ptr" else (flavour,))


def uses_tma(meta) -> bool:
    """Whether a launch with these meta-parameters runs the TMA body."""
    return bool(meta.get("TMA", False)) and bool(meta.get("TMA_OK", False))


def prune_configs(configs, named_args, **kwargs):
    """``early_config_prune``: keep the configs of the list that fits this call. A call
    that cannot use TMA (``TMA_OK=False``) runs TMA configs on the pointer body, so only
    the first config of each tile and K split is kept then, and none of the warp-specialized ones."""
    kind = config_kind(named_args["a_ptr"].element_size(), kwargs.get("INPUT_PRECISION", "tf32"),
                       named_args.get("M"))
    wanted = set(_TILES[kind])
    kept = [c for c in configs if _entry_of(c) in wanted]
    if not kwargs.get("TMA_OK", True):
        seen, unique = set(), []
        for c in kept:
            body = (_tile_of(c), c.kwargs.get("SPLIT_K", 1))  # what the pointer body runs
            if body not in seen and not c.kwargs.get("WARP_SPECIALIZE", False):
                seen.add(body)
                unique.append(c)
        kept = unique
    return kept or list(configs)

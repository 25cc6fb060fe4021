"""The Triton matmul of the matmul family (and of ``matmul_relu``): ``matmul_kernel`` and
its bodies (the configs: configs.py; the launcher, ``launch_matmul``: launch.py).

The kernel is shared with ``matmul_relu``: its ``ACTIVATION`` meta-parameter applies the
epilogue in registers before the one store. fp32 calls follow the process's TF32 flag
(``input_precision``), as cuBLAS does, so every implementation of a case does the same
arithmetic.
"""


from __future__ import annotations

import triton
import triton.language as tl

from kernellab.kit import autotune

from .configs import prune_configs, triton_configs


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
def _matmul_pointers(a_ptr, b_ptr, c_ptr, ws_ptr, lock_ptr, M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                     SPLIT_K: tl.constexpr):
    """One BLOCK_M x BLOCK_N tile of C per program, or with SPLIT_K one K piece of it (the
    pieces summed as in the TMA body). Rows and columns past M and N are read wrapped
    (``% M``, ``% N``: valid addresses, results discarded by the masked store) so the
    main-loop loads need no M/N mask; the K tail is masked with zeros."""
    tile = tl.program_id(0) // SPLIT_K
    split = tl.program_id(0) % SPLIT_K
    pid_m, pid_n = _tile_coords(tile, tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    k_tiles = tl.cdiv(K, BLOCK_K)
    k_first = 0
    k_end = k_tiles
    if SPLIT_K > 1:
        k_per_split = tl.cdiv(k_tiles, SPLIT_K)
        k_first = split * k_per_split
        k_end = tl.minimum(k_first + k_per_split, k_tiles)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Row/column indices fit int32 (< M, N); the products with strides are int64.
    rows_a = (offs_m % M).to(tl.int64)
    cols_b = (offs_n % N).to(tl.int64)
    a_ptrs = a_ptr + rows_a[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols_b[None, :] * stride_bn
    if SPLIT_K > 1:
        k_start = (k_first * BLOCK_K).to(tl.int64)
        a_ptrs += k_start * stride_ak
        b_ptrs += k_start * stride_bk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_first, k_end):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    last = True
    if SPLIT_K > 1:
        acc, last = _split_k_fixup(acc, ws_ptr, lock_ptr, tile, split, BLOCK_M, BLOCK_N, SPLIT_K)
    if last:
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
# Triton's with the project's shorter per-config benchmark (kernellab.engine.launch.bench_config).
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
        _matmul_pointers(a_ptr, b_ptr, c_ptr, ws_ptr, lock_ptr, M, N, K,
                         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, ACTIVATION, INPUT_PRECISION, SPLIT_K)

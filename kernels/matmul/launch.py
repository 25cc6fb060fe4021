"""The Triton matmul's launcher, ``launch_matmul``: precision, TMA eligibility, the grid, split-K
scratch, B's layout, and what the ptx rule cross-compiles."""

from __future__ import annotations

import functools
import weakref

import torch
import triton
import triton.language as tl

from kernellab.kit import (
    CompileSpec,
    element_size,
    forced_config,
    launch,
    launch_config,
    triton_interpreted,
    triton_type,
)

from .configs import _TILES, FLAVOURS, GROUP_M, META_DEFAULTS, SKINNY_M, _entry_of, config_kind, uses_tma
from .triton_matmul import matmul_kernel


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
    emulates descriptors): 16-bit operands, or fp32 on the TF32 tensor cores (a B that is
    not K-major Triton turns K-major tile by tile in shared memory); unit inner strides
    (B's along K when K-major), row strides and base addresses multiples of 16 bytes (what a
    TMA descriptor requires)."""
    if b.dtype != a.dtype or out.dtype != a.dtype:
        return False
    if a.dtype == torch.float32:
        if precision != "tf32":
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
    """The launch grid for meta-parameters ``meta``: one program per C tile and K split (the
    pointer body, or TMA one program per tile), or one per SM (at most one per work item) when
    the TMA body runs persistent."""

    def grid(meta):
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        work = tiles * meta.get("SPLIT_K", META_DEFAULTS["SPLIT_K"])
        if uses_tma(meta) and meta.get("PERSISTENT", META_DEFAULTS["PERSISTENT"]):
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
        flavour = entry[5] if len(entry) > 5 else "ptr"
        constexprs = {"stride_ak": 1, "stride_bk" if kmajor else "stride_bn": 1, "stride_cn": 1,
                      "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M,
                      "ACTIVATION": activation, "INPUT_PRECISION": precision, "B_KMAJOR": kmajor}
        label = f"BLOCK={bm}x{bn}x{bk}, num_stages={stages}, num_warps={warps}, input_precision={precision}"
        if kmajor:
            label += ", B K-major"
        constexprs.update(META_DEFAULTS)  # a spec, unlike a launch, gets no parameter's default
        if flavour != "ptr":
            constexprs.update({**FLAVOURS[flavour], "TMA_OK": True})
            label = f"{flavour}, {label}"
        specs.append(CompileSpec(matmul_kernel, signature, constexprs, num_warps=warps, num_stages=stages,
                                 label=label, divisible=divisible))
    return specs


def compile_specs(dtype: str) -> list[CompileSpec]:
    return make_compile_specs(dtype)


def configs_for(dtype: str, m: int | None = None) -> list[triton.Config]:
    """The configs the autotuner considers for one dtype name (fp32 | tf32 | bf16 | fp16)
    and M (None: M above SKINNY_M)."""
    kind = config_kind(element_size(dtype), "tf32" if dtype == "tf32" else "ieee", m)
    wanted = set(_TILES[kind])
    return [c for c in matmul_kernel.configs if _entry_of(c) in wanted]

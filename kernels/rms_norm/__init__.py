"""RMSNorm over the last dimension of a 2-D (rows, cols) tensor, with weight.

y = x / sqrt(mean(x^2) + eps) * w, eps = 1e-6.

Memory-bound: x read once, y written once, w read once (bytes = (2 * rows * cols +
cols) * element size), about 4 FLOPs per element. At 4096 x 8192 fp32 (the profile
shape) that is 256 MiB, about 64 us at 4.2 TB/s; at 4096 x 32768 fp32, 1 GiB, about
0.26 ms.

The Triton kernel keeps whole rows in registers while they fit (up to 8192 columns,
several short rows per program) and loops over longer rows in two passes (sum of
squares, then normalize; the second read mostly hits L1/L2); one autotuned kernel, a
constexpr picks the path.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import (
    Family,
    autotune,
    compiled,
    cuda_op,
    element_size,
    launch,
    numel,
    peers,
    prune_row_tile_configs,
    randn,
    returns_new,
    row_bytes,
    row_grid,
    row_shape,
    row_signature,
    row_tile_configs,
    row_tile_specs,
)

EPS = 1e-6


def reference(x, w):
    """Float64 reference, shared by tests and benchmarks."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + EPS) * w


def rms_norm_naive(x, w):
    """Square, mean, rsqrt, scale, weight as separate ops, in the input dtype."""
    ms = (x * x).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(ms + EPS) * w


def rms_norm_fused(out, x, w):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, EPS)


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, eps,
                    BLOCK_COLS: tl.constexpr, TILE: tl.constexpr, LOOPED: tl.constexpr, EVEN: tl.constexpr = False,
                    KNOWN_TRIP: tl.constexpr = False):
    """RMSNorm of rows of n_cols <= BLOCK_COLS = next_power_of_2(n_cols) elements.

    LOOPED = False: max(TILE // BLOCK_COLS, 1) whole rows per program, held in registers:
    one read of x.
    LOOPED = True: one row per program in chunks of min(TILE, BLOCK_COLS): pass 1 sums x^2
    per lane, pass 2 re-reads the row (mostly from L1/L2) and normalizes. KNOWN_TRIP (with
    EVEN): both loops run to the constexpr BLOCK_COLS, so the compiler knows their trip counts.
    """
    pid = tl.program_id(0).to(tl.int64)
    if LOOPED:
        CHUNK: tl.constexpr = min(TILE, BLOCK_COLS)
        x_row = x_ptr + pid * stride_x
        o_row = out_ptr + pid * stride_out
        offs = tl.arange(0, CHUNK)
        acc = tl.zeros([CHUNK], dtype=tl.float32)
        end = BLOCK_COLS if KNOWN_TRIP and EVEN else n_cols
        # EVEN (n_cols == BLOCK_COLS, a power of two): every chunk is whole, no masks. Pass 1
        # asks the L2 to keep the row for pass 2, which reads it for the last time.
        for start in range(0, end, CHUNK):
            cols = start + offs
            if EVEN:
                x = tl.load(x_row + cols, eviction_policy="evict_last").to(tl.float32)
            else:
                x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0, eviction_policy="evict_last").to(tl.float32)
            acc += x * x
        rstd = tl.math.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for start in range(0, end, CHUNK):
            cols = start + offs
            if EVEN:
                x = tl.load(x_row + cols, eviction_policy="evict_first").to(tl.float32)
                w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
                tl.store(o_row + cols, (x * rstd * w).to(out_ptr.dtype.element_ty))
            else:
                mask = cols < n_cols
                x = tl.load(x_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
                w = tl.load(w_ptr + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
                tl.store(o_row + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        ROWS: tl.constexpr = max(TILE // BLOCK_COLS, 1)
        rows = pid * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_COLS)
        col_ok = cols < n_cols
        mask = (rows[:, None] < n_rows) & col_ok[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        rstd = tl.math.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        y = x * rstd[:, None] * w[None, :]
        tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], y.to(out_ptr.dtype.element_ty),
                 mask=mask)


rms_norm_tuned = autotune(
    configs=row_tile_configs("LOOPED"), key=["n_rows", "n_cols"],
    prune_configs_by={"early_config_prune": prune_row_tile_configs},
)(rms_norm_kernel)


def rms_norm_triton(out, x, w):
    rows, cols = row_shape("rms_norm", x, out)
    block = triton.next_power_of_2(cols)
    launch(rms_norm_tuned, row_grid(rows, block, "LOOPED"), x, w, out, rows, cols, x.stride(0), out.stride(0), EPS,
           BLOCK_COLS=block, EVEN=cols == block)
    return out


def rms_norm_cuda(family: str, step: str):
    """rms_norm(x, w, out, eps, step): eps passed explicitly."""
    op = cuda_op(family, "rms_norm", step)

    def run(out, x, w):
        return op(out, x, w, eps=EPS)

    return run


# The field (kernellab.kit.peers): Liger-Kernel's and QuACK's forward kernels, as their users call them.
_liger_rms_norm = peers.entry(peers.LIGER, "liger_kernel.ops.rms_norm", "rms_norm_forward")
_quack_rms_norm = peers.entry(peers.QUACK, "quack.rmsnorm", "rmsnorm_fwd")


def rms_norm_liger(x, w):
    """Offset 0 (w, not 1 + w); "llama" casting, LigerRMSNorm's default: rstd in fp32, x * rstd
    rounded to x's dtype, then times w. Returns (y, x, rstd, block, warps, casting mode)."""
    return _liger_rms_norm(x, w, EPS, 0.0, "llama", None)[0]


def rms_norm_quack(x, w):
    """Returns (y, residual out, rstd); the last two unused here."""
    return _quack_rms_norm(x, w, eps=EPS)[0]


# Their backward kernels, each handed the state its own forward saves (outside a backward case's timed region).
_liger_rms_norm_bwd = peers.entry(peers.LIGER, "liger_kernel.ops.rms_norm", "rms_norm_backward")
_quack_rms_norm_bwd = peers.entry(peers.QUACK, "quack.rmsnorm", "rmsnorm_bwd")


def liger_saved(x, w):
    """Liger's forward's state for its backward: (rstd, block size, warps, casting mode)."""
    return tuple(_liger_rms_norm(x, w, EPS, 0.0, "llama", None)[2:6])


def rms_norm_liger_bwd(out, dy, saved, x, w):
    """rms_norm_backward(dY, X, W, RSTD, offset, casting_mode, BLOCK_SIZE, num_warps, in_place, row_mode):
    not in place (in place, dx overwrites dy, which every sample reuses); row_mode None, Liger's choice."""
    rstd, block, warps, mode = saved
    dx, dw = _liger_rms_norm_bwd(dy, x, w, rstd, 0.0, mode, block, warps, False, None)
    return dx, dw


def quack_saved(x, w):
    """QuACK's forward's state for its backward: the fp32 rstd of each row."""
    return _quack_rms_norm(x, w, eps=EPS, store_rstd=True)[2]


def rms_norm_quack_bwd(out, dy, saved, x, w):
    """rmsnorm_bwd(x, weight, dout, rstd) returns (dx, dw, db, dresidual); dw in w's dtype."""
    dx, dw = _quack_rms_norm_bwd(x, w, dy, saved)[:2]
    return dx, dw.to(w.dtype)


def signature(dtype: str) -> dict:
    """The argument types of the RMSNorm kernel, for cross-compiling."""
    return row_signature(dtype, ("w",), eps=True)


def compile_specs(dtype: str):
    return row_tile_specs(rms_norm_tuned, signature(dtype))


def make_inputs(shape, dtype, device, seed):
    """Weight random around 1 (not all ones)."""
    cols = shape[-1]
    x = randn(shape, dtype, device, seed, scale=2.0)
    w = randn((cols,), dtype, device, seed + 7919, scale=0.5, offset=1.0)
    return x, w


def out_like(x, w):
    return torch.empty_like(x)


def backward_error_floor(x, w, dy):
    """dx = rstd * (w dy - mean(w dy) ... - xhat mean(w dy xhat)) cancels to near zero where a row
    hardly spreads (one column: xhat is 0 or +-1), and dw sums terms of either sign: their errors
    are relative to the norms of the terms, not of what is left."""
    rstd = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + EPS)
    xhat = x * rstd
    return {"dx": float(torch.linalg.vector_norm(rstd * w * dy)),
            "dw": float(torch.linalg.vector_norm((dy * xhat).abs().sum(0)))}


def backward_bytes(shape, dtype, **_):
    """The backward's own: x, dy and w read, dx and dw written, the fp32 rstd of each row read."""
    return (3 * numel(shape) + 2 * shape[-1]) * element_size(dtype) + 4 * shape[0]


def rstd_of(x, w):
    """The saved state a forward leaves for the CUDA backward: each row's fp32 rstd."""
    x32 = x.float()
    return torch.rsqrt((x32 * x32).mean(dim=-1) + EPS).contiguous()


def rms_norm_op(x, w):
    """PyTorch's RMSNorm (its autograd is the fused backward)."""
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, EPS)


FAMILY = Family(
    title="RMSNorm over the last dimension",
    bound="memory",
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=row_bytes(vectors=1),
    flops=lambda shape, dtype, **_: 4 * numel(shape),
    out_like=out_like,
    shape_rank=(2,),
    cuda_step=rms_norm_cuda,
    description="LayerNorm without centring or bias: one row reduction and a scale.",
    grads=("dx", "dw"),
    backward_bytes=backward_bytes,
    backward_error_floor=backward_error_floor,
    backward_flops=lambda shape, dtype, **_: 8 * numel(shape),
)

FAMILY.add("torch_naive", returns_new(rms_norm_naive))
FAMILY.add("torch_fused", rms_norm_fused)
FAMILY.add("triton", rms_norm_triton, triton_kernels=(rms_norm_tuned,), compile_specs=compile_specs)
FAMILY.add("compiled", compiled(rms_norm_naive))
FAMILY.add("liger", returns_new(rms_norm_liger))
FAMILY.add("quack", returns_new(rms_norm_quack))
# the backward: autograd through the naive forward, through PyTorch's op, through torch.compile's
FAMILY.add_pytorch_backwards(rms_norm_naive, rms_norm_op)
FAMILY.add_backward("liger", rms_norm_liger_bwd, save=liger_saved)
FAMILY.add_backward("quack", rms_norm_quack_bwd, save=quack_saved)
# The ladders: one file per step, cuda_rows/<step>.cu (CUDA) and triton_loop/<step>.py (Triton); the
# backward's, cuda_bwd/<step>.cu, running the op rms_norm_bwd(x, w, dy, rstd, dx, dw, step).
FAMILY.add_cuda_backward("cuda_bwd", save=rstd_of)

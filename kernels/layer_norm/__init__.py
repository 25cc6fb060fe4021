"""LayerNorm over the last dimension of a 2-D (rows, cols) tensor, with weight and bias.

y = (x - mean) / sqrt(var + eps) * w + b, biased variance, eps = 1e-5.

Memory-bound: x read once, y written once, w and b read once (bytes = (2 * rows * cols
+ 2 * cols) * element size), about 8 FLOPs per element. At 4096 x 8192 fp32 (the
profile shape) that is 256 MiB, about 64 us at 4.2 TB/s; at 4096 x 32768 fp32, 1 GiB,
about 0.26 ms.

The Triton kernel keeps whole rows in registers (several short rows per program), or
loops over a row in two passes (mean and variance merged chunk by chunk, then normalize;
the second read hits the L2); one autotuned kernel, the config's constexpr LOOPED picks the
path (``kit.prune_row_tile_configs`` says which configs each width times). The ladder
"triton_loop" tries other statistics for that loop (ladder.yaml, KERNEL_LOG): its kernels are in
loop.py, each step in triton_loop/<step>.py; the CUDA ladder "cuda_rows" is one file per step in
cuda_rows/, what they share in layer_norm.cuh.
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

EPS = 1e-5


def reference(x, w, b):
    """Float64 reference, shared by tests and benchmarks."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + EPS) * w + b


def layer_norm_naive(x, w, b):
    """Mean, centre, variance, rsqrt, scale, shift as separate ops, in the input dtype."""
    mean = x.mean(dim=-1, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(dim=-1, keepdim=True)
    return xc * torch.rsqrt(var + EPS) * w + b


def layer_norm_fused(out, x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, eps,
                      BLOCK_COLS: tl.constexpr, TILE: tl.constexpr, LOOPED: tl.constexpr,
                      EVEN: tl.constexpr = False):
    """LayerNorm of rows of n_cols <= BLOCK_COLS = next_power_of_2(n_cols) elements.

    LOOPED = False: max(TILE // BLOCK_COLS, 1) whole rows per program, held in registers:
    exact two-pass statistics on chip, one read of x.
    LOOPED = True: one row per program in chunks of min(TILE, BLOCK_COLS), two passes: the
    mean and variance together (each chunk's centered statistics merged by Chan's update:
    no cancellation), then the normalized write, which re-reads the row from the L2 that
    pass 1 asked to keep it in.
    """
    pid = tl.program_id(0).to(tl.int64)
    if LOOPED:
        CHUNK: tl.constexpr = min(TILE, BLOCK_COLS)
        x_row = x_ptr + pid * stride_x
        o_row = out_ptr + pid * stride_out
        offs = tl.arange(0, CHUNK)
        # EVEN (n_cols == BLOCK_COLS, a power of two): every chunk is whole, no masks
        # pass 1: each chunk's mean and centered M2 from registers, merged into the row's
        # running pair by Chan's update: exact statistics from one read of the row
        mean = 0.0
        m2 = 0.0
        n = 0.0
        for start in range(0, n_cols, CHUNK):
            cols = start + offs
            if EVEN:
                x = tl.load(x_row + cols, eviction_policy="evict_last").to(tl.float32)
                cn = CHUNK * 1.0
                c_mean = tl.sum(x, axis=0) / cn
                d = x - c_mean
            else:
                mask = cols < n_cols
                x = tl.load(x_row + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
                cn = tl.minimum(n_cols - start, CHUNK).to(tl.float32)
                c_mean = tl.sum(x, axis=0) / cn
                d = tl.where(mask, x - c_mean, 0.0)
            c_m2 = tl.sum(d * d, axis=0)
            total = n + cn
            delta = c_mean - mean
            mean += delta * (cn / total)
            m2 += c_m2 + delta * delta * (n * cn / total)
            n = total
        rstd = tl.math.rsqrt(m2 / n_cols + eps)
        for start in range(0, n_cols, CHUNK):
            cols = start + offs
            if EVEN:
                x = tl.load(x_row + cols, eviction_policy="evict_first").to(tl.float32)
                w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
                b = tl.load(b_ptr + cols, eviction_policy="evict_last").to(tl.float32)
                tl.store(o_row + cols, ((x - mean) * rstd * w + b).to(out_ptr.dtype.element_ty))
            else:
                mask = cols < n_cols
                x = tl.load(x_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
                w = tl.load(w_ptr + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
                b = tl.load(b_ptr + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
                tl.store(o_row + cols, ((x - mean) * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        ROWS: tl.constexpr = max(TILE // BLOCK_COLS, 1)
        rows = pid * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_COLS)
        col_ok = cols < n_cols
        mask = (rows[:, None] < n_rows) & col_ok[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=1) / n_cols
        xc = tl.where(mask, x - mean[:, None], 0.0)
        var = tl.sum(xc * xc, axis=1) / n_cols
        rstd = tl.math.rsqrt(var + eps)
        w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        y = xc * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], y.to(out_ptr.dtype.element_ty),
                 mask=mask)


layer_norm_tuned = autotune(
    configs=row_tile_configs("LOOPED"), key=["n_rows", "n_cols"],
    prune_configs_by={"early_config_prune": prune_row_tile_configs},
)(layer_norm_kernel)


def layer_norm_triton(out, x, w, b):
    rows, cols = row_shape("layer_norm", x, out)
    block = triton.next_power_of_2(cols)
    launch(layer_norm_tuned, row_grid(rows, block, "LOOPED"), x, w, b, out, rows, cols, x.stride(0),
           out.stride(0), EPS, BLOCK_COLS=block, EVEN=cols == block)
    return out


def layer_norm_cuda(family: str, step: str):
    """layer_norm(x, w, b, out, eps, step): eps passed explicitly."""
    op = cuda_op(family, "layer_norm", step)

    def run(out, x, w, b):
        return op(out, x, w, b, eps=EPS)

    return run


# The field (kernellab.kit.peers): Liger-Kernel's and QuACK's forward kernels, as their users call them.
_liger_layer_norm = peers.entry(peers.LIGER, "liger_kernel.ops.layer_norm", "layer_norm_forward")
_quack_layer_norm = peers.entry(peers.QUACK, "quack.rmsnorm", "layernorm_fwd")  # QuACK's is in its RMSNorm module
_quack_w32, _quack_b32 = peers.Fp32Copy(), peers.Fp32Copy()


def layer_norm_liger(x, w, b):
    """Returns (y, x, mean, rstd, block, warps)."""
    return _liger_layer_norm(x, w, b, EPS)[0]


def layer_norm_quack(x, w, b):
    """QuACK's layer norm takes float32 weight and bias only: cast once, as a model keeps them, not
    in every timed call (``peers.Fp32Copy``); the bf16 case reads 4-byte parameters, 2 x cols
    bytes more than the byte model's, a 1e-4 share of the traffic at 4096 rows."""
    return _quack_layer_norm(x, _quack_w32(w), _quack_b32(b), eps=EPS)


def signature(dtype: str) -> dict:
    """The argument types every layer-norm kernel takes, for cross-compiling."""
    return row_signature(dtype, ("w", "b"), eps=True)


def compile_specs(dtype: str):
    return row_tile_specs(layer_norm_tuned, signature(dtype))


def make_inputs(shape, dtype, device, seed):
    """x with a non-zero mean (so centring matters); weight and bias random, not 1 and 0."""
    cols = shape[-1]
    x = randn(shape, dtype, device, seed, scale=2.0, offset=1.0)
    w = randn((cols,), dtype, device, seed + 7919, scale=0.5, offset=1.0)
    b = randn((cols,), dtype, device, seed + 15485863, scale=0.5)
    return x, w, b


def out_like(x, w, b):
    return torch.empty_like(x)


def backward_error_floor(x, w, b, dy):
    """dx = rstd * (w dy - mean(w dy) - xhat mean(w dy xhat)) cancels to near zero where a row
    hardly spreads, and dw sums terms of either sign: their errors are relative to the norms of
    the terms, not of what is left. With one column x - mean is 0 in float64 but a rounding of x
    in the dtype, which rstd = 1/sqrt(eps) amplifies: dw's terms are measured on x, not x - mean."""
    rstd = torch.rsqrt(x.var(dim=-1, unbiased=False, keepdim=True) + EPS)
    return {"dx": float(torch.linalg.vector_norm(rstd * w * dy)),
            "dw": float(torch.linalg.vector_norm((dy * x * rstd).abs().sum(0)))}


def backward_bytes(shape, dtype, **_):
    """The backward's own: x, dy and w read, dx, dw and db written (the dw/db partials of a
    two-stage reduction are extra traffic, not in the model), and the fp32 mean and rstd of
    each row read."""
    return (3 * numel(shape) + 3 * shape[-1]) * element_size(dtype) + 8 * shape[0]


def layer_norm_op(x, w, b):
    """PyTorch's layer norm (its autograd is the fused backward)."""
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)


FAMILY = Family(
    title="LayerNorm over the last dimension",
    bound="memory",
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=row_bytes(vectors=2),
    flops=lambda shape, dtype, **_: 8 * numel(shape),
    out_like=out_like,
    shape_rank=(2,),
    cuda_step=layer_norm_cuda,
    description="Row statistics and an affine map: reductions inside a row, like softmax.",
    grads=("dx", "dw", "db"),
    backward_bytes=backward_bytes,
    backward_error_floor=backward_error_floor,
    backward_flops=lambda shape, dtype, **_: 12 * numel(shape),
)

FAMILY.add("torch_naive", returns_new(layer_norm_naive))
FAMILY.add("torch_fused", layer_norm_fused)
FAMILY.add("triton", layer_norm_triton, triton_kernels=(layer_norm_tuned,), compile_specs=compile_specs)
FAMILY.add("compiled", compiled(layer_norm_naive))
FAMILY.add("liger", returns_new(layer_norm_liger))
FAMILY.add("quack", returns_new(layer_norm_quack))
# the backward: autograd through the naive forward, through PyTorch's op, through torch.compile's
FAMILY.add_pytorch_backwards(layer_norm_naive, layer_norm_op)
# The ladders: one file per step, cuda_rows/<step>.cu (CUDA, run by cuda_step) and triton_loop/<step>.py (Triton,
# the kernels they share in loop.py); the backward's, triton_bwd/<step>.py; their order and texts in ladder.yaml.

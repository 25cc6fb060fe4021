"""Softmax over the last dimension of a 2-D (rows, cols) tensor.

Memory-bound: one read and one write per element (bytes = 2 * rows * cols * element
size), about 5 FLOPs per element (max, subtract, exp, sum, scale). At 4096 x 8192 fp32
(the profile shape) that is 256 MiB moved, about 64 us at 4.2 TB/s; at 4096 x 32768
fp32, 1 GiB, about 0.26 ms. One exp per element at the copy bandwidth uses an eighth
(fp32) to a quarter (bf16) of the special-function units' rate (16/clk/SM, about 4e12/s
on the H200): the FLOPs stay noise as long as a kernel computes each exp once or twice.

The Triton ladder (ladder ``softmax``): the naive PyTorch chain (five kernels), one
program per row holding the row in registers (``fused_row``), the online softmax that
streams long rows in chunks (``online``), and an autotuned launcher that picks one-pass
or online by the row length and packs several short rows into one program
(``autotuned``); the three Triton steps share one kernel (constexpr ONLINE picks the
path). Ladder numbers are given at 4096 x 8192 fp32, the profile shape.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import Family, compiled, numel, peers, randn, returns_new, row_bytes, row_signature, row_spec

from . import backward

ONLINE_CHUNK = 4096  # chunk of the (untuned) online step


def reference(x):
    """Float64 reference, shared by tests and benchmarks."""
    return torch.softmax(x, dim=-1)


def softmax_naive(x):
    """Max, subtract, exp, sum, divide as separate ops: five kernels, 5 reads and 3 writes."""
    m = x.max(dim=-1, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_fused(out, x):
    return torch.softmax(x, dim=-1)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out,
                   BLOCK_COLS: tl.constexpr, TILE: tl.constexpr, ONLINE: tl.constexpr):
    """Softmax of rows of n_cols <= BLOCK_COLS = next_power_of_2(n_cols) elements.

    ONLINE = False: max(TILE // BLOCK_COLS, 1) whole rows per program, held in registers;
    one read and one write per element.
    ONLINE = True: one row per program streamed in chunks of min(TILE, BLOCK_COLS): pass 1
    keeps the running max of the chunks and a rescaled running sum per lane, pass 2 re-reads
    the row (from L2, which pass 1 asked to keep it) and writes exp(x - max) / sum: one exp
    per element per pass. Registers no longer grow with the row length.
    """
    pid = tl.program_id(0).to(tl.int64)
    if ONLINE:
        CHUNK: tl.constexpr = min(TILE, BLOCK_COLS)
        x_row = x_ptr + pid * stride_x
        o_row = out_ptr + pid * stride_out
        offs = tl.arange(0, CHUNK)
        # the running max is the chunk's (one block reduction per chunk), so each element
        # takes one exp per pass; a finite start keeps exp(m - m_new) defined
        m = tl.max(tl.full([CHUNK], -1.0e30, tl.float32), axis=0)
        s_vec = tl.zeros([CHUNK], dtype=tl.float32)
        for start in range(0, n_cols, CHUNK):
            cols = start + offs
            # pass 1 asks the L2 to keep the row for pass 2, which reads it for the last time
            x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"),
                        eviction_policy="evict_last").to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            s_vec = s_vec * tl.exp(m - m_new) + tl.exp(x - m_new)
            m = m_new
        inv = 1.0 / tl.sum(s_vec, axis=0)
        for start in range(0, n_cols, CHUNK):
            cols = start + offs
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            y = tl.exp(x - m) * inv
            tl.store(o_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        ROWS: tl.constexpr = max(TILE // BLOCK_COLS, 1)
        rows = pid * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_COLS)
        row_ok = rows < n_rows
        mask = row_ok[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask,
                    other=-float("inf")).to(tl.float32)
        m = tl.max(x, axis=1)
        m = tl.where(row_ok, m, 0.0)  # rows past the end (stores masked): keep the arithmetic finite
        e = tl.exp(x - m[:, None])
        inv = 1.0 / tl.where(row_ok, tl.sum(e, axis=1), 1.0)
        y = e * inv[:, None]
        tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], y.to(out_ptr.dtype.element_ty),
                 mask=mask)


def row_warps(block: int) -> int:
    """Warps for one row of ``block`` elements held in registers: 8 to 16 fp32 per thread."""
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


# The field (kernellab.kit.peers): Liger-Kernel's and QuACK's forward kernels, as their users call them.
_liger_softmax = peers.entry(peers.LIGER, "liger_kernel.ops.softmax", "_softmax_forward")
_quack_softmax = peers.entry(peers.QUACK, "quack.softmax", "softmax_fwd")


def softmax_liger(x):
    """Liger's forward (LigerSoftmaxFunction's); returns (y, block, warps, multi-block launch)."""
    return _liger_softmax(x)[0]


def softmax_quack(x):
    return _quack_softmax(x)


def _spec(kernel, dtype, block_cols, tile, online, warps, label):
    return row_spec(kernel, row_signature(dtype), block_cols, tile, "ONLINE", online, warps, label)


def make_inputs(shape, dtype, device, seed):
    return (randn(shape, dtype, device, seed, scale=3.0),)


def out_like(x):
    return torch.empty_like(x)


FAMILY = Family(
    title="Softmax over the last dimension",
    bound="memory",
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=row_bytes(),
    flops=lambda shape, dtype, **_: 5 * numel(shape),
    out_like=out_like,
    shape_rank=(2,),
    description="Row softmax: reductions inside a row, the online-softmax trick for long rows.",
    grads=("dx",),
    backward_bytes=backward.backward_bytes,
    backward_flops=lambda shape, dtype, **_: 4 * numel(shape),
    backward_error_floor=backward.backward_error_floor,
)

FAMILY.add("torch_fused", softmax_fused)
FAMILY.add("compiled", compiled(softmax_naive))
# The CUDA ladder cuda_rows: one file per step in cuda_rows/, in ladder.yaml's order.

# The Triton ladder triton_rows: one file per step in triton_rows/ (the first, naive, is the PyTorch chain).
FAMILY.add("liger", returns_new(softmax_liger))
FAMILY.add("quack", returns_new(softmax_quack))
# the backward: autograd through the naive chain, through PyTorch's softmax, through torch.compile's;
# Triton's from the forward's output (backward.py)
FAMILY.add_pytorch_backwards(softmax_naive, reference)
FAMILY.add_backward("triton", backward.softmax_backward_triton, save=backward.forward_output,
                    compile_specs=backward.backward_specs)

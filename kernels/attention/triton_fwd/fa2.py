"""Attention's forward ladder, step fa2: FlashAttention-2's order. The output unnormalized until one
division at the end, the softmax scale folded with log2(e) into one multiply before exp2, and causal
in two stages: the key blocks wholly below the diagonal without a mask, the diagonal blocks masked, the
blocks above never visited. It writes each row's log-sum-exp (fp32), which the backward reuses."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import step

from ..tiles import exp2_update, forward_specs, launch_forward, load_cols, load_rows, query_block, visible


@triton.jit
def _fa2_blocks(acc, l_i, m_i, q, k_ptr, v_ptr, base, rows, offs_n, offs_d, d_ok, seq, qk_scale, stride_s,
                lo, hi, MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr):
    """The key blocks [lo, hi): the online softmax in base 2 (the scores times scale * log2 e)."""
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        kt = load_cols(k_ptr, base, cols, offs_d, d_ok, seq, stride_s)
        s = tl.dot(q, kt) * qk_scale
        if MASKED:
            ok = visible(rows, cols, seq, CAUSAL)
            s = tl.where(ok, s, -1.0e30)
        p, alpha, m_new, l_i = exp2_update(s, m_i, l_i)
        v = load_rows(v_ptr, base, cols, offs_d, d_ok, seq, stride_s)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def fa2_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, seq, scale, stride_bh, stride_s, CAUSAL: tl.constexpr,
               HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """o and the natural log-sum-exp of the BLOCK_M queries of program (m, head). Causal: the blocks
    left of the query block's first row unmasked, then those up to its last row masked (BLOCK_M is a
    multiple of BLOCK_N); not causal: every block but the ragged last unmasked."""
    start_m, head, base, rows, offs_n, offs_d, d_ok = query_block(stride_bh, BLOCK_M, BLOCK_N, BLOCK_D, HEAD_DIM)
    q = load_rows(q_ptr, base, rows, offs_d, d_ok, seq, stride_s)
    qk_scale = scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x log2 e), one multiply for both
    m_i = tl.full([BLOCK_M], -1.0e30, tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    if CAUSAL:
        split = start_m * BLOCK_M  # keys before the block's first query: visible to all its rows
        end = tl.minimum((start_m + 1) * BLOCK_M, seq)
    else:
        split = (seq // BLOCK_N) * BLOCK_N  # whole key blocks, then the ragged one
        end = seq
    acc, l_i, m_i = _fa2_blocks(acc, l_i, m_i, q, k_ptr, v_ptr, base, rows, offs_n, offs_d, d_ok, seq, qk_scale,
                                stride_s, 0, split, False, CAUSAL, BLOCK_N)
    acc, l_i, m_i = _fa2_blocks(acc, l_i, m_i, q, k_ptr, v_ptr, base, rows, offs_n, offs_d, d_ok, seq, qk_scale,
                                stride_s, split, end, True, CAUSAL, BLOCK_N)
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    o = acc / l_safe[:, None]
    row_ok = rows < seq
    tl.store(lse_ptr + head * seq + rows, (m_i + tl.math.log2(l_safe)) / 1.4426950408889634, mask=row_ok)
    tl.store(o_ptr + base + rows[:, None] * stride_s + offs_d[None, :], o.to(o_ptr.dtype.element_ty),
             mask=row_ok[:, None] & d_ok[None, :])


def specs(dtype: str):
    return forward_specs(fa2_kernel, dtype, lse=True)


def fa2_forward(out, q, k, v, causal=False):
    """(o, lse): o into ``out``, the fp32 natural log-sum-exp of each row, (batch, heads, seq)."""
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    return launch_forward(fa2_kernel, out, q, k, v, causal, lse), lse


@step(compile_specs=specs)
def fa2(out, q, k, v, causal=False):
    return fa2_forward(out, q, k, v, causal)[0]

"""Attention's forward ladder, step online: one pass over K with the online softmax in
FlashAttention-1's form: each key block rescales the running maximum, sum and output, the output kept
normalized (divided by the running sum) after every block; the scale on the scores, exp in base e;
causal by a mask over every key block, none skipped."""

from __future__ import annotations

import functools

import triton
import triton.language as tl

from kernellab.kit import step

from ..tiles import forward_specs, key_scores, launch_forward, load_rows, query_block, store_rows


@triton.jit
def online_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, stride_bh, stride_s, CAUSAL: tl.constexpr,
                  HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """o of the BLOCK_M queries of program (m, head) in one pass: for each key block, m' = max(m, max s),
    l' = l e^(m - m') + sum e^(s - m'), o' = (o l e^(m - m') + e^(s - m') v) / l'."""
    start_m, head, base, rows, offs_n, offs_d, d_ok = query_block(stride_bh, BLOCK_M, BLOCK_N, BLOCK_D, HEAD_DIM)
    q = load_rows(q_ptr, base, rows, offs_d, d_ok, seq, stride_s)
    # -1e30, not -inf: a row whose first blocks are all masked keeps e^(m - m') finite (no inf - inf)
    m_i = tl.full([BLOCK_M], -1.0e30, tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for start_n in range(0, seq, BLOCK_N):
        cols, s, ok = key_scores(q, k_ptr, base, rows, start_n, offs_n, offs_d, d_ok, seq, stride_s, scale, CAUSAL)
        s = tl.where(ok, s, -1.0e30)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.where(ok, tl.exp(s - m_new[:, None]), 0.0)
        l_new = l_i * alpha + tl.sum(p, 1)
        v = load_rows(v_ptr, base, cols, offs_d, d_ok, seq, stride_s)
        pv = tl.dot(p.to(v.dtype), v)
        # FlashAttention-1 keeps the output normalized: a division per block, not one at the end
        l_safe = tl.where(l_new > 0, l_new, 1.0)
        acc = (acc * (l_i * alpha)[:, None] + pv) / l_safe[:, None]
        m_i, l_i = m_new, l_new
    store_rows(o_ptr, base, rows, offs_d, d_ok, seq, stride_s, acc)


@step(compile_specs=functools.partial(forward_specs, online_kernel))
def online(out, q, k, v, causal=False):
    return launch_forward(online_kernel, out, q, k, v, causal)

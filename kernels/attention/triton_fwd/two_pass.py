"""Attention's forward ladder, step two_pass: the textbook softmax per query block, in two passes over
K (the row maxima, then the sums of exp and P v), the scale applied to the scores; causal by a mask
over every key block, none skipped."""

from __future__ import annotations

import functools

import triton
import triton.language as tl

from kernellab.kit import step

from ..tiles import forward_specs, key_scores, launch_forward, load_rows, query_block, store_rows


@triton.jit
def two_pass_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, stride_bh, stride_s, CAUSAL: tl.constexpr,
                    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """o of the BLOCK_M queries of program (m, head): pass 1 the maximum of each row's scores, pass 2
    sum(exp(s - max)) and exp(s - max) v, divided at the end."""
    start_m, head, base, rows, offs_n, offs_d, d_ok = query_block(stride_bh, BLOCK_M, BLOCK_N, BLOCK_D, HEAD_DIM)
    q = load_rows(q_ptr, base, rows, offs_d, d_ok, seq, stride_s)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    for start_n in range(0, seq, BLOCK_N):
        cols, s, ok = key_scores(q, k_ptr, base, rows, start_n, offs_n, offs_d, d_ok, seq, stride_s, scale, CAUSAL)
        s = tl.where(ok, s, float("-inf"))
        m_i = tl.maximum(m_i, tl.max(s, 1))
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for start_n in range(0, seq, BLOCK_N):
        cols, s, ok = key_scores(q, k_ptr, base, rows, start_n, offs_n, offs_d, d_ok, seq, stride_s, scale, CAUSAL)
        p = tl.where(ok, tl.exp(s - m_i[:, None]), 0.0)
        l_i += tl.sum(p, 1)
        v = load_rows(v_ptr, base, cols, offs_d, d_ok, seq, stride_s)
        acc += tl.dot(p.to(v.dtype), v)
    o = acc / l_i[:, None]
    store_rows(o_ptr, base, rows, offs_d, d_ok, seq, stride_s, o)


@step(compile_specs=functools.partial(forward_specs, two_pass_kernel))
def two_pass(out, q, k, v, causal=False):
    return launch_forward(two_pass_kernel, out, q, k, v, causal)

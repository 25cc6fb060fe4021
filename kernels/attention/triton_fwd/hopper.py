"""Attention's forward ladder, step hopper: fa2's algorithm with q, k, v and o moved by TMA (tensor
descriptors built on the device, one per tensor, 3-D so a head's ragged last block is zero-filled on
load and clipped on store by the copy engine, not masked by the threads), the key loop pipelined by
tl.range over num_stages buffers, and wider key tiles at head_dim 128. Shapes TMA cannot take (a
head_dim that is no power of two of at least 16, rows not 16-byte aligned) run the fa2 kernel."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import CompileSpec, launch, step, triton_interpreted, triton_type

from ..tiles import DIVISIBLE, exp2_update, flat, grid, scale_of, visible
from .fa2 import fa2_forward


@triton.jit
def _hopper_blocks(acc, l_i, m_i, q, k_desc, v_desc, head, rows, offs_n, seq, qk_scale, lo, hi,
                   MASKED: tl.constexpr, CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    for start_n in tl.range(lo, hi, BLOCK_N):
        k = k_desc.load([head, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        s = tl.dot(q, k.T) * qk_scale
        if MASKED:
            cols = start_n + offs_n
            ok = visible(rows, cols, seq, CAUSAL)
            s = tl.where(ok, s, -1.0e30)
        p, alpha, m_new, l_i = exp2_update(s, m_i, l_i)
        v = v_desc.load([head, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def hopper_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, seq, n_heads, scale, CAUSAL: tl.constexpr,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """fa2_kernel's work for program (m, head), every tile through a (heads, seq, HEAD_DIM) descriptor."""
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    q_desc = tl.make_tensor_descriptor(q_ptr, shape=[n_heads, seq, HEAD_DIM], strides=[seq * HEAD_DIM, HEAD_DIM, 1],
                                       block_shape=[1, BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(k_ptr, shape=[n_heads, seq, HEAD_DIM], strides=[seq * HEAD_DIM, HEAD_DIM, 1],
                                       block_shape=[1, BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(v_ptr, shape=[n_heads, seq, HEAD_DIM], strides=[seq * HEAD_DIM, HEAD_DIM, 1],
                                       block_shape=[1, BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(o_ptr, shape=[n_heads, seq, HEAD_DIM], strides=[seq * HEAD_DIM, HEAD_DIM, 1],
                                       block_shape=[1, BLOCK_M, HEAD_DIM])
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = q_desc.load([head, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
    qk_scale = scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], -1.0e30, tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        split = start_m * BLOCK_M
        end = tl.minimum((start_m + 1) * BLOCK_M, seq)
    else:
        split = (seq // BLOCK_N) * BLOCK_N
        end = seq
    acc, l_i, m_i = _hopper_blocks(acc, l_i, m_i, q, k_desc, v_desc, head, rows, offs_n, seq, qk_scale, 0, split,
                                   False, CAUSAL, HEAD_DIM, BLOCK_N)
    acc, l_i, m_i = _hopper_blocks(acc, l_i, m_i, q, k_desc, v_desc, head, rows, offs_n, seq, qk_scale, split, end,
                                   True, CAUSAL, HEAD_DIM, BLOCK_N)
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    o = acc / l_safe[:, None]
    tl.store(lse_ptr + head.to(tl.int64) * seq + rows, (m_i + tl.math.log2(l_safe)) / 1.4426950408889634,
             mask=rows < seq)
    o_desc.store([head, start_m * BLOCK_M, 0], o.to(o_ptr.dtype.element_ty).reshape(1, BLOCK_M, HEAD_DIM))


def hopper_tiles(head_dim: int) -> dict:
    """128 query rows; 128 keys per tile at head_dim 128 (eight warps), 64 at 64 (four)."""
    wide = head_dim > 64
    return {"BLOCK_M": 128, "BLOCK_N": 128 if wide else 64, "num_warps": 8 if wide else 4, "num_stages": 3}


def _scratch(size: int, alignment: int, stream):
    """Global memory for the device-side tensor descriptors (128 bytes per program)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def tma_ok(q) -> bool:
    """What a TMA descriptor of (heads, seq, head_dim) needs: a power-of-two head_dim of 16 to 256
    (the block's inner size) in a 16-bit dtype, so rows are 16-byte multiples; 16-byte aligned bases."""
    d = q.shape[-1]
    return d in (16, 32, 64, 128, 256) and q.dtype in (torch.float16, torch.bfloat16) and q.data_ptr() % 16 == 0


def specs(dtype: str):
    ty = triton_type(dtype)
    sig = {"q_ptr": f"*{ty}", "k_ptr": f"*{ty}", "v_ptr": f"*{ty}", "o_ptr": f"*{ty}", "lse_ptr": "*fp32",
           "seq": "i32", "n_heads": "i32", "scale": "fp32"}
    out = []
    for d in (64, 128):
        t = hopper_tiles(d)
        for causal in (False, True):
            out.append(CompileSpec(hopper_kernel, sig, {"CAUSAL": causal, "HEAD_DIM": d, "BLOCK_M": t["BLOCK_M"],
                                                         "BLOCK_N": t["BLOCK_N"]},
                                   num_warps=t["num_warps"], num_stages=t["num_stages"],
                                   label=f"head_dim={d}, causal={causal}", divisible=(*DIVISIBLE, "n_heads")))
    return out


@step(compile_specs=specs)
def hopper(out, q, k, v, causal=False):
    fq, fk, fv, fo = flat(q), flat(k), flat(v), flat(out)
    if not (tma_ok(fq) and tma_ok(fk) and tma_ok(fv) and tma_ok(fo)):
        return fa2_forward(out, q, k, v, causal)[0]
    if not triton_interpreted():
        triton.set_allocator(_scratch)
    b, h, s, d = q.shape
    t = hopper_tiles(d)
    lse = torch.empty((b, h, s), dtype=torch.float32, device=q.device)
    launch(hopper_kernel, grid(q, t["BLOCK_M"]), fq, fk, fv, fo, lse, s, b * h, scale_of(q), CAUSAL=bool(causal),
           HEAD_DIM=d, **t)
    return out

"""Attention's backward ladder, step atomic: one kernel, one program per key block, recomputing P from
q, k and the forward's saved log-sum-exp over every query block that sees the keys: dk and dv held in
registers, dq added into an fp32 buffer by atomics from every key block, and delta = rowsum(dO o)
recomputed by every program that needs it."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import launch, step, triton_type

from ..tiles import block_d, flat, load_rows, scale_of, store_rows, tile_specs
from .fa2 import bwd_tiles, dkdv_block, kernel_tiles, key_block, save


@triton.jit
def atomic_kernel(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dq_ptr, dk_ptr, dv_ptr, seq, scale, stride_bh, stride_s,
                  CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    """dk, dv of the BLOCK_N keys of program (n, head), and their share of dq (fp32, atomics): for each
    query block that sees them, delta = rowsum(dO o), P^T from the log-sum-exp, dv += P^T dO,
    dS^T = P^T (v dO^T - delta), dk += dS^T q, dq += scale dS k."""
    head, base, cols, offs_d, d_ok, offs_m, k, v, dk, dv, qk_scale, lo = key_block(
        k_ptr, v_ptr, seq, scale, stride_bh, stride_s, CAUSAL, HEAD_DIM, BLOCK_D, BLOCK_M, BLOCK_N)
    for start_m in range(lo, seq, BLOCK_M):
        rows = start_m + offs_m
        row_ok = rows < seq
        qo_mask = row_ok[:, None] & d_ok[None, :]
        at = base + rows[:, None] * stride_s + offs_d[None, :]
        q = load_rows(q_ptr, base, rows, offs_d, d_ok, seq, stride_s)
        do = load_rows(do_ptr, base, rows, offs_d, d_ok, seq, stride_s)
        o = load_rows(o_ptr, base, rows, offs_d, d_ok, seq, stride_s)
        delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
        lse = tl.load(lse_ptr + head * seq + rows, mask=row_ok, other=0.0) * 1.4426950408889634
        dk, dv, dst = dkdv_block(k, v, q, do, lse, delta, rows, row_ok, cols, seq, qk_scale, dk, dv, CAUSAL)
        dq = tl.dot(tl.trans(dst).to(k.dtype), k) * scale
        tl.atomic_add(dq_ptr + at, dq, mask=qo_mask, sem="relaxed")
    store_rows(dk_ptr, base, cols, offs_d, d_ok, seq, stride_s, dk * scale)
    store_rows(dv_ptr, base, cols, offs_d, d_ok, seq, stride_s, dv)


def specs(dtype: str):
    ty = triton_type(dtype)
    sig = {**{p: f"*{ty}" for p in ("q_ptr", "k_ptr", "v_ptr", "o_ptr", "do_ptr")}, "lse_ptr": "*fp32",
           "dq_ptr": "*fp32", "dk_ptr": f"*{ty}", "dv_ptr": f"*{ty}", "seq": "i32", "scale": "fp32",
           "stride_bh": "i32", "stride_s": "i32"}
    return tile_specs(atomic_kernel, sig, kernel_tiles("dkdv"))


@step(pass_="backward", save=save, compile_specs=specs)
def atomic(out, dy, saved, q, k, v, causal=False):
    dq, dk, dv = out
    o, lse = saved
    b, h, s, d = q.shape
    bm, bn, warps, stages = bwd_tiles(d)["dkdv"]
    fq = flat(q)
    dq32 = torch.zeros((b * h, s, d), dtype=torch.float32, device=q.device)
    launch(atomic_kernel, (triton.cdiv(s, bn), b * h), fq, flat(k), flat(v), flat(o), flat(dy), lse, dq32, flat(dk),
           flat(dv), s, scale_of(q), fq.stride(0), fq.stride(1), CAUSAL=bool(causal), HEAD_DIM=d, BLOCK_D=block_d(d),
           BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages)
    dq.copy_(dq32.view(b, h, s, d))
    return dq, dk, dv

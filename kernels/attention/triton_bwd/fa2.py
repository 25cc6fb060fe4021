"""Attention's backward ladder, step fa2: FlashAttention-2's backward in three kernels. delta =
rowsum(dO o) per query row first; then one program per key block recomputes P from q, k and the
forward's saved log-sum-exp over every query block that sees it, accumulating dk and dv in registers;
then one program per query block does the same over the key blocks it sees, accumulating dq. No
atomics: each gradient has one owner."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import CompileSpec, launch, step, triton_type

from ..tiles import block_d, flat, load_rows, program_block, scale_of, store_rows, tile_specs
from ..triton_fwd.fa2 import fa2_forward


@triton.jit
def delta_kernel(o_ptr, do_ptr, delta_ptr, seq, stride_bh, stride_s, HEAD_DIM: tl.constexpr,
                 BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr):
    """delta[row] = sum_d o[row, d] dO[row, d] (fp32), BLOCK_M rows of one head per program."""
    head = tl.program_id(1).to(tl.int64)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mask = (rows[:, None] < seq) & (offs_d[None, :] < HEAD_DIM)
    at = head * stride_bh + rows[:, None] * stride_s + offs_d[None, :]
    o = tl.load(o_ptr + at, mask=mask, other=0.0).to(tl.float32)
    do = tl.load(do_ptr + at, mask=mask, other=0.0).to(tl.float32)
    tl.store(delta_ptr + head * seq + rows, tl.sum(o * do, 1), mask=rows < seq)


@triton.jit
def key_block(k_ptr, v_ptr, seq, scale, stride_bh, stride_s, CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr,
              BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """What a program (n, head) over a key block starts from: program_block's (head, base offset, key
    positions, head_dim offsets and mask), the query offsets of a block, the keys' k and v, the dk and
    dv accumulators, the scale times log2 e, and the first query that sees the keys (causal: the
    block's first key; else 0)."""
    start_n, head, base, cols, offs_d, d_ok = program_block(stride_bh, BLOCK_N, BLOCK_D, HEAD_DIM)
    offs_m = tl.arange(0, BLOCK_M)
    k = load_rows(k_ptr, base, cols, offs_d, d_ok, seq, stride_s)
    v = load_rows(v_ptr, base, cols, offs_d, d_ok, seq, stride_s)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    qk_scale = scale * 1.4426950408889634
    lo = start_n * BLOCK_N if CAUSAL else 0  # earlier queries do not see these keys
    return head, base, cols, offs_d, d_ok, offs_m, k, v, dk, dv, qk_scale, lo


@triton.jit
def dkdv_block(k, v, q, do, lse, delta, rows, row_ok, cols, seq, qk_scale, dk, dv, CAUSAL: tl.constexpr):
    """One query block's share of the keys' gradients: P^T from the log-sum-exp (base 2), dv += P^T dO,
    dS^T = P^T (v dO^T - delta), dk += dS^T q. Returns (dk, dv, dS^T)."""
    ok = row_ok[None, :] & (cols[:, None] < seq)
    if CAUSAL:
        ok = ok & (rows[None, :] >= cols[:, None])
    pt = tl.where(ok, tl.math.exp2(tl.dot(k, tl.trans(q)) * qk_scale - lse[None, :]), 0.0)
    dv += tl.dot(pt.to(do.dtype), do)
    dst = pt * (tl.dot(v, tl.trans(do)) - delta[None, :])
    dk += tl.dot(dst.to(q.dtype), q)
    return dk, dv, dst


@triton.jit
def dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, seq, scale, stride_bh, stride_s,
                CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr):
    """dk and dv of the BLOCK_N keys of program (n, head): over the query blocks that see them (causal:
    from the block's first key on), P^T = exp2(k q^T scale log2 e - lse log2 e), dv += P^T dO,
    dS^T = P^T (v dO^T - delta), dk += dS^T q; dk times the scale at the end."""
    head, base, cols, offs_d, d_ok, offs_m, k, v, dk, dv, qk_scale, lo = key_block(
        k_ptr, v_ptr, seq, scale, stride_bh, stride_s, CAUSAL, HEAD_DIM, BLOCK_D, BLOCK_M, BLOCK_N)
    for start_m in range(lo, seq, BLOCK_M):
        rows = start_m + offs_m
        row_ok = rows < seq
        q = load_rows(q_ptr, base, rows, offs_d, d_ok, seq, stride_s)
        do = load_rows(do_ptr, base, rows, offs_d, d_ok, seq, stride_s)
        lse = tl.load(lse_ptr + head * seq + rows, mask=row_ok, other=0.0) * 1.4426950408889634
        delta = tl.load(delta_ptr + head * seq + rows, mask=row_ok, other=0.0)
        dk, dv, _ = dkdv_block(k, v, q, do, lse, delta, rows, row_ok, cols, seq, qk_scale, dk, dv, CAUSAL)
    store_rows(dk_ptr, base, cols, offs_d, d_ok, seq, stride_s, dk * scale)
    store_rows(dv_ptr, base, cols, offs_d, d_ok, seq, stride_s, dv)


@triton.jit
def dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, seq, scale, stride_bh, stride_s,
              CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr):
    """dq of the BLOCK_M queries of program (m, head): over the key blocks they see (causal: up to the
    block's last query), dS = P (dO v^T - delta), dq += dS k; times the scale at the end."""
    start_m, head, base, rows, offs_d, d_ok = program_block(stride_bh, BLOCK_M, BLOCK_D, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    row_ok = rows < seq
    q = load_rows(q_ptr, base, rows, offs_d, d_ok, seq, stride_s)
    do = load_rows(do_ptr, base, rows, offs_d, d_ok, seq, stride_s)
    lse = tl.load(lse_ptr + head * seq + rows, mask=row_ok, other=0.0) * 1.4426950408889634
    delta = tl.load(delta_ptr + head * seq + rows, mask=row_ok, other=0.0)
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    qk_scale = scale * 1.4426950408889634
    end = tl.minimum((start_m + 1) * BLOCK_M, seq) if CAUSAL else seq
    for start_n in range(0, end, BLOCK_N):
        cols = start_n + offs_n
        k = load_rows(k_ptr, base, cols, offs_d, d_ok, seq, stride_s)
        v = load_rows(v_ptr, base, cols, offs_d, d_ok, seq, stride_s)
        ok = row_ok[:, None] & (cols[None, :] < seq)
        if CAUSAL:
            ok = ok & (cols[None, :] <= rows[:, None])
        p = tl.where(ok, tl.math.exp2(tl.dot(q, tl.trans(k)) * qk_scale - lse[:, None]), 0.0)
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k)
    store_rows(dq_ptr, base, rows, offs_d, d_ok, seq, stride_s, dq * scale)


def kernel_tiles(kind: str, tiles=None):
    """``tiles.tile_specs``' tiles of the ``kind`` (dkdv or dq) kernel under the table ``tiles`` (head_dim ->
    {kind: (BLOCK_M, BLOCK_N, warps, stages)}; default this step's ``bwd_tiles``)."""
    return lambda head_dim: (tiles or bwd_tiles)(head_dim)[kind]


def bwd_tiles(head_dim: int) -> dict:
    """(BLOCK_M, BLOCK_N, warps, stages) of the dk/dv kernel (few queries, many keys: the accumulators are
    the keys') and of the dq kernel (the other way round): two fp32 accumulators of BLOCK_N x head_dim must
    stay in registers, so fewer keys at head_dim 128."""
    warps = 4 if head_dim <= 64 else 8
    return {"dkdv": (32, 128 if head_dim <= 64 else 64, warps, 2), "dq": (128 if head_dim <= 64 else 64, 32, warps, 2)}


def save(q, k, v, causal=False):
    """The forward's output and its fp32 log-sum-exp of each row (the fa2 forward step's)."""
    return fa2_forward(torch.empty_like(q), q, k, v, causal)


def _sig(dtype: str, kind: str) -> dict:
    ty = triton_type(dtype)
    ptrs = ["q_ptr", "k_ptr", "v_ptr", "do_ptr", "lse_ptr", "delta_ptr"]
    outs = ["dk_ptr", "dv_ptr"] if kind == "dkdv" else ["dq_ptr"]
    sig = {p: "*fp32" if p in ("lse_ptr", "delta_ptr") else f"*{ty}" for p in ptrs + outs}
    return {**sig, "seq": "i32", "scale": "fp32", "stride_bh": "i32", "stride_s": "i32"}


def specs_of(tiles):
    """The compile specs of the three kernels launched with the tile table ``tiles``."""
    def specs(dtype: str):
        out = [spec for kind, kernel in (("dkdv", dkdv_kernel), ("dq", dq_kernel))
               for spec in tile_specs(kernel, _sig(dtype, kind), kernel_tiles(kind, tiles), label=f"{kind}, ")]
        ty = triton_type(dtype)
        out.append(CompileSpec(delta_kernel, {"o_ptr": f"*{ty}", "do_ptr": f"*{ty}", "delta_ptr": "*fp32",
                                              "seq": "i32", "stride_bh": "i32", "stride_s": "i32"},
                               {"HEAD_DIM": 128, "BLOCK_D": 128, "BLOCK_M": 64}, num_warps=4,
                               label="delta, head_dim=128", divisible=("seq", "stride_bh", "stride_s")))
        return out

    return specs


def backward(out, dy, saved, q, k, v, causal, tiles):
    """delta, then dk and dv, then dq, each kernel with its tiles of the table ``tiles``."""
    dq, dk, dv = out
    o, lse = saved
    b, h, s, d = q.shape
    bd = block_d(d)
    fq, fk, fv, fdo = flat(q), flat(k), flat(v), flat(dy)
    sbh, ss = fq.stride(0), fq.stride(1)
    delta = torch.empty((b, h, s), dtype=torch.float32, device=q.device)
    launch(delta_kernel, (triton.cdiv(s, 64), b * h), flat(o), fdo, delta, s, sbh, ss, HEAD_DIM=d, BLOCK_D=bd,
           BLOCK_M=64)
    common = {"CAUSAL": bool(causal), "HEAD_DIM": d, "BLOCK_D": bd}
    bm, bn, warps, stages = tiles(d)["dkdv"]
    launch(dkdv_kernel, (triton.cdiv(s, bn), b * h), fq, fk, fv, fdo, lse, delta, flat(dk), flat(dv), s,
           scale_of(q), sbh, ss, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages, **common)
    bm, bn, warps, stages = tiles(d)["dq"]
    launch(dq_kernel, (triton.cdiv(s, bm), b * h), fq, fk, fv, fdo, lse, delta, flat(dq), s, scale_of(q), sbh, ss,
           BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages, **common)
    return dq, dk, dv


@step(pass_="backward", save=save, compile_specs=specs_of(bwd_tiles))
def fa2(out, dy, saved, q, k, v, causal=False):
    return backward(out, dy, saved, q, k, v, causal, bwd_tiles)

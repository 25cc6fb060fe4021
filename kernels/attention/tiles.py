"""What the Triton steps of attention share: the tiles, the flattened (batch*heads, seq, d) views,
the launch grid, the signatures the PTX report cross-compiles them with, and the loads, stores and
mask of a tile inside a kernel."""

from __future__ import annotations

import math

import triton
import triton.language as tl

from kernellab.kit import CompileSpec, launch, triton_type


def tiles(head_dim: int) -> dict:
    """Query rows and keys per tile, warps and pipeline stages: FlashAttention-2's on sm_90 (the
    Triton tutorial's): 128 query rows by 64 keys, eight warps at head_dim 128, four at 64."""
    return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8 if head_dim > 64 else 4, "num_stages": 3}


def block_d(head_dim: int) -> int:
    """head_dim padded to a power of two of at least 16 (tl.dot's least K)."""
    return max(16, triton.next_power_of_2(head_dim))


def flat(x):
    """(batch, heads, seq, d) -> a contiguous (batch*heads, seq, d) view."""
    b, h, s, d = x.shape
    return x.contiguous().view(b * h, s, d)


def grid(q, block_m: int):
    """One program per query block of each head: (seq / BLOCK_M, batch*heads)."""
    b, h, s, _ = q.shape
    return (triton.cdiv(s, block_m), b * h)


def scale_of(q) -> float:
    return 1.0 / math.sqrt(q.shape[-1])


def meta(q, causal) -> dict:
    """The constexprs of a forward launch, and its tiles."""
    d = q.shape[-1]
    t = tiles(d)
    return {"CAUSAL": bool(causal), "HEAD_DIM": d, "BLOCK_D": block_d(d), **t}


def launch_forward(kernel, out, q, k, v, causal, *extra):
    """``kernel``(q, k, v, o, *extra, seq, scale, strides, constexprs): one program per query block
    of each head, o into ``out``."""
    m = meta(q, causal)
    o = flat(out)
    launch(kernel, grid(q, m["BLOCK_M"]), flat(q), flat(k), flat(v), o, *extra, q.shape[2], scale_of(q), o.stride(0),
           o.stride(1), **m)
    return out


# the integer arguments taken as multiples of 16 when cross-compiling (the default shapes' are)
DIVISIBLE = ("seq", "stride_bh", "stride_s")


def forward_signature(dtype: str, lse: bool = False) -> dict:
    ty = triton_type(dtype)
    sig = {"q_ptr": f"*{ty}", "k_ptr": f"*{ty}", "v_ptr": f"*{ty}", "o_ptr": f"*{ty}"}
    if lse:
        sig["lse_ptr"] = "*fp32"
    return {**sig, "seq": "i32", "scale": "fp32", "stride_bh": "i32", "stride_s": "i32"}


def tile_specs(kernel, sig: dict, tiles_of, label: str = "") -> list:
    """``kernel`` at head_dim 64 and 128, causal and not, with the tiles it launches with:
    ``tiles_of(head_dim)`` gives (BLOCK_M, BLOCK_N, num_warps, num_stages)."""
    specs = []
    for d in (64, 128):
        bm, bn, warps, stages = tiles_of(d)
        for causal in (False, True):
            specs.append(CompileSpec(kernel, sig, {"CAUSAL": causal, "HEAD_DIM": d, "BLOCK_D": d, "BLOCK_M": bm,
                                                   "BLOCK_N": bn},
                                     num_warps=warps, num_stages=stages, label=f"{label}head_dim={d}, causal={causal}",
                                     divisible=DIVISIBLE))
    return specs


def forward_specs(kernel, dtype: str, lse: bool = False) -> list:
    """A forward kernel's specs, with the forward's tiles."""
    def tiles_of(d):
        t = tiles(d)
        return t["BLOCK_M"], t["BLOCK_N"], t["num_warps"], t["num_stages"]

    return tile_specs(kernel, forward_signature(dtype, lse), tiles_of)


@triton.jit
def program_block(stride_bh, BLOCK: tl.constexpr, BLOCK_D: tl.constexpr, HEAD_DIM: tl.constexpr):
    """What program (i, head) works on: (i, head, the head's base offset, the BLOCK positions of its
    block i along seq, the head_dim offsets, which of them are inside head_dim)."""
    start = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    offs_d = tl.arange(0, BLOCK_D)
    return start, head, head * stride_bh, start * BLOCK + tl.arange(0, BLOCK), offs_d, offs_d < HEAD_DIM


@triton.jit
def query_block(stride_bh, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                HEAD_DIM: tl.constexpr):
    """What a forward program (m, head) works on: (m, head, the head's base offset, its BLOCK_M query
    rows, the BLOCK_N offsets of a key block, the head_dim offsets, which of them are inside head_dim)."""
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    base = head * stride_bh
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    return start_m, head, base, rows, offs_n, offs_d, offs_d < HEAD_DIM


@triton.jit
def key_scores(q, k_ptr, base, rows, start_n, offs_n, offs_d, d_ok, seq, stride_s, scale, CAUSAL: tl.constexpr):
    """The key block at start_n against the queries q: (its positions, the scores q k^T times scale,
    which of them a query sees)."""
    cols = start_n + offs_n
    kt = load_cols(k_ptr, base, cols, offs_d, d_ok, seq, stride_s)
    s = tl.dot(q, kt) * scale
    return cols, s, visible(rows, cols, seq, CAUSAL)


@triton.jit
def exp2_update(s, m_i, l_i):
    """One key block of the online softmax in base 2: (p = 2^(s - m'), the factor 2^(m - m') that
    rescales what came before, the new row maxima m', the new row sums)."""
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.math.exp2(m_i - m_new)
    p = tl.math.exp2(s - m_new[:, None])
    return p, alpha, m_new, l_i * alpha + tl.sum(p, 1)


@triton.jit
def load_rows(ptr, base, rows, offs_d, d_ok, seq, stride_s):
    """The (rows, head_dim) tile of one head (q, v, o or do): zeros past seq and head_dim."""
    return tl.load(ptr + base + rows[:, None] * stride_s + offs_d[None, :],
                   mask=(rows[:, None] < seq) & d_ok[None, :], other=0.0)


@triton.jit
def load_cols(ptr, base, cols, offs_d, d_ok, seq, stride_s):
    """The (head_dim, cols) tile of one head, transposed (k for q k^T): zeros past seq and head_dim."""
    return tl.load(ptr + base + cols[None, :] * stride_s + offs_d[:, None],
                   mask=(cols[None, :] < seq) & d_ok[:, None], other=0.0)


@triton.jit
def store_rows(ptr, base, rows, offs_d, d_ok, seq, stride_s, x):
    """x into the (rows, head_dim) tile of one head, in the tensor's dtype, inside seq and head_dim."""
    tl.store(ptr + base + rows[:, None] * stride_s + offs_d[None, :], x.to(ptr.dtype.element_ty),
             mask=(rows[:, None] < seq) & d_ok[None, :])


@triton.jit
def visible(rows, cols, seq, CAUSAL: tl.constexpr):
    """Which scores of the (rows, cols) tile count: keys inside seq and, causal, none after the query."""
    ok = cols[None, :] < seq
    if CAUSAL:
        ok = ok & (cols[None, :] <= rows[:, None])
    return ok

"""Layer norm's loop kernels, shared by the steps of the Triton ladder "triton_loop" (one file each in
triton_loop/): the loop kernel (shifted sums, ROWS rows per program) and the group kernel (per-group
shifts, ONE_MERGE, KNOWN_TRIP), the autotuner each step builds from them, the launcher and the specs the
PTX report cross-compiles."""

from __future__ import annotations

import triton
import triton.language as tl

from kernellab.kit import (
    ROW_DIVISIBLE,
    CompileSpec,
    autotune,
    chunk_loop_configs,
    element_size,
    launch,
    prune_chunk_configs,
    row_shape,
)

from . import EPS, signature


@triton.jit
def _add_pair(a0, a1, b0, b1):
    return a0 + b0, a1 + b1


@triton.jit
def _chan_merge(n_a, mean_a, m2_a, n_b, mean_b, m2_b):
    """Two parts' (count, mean, M2) as one, by Chan's update; empty parts (n = 0) merge to the other."""
    n = n_a + n_b
    frac = n_b / tl.maximum(n, 1.0)
    delta = mean_b - mean_a
    return n, mean_a + delta * frac, m2_a + m2_b + delta * delta * n_a * frac


@triton.jit
def _first_chunk(x_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, ROWS: tl.constexpr, C: tl.constexpr,
                 EVEN: tl.constexpr):
    """The loop kernels' program: its ROWS rows (which exist, their x and out pointers), the
    chunk's column offsets, and the first chunk's mask and values (fp32), loaded for pass 2 to
    find in L2. EVEN (n_cols == BLOCK_COLS, a power of two): every chunk is whole, the column
    masks go."""
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * ROWS + tl.arange(0, ROWS)
    row_ok = (rows < n_rows)[:, None]
    x_rows = x_ptr + rows[:, None] * stride_x
    o_rows = out_ptr + rows[:, None] * stride_out
    offs = tl.arange(0, C)
    if EVEN:
        mask = row_ok
    else:
        mask = row_ok & (offs[None, :] < n_cols)
    x = tl.load(x_rows + offs[None, :], mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    return row_ok, x_rows, o_rows, offs, mask, x


@triton.jit
def layer_norm_loop_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, eps,
                           BLOCK_COLS: tl.constexpr, CHUNK: tl.constexpr, ROWS: tl.constexpr,
                           EVEN: tl.constexpr = False):
    """LayerNorm of ROWS rows per program, streamed in chunks of min(CHUNK, BLOCK_COLS) columns.

    Pass 1 keeps, per lane, the sums of x - k and (x - k)^2, k each row's mean over its first
    chunk: no reduction inside the loop, one (pair) reduction after it, and the shift keeps
    E[d^2] - E[d]^2 free of cancellation (|mean - k| is a small fraction of the std). Pass 2
    re-reads the rows from the L2 that pass 1 asked to keep them in, and loads each chunk of
    weight and bias once for all ROWS rows.
    """
    C: tl.constexpr = min(CHUNK, BLOCK_COLS)
    row_ok, x_rows, o_rows, offs, mask, x = _first_chunk(x_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out,
                                                         ROWS, C, EVEN)
    k = tl.sum(x, axis=1) / tl.minimum(n_cols, C).to(tl.float32)
    d = tl.where(mask, x - k[:, None], 0.0)
    s, q = d, d * d
    for start in range(C, n_cols, C):
        cols = start + offs
        if not EVEN:
            mask = row_ok & (cols[None, :] < n_cols)
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        d = tl.where(mask, x - k[:, None], 0.0)
        s += d
        q += d * d
    s, q = tl.reduce((s, q), 1, _add_pair)
    shift = s / n_cols
    mean = k + shift
    rstd = tl.math.rsqrt(tl.maximum(q / n_cols - shift * shift, 0.0) + eps)
    _write_rows(x_rows, o_rows, w_ptr, b_ptr, mean, rstd, row_ok, n_cols, C, EVEN)


@triton.jit
def _write_rows(x_rows, o_rows, w_ptr, b_ptr, mean, rstd, row_ok, n_cols, C: tl.constexpr, EVEN: tl.constexpr):
    """The loop kernels' pass 2: the rows again (from L2), each chunk of weight and bias
    loaded once for all of them, the normalized write."""
    offs = tl.arange(0, C)
    for start in range(0, n_cols, C):
        cols = start + offs
        if EVEN:
            col_ok = cols >= 0
            mask = row_ok
        else:
            col_ok = cols < n_cols
            mask = row_ok & col_ok[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(w_ptr + cols, mask=col_ok, other=0.0, eviction_policy="evict_last").to(tl.float32)
        b = tl.load(b_ptr + cols, mask=col_ok, other=0.0, eviction_policy="evict_last").to(tl.float32)
        y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(o_rows + cols[None, :], y.to(o_rows.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_group_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, eps,
                            BLOCK_COLS: tl.constexpr, CHUNK: tl.constexpr, ROWS: tl.constexpr,
                            GROUP: tl.constexpr, EVEN: tl.constexpr = False, ONE_MERGE: tl.constexpr = False,
                            KNOWN_TRIP: tl.constexpr = False):
    """The loop kernel's statistics with no barrier before or inside the loop: the chunk seen
    as groups of GROUP adjacent columns (one thread's 16-byte vector), each group's sums of
    x - k_g and (x - k_g)^2 about its own first value k_g, in registers that do not grow with
    the chunk's elements per thread. After the loop, mean = sum(n_g k_g + s_g) / n and
    M2 = sum(q_g + d_g (2 s_g + n_g d_g)), d_g = k_g - mean: an outlier shift costs only its
    own group's digits. ONE_MERGE: instead of those two dependent reductions, one: each group's
    (n_g, mean_g, M2_g) merged across the row by Chan's update in the reduction tree itself, the
    means taken relative to the row's first value. KNOWN_TRIP (with EVEN): both loops run to
    the constexpr BLOCK_COLS instead of n_cols, so the compiler knows their trip counts.
    """
    C: tl.constexpr = min(CHUNK, BLOCK_COLS)
    G: tl.constexpr = min(GROUP, C)
    end = BLOCK_COLS if KNOWN_TRIP and EVEN else n_cols
    row_ok, x_rows, o_rows, offs, mask, x = _first_chunk(x_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out,
                                                         ROWS, C, EVEN)
    first = tl.arange(0, G)[None, None, :] == 0
    x3 = tl.reshape(x, [ROWS, C // G, G])
    k = tl.sum(tl.where(first, x3, 0.0), axis=2)
    d = x3 - k[:, :, None]
    if not EVEN:
        m3 = tl.reshape(mask, [ROWS, C // G, G])
        d = tl.where(m3, d, 0.0)
        n = tl.sum(m3.to(tl.float32), axis=2)
    s = tl.sum(d, axis=2)
    q = tl.sum(d * d, axis=2)
    for start in range(C, end, C):
        cols = start + offs
        if not EVEN:
            mask = row_ok & (cols[None, :] < n_cols)
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        if EVEN:
            d = tl.reshape(x, [ROWS, C // G, G]) - k[:, :, None]
        else:
            m3 = tl.reshape(mask, [ROWS, C // G, G])
            d = tl.where(m3, tl.reshape(x, [ROWS, C // G, G]) - k[:, :, None], 0.0)
            n += tl.sum(m3.to(tl.float32), axis=2)
        s += tl.sum(d, axis=2)
        q += tl.sum(d * d, axis=2)
    if EVEN:
        n = G * (n_cols // C)
    if ONE_MERGE:
        # the groups' means relative to the row's first value, so that the merge's running
        # mean keeps the digits of the spread rather than of the mean's magnitude
        k_row = tl.load(x_rows, mask=row_ok, other=0.0).to(tl.float32)
        n = tl.zeros_like(s) + n
        shift = s / tl.maximum(n, 1.0)
        _, mean, m2 = tl.reduce((n, (k - k_row) + shift, q - s * shift), 1, _chan_merge)
        mean += tl.reshape(k_row, [ROWS])
        rstd = tl.math.rsqrt(m2 / n_cols + eps)
    else:
        mean = tl.sum(n * k + s, axis=1) / n_cols
        dk = k - mean[:, None]
        rstd = tl.math.rsqrt(tl.sum(q + dk * (2.0 * s + n * dk), axis=1) / n_cols + eps)
    _write_rows(x_rows, o_rows, w_ptr, b_ptr, mean, rstd, row_ok, end, C, EVEN)


# (chunk, warps) of the loop kernel per rows per program: ROWS x CHUNK from 2048 to 32768
# elements, 8 to 64 of them per thread
LOOP_SHAPES = {1: [(2048, 4), (2048, 8), (4096, 8), (4096, 16), (8192, 8), (8192, 16), (16384, 16), (16384, 32),
                   (32768, 32)],
               2: [(2048, 8), (4096, 8), (4096, 16), (8192, 16), (16384, 32)],
               4: [(2048, 8), (2048, 16), (4096, 16), (8192, 32)]}
# known_trip's programs besides: 4 warps over 4096 columns, 32 over 8192 (RMSNorm's fastest bf16 loop)
KNOWN_TRIP_SHAPES = [(4096, 4), (8192, 32)]


def loop_tuned(kernel, rows_per_program, extra_shapes=(), known_trip=None):
    """``kernel`` autotuned over (ROWS, CHUNK, warps, KNOWN_TRIP) configs, per row shape."""
    configs = [cfg for rows in rows_per_program
               for cfg in chunk_loop_configs("CHUNK", LOOP_SHAPES[rows] + list(extra_shapes), known_trip, ROWS=rows)]
    return autotune(configs=configs, key=["n_rows", "n_cols"],
                    prune_configs_by={"early_config_prune": prune_chunk_configs})(kernel)


def vector_elems(nbytes: int) -> int:
    """Elements of ``nbytes`` each in one 16-byte vector: a thread's group of adjacent columns."""
    return 16 // nbytes


def layer_norm_loop(kernel, grouped=False, **constexprs):
    def run(out, x, w, b):
        rows, cols = row_shape("layer_norm", x, out)
        block = triton.next_power_of_2(cols)
        group = {"GROUP": vector_elems(x.element_size())} if grouped else {}
        launch(kernel, lambda meta: (triton.cdiv(rows, meta["ROWS"]),), x, w, b, out, rows, cols, x.stride(0),
               out.stride(0), EPS, BLOCK_COLS=block, EVEN=cols == block, **group, **constexprs)
        return out

    return run


def loop_specs(rows: int, chunk: int, warps: int, grouped=False, **constexprs):
    def specs(dtype: str):
        meta = {"BLOCK_COLS": 32768, "CHUNK": chunk, "ROWS": rows, **constexprs}
        if grouped:
            meta["GROUP"] = vector_elems(element_size(dtype))
        return [CompileSpec(layer_norm_group_kernel if grouped else layer_norm_loop_kernel, signature(dtype), meta,
                            num_warps=warps, label=f"cols=32768: {rows} row(s) per program, chunk {chunk}, "
                            f"num_warps={warps}", divisible=ROW_DIVISIBLE)]

    return specs

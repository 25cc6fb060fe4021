"""RMSNorm's backward ladder, step partials: dx per row, and dw as per-program partial sums of the
rows each program owns, then a second kernel summing the partials over the programs (layer norm's
scheme, without the mean and db)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import launch, row_shape, step
from kernellab.kit.partials import sm_count, sum_partials_kernel

EPS = 1e-6  # the family's


@triton.jit
def rms_norm_bwd_kernel(x_ptr, dy_ptr, w_ptr, rstd_ptr, dx_ptr, dw_part_ptr, n_rows, n_cols, stride,
                        ROWS_PER_PROGRAM, BLOCK_COLS: tl.constexpr):
    """Rows [pid * ROWS_PER_PROGRAM, ...) of dx = rstd (w dy - xhat mean(w dy xhat)), xhat = x rstd,
    and the program's partial sum of dw = sum dy xhat, one fp32 row."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_COLS)
    col_ok = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_COLS,), dtype=tl.float32)
    for i in range(ROWS_PER_PROGRAM):
        row = pid * ROWS_PER_PROGRAM + i
        row_ok = row < n_rows
        mask = col_ok & row_ok
        base = row.to(tl.int64) * stride
        x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row, mask=row_ok, other=0.0)
        xhat = x * rstd
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / n_cols
        tl.store(dx_ptr + base + cols, ((wdy - xhat * c1) * rstd).to(dx_ptr.dtype.element_ty), mask=mask)
        dw += dy * xhat
    tl.store(dw_part_ptr + pid * n_cols + cols, dw, mask=col_ok)


def statistics(x, w):
    """The saved state a forward leaves for the backward: each row's fp32 rstd."""
    x32 = x.float()
    return torch.rsqrt(x32.square().mean(dim=-1) + EPS).contiguous()


def programs_of(rows: int, device) -> int:
    """Four programs per SM (each writes one partial row of dw)."""
    return max(1, min(rows, 4 * sm_count(device)))


@step(ladder="triton_bwd", pass_="backward", save=statistics)
def partials(out, dy, saved, x, w):
    dx, dw = out
    rstd = saved
    rows, cols = row_shape("rms_norm", x, dx, dy)
    block = triton.next_power_of_2(cols)
    programs = programs_of(rows, x.device)
    dw_part = torch.empty((programs, cols), dtype=torch.float32, device=x.device)
    warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    launch(rms_norm_bwd_kernel, (programs,), x, dy, w, rstd, dx, dw_part, rows, cols, x.stride(0),
           ROWS_PER_PROGRAM=triton.cdiv(rows, programs), BLOCK_COLS=block, num_warps=warps)
    block_n = 64
    launch(sum_partials_kernel, (triton.cdiv(cols, block_n),), dw_part, dw, programs, cols, BLOCK_PARTS=32,
           BLOCK_N=block_n)
    return dx, dw

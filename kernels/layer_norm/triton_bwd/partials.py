"""Layer norm's backward ladder, step partials: dx per row, dw and db as per-program partial sums
of the rows each program owns, then a second kernel summing the partials over the programs."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import launch, row_shape, step
from kernellab.kit.partials import sm_count, sum_partials_kernel

EPS = 1e-5


@triton.jit
def row_backward(x_ptr, dy_ptr, w, mean_ptr, rstd_ptr, dx_ptr, row, n_rows, n_cols, stride, cols, col_ok):
    """One row of dx = rstd (w dy - mean(w dy) - xhat mean(w dy xhat)), stored; returns the row's
    terms of dw and db, (dy xhat, dy) (zero past the end), for the caller to sum. Every step's."""
    row_ok = row < n_rows
    mask = col_ok & row_ok
    base = row.to(tl.int64) * stride
    x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row, mask=row_ok, other=0.0)
    rstd = tl.load(rstd_ptr + row, mask=row_ok, other=0.0)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = tl.sum(xhat * wdy, axis=0) / n_cols
    c2 = tl.sum(wdy, axis=0) / n_cols
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(dx_ptr + base + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    return dy * xhat, dy


@triton.jit
def layer_norm_bwd_dx_kernel(x_ptr, dy_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
                             n_rows, n_cols, stride, ROWS_PER_PROGRAM, BLOCK_COLS: tl.constexpr):
    """Rows [pid * ROWS_PER_PROGRAM, ...) of dx = rstd (w dy - mean(w dy) - xhat mean(w dy xhat)),
    and the program's partial sums of dw = sum dy xhat and db = sum dy, one fp32 row each."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_COLS)
    col_ok = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_COLS,), dtype=tl.float32)
    db = tl.zeros((BLOCK_COLS,), dtype=tl.float32)
    for i in range(ROWS_PER_PROGRAM):
        dw_row, db_row = row_backward(x_ptr, dy_ptr, w, mean_ptr, rstd_ptr, dx_ptr, pid * ROWS_PER_PROGRAM + i,
                                      n_rows, n_cols, stride, cols, col_ok)
        dw += dw_row
        db += db_row
    tl.store(dw_part_ptr + pid * n_cols + cols, dw, mask=col_ok)
    tl.store(db_part_ptr + pid * n_cols + cols, db, mask=col_ok)


def statistics(x, w, b):
    """The saved state a forward leaves for the backward: each row's fp32 mean and rstd."""
    x32 = x.float()
    mean = x32.mean(dim=-1)
    rstd = torch.rsqrt(x32.var(dim=-1, unbiased=False) + EPS)
    return mean.contiguous(), rstd.contiguous()


def row_warps(block: int) -> int:
    """Warps of a program holding a row of ``block`` columns (x, dy, w and dx in registers)."""
    return 4 if block <= 2048 else 8 if block <= 8192 else 16


def programs_of(rows: int, device, per_sm: int = 4) -> int:
    """Programs of the first kernel: ``per_sm`` per SM (each writes one partial row of dw and db, so
    fewer programs mean less second-stage traffic), at most one per row."""
    return max(1, min(rows, per_sm * sm_count(device)))


def unpacked(out, saved, x, dy):
    """What each step starts from: (dx, dw, db), (mean, rstd), x's rows and columns (checked against
    dx's and dy's: ``kit.row_shape``) and the power of two of columns a program holds."""
    rows, cols = row_shape("layer_norm", x, out[0], dy)
    return out, saved, rows, cols, triton.next_power_of_2(cols)


@step(ladder="triton_bwd", pass_="backward", save=statistics)
def partials(out, dy, saved, x, w, b):
    (dx, dw, db), (mean, rstd), rows, cols, block = unpacked(out, saved, x, dy)
    programs = programs_of(rows, x.device)
    per_program = triton.cdiv(rows, programs)
    dw_part = torch.empty((programs, cols), dtype=torch.float32, device=x.device)
    db_part = torch.empty_like(dw_part)
    warps = row_warps(block)
    launch(layer_norm_bwd_dx_kernel, (programs,), x, dy, w, mean, rstd, dx, dw_part, db_part, rows, cols,
           x.stride(0), ROWS_PER_PROGRAM=per_program, BLOCK_COLS=block, num_warps=warps)
    block_n = 64
    for part, grad in ((dw_part, dw), (db_part, db)):
        launch(sum_partials_kernel, (triton.cdiv(cols, block_n),), part, grad, programs, cols,
               BLOCK_PARTS=32, BLOCK_N=block_n)
    return dx, dw, db

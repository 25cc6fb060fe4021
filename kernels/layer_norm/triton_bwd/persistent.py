"""Layer norm's backward ladder, step persistent: one program per SM, rows strided over the
programs (program p takes rows p, p + P, p + 2P...), each keeping w and its dw and db partial sums
in registers across its rows; then one second-stage launch sums the P partial rows of dw and db
together as a tree in registers (tl.sum over the programs' axis)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import launch, step

from .partials import programs_of, row_backward, row_warps, statistics, unpacked


@triton.jit
def layer_norm_bwd_persistent_kernel(x_ptr, dy_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, part_ptr, n_rows, n_cols,
                                     stride, BLOCK_COLS: tl.constexpr):
    """Rows pid, pid + P, ... (P programs): their dx, and the program's partial sums of dw and db,
    rows 2 pid and 2 pid + 1 of part (fp32)."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_COLS)
    col_ok = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_COLS,), dtype=tl.float32)
    db = tl.zeros((BLOCK_COLS,), dtype=tl.float32)
    for start in range(0, n_rows, programs):  # the same trip count in every program; the last rows masked
        dw_row, db_row = row_backward(x_ptr, dy_ptr, w, mean_ptr, rstd_ptr, dx_ptr, start + pid, n_rows, n_cols,
                                      stride, cols, col_ok)
        dw += dw_row
        db += db_row
    part = part_ptr + (2 * pid).to(tl.int64) * n_cols + cols
    tl.store(part, dw, mask=col_ok)
    tl.store(part + n_cols, db, mask=col_ok)


@triton.jit
def sum_tree_kernel(part_ptr, dw_ptr, db_ptr, n_parts, n_cols, BLOCK_PARTS: tl.constexpr, BLOCK_N: tl.constexpr):
    """dw and db of BLOCK_N columns: every program's partial row (BLOCK_PARTS >= n_parts) loaded at
    once and summed as a tree in registers, dw and db in one launch."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    parts = tl.arange(0, BLOCK_PARTS)
    mask = (parts < n_parts)[:, None] & col_ok[None, :]
    offs = (2 * parts)[:, None].to(tl.int64) * n_cols + cols[None, :]
    dw = tl.sum(tl.load(part_ptr + offs, mask=mask, other=0.0), axis=0)
    db = tl.sum(tl.load(part_ptr + offs + n_cols, mask=mask, other=0.0), axis=0)
    tl.store(dw_ptr + cols, dw.to(dw_ptr.dtype.element_ty), mask=col_ok)
    tl.store(db_ptr + cols, db.to(db_ptr.dtype.element_ty), mask=col_ok)


@step(ladder="triton_bwd", pass_="backward", save=statistics)
def persistent(out, dy, saved, x, w, b):
    (dx, dw, db), (mean, rstd), rows, cols, block = unpacked(out, saved, x, dy)
    programs = programs_of(rows, x.device, per_sm=1)  # one program per SM
    part = torch.empty((2 * programs, cols), dtype=torch.float32, device=x.device)  # dw, db of each program
    launch(layer_norm_bwd_persistent_kernel, (programs,), x, dy, w, mean, rstd, dx, part, rows, cols, x.stride(0),
           BLOCK_COLS=block, num_warps=row_warps(block))
    parts = triton.next_power_of_2(programs)
    block_n = max(1, min(triton.next_power_of_2(cols), 4096 // parts))  # about 4096 fp32 of each in registers
    launch(sum_tree_kernel, (triton.cdiv(cols, block_n),), part, dw, db, programs, cols, BLOCK_PARTS=parts,
           BLOCK_N=block_n, num_warps=4)
    return dx, dw, db

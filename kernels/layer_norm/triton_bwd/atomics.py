"""Layer norm's backward ladder, step atomics: one program per row computes its dx and adds its
row of dy xhat and dy into one fp32 row of dw and of db with tl.atomic_add; a cast writes them
in the gradients' dtype."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import launch, step

from .partials import row_backward, row_warps, statistics, unpacked


@triton.jit
def layer_norm_bwd_atomic_kernel(x_ptr, dy_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_ptr, db_ptr, n_rows, n_cols,
                                 stride, BLOCK_COLS: tl.constexpr):
    """Row pid's dx, and its dw and db terms added into the fp32 rows dw_ptr and db_ptr."""
    cols = tl.arange(0, BLOCK_COLS)
    col_ok = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw, db = row_backward(x_ptr, dy_ptr, w, mean_ptr, rstd_ptr, dx_ptr, tl.program_id(0), n_rows, n_cols, stride,
                          cols, col_ok)
    tl.atomic_add(dw_ptr + cols, dw, mask=col_ok, sem="relaxed")
    tl.atomic_add(db_ptr + cols, db, mask=col_ok, sem="relaxed")


@step(ladder="triton_bwd", pass_="backward", save=statistics)
def atomics(out, dy, saved, x, w, b):
    (dx, dw, db), (mean, rstd), rows, cols, block = unpacked(out, saved, x, dy)
    acc = torch.zeros((2, cols), dtype=torch.float32, device=x.device)  # dw's and db's fp32 rows
    launch(layer_norm_bwd_atomic_kernel, (rows,), x, dy, w, mean, rstd, dx, acc[0], acc[1], rows, cols, x.stride(0),
           BLOCK_COLS=block, num_warps=row_warps(block))
    dw.copy_(acc[0])
    db.copy_(acc[1])
    return dx, dw, db

"""Softmax ladder, step fused_row: one program per row, the whole row on chip."""

from __future__ import annotations

import triton

from kernellab.kit import launch, row_shape, step

from .. import _spec, row_warps, softmax_kernel


def fused_row_specs(dtype: str):
    return [_spec(softmax_kernel, dtype, 8192, 8192, False, row_warps(8192),
                  "cols=8192: one row per program, num_warps=16")]


@step(compile_specs=fused_row_specs)
def fused_row(out, x):
    """Step fused_row: one program per row, BLOCK = next_power_of_2(cols), whole row on chip."""
    rows, cols = row_shape("softmax", x, out)
    block = triton.next_power_of_2(cols)
    launch(softmax_kernel, (rows,), x, out, rows, cols, x.stride(0), out.stride(0),
           BLOCK_COLS=block, TILE=block, ONLINE=False, num_warps=row_warps(block))
    return out

"""Softmax ladder, step online: one program per row, streaming it in chunks."""

from __future__ import annotations

import triton

from kernellab.kit import launch, row_shape, step

from .. import ONLINE_CHUNK, _spec, row_warps, softmax_kernel


def online_specs(dtype: str):
    return [_spec(softmax_kernel, dtype, 8192, ONLINE_CHUNK, True, row_warps(ONLINE_CHUNK),
                  f"cols=8192: online, chunk {ONLINE_CHUNK}, num_warps=8")]


@step(compile_specs=online_specs)
def online(out, x):
    """Step online: one program per row streaming it in chunks of ONLINE_CHUNK."""
    rows, cols = row_shape("softmax", x, out)
    block = triton.next_power_of_2(cols)
    launch(softmax_kernel, (rows,), x, out, rows, cols, x.stride(0), out.stride(0),
           BLOCK_COLS=block, TILE=ONLINE_CHUNK, ONLINE=True, num_warps=row_warps(min(block, ONLINE_CHUNK)))
    return out

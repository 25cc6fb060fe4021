"""RMSNorm's Triton ladder, step wide: the loop alone, tuned also over 1024-thread programs of 4096
and 8192 columns and over known trip counts."""

from __future__ import annotations

import triton

from kernellab.kit import (
    ROW_DIVISIBLE,
    CompileSpec,
    autotune,
    chunk_loop_configs,
    launch,
    prune_chunk_configs,
    row_shape,
    step,
)

from .. import EPS, rms_norm_kernel, signature

WIDE_SHAPES = [(2048, 8), (2048, 16), (4096, 8), (4096, 16), (4096, 32), (8192, 16), (8192, 32), (16384, 16),
               (16384, 32), (32768, 32)]
rms_norm_wide = autotune(
    configs=chunk_loop_configs("TILE", WIDE_SHAPES, (False, True), LOOPED=True), key=["n_rows", "n_cols"],
    prune_configs_by={"early_config_prune": prune_chunk_configs},
)(rms_norm_kernel)



def wide_specs(dtype: str):
    return [CompileSpec(rms_norm_wide, signature(dtype), {"BLOCK_COLS": 32768, "TILE": 8192, "LOOPED": True,
                                                          "EVEN": True, "KNOWN_TRIP": True}, num_warps=32,
                        label="cols=32768: looped, chunk 8192, num_warps=32, known trip count",
                        divisible=ROW_DIVISIBLE)]


@step(triton_kernels=(rms_norm_wide,), compile_specs=wide_specs)
def wide(out, x, w):
    rows, cols = row_shape("rms_norm", x, out)
    block = triton.next_power_of_2(cols)
    launch(rms_norm_wide, (rows,), x, w, out, rows, cols, x.stride(0), out.stride(0), EPS, BLOCK_COLS=block,
           EVEN=cols == block)
    return out

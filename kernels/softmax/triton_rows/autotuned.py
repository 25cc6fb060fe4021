"""Softmax ladder, step autotuned: the kernel autotuned over one pass or the online path."""

from __future__ import annotations

import triton

from kernellab.kit import autotune, launch, prune_row_tile_configs, row_grid, row_shape, row_tile_configs, step

from .. import _spec, softmax_kernel

softmax_tuned = autotune(
    configs=row_tile_configs("ONLINE"), key=["n_rows", "n_cols"],
    prune_configs_by={"early_config_prune": prune_row_tile_configs},
)(softmax_kernel)


def autotuned_specs(dtype: str):
    return [
        _spec(softmax_tuned, dtype, 8192, 8192, False, 16, "cols=8192: TILE=8192 (one row), num_warps=16"),
        _spec(softmax_tuned, dtype, 256, 4096, False, 4,
              "cols=256: TILE=4096 (16 rows per program), num_warps=4"),
        _spec(softmax_tuned, dtype, 32768, 8192, True, 16, "cols=32768: online, chunk 8192, num_warps=16"),
    ]


@step(compile_specs=autotuned_specs, triton_kernels=(softmax_tuned,))
def autotuned(out, x):
    """Step autotuned: the config picks one pass, with several short rows per program, or
    the online path, whichever times faster (``kit.prune_row_tile_configs`` says which configs
    each width times); TILE and warps autotuned too."""
    rows, cols = row_shape("softmax", x, out)
    block = triton.next_power_of_2(cols)
    launch(softmax_tuned, row_grid(rows, block, "ONLINE"), x, out, rows, cols, x.stride(0), out.stride(0),
           BLOCK_COLS=block)
    return out

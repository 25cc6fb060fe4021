"""Matmul's Triton ladder triton_skinny, step narrow_tile: ``matmul_kernel`` with one
fixed config (ladder.yaml says why)."""

from __future__ import annotations

from kernellab.kit import step

from .. import triton_step

_run = triton_step((128, 64, 64, 4, 4, "tma_nosub"))


@step(dtypes=("bf16",))
def narrow_tile(out, a, b):
    return _run(out, a, b)

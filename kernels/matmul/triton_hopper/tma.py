"""Matmul's Triton ladder triton_hopper, step tma: ``matmul_kernel`` with one
fixed config (ladder.yaml says why)."""

from __future__ import annotations

from kernellab.kit import step

from .. import triton_step

_run = triton_step((128, 256, 64, 3, 8, "tma_grid"))


@step(dtypes=("bf16",))
def tma(out, a, b):
    return _run(out, a, b)

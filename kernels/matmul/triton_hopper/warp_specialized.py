"""Matmul's Triton ladder triton_hopper, step warp_specialized: ``matmul_kernel`` with one
fixed config (ladder.yaml says why)."""

from __future__ import annotations

from kernellab.kit import step

from .. import triton_step

_run = triton_step((128, 256, 64, 3, 4, "tma_ws"))


@step(dtypes=("bf16",))
def warp_specialized(out, a, b):
    return _run(out, a, b)

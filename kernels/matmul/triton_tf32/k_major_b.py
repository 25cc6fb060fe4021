"""Matmul's Triton ladder triton_tf32, step k_major_b: ``matmul_kernel`` with one
fixed config (ladder.yaml says why)."""

from __future__ import annotations

from kernellab.kit import step

from .. import triton_step

_run = triton_step((128, 256, 32, 3, 8, "tma"), "transpose")


@step(dtypes=("tf32",))
def k_major_b(out, a, b):
    return _run(out, a, b)

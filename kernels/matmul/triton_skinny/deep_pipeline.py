"""Matmul's Triton ladder triton_skinny, step deep_pipeline: ``matmul_kernel`` with one
fixed config (ladder.yaml says why)."""

from __future__ import annotations

from kernellab.kit import step

from .. import triton_step

_run = triton_step((64, 128, 128, 4, 4, "tma_nosub"))


@step(dtypes=("bf16",))
def deep_pipeline(out, a, b):
    return _run(out, a, b)

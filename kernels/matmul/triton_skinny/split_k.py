"""Matmul's Triton ladder triton_skinny, step split_k: ``matmul_kernel`` with one
fixed config (ladder.yaml says why)."""

from __future__ import annotations

from kernellab.kit import step

from .. import triton_step

_run = triton_step((128, 128, 64, 4, 8, "tma_split2"))


@step(dtypes=("bf16",))
def split_k(out, a, b):
    return _run(out, a, b)

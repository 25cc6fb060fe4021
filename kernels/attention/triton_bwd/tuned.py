"""Attention's backward ladder, step tuned: fa2's three kernels with tiles chosen by a sweep on an H200
instead of by register arithmetic: 64-row tiles on one warpgroup (4 warps), the shape Hopper's
warpgroup MMA works in, for the dk/dv kernel at head_dim 128; 128x64 tiles on 8 warps, 3 stages, for dq."""

from __future__ import annotations

from kernellab.kit import step

from .fa2 import backward, save, specs_of


def tuned_tiles(head_dim: int) -> dict:
    """(BLOCK_M, BLOCK_N, warps, stages) of the dk/dv and dq kernels, the fastest of 15 each in the sweep
    (the step's finding) at 4x16x4096x128 and 4x32x4096x64 bf16."""
    dkdv = (32, 128, 4, 5) if head_dim <= 64 else (64, 64, 4, 2)
    return {"dkdv": dkdv, "dq": (128, 64, 8, 3)}


@step(pass_="backward", save=save, compile_specs=specs_of(tuned_tiles))
def tuned(out, dy, saved, q, k, v, causal=False):
    return backward(out, dy, saved, q, k, v, causal, tuned_tiles)

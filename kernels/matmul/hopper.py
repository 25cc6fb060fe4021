"""The CUDA Hopper GEMM ladder (bf16 and fp16 tensor cores, ``cuda_hopper/``, one .cu file per step): its
runner, which refuses the shapes a step's tile does not divide before any GPU work (an
``unavailable`` case, with the constraint in the reason) and hands B over K-major, the layout both
of its operands are read in (``kmajor_copy``: our transpose, inside the timed call)."""

from __future__ import annotations

from pathlib import Path

from kernellab.kit import Unavailable, cuda_ops

from .launch import kmajor_copy

HOPPER_DIR = Path(__file__).resolve().parent / "cuda_hopper"
# Its steps, by file (a .cu file is a step or a shared source; steps never share names across
# the family's CUDA ladders, since the family's cuda_step is called with the step's name alone).
HOPPER_STEPS = frozenset(p.stem for p in HOPPER_DIR.glob("*.cu"))


def unsupported_shape(step: str, shape: tuple[int, int, int], tile: tuple[int, int, int]) -> str | None:
    """Why ``step`` (block tile ``tile``, BMxBNxBK) cannot run the matmul ``shape`` (M, N, K): M, N, K
    must be positive multiples of the tile (the kernels check no bounds); None when it can."""
    names = ("M", "N", "K")
    bad = [f"{n}={v}" for n, v, t in zip(names, shape, tile, strict=True) if v <= 0 or v % t]
    if not bad:
        return None
    bm, bn, bk = tile
    return (f"cuda_hopper/{step} takes M, N multiples of {bm}, {bn} and K of {bk} (its "
            f"{bm}x{bn}x{bk} tile, no bounds checks); got {', '.join(bad)}")


def hopper_step(family: str, step: str):
    """The runner of a Hopper ladder step: the ``hgemm`` op with the step's name."""

    def run(out, a, b):
        ops = cuda_ops(family, step=step)  # Unavailable without a GPU and the built extension
        tile = tuple(int(t) for t in ops.hgemm_tile(step))
        reason = unsupported_shape(step, (a.shape[0], b.shape[1], a.shape[1]), tile)
        if reason is not None:
            raise Unavailable(reason)
        ops.hgemm(a, b if b.t().is_contiguous() else kmajor_copy(b), out, step)
        return out

    run.__name__ = f"hgemm_{step}"
    return run

"""Weight gradients of the row families by partial rows: each program of a backward sums its rows'
share of dw (and db) into one fp32 partial row, and ``sum_partials_kernel`` adds the partial rows
column by column. ``sm_count`` sizes such grids to the device."""

from __future__ import annotations

import functools

import triton
import triton.language as tl

INTERPRETED_SMS = 3  # "SMs" where no GPU runs the kernels: persistent programs still walk several rows


@functools.cache
def _gpu_sms(index: int) -> int:
    import torch

    return int(torch.cuda.get_device_properties(index).multi_processor_count)


def sm_count(device) -> int:
    """Streaming multiprocessors of the GPU a launch on ``device`` runs on: a CUDA device's, and on
    ``meta`` (shapes only, compiling ahead) the GPU's, so the launches recorded ahead are the real
    ones; ``INTERPRETED_SMS`` on the CPU."""
    import torch

    from kernellab.kit.triton import triton_interpreted

    device = torch.device(device)
    if device.type == "cpu" or triton_interpreted() or not torch.cuda.is_available():
        return INTERPRETED_SMS
    return _gpu_sms(device.index if device.type == "cuda" and device.index is not None
                    else torch.cuda.current_device())


@triton.jit
def sum_partials_kernel(part_ptr, out_ptr, n_parts, n_cols, BLOCK_PARTS: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[c] = sum over the programs' partial rows of part[:, c], for BLOCK_N columns per program."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    acc = tl.zeros((BLOCK_PARTS, BLOCK_N), dtype=tl.float32)
    for start in range(0, n_parts, BLOCK_PARTS):
        parts = start + tl.arange(0, BLOCK_PARTS)
        mask = (parts < n_parts)[:, None] & col_ok[None, :]
        acc += tl.load(part_ptr + parts[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=col_ok)

"""Softmax's backward: dx = y (dy - sum(dy y)) per row, from the forward's output y (the saved
state) and the upstream gradient dy. Reads y and dy, writes dx: 3 passes over rows x cols.

One program per row. A row of up to CHUNK columns is held in registers (one read of y and dy);
a longer one is streamed twice in CHUNK pieces, the first pass summing dy y and asking the L2 to
keep the row (evict_last), the second re-reading it from there to write dx."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import CompileSpec, element_size, launch, numel, row_shape, triton_type

MAX_CHUNK = 8192  # the longest row held in registers: 16 values of y and dy per thread at 16 warps


@triton.jit
def softmax_bwd_kernel(y_ptr, dy_ptr, dx_ptr, n_cols, stride_y, stride_dy, stride_dx,
                       BLOCK_COLS: tl.constexpr, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    y_row, dy_row, dx_row = y_ptr + row * stride_y, dy_ptr + row * stride_dy, dx_ptr + row * stride_dx
    offs = tl.arange(0, CHUNK)
    if CHUNK >= BLOCK_COLS:
        mask = offs < n_cols
        y = tl.load(y_row + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_row + offs, mask=mask, other=0.0).to(tl.float32)
        dot = tl.sum(y * dy, axis=0)
        tl.store(dx_row + offs, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([CHUNK], dtype=tl.float32)
        for start in range(0, n_cols, CHUNK):
            cols = start + offs
            mask = cols < n_cols
            y = tl.load(y_row + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            dy = tl.load(dy_row + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            acc += y * dy
        dot = tl.sum(acc, axis=0)
        for start in range(0, n_cols, CHUNK):
            cols = start + offs
            mask = cols < n_cols
            y = tl.load(y_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            dy = tl.load(dy_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            tl.store(dx_row + cols, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=mask)


def _warps(chunk: int) -> int:
    return 4 if chunk <= 1024 else 8 if chunk <= 4096 else 16


def forward_output(x):
    """The saved state: the forward's output y (PyTorch's softmax, in the input dtype)."""
    return torch.softmax(x, dim=-1)


def softmax_backward_triton(out, dy, y, x):
    (dx,) = out
    rows, cols = row_shape("softmax", x, dx, y, dy)
    block = triton.next_power_of_2(cols)
    chunk = min(block, MAX_CHUNK)
    launch(softmax_bwd_kernel, (rows,), y, dy, dx, cols, y.stride(0), dy.stride(0), dx.stride(0),
           BLOCK_COLS=block, CHUNK=chunk, num_warps=_warps(chunk))
    return (dx,)


def backward_specs(dtype: str):
    ty = triton_type(dtype)
    sig = {"y_ptr": f"*{ty}", "dy_ptr": f"*{ty}", "dx_ptr": f"*{ty}", "n_cols": "i32", "stride_y": "i32",
           "stride_dy": "i32", "stride_dx": "i32"}
    divisible = ("n_cols", "stride_y", "stride_dy", "stride_dx")
    return [
        CompileSpec(softmax_bwd_kernel, sig, {"BLOCK_COLS": 8192, "CHUNK": 8192}, num_warps=16,
                    label="cols=8192: the row in registers, num_warps=16", divisible=divisible),
        CompileSpec(softmax_bwd_kernel, sig, {"BLOCK_COLS": 32768, "CHUNK": 8192}, num_warps=16,
                    label="cols=32768: two passes in chunks of 8192, num_warps=16", divisible=divisible),
    ]


def backward_bytes(shape, dtype, **_):
    """y and dy read, dx written."""
    return 3 * numel(shape) * element_size(dtype)


def backward_error_floor(x, dy):
    """dx = y (dy - sum(dy y)) cancels to zero where a row is one column (y = 1) or y is
    concentrated: its error is relative to the norm of the terms, y dy."""
    return {"dx": float(torch.linalg.vector_norm(torch.softmax(x, dim=-1) * dy))}

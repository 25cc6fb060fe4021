"""Row sums of a 2-D (rows, cols) tensor, accumulated and returned in fp32: (rows,).

Memory-bound: each element read once, one fp32 per row written (bytes = rows * cols *
element size + 4 * rows), one FLOP per element. At 4096 x 4096 fp32 that is 64 MiB,
about 16 us at 4.2 TB/s (in the L2's reach when warm); at 4096 x 32768 fp32, 512 MiB,
about 0.13 ms.

The Triton kernel handles every width with one loop: a (ROWS, BLOCK_COLS) tile per
iteration, BLOCK_COLS = min(TILE, next_power_of_2(cols)) and ROWS = TILE // BLOCK_COLS,
so short rows are packed several to a program and long rows are streamed; autotuned.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernellab.kit import (
    CompileSpec,
    Family,
    autotune,
    compiled,
    element_size,
    launch,
    numel,
    randn,
    returns_new,
    row_shape,
    triton_type,
)


def reference(x):
    """Float64 reference, shared by tests and benchmarks."""
    return x.sum(dim=-1)


def row_sum_naive(x):
    """Cast to fp32 (a kernel and a full copy for bf16), then sum."""
    return x.float().sum(dim=-1)


def row_sum_fused(out, x):
    return torch.sum(x, dim=-1, dtype=torch.float32, out=out)


def triton_configs():
    """Elements per loop iteration (TILE) x warps, plain loads. Staging them through shared
    memory (num_stages=3) was never more than 0.5% ahead of the best unstaged config at any
    default shape on the H200, so it is not tuned: half the tuning time."""
    return [
        triton.Config({"TILE": tile}, num_warps=warps, num_stages=1)
        for tile in (4096, 8192, 2048, 16384)
        for warps in (4, 8, 16)
    ]


def prune_configs(configs, named_args, **kwargs):
    """Drop configs whose tile holds more rows than there are (they only add masked rows)."""
    n_rows, cols_p2 = named_args["n_rows"], kwargs["COLS_P2"]
    rows_p2 = triton.next_power_of_2(max(int(n_rows), 1))
    kept = [c for c in configs if max(c.kwargs["TILE"] // cols_p2, 1) <= rows_p2]
    return kept or configs[:1]


@autotune(configs=triton_configs(), key=["n_rows", "n_cols"],
                 prune_configs_by={"early_config_prune": prune_configs})
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_x, COLS_P2: tl.constexpr, TILE: tl.constexpr):
    """ROWS rows per program; loops over the columns BLOCK_COLS at a time with a (ROWS,
    BLOCK_COLS) fp32 accumulator, reduced once at the end."""
    BLOCK_COLS: tl.constexpr = min(TILE, COLS_P2)
    ROWS: tl.constexpr = TILE // BLOCK_COLS
    pid = tl.program_id(0).to(tl.int64)
    rows = pid * ROWS + tl.arange(0, ROWS)
    row_ok = rows < n_rows
    offs = tl.arange(0, BLOCK_COLS)
    ptrs = x_ptr + rows[:, None] * stride_x
    acc = tl.zeros([ROWS, BLOCK_COLS], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_COLS):
        cols = start + offs
        mask = row_ok[:, None] & (cols[None, :] < n_cols)
        # each element is read once, so the L2 may drop its line first
        acc += tl.load(ptrs + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=row_ok)


def row_sum_triton(out, x):
    rows, cols = row_shape("row_sum", x, out)
    cols_p2 = triton.next_power_of_2(cols)
    launch(row_sum_kernel, lambda meta: (triton.cdiv(rows, max(meta["TILE"] // cols_p2, 1)),),
           x, out, rows, cols, x.stride(0), COLS_P2=cols_p2)
    return out


def compile_specs(dtype: str):
    ty = triton_type(dtype)
    sig = {"x_ptr": f"*{ty}", "out_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32", "stride_x": "i32"}
    div = ("n_rows", "n_cols", "stride_x")
    return [
        CompileSpec(row_sum_kernel, sig, {"COLS_P2": 4096, "TILE": 8192}, num_warps=8,
                    label="cols=4096: TILE=8192 (2 rows per program), num_warps=8", divisible=div),
        CompileSpec(row_sum_kernel, sig, {"COLS_P2": 32768, "TILE": 8192}, num_warps=8,
                    label="cols=32768: looped TILE=8192, num_warps=8", divisible=div),
    ]


def make_inputs(shape, dtype, device, seed):
    return (randn(shape, dtype, device, seed, offset=0.5),)


def out_like(x):
    return torch.empty(x.shape[0], dtype=torch.float32, device=x.device)


FAMILY = Family(
    title="Row sums (fp32 accumulation)",
    bound="memory",
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=lambda shape, dtype, **_: numel(shape) * element_size(dtype) + 4 * shape[0],
    flops=lambda shape, dtype, **_: numel(shape),
    out_like=out_like,
    shape_rank=(2,),
    description="A reduction along the contiguous dimension: one warp (or several rows) per row.",
)

FAMILY.add("torch_naive", returns_new(row_sum_naive))
FAMILY.add("torch_fused", row_sum_fused)
FAMILY.add("triton", row_sum_triton, triton_kernels=(row_sum_kernel,), compile_specs=compile_specs)
FAMILY.add("compiled", compiled(row_sum_naive))
# The CUDA ladder cuda_rows: one file per step in cuda_rows/, in ladder.yaml's order.

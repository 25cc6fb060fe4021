"""Pieces that every family module shares."""

from __future__ import annotations

import math
from typing import Callable

from kernellab import cuda_ext
from kernellab.runtime import element_size, torch_dtype


def numel(shape) -> int:
    return int(math.prod(shape))


def randn(shape, dtype: str, device: str, seed: int, scale: float = 1.0, offset: float = 0.0):
    """Standard-normal data from a seeded generator on the target device, drawn in fp32
    then cast (drawing 2^28 numbers on the host and copying them over took seconds)."""
    import torch

    gen = torch.Generator(device=device).manual_seed(int(seed))
    x = torch.randn(tuple(shape), generator=gen, dtype=torch.float32, device=device) * scale + offset
    return x.to(dtype=torch_dtype(dtype))


def elementwise_bytes(n_in: int, n_out: int = 1) -> Callable:
    """Bytes of an elementwise op: each input read once, the output written once."""

    def count(shape, dtype, **_):
        return (n_in + n_out) * numel(shape) * element_size(dtype)

    return count


def returns_new(fn: Callable) -> Callable:
    """Adapt ``fn(*inputs)`` (a chain of PyTorch ops) to the ``(out, *inputs)`` convention."""

    def run(out, *inputs, **params):
        return fn(*inputs, **params)

    run.__name__ = getattr(fn, "__name__", "run")
    return run


def compiled(fn: Callable, **compile_kwargs) -> Callable:
    """``torch.compile`` of ``fn``, built on first call so that importing stays cheap."""
    holder: dict = {}

    def run(out, *inputs, **params):
        if "fn" not in holder:
            import torch

            # one worker sees every shape and dtype of its family: allow the recompiles,
            # and never fall back to eager silently (that would time PyTorch, not Inductor)
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
            torch._dynamo.config.fail_on_recompile_limit_hit = True
            holder["fn"] = torch.compile(fn, **compile_kwargs)
        return holder["fn"](*inputs, **params)

    return run


def cuda_op(name: str, variant: str) -> Callable:
    """Call ``torch.ops.kernellab.<name>(*inputs, out, *extra, variant)``."""

    def run(out, *inputs, **params):
        getattr(cuda_ext.ops(), name)(*inputs, out, *params.values(), variant)
        return out

    return run


def row_tile_configs():
    """Autotune configs of the row kernels (layer norm, RMSNorm). TILE: elements per
    program (one pass: rows = TILE // BLOCK_COLS) or the chunk (looped), x warps. The
    interpreter runs the first."""
    import triton

    return [
        triton.Config({"TILE": tile}, num_warps=warps)
        for tile in (2048, 4096, 8192, 1024)
        for warps in (4, 8, 16)
    ]


def prune_row_tile_configs(configs, named_args, **kwargs):
    """One pass: every TILE <= BLOCK_COLS runs one row per program; keep one per warp count."""
    if kwargs.get("LOOPED"):
        return configs
    block_cols = kwargs["BLOCK_COLS"]
    seen, kept = set(), []
    for cfg in configs:
        key = (max(cfg.kwargs["TILE"] // block_cols, 1), cfg.num_warps)
        if key not in seen:
            seen.add(key)
            kept.append(cfg)
    return kept

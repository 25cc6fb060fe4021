"""Inputs and byte counts: seeded data on the target device, elementwise byte models."""

from __future__ import annotations

import math
from typing import Callable

from kernellab.kit.dtypes import element_size, torch_dtype


def numel(shape) -> int:
    return int(math.prod(shape))


def randn(shape, dtype: str, device: str, seed: int, scale: float = 1.0, offset: float = 0.0):
    """Standard-normal data from a seeded generator on the target device, drawn in fp32
    then cast (drawing 2^28 numbers on the host and copying them over took seconds)."""
    import torch

    x = torch.randn(tuple(shape), generator=generator(device, seed), dtype=torch.float32, device=device)
    return (x * scale + offset).to(dtype=torch_dtype(dtype))


def capturing() -> bool:
    """Whether this thread's CUDA stream is capturing a graph (``kernellab.engine.prepare``). A
    process that has not initialised CUDA is not, and asking does not initialise it."""
    import torch

    return torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing()


def generator(device: str, seed: int):
    """A generator on ``device`` seeded with ``seed``; None on ``meta``, under a fake-tensor mode
    and while a CUDA graph is being captured, where inputs are shapes and dtypes only (what
    ``kernellab.engine.prepare`` compiles from; a capture takes only the default generator)."""
    import torch
    from torch._guards import active_fake_mode

    if torch.device(device).type == "meta" or active_fake_mode() is not None or capturing():
        return None
    return torch.Generator(device=device).manual_seed(int(seed))


def elementwise_bytes(n_in: int, n_out: int = 1) -> Callable:
    """Bytes of an elementwise op: each input read once, the output written once."""

    def count(shape, dtype, **_):
        return (n_in + n_out) * numel(shape) * element_size(dtype)

    return count

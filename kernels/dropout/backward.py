"""Dropout's backward: dx = dy * keep / (1 - p), with the forward's mask.

The mask must be the forward's, and the check's float64 gradients are autograd's through the
family's reference, so the reference draws one mask, ``keep_mask`` (``torch_naive``'s: a
float32 uniform per element from a generator on x's device seeded with the input's seed), and
every backward uses it: ``torch_naive`` draws it in its forward; ``torch_fused`` and
``compiled`` are handed it as the saved state of their forward (PyTorch's own dropout draws
from the device's default generator, whose mask the reference could not reproduce). The
forward implementations keep their own masks: their check is ``validate``, which needs none.

Bytes: dy read, dx written, and the 1-byte mask read (a backward that regenerates the mask
from the seed, as the Triton forward draws it, would skip that byte)."""

from __future__ import annotations

import torch

from kernellab.kit import element_size, numel


def scale(p: float) -> float:
    return 1.0 / (1.0 - p) if p < 1.0 else 0.0


def keep_mask(x, seed, p):
    """The mask of ``torch_naive`` and of the reference: kept where a float32 uniform drawn from a
    generator on x's device, seeded with ``seed``, is >= p. The same for every dtype of x."""
    gen = torch.Generator(device=x.device).manual_seed(int(seed))
    return torch.rand(x.shape, generator=gen, device=x.device) >= p


def saved_mask(x, seed, p):
    """The saved state of a backward handed the forward's mask."""
    return keep_mask(x, seed, p)


def dropout_backward_fused(out, dy, keep, x, seed, p):
    """PyTorch's dropout backward op (what autograd of ``F.dropout`` runs) on the saved mask."""
    return (torch.ops.aten.native_dropout_backward(dy, keep, scale(p)),)


def masked_scale(x, keep, p):
    """x * keep / (1 - p): torch.compile's graph, its mask drawn outside it (``with_mask``)."""
    return x * keep * scale(p)


def with_mask(x, seed, p):
    """Outside the graph: draw the mask (Inductor takes no explicit generator)."""
    return (x, keep_mask(x, seed, p)), {"p": p}


def backward_bytes(shape, dtype, **_):
    """dy read, dx written, the 1-byte mask read."""
    return numel(shape) * (2 * element_size(dtype) + 1)

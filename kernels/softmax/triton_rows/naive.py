"""Softmax ladder, step naive: the PyTorch chain (max, subtract, exp, sum, divide), in eager mode."""

from __future__ import annotations

from kernellab.kit import step

from .. import softmax_naive


@step(impl="torch_naive")
def naive(out, x):
    return softmax_naive(x)

"""The dtype names of config, records and the report, and what each is: one table.

``tf32`` is float32 storage with TensorFloat-32 matrix units allowed; ``fp32`` keeps them off.
"""

from __future__ import annotations

from typing import NamedTuple


class DType(NamedTuple):
    torch: str  # the torch dtype's attribute name
    size: int  # bytes per element
    triton: str  # the Triton type of a pointer's elements in a compile signature
    # relative-norm tolerance ||out - ref|| / ||ref|| against a float64 reference: fp32 arithmetic
    # lands far below 1e-5, tf32 near 3e-4, bf16/fp16 near 1e-3 to 5e-3 for chains of rounded ops
    tolerance: float


DTYPE = {
    "fp32": DType("float32", 4, "fp32", 1e-5),
    "tf32": DType("float32", 4, "fp32", 2e-3),
    "bf16": DType("bfloat16", 2, "bf16", 2e-2),
    "fp16": DType("float16", 2, "fp16", 1e-2),
}
DTYPES = tuple(DTYPE)
TOLERANCE = {name: d.tolerance for name, d in DTYPE.items()}


def _entry(name: str) -> DType:
    if name not in DTYPE:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(DTYPES)}")
    return DTYPE[name]


def torch_dtype(name: str):
    import torch

    return getattr(torch, _entry(name).torch)


def element_size(name: str) -> int:
    return _entry(name).size


def triton_type(name: str) -> str:
    return _entry(name).triton

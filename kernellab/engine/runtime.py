"""Where code runs: GPU or CPU, Triton compiled or interpreted, dtypes and tolerances.

``setup()`` must run before Triton is imported: on a machine without a CUDA device it
turns on Triton's interpreter (``TRITON_INTERPRET=1``) so Triton kernels run on the CPU.
"""

from __future__ import annotations

import contextlib
import functools
import os


@functools.cache
def has_gpu() -> bool:
    # Ask NVML rather than the CUDA runtime, so this process never initialises CUDA
    # and can fork fresh workers (kernellab.engine.isolate).
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    import torch

    return bool(torch.cuda.is_available())


def use_run_cache(root: str | None = None) -> str | None:
    """Point Triton and Inductor at a result set's cache directory (the workflow passes it to
    every job: its compiled kernels, autotune choices and Inductor graphs are shared by the
    set's jobs, so check, bench, profile and ncu tune and compile once).

    The directory belongs to one result set (one machine): ``@triton.autotune``'s disk
    cache is keyed by the compile target (``cuda:90``), not the device, so a cache shared
    across machines of one architecture would carry one machine's choices to another.
    Variables the user set already win. (Python's bytecode cache, PYTHONPYCACHEPREFIX, is set
    by the workflow itself: it must be in place before a job's interpreter starts.)
    """
    if not root:
        return None
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(root, "triton"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(root, "inductor"))
    os.environ.setdefault("TRITON_CACHE_AUTOTUNING", "1")
    return root


def setup() -> str:
    """Choose the device and Triton's mode; returns ``"cuda"`` or ``"cpu"``."""
    if not has_gpu():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    if triton_interpreted():
        from kernellab.engine.triton_compat import apply_interpreter_fixes

        apply_interpreter_fixes()
    return device()


def device() -> str:
    return "cuda" if has_gpu() else "cpu"




# the one dtype table is the kit's (what a family author reads too)
from kernellab.kit.dtypes import DTYPES, TOLERANCE, element_size, torch_dtype  # noqa: E402
from kernellab.kit.triton import triton_interpreted  # noqa: E402

__all__ = ["DTYPES", "TOLERANCE", "device", "element_size", "has_gpu", "matmul_precision", "setup",
           "synchronize", "torch_dtype", "triton_interpreted", "use_run_cache"]


@contextlib.contextmanager
def matmul_precision(dtype: str):
    """TF32 on for ``tf32``, off for everything else, restored afterwards."""
    import torch

    old_mm = torch.backends.cuda.matmul.allow_tf32
    old_cudnn = torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_mm
        torch.backends.cudnn.allow_tf32 = old_cudnn


def synchronize() -> None:
    if has_gpu():
        import torch

        torch.cuda.synchronize()

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
    for name, value in run_cache_environment(root).items():
        os.environ.setdefault(name, value)
    return root


def run_cache_environment(root: str) -> dict[str, str]:
    """The variables ``use_run_cache`` sets: Triton's and Inductor's caches, and the CuTe-DSL
    peers' compiled kernels (QuACK's, on by default; FlashAttention-4's, which is off unless
    asked for: without it every process compiles its kernels again, the backward's job the
    forward's and the profiling jobs both, tens of seconds each). Both peers key their
    entries by their own sources and the CUTLASS DSL's version, and a bad entry is a miss."""
    return {"TRITON_CACHE_DIR": os.path.join(root, "triton"),
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(root, "inductor"),
            "TRITON_CACHE_AUTOTUNING": "1",
            "QUACK_CACHE_DIR": os.path.join(root, "quack"),
            "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED": "1",
            "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR": os.path.join(root, "fa4")}


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
    """Wait for the GPU; nothing to wait for while capturing (nothing runs, and a capture forbids it)."""
    from kernellab.kit.data import capturing

    if has_gpu() and not capturing():
        import torch

        torch.cuda.synchronize()

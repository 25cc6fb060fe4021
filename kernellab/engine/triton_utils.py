"""The engine's side of Triton: compiling ahead what a call will launch, reading back an
autotuner's choice and table, and cross-compiling a kernel for the PTX/SASS report (what a
family author uses, ``launch``, ``autotune``, ``CompileSpec``, is in ``kernellab.kit.triton``)."""

from __future__ import annotations

from typing import Any

from kernellab.kit.triton import CompileSpec, is_autotuned


def precompile(calls, workers: int) -> tuple[int, int]:
    """Compile every config the autotuner keeps for each recorded call, on ``workers``
    threads, through Triton's own asynchronous compilation (``AsyncCompileMode``, as
    Inductor uses it; ptxas and most of the MLIR passes run without the GIL). The
    kernels land in the JIT's caches, so tuning then only times them: compiling a dozen
    configs per shape one after the other was most of the autotuning time.
    Returns (configs compiled, configs that failed to compile: the tuner reports those)."""
    from concurrent.futures import ThreadPoolExecutor

    from triton.runtime._async_compile import AsyncCompileMode

    tasks = {}
    for fn, configs, args, kwargs in calls:
        for cfg in configs:
            meta = {k: v for k, v in cfg.all_kwargs().items() if k not in kwargs} if cfg is not None else {}
            tasks[(id(fn), repr(args), repr(sorted(kwargs.items())), repr(sorted(meta.items())))] = (
                fn, args, {**kwargs, **meta})
    failed = 0
    with ThreadPoolExecutor(max(1, workers)) as pool, AsyncCompileMode(pool, ignore_errors=True):
        for fn, args, kwargs in tasks.values():
            try:
                fn.warmup(*args, grid=(1,), **kwargs)
            except Exception:  # noqa: BLE001 - the tuner meets the same config and reports it
                failed += 1
    return len(tasks), failed


def config_label(config) -> str:
    parts = [f"{k}={v}" for k, v in sorted(config.kwargs.items())]
    parts += [f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"]
    return ", ".join(parts)


def best_config(kernel) -> str:
    cfg = getattr(kernel, "best_config", None)
    return config_label(cfg) if cfg is not None else ""


def tuning_table(kernel) -> list[tuple[Any, float]]:
    """(config, median ms) of every config ``@triton.autotune`` timed for its last key
    (read back from the disk cache when another process tuned that key first)."""
    timings = getattr(kernel, "configs_timings", None) or {}
    out = []
    for cfg, t in timings.items():
        med = t[0] if isinstance(t, (list, tuple)) else t
        out.append((cfg, float(med)))
    return out


def compile_asm(spec: CompileSpec, arch: int = 90) -> dict[str, str]:
    """Cross-compile for ``sm_<arch>``; returns TTIR, TTGIR, LLIR and PTX text (+ cubin bytes)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = spec.kernel.fn if is_autotuned(spec.kernel) else spec.kernel
    signature = dict(spec.signature)
    for name in spec.constexprs:
        signature[name] = "constexpr"
    attrs = {
        (fn.arg_names.index(name),): [["tt.divisibility", 16]]
        for name, ty in spec.signature.items()
        if ty.startswith("*") or (ty.startswith("i") and name in spec.divisible)
    }
    src = ASTSource(fn=fn, signature=signature, constexprs=dict(spec.constexprs), attrs=attrs)
    compiled = triton.compile(
        src,
        target=GPUTarget("cuda", arch, 32),
        options={"num_warps": spec.num_warps, "num_stages": spec.num_stages},
    )
    return dict(compiled.asm)

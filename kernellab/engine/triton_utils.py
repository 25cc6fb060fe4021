"""Launching, autotuning and cross-compiling Triton kernels, compiled or interpreted.

``@triton.autotune`` needs a GPU driver. Under the interpreter (no GPU) ``launch`` calls
the wrapped kernel (``kernel.fn``) with one config instead, so the same launcher code
runs everywhere.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from kernellab.engine.runtime import triton_interpreted

# ``@triton.autotune`` times each config with ``bench_config``: the benchmark's own timer
# (``timing.measure``: cold samples after a read flush, CUDA events, a spin kernel holding
# the stream), so configs are ranked the way the benchmark then measures them.
# ``triton.testing.do_bench`` writes its flush buffer, and the write-back of those dirty
# lines inside each timed call skews the ranking of short memory-bound kernels. 20 ms
# per config still gives >= 10 calls of the slowest kernel we tune (8192^3 fp32, ~25 ms:
# then the floor of min_samples applies) and hundreds of a microsecond kernel; the
# run-wide disk cache (runtime.use_run_cache) means each shape is tuned once per run.
AUTOTUNE_WARMUP_S = 0.005
AUTOTUNE_BUDGET_S = 0.02


def bench_config(fn, quantiles):
    """The benchmark ``@triton.autotune`` runs for each config: its quantiles in ms."""
    import numpy as np

    from kernellab.engine.timing import TimingConfig, measure

    cfg = TimingConfig(budget_s=AUTOTUNE_BUDGET_S, warmup_s=AUTOTUNE_WARMUP_S, graph=False, min_samples=5)
    samples = measure(fn, cfg, "cuda").samples_us
    return [float(q) / 1e3 for q in np.quantile(samples, list(quantiles))]


def autotune(configs, key, **kwargs):
    """``triton.autotune`` with this project's per-config benchmark (``bench_config``), keyed
    also on the kernel's constexpr arguments that no config sets. Triton keys a tuning, and its
    run-wide disk cache entry, on ``key``'s values and the configs only: two autotuners of one
    kernel with the same configs whose calls differ in a flag would share one choice and one
    table of timings."""
    import triton

    tuned = {name for cfg in configs for name in cfg.kwargs}

    def wrap(fn):
        flags = [name for name in constexpr_args(fn) if name not in tuned and name not in key]
        return triton.autotune(configs=configs, key=[*key, *flags], do_bench=bench_config, **kwargs)(fn)

    return wrap


def constexpr_args(fn) -> list[str]:
    """Names of a ``@triton.jit`` function's ``tl.constexpr`` arguments, compiled or
    interpreted (annotations may be strings under ``from __future__ import annotations``)."""
    import inspect

    params = inspect.signature(getattr(fn, "fn", fn)).parameters
    return [name for name, p in params.items() if "constexpr" in str(p.annotation)]


def is_autotuned(kernel) -> bool:
    from triton.runtime.autotuner import Autotuner

    return isinstance(kernel, Autotuner)


_FORCED: dict[int, Any] = {}
_UNTUNED = False


def forced_config(kernel):
    """The config ``force_config`` imposes on ``kernel`` right now, else None."""
    return _FORCED.get(id(kernel))


@contextlib.contextmanager
def force_config(kernel, config):
    """Within the block, ``launch`` runs ``kernel`` with ``config`` (under the interpreter,
    autotuning times every config through the implementation's own launcher this way)."""
    _FORCED[id(kernel)] = config
    try:
        yield
    finally:
        _FORCED.pop(id(kernel), None)


@contextlib.contextmanager
def untuned():
    """Within the block, ``launch`` runs an autotuned kernel with the first config that
    fits the call instead of tuning it: for the shapes that are only checked for
    correctness (odd sizes no benchmark uses), where tuning would time every config, and
    compile most of them, for a shape whose speed nobody reads. The configs share one
    kernel body, so its masks and edge cases are exercised all the same."""
    global _UNTUNED
    old, _UNTUNED = _UNTUNED, True
    try:
        yield
    finally:
        _UNTUNED = old


def kept_configs(kernel, args, kwargs) -> list:
    """The autotuner's configs that its ``early_config_prune`` keeps for this call."""
    prune = getattr(kernel, "early_config_prune", None)
    if prune is None:
        return list(kernel.configs)
    return list(prune(kernel.configs, dict(zip(kernel.arg_names, args, strict=False)), **kwargs))


def first_config(kernel, args, kwargs):
    """The first config kept for this call (the order of the list is the order of preference)."""
    return kept_configs(kernel, args, kwargs)[0]


_RECORDED: list | None = None


@contextlib.contextmanager
def recording():
    """Within the block, ``launch`` and ``launch_config`` run no kernel: they record each
    call (the kernel's JIT function; the configs it would run: those the autotuner keeps,
    the first of them inside ``untuned``, the one given, or ``[None]`` for a plain kernel;
    the arguments with each tensor replaced by its dtype (Triton's ``warmup`` takes it for
    an aligned tensor, as fresh allocations are); the keyword arguments) in the list it
    yields, for ``precompile``."""
    global _RECORDED
    old, _RECORDED = _RECORDED, []
    try:
        yield _RECORDED
    finally:
        _RECORDED = old


def _record(fn, configs, args, kwargs) -> None:
    _RECORDED.append((fn, configs, tuple(a.dtype if hasattr(a, "data_ptr") else a for a in args), dict(kwargs)))


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


def launch(kernel, grid, *args, **kwargs) -> None:
    """Launch ``kernel`` on ``grid``. An autotuned kernel runs its first fitting config
    under the interpreter (it has no timer to tune with) and inside ``untuned()``;
    inside ``recording()`` it does not run."""
    if _RECORDED is not None:
        configs = [None]  # a plain kernel: its meta-parameters are in the call
        if is_autotuned(kernel):
            configs = [first_config(kernel, args, kwargs)] if _UNTUNED else kept_configs(kernel, args, kwargs)
        _record(kernel.fn if is_autotuned(kernel) else kernel, configs, args, kwargs)
        return
    forced = _FORCED.get(id(kernel))
    if forced is None and is_autotuned(kernel) and (_UNTUNED or triton_interpreted()):
        forced = first_config(kernel, args, kwargs)
    if forced is not None:
        launch_config(kernel, forced, grid, *args, **kwargs)
    else:
        kernel[grid](*args, **kwargs)


def launch_config(kernel, config, grid, *args, **kwargs) -> None:
    """Launch the kernel behind an autotuner with one given config (the autotune table);
    meta-parameters the call passes itself win over the config's."""
    fn = kernel.fn if is_autotuned(kernel) else kernel
    if _RECORDED is not None:
        _record(fn, [config], args, kwargs)
        return
    extra = {k: v for k, v in config.kwargs.items() if k not in kwargs}
    if not triton_interpreted():
        extra.update(num_warps=config.num_warps, num_stages=config.num_stages)
    fn[grid](*args, **kwargs, **extra)


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


@dataclass
class CompileSpec:
    """What ``triton.compile`` needs to build one kernel without launching it.

    ``signature`` maps every non-constexpr argument to a Triton type ("*fp32", "i32",
    "fp32"...); ``constexprs`` gives the meta-parameters; pointer arguments are marked
    16-byte aligned, as the JIT does for tensors from PyTorch's allocator, and the
    integer arguments named in ``divisible`` as multiples of 16, as the JIT does when
    their value is one (the default shapes are powers of two).
    """

    kernel: Any
    signature: dict[str, str]
    constexprs: dict[str, Any] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3
    label: str = ""
    divisible: tuple[str, ...] = ("n",)  # integer args taken as multiples of 16


def triton_type(dtype: str) -> str:
    return {"fp32": "fp32", "tf32": "fp32", "bf16": "bf16", "fp16": "fp16"}[dtype]


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

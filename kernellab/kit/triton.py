"""Launching and autotuning Triton kernels, compiled or interpreted; what the ptx rule cross-compiles.

``@triton.autotune`` needs a GPU driver. Under the interpreter (no GPU) ``launch`` calls the
wrapped kernel (``kernel.fn``) with one config instead, so the same launcher code runs everywhere.

How ``launch`` runs a kernel is one ``LaunchMode``, a context object the engine sets around a
call (``force_config``, ``untuned``, ``recording``); a family's launcher only calls ``launch``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from dataclasses import dataclass, field, replace
from typing import Any

from kernellab.kit.dtypes import triton_type  # noqa: F401 - a kit name since before the table


# ``@triton.autotune`` times each config with ``bench_config``: the benchmark's own timer
# (``timing.measure``: cold samples after a read flush, CUDA events, a spin kernel holding
# the stream), so configs are ranked the way the benchmark then measures them.
# ``triton.testing.do_bench`` writes its flush buffer, and the write-back of those dirty
# lines inside each timed call skews the ranking of short memory-bound kernels. 20 ms
# per config still gives >= 10 calls of the slowest kernel we tune (8192^3 fp32, ~25 ms:
# then the floor of min_samples applies) and hundreds of a microsecond kernel; the
# run-wide disk cache (runtime.use_run_cache) means each shape is tuned once per run.
def triton_interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter (TRITON_INTERPRET=1: no GPU)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


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


@dataclass(frozen=True)
class LaunchMode:
    """How ``launch`` runs a kernel: with a config forced on it (id(kernel) -> config; the autotune
    table times each config through the implementation's own launcher this way); ``untuned``: an
    autotuned kernel with the first config that fits the call instead of tuning it (the shapes only
    checked for correctness: the configs share one body, so masks and edges are exercised all the
    same); ``record``: no kernel runs, each call is appended to the list instead (``precompile``)."""

    forced: dict = field(default_factory=dict)
    untuned: bool = False
    record: list | None = None


_MODE: contextvars.ContextVar[LaunchMode | None] = contextvars.ContextVar("kernellab_launch_mode", default=None)
_PLAIN = LaunchMode()


def launch_mode() -> LaunchMode:
    """The mode ``launch`` runs in here and now."""
    return _MODE.get() or _PLAIN


@contextlib.contextmanager
def _within(mode: LaunchMode):
    token = _MODE.set(mode)
    try:
        yield mode
    finally:
        _MODE.reset(token)


def forced_config(kernel):
    """The config ``force_config`` imposes on ``kernel`` right now, else None."""
    return launch_mode().forced.get(id(kernel))


def force_config(kernel, config):
    """Within the block, ``launch`` runs ``kernel`` with ``config``."""
    mode = launch_mode()
    return _within(replace(mode, forced={**mode.forced, id(kernel): config}))


def untuned():
    """Within the block, ``launch`` runs an autotuned kernel with the first config that fits the call."""
    return _within(replace(launch_mode(), untuned=True))


@contextlib.contextmanager
def recording():
    """Within the block, ``launch`` and ``launch_config`` run no kernel: they record each call (the
    kernel's JIT function; the configs it would run: those the autotuner keeps, the first of them
    inside ``untuned``, the one given, or ``[None]`` for a plain kernel; the arguments with each
    tensor replaced by its dtype (Triton's ``warmup`` takes it for an aligned tensor, as fresh
    allocations are); the keyword arguments) in the list it yields, for ``precompile``."""
    with _within(replace(launch_mode(), record=[])) as mode:
        yield mode.record


def _record(record: list, fn, configs, args, kwargs) -> None:
    record.append((fn, configs, tuple(a.dtype if hasattr(a, "data_ptr") else a for a in args), dict(kwargs)))


def kept_configs(kernel, args, kwargs) -> list:
    """The autotuner's configs that its ``early_config_prune`` keeps for this call."""
    prune = getattr(kernel, "early_config_prune", None)
    if prune is None:
        return list(kernel.configs)
    return list(prune(kernel.configs, dict(zip(kernel.arg_names, args, strict=False)), **kwargs))


def first_config(kernel, args, kwargs):
    """The first config kept for this call (the order of the list is the order of preference)."""
    return kept_configs(kernel, args, kwargs)[0]


def launch(kernel, grid, *args, **kwargs) -> None:
    """Launch ``kernel`` on ``grid``. An autotuned kernel runs its first fitting config
    under the interpreter (it has no timer to tune with) and inside ``untuned()``;
    inside ``recording()`` it does not run."""
    mode = launch_mode()
    if mode.record is not None:
        configs = [None]  # a plain kernel: its meta-parameters are in the call
        if is_autotuned(kernel):
            configs = [first_config(kernel, args, kwargs)] if mode.untuned else kept_configs(kernel, args, kwargs)
        _record(mode.record, kernel.fn if is_autotuned(kernel) else kernel, configs, args, kwargs)
        return
    forced = mode.forced.get(id(kernel))
    if forced is None and is_autotuned(kernel) and (mode.untuned or triton_interpreted()):
        forced = first_config(kernel, args, kwargs)
    if forced is not None:
        launch_config(kernel, forced, grid, *args, **kwargs)
    else:
        kernel[grid](*args, **kwargs)


def launch_config(kernel, config, grid, *args, **kwargs) -> None:
    """Launch the kernel behind an autotuner with one given config (the autotune table);
    meta-parameters the call passes itself win over the config's."""
    fn = kernel.fn if is_autotuned(kernel) else kernel
    record = launch_mode().record
    if record is not None:
        _record(record, fn, [config], args, kwargs)
        return
    extra = {k: v for k, v in config.kwargs.items() if k not in kwargs}
    if not triton_interpreted():
        extra.update(num_warps=config.num_warps, num_stages=config.num_stages)
    fn[grid](*args, **kwargs, **extra)


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


"""Launching and autotuning Triton kernels, compiled or interpreted; what the ptx rule cross-compiles.

``@triton.autotune`` needs a GPU driver. Under the interpreter (no GPU) ``launch`` calls the
wrapped kernel (``kernel.fn``) with one config instead, so the same launcher code runs everywhere.

How ``launch`` runs a kernel is a ``Launcher``: this plain one, or one of the engine's launch
modes (``kernellab.engine.launch``: a config forced on a kernel, untuned and recording runs),
which the engine sets around a call in ``LAUNCHER``; a family's launcher only calls ``launch``.
"""

from __future__ import annotations

import contextvars
import os
from dataclasses import dataclass, field
from typing import Any

from kernellab.kit.dtypes import triton_type  # noqa: F401 - a kit name since before the table
from kernellab.kit.hooks import HOOKS


def triton_interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter (TRITON_INTERPRET=1: no GPU)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def _timed(fn, quantiles):
    """How ``@triton.autotune`` times each config: the engine's timer where it installed one
    (``kernellab.engine.launch.bench_config``, the benchmark's own), else Triton's."""
    if HOOKS.autotune_timer is not None:
        return HOOKS.autotune_timer(fn, quantiles)
    from triton.runtime import driver

    return driver.active.get_benchmarker()(fn, quantiles=quantiles)


def autotune(configs, key, **kwargs):
    """``triton.autotune`` timed by the benchmark's own timer (once the engine has loaded the
    family), keyed also on the kernel's constexpr arguments that no config sets. Triton keys a
    tuning, and its run-wide disk cache entry, on ``key``'s values and the configs only: two
    autotuners of one kernel with the same configs whose calls differ in a flag would share one
    choice and one table of timings."""
    import triton

    tuned = {name for cfg in configs for name in cfg.kwargs}

    def wrap(fn):
        flags = [name for name in constexpr_args(fn) if name not in tuned and name not in key]
        return triton.autotune(configs=configs, key=[*key, *flags], do_bench=_timed, **kwargs)(fn)

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


def kept_configs(kernel, args, kwargs) -> list:
    """The autotuner's configs that its ``early_config_prune`` keeps for this call."""
    prune = getattr(kernel, "early_config_prune", None)
    if prune is None:
        return list(kernel.configs)
    return list(prune(kernel.configs, dict(zip(kernel.arg_names, args, strict=False)), **kwargs))


def first_config(kernel, args, kwargs):
    """The first config kept for this call (the order of the list is the order of preference)."""
    return kept_configs(kernel, args, kwargs)[0]


class Launcher:
    """Runs ``launch`` and ``launch_config``: an autotuned kernel tunes itself on a GPU and runs
    its first fitting config under the interpreter (no timer to tune with)."""

    def forced(self, kernel):
        """The config imposed on ``kernel`` here, else None (none: the engine's modes force one)."""
        return None

    def launch(self, kernel, grid, args, kwargs) -> None:
        if is_autotuned(kernel) and triton_interpreted():
            self.launch_config(kernel, first_config(kernel, args, kwargs), grid, args, kwargs)
        else:
            kernel[grid](*args, **kwargs)

    def launch_config(self, kernel, config, grid, args, kwargs) -> None:
        fn = kernel.fn if is_autotuned(kernel) else kernel
        extra = {k: v for k, v in config.kwargs.items() if k not in kwargs}
        if not triton_interpreted():
            extra.update(num_warps=config.num_warps, num_stages=config.num_stages)
        fn[grid](*args, **kwargs, **extra)


# the launcher in force, where the engine set one around a call (None: the plain one)
LAUNCHER: contextvars.ContextVar[Launcher | None] = contextvars.ContextVar("kernellab_launcher", default=None)
_PLAIN = Launcher()


def _launcher() -> Launcher:
    return LAUNCHER.get() or _PLAIN


def launch(kernel, grid, *args, **kwargs) -> None:
    """Launch ``kernel`` on ``grid``; an autotuned kernel runs its first fitting config under
    the interpreter (and wherever the engine asks for an untuned run)."""
    _launcher().launch(kernel, grid, args, kwargs)


def launch_config(kernel, config, grid, *args, **kwargs) -> None:
    """Launch the kernel behind an autotuner with one given config (the autotune table);
    meta-parameters the call passes itself win over the config's."""
    _launcher().launch_config(kernel, config, grid, args, kwargs)


def forced_config(kernel):
    """The config the engine imposes on ``kernel`` right now (the autotune table times each config
    through the implementation's own launcher), else None."""
    return _launcher().forced(kernel)


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



def elementwise_configs():
    """Autotune configs of a 1-D elementwise kernel over a constexpr BLOCK of elements per
    program: 1024 to 8192 elements x 4 or 8 warps."""
    import triton

    return [
        triton.Config({"BLOCK": block}, num_warps=warps)
        for block in (1024, 2048, 4096, 8192)
        for warps in (4, 8)
    ]

"""The engine's side of launching a family's kernels: how ``kit.launch`` runs inside a job.

A family's launcher only calls ``kit.launch``; the engine decides how that runs, around a call
(``LaunchMode``, set in ``kit.triton.LAUNCHER``): a config forced on a kernel (the autotune
table times each config through the implementation's own launcher), untuned (the first config
that fits), or recorded rather than run (compiling ahead). It also lowers a ``kit.compiled``
graph without running it (``compile_only``), and plugs the engine into the kit (``install``):
the CUDA extension's ops and the benchmark's timer for ``@autotune``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Callable

from kernellab.kit.hooks import HOOKS
from kernellab.kit.triton import LAUNCHER, Launcher, first_config, is_autotuned, kept_configs, triton_interpreted


def install() -> None:
    """Plug the engine's CUDA ops into the kit (``registry.load`` does, before a family's code can
    run)."""
    from kernellab.engine import cuda_ext

    HOOKS.cuda_ops = cuda_ext.ops


def time_autotuning() -> None:
    """Make ``kit.autotune`` time configs with the benchmark's timer (the tuning phase does, so
    that only the jobs that tune depend on the timer: a ptx job loads families and tunes nothing)."""
    HOOKS.autotune_timer = bench_config


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


@dataclass(frozen=True)
class LaunchMode(Launcher):
    """How ``kit.launch`` runs a kernel: with a config forced on it (id(kernel) -> config);
    ``untuned``: an autotuned kernel with the first config that fits the call instead of tuning it
    (the shapes only checked for correctness: the configs share one body, so masks and edges are
    exercised all the same); ``record``: no kernel runs, each call is appended to the list instead
    (``precompile``)."""

    configs: dict = field(default_factory=dict)
    untuned: bool = False
    record: list | None = None

    def forced(self, kernel):
        return self.configs.get(id(kernel))

    def launch(self, kernel, grid, args, kwargs) -> None:
        if self.record is not None:
            configs = [None]  # a plain kernel: its meta-parameters are in the call
            if is_autotuned(kernel):
                configs = [first_config(kernel, args, kwargs)] if self.untuned else kept_configs(kernel, args, kwargs)
            _record(self.record, kernel.fn if is_autotuned(kernel) else kernel, configs, args, kwargs)
            return
        config = self.forced(kernel)
        if config is None and is_autotuned(kernel) and (self.untuned or triton_interpreted()):
            config = first_config(kernel, args, kwargs)
        if config is not None:
            self.launch_config(kernel, config, grid, args, kwargs)
        else:
            kernel[grid](*args, **kwargs)

    def launch_config(self, kernel, config, grid, args, kwargs) -> None:
        if self.record is not None:
            _record(self.record, kernel.fn if is_autotuned(kernel) else kernel, [config], args, kwargs)
            return
        super().launch_config(kernel, config, grid, args, kwargs)


def launch_mode() -> LaunchMode:
    """The mode ``kit.launch`` runs in here and now."""
    current = LAUNCHER.get()
    return current if isinstance(current, LaunchMode) else LaunchMode()


@contextlib.contextmanager
def _within(mode: LaunchMode):
    token = LAUNCHER.set(mode)
    try:
        yield mode
    finally:
        LAUNCHER.reset(token)


def force_config(kernel, config):
    """Within the block, ``kit.launch`` runs ``kernel`` with ``config``."""
    mode = launch_mode()
    return _within(replace(mode, configs={**mode.configs, id(kernel): config}))


def untuned():
    """Within the block, ``kit.launch`` runs an autotuned kernel with the first config that fits the call."""
    return _within(replace(launch_mode(), untuned=True))


@contextlib.contextmanager
def recording():
    """Within the block, ``kit.launch`` and ``kit.launch_config`` run no kernel: they record each call
    (the kernel's JIT function; the configs it would run: those the autotuner keeps, the first of
    them inside ``untuned``, the one given, or ``[None]`` for a plain kernel; the arguments with
    each tensor replaced by its dtype (Triton's ``warmup`` takes it for an aligned tensor, as fresh
    allocations are); the keyword arguments) in the list it yields, for ``precompile``."""
    with _within(replace(launch_mode(), record=[])) as mode:
        yield mode.record


def _record(record: list, fn, configs, args, kwargs) -> None:
    record.append((fn, configs, tuple(a.dtype if hasattr(a, "data_ptr") else a for a in args), dict(kwargs)))


def compiles_ahead(fn: Callable) -> bool:
    """Whether ``fn`` (from ``kit.compiled``) can lower its graphs without running them."""
    return callable(getattr(fn, "lower", None))


def compile_only(fn: Callable, out, *inputs, **params) -> None:
    """Compile ``fn``'s graphs for these inputs (``kit.compiled``'s ``lower``: traced by Dynamo,
    compiled by Inductor, not run), so that the real call with inputs like these finds them in
    Dynamo's cache (``kernellab.engine.prepare``)."""
    import torch._functorch.config

    # a forward whose inputs require a gradient: AOTAutograd compiles its backward now, not at the
    # first backward call, so the turn's first backward compiles nothing either
    with torch._functorch.config.patch(force_non_lazy_backward_lowering=True):
        fn.lower(out, *inputs, **params)

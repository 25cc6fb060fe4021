"""Every autotune config of every Triton kernel, timed per shape, and the winner.

On a GPU the table is ``@triton.autotune``'s own: one call of the implementation per
shape makes Triton time each config it keeps (``launch.bench_config``: L2
cleared before every call), and its choice is written to the run's disk cache
(``runtime.use_run_cache``), so check, bench, profile and ncu run that same config
without tuning again. Under the interpreter there is no timer in Triton: each config is
forced through the implementation's own launcher (``launch.force_config``) and
timed by the harness, and the fastest wins.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from typing import Iterator

from kernellab.engine import launch, phases, runtime, triton_utils
from kernellab.engine.calls import case_call
from kernellab.engine.cases import Case
from kernellab.engine.registry import Family, Impl
from kernellab.engine.stats import summarize
from kernellab.engine.timing import TimingConfig, measure
from kernellab.kit.triton import is_autotuned

log = logging.getLogger("kernellab")


def autotune_impl(family: Family, impl: Impl, cases: list[Case], cfg: TimingConfig, device: str,
                  compile_workers: int = 1) -> Iterator[dict]:
    launch.time_autotuning()
    interpreted = runtime.triton_interpreted()
    tuned = _tuned_by_triton if not interpreted else _timed_one_by_one
    if not interpreted and compile_workers > 1:
        precompile(family, impl, cases, device, compile_workers)
    for case in cases:
        call = case_call(family, impl, case, device).call
        for kernel in impl.triton_kernels:
            name = getattr(getattr(kernel, "fn", kernel), "__name__", str(kernel))
            base = {**case.labels(), "triton_kernel": name}
            yield from tuned(kernel, call, case, cfg, device, base)


def precompile(family: Family, impl: Impl, cases: list[Case], device: str, workers: int,
               untuned: list[Case] = ()) -> None:
    """Compile every config of every case before tuning, on ``workers`` threads
    (``triton_utils.precompile``): the launcher runs once per case with its launches
    recorded, not run. ``untuned``: cases that run their first config only (check-only
    shapes). On ``meta`` (``kernellab.engine.prepare``, compiling ahead) inputs are shapes only."""
    t0 = time.perf_counter()
    calls = []
    for group, mode in ((cases, contextlib.nullcontext), (untuned, launch.untuned)):
        for case in group:
            calls += recorded_launches(family, impl, case, device, mode)
    with phases.phase("compile", impl.key):  # the run's timeline
        n, failed = triton_utils.precompile(calls, workers)
    log.info("precompiled %s %s%s: %d configs (%d failed) on %d threads in %.1f s", family.name, impl.key,
             " ahead, from shapes" if device == "meta" else "", n, failed, workers, time.perf_counter() - t0)


def recorded_launches(family: Family, impl: Impl, case: Case, device: str, mode=contextlib.nullcontext) -> list:
    """The Triton launches ``impl`` makes for ``case`` (inside ``mode()``), recorded, not run."""
    # the call is made inside: a backward's saved state comes from a forward, whose launches are
    # recorded too (run on meta tensors, they would write through null pointers)
    with launch.recording() as recorded, mode(), runtime.matmul_precision(case.dtype):
        case_call(family, impl, case, device).call()
    return list(recorded)


def _tuned_by_triton(kernel, call, case: Case, cfg: TimingConfig, device: str, base: dict) -> Iterator[dict]:
    """On a GPU: one call lets ``@triton.autotune`` time every config that its pruning
    keeps for this key (or read the timings another rule of the run cached on disk);
    the table is Triton's own, and its winner is what every other rule runs."""
    with runtime.matmul_precision(case.dtype):
        call()
    runtime.synchronize()
    table = triton_utils.tuning_table(kernel)
    winner = triton_utils.best_config(kernel)
    if not table:  # a single config: nothing to tune
        table = [(kernel.configs[0], math.nan)] if is_autotuned(kernel) else []
    for config, med_ms in sorted(table, key=lambda ct: (math.isnan(ct[1]), ct[1])):
        label = triton_utils.config_label(config)
        ok = math.isfinite(med_ms)
        if ok:
            status, reason = "ok", ""
        elif len(table) == 1:
            status, reason = "ok", "only config: not timed"
        else:
            status, reason = "error", "did not compile or launch (out of resources)"
        yield {**base, "config": label, "median_us": med_ms * 1e3 if ok else math.nan, "status": status,
               "reason": reason, "is_best": label == winner}


def _timed_one_by_one(kernel, call, case: Case, cfg: TimingConfig, device: str, base: dict) -> Iterator[dict]:
    """Under the interpreter (no GPU, no Triton timer): force each config through the
    implementation's launcher and time it with the harness; the fastest wins."""
    rows = []
    for config in kernel.configs:
        label = triton_utils.config_label(config)
        try:
            with launch.force_config(kernel, config), runtime.matmul_precision(case.dtype):
                timing = measure(call, cfg, device)
            med = summarize(timing.samples_us).median
            rows.append({**base, "config": label, "median_us": med, "status": "ok", "reason": ""})
        except Exception as exc:  # noqa: BLE001 - a config may not fit (shared memory...)
            msg = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            rows.append({**base, "config": label, "median_us": float("nan"), "status": "error",
                         "reason": f"{type(exc).__name__}: {msg}"})
    ok = [r for r in rows if r["status"] == "ok"]
    winner = min(ok, key=lambda r: r["median_us"])["config"] if ok else ""
    for r in rows:
        r["is_best"] = r["config"] == winner
        yield r

"""Every autotune config of every Triton kernel, timed per shape, and the winner.

Each config is forced through the implementation's own launcher
(``triton_utils.force_config``), so the grid and arguments are exactly the ones the
benchmark uses. The winner is what ``@triton.autotune`` itself picks (``best_config``)
on a GPU; under the interpreter, the fastest timed config.
"""

from __future__ import annotations

from typing import Iterator

from kernellab import runtime, triton_utils
from kernellab.cases import Case
from kernellab.registry import Family, Impl
from kernellab.stats import summarize
from kernellab.timing import TimingConfig, measure


def autotune_impl(family: Family, impl: Impl, cases: list[Case], cfg: TimingConfig, device: str) -> Iterator[dict]:
    for case in cases:
        params = case.param_dict
        inputs = family.make_inputs(case.shape, case.dtype, device, 0, **params)
        out = family.out_like(*inputs, **params)

        def call(out=out, inputs=inputs, params=params):
            return impl.fn(out, *inputs, **params)

        for kernel in impl.triton_kernels:
            name = getattr(getattr(kernel, "fn", kernel), "__name__", str(kernel))
            base = {**case.labels(), "triton_kernel": name}
            rows = []
            for config in kernel.configs:
                label = triton_utils.config_label(config)
                try:
                    with triton_utils.force_config(kernel, config), runtime.matmul_precision(case.dtype):
                        timing = measure(call, cfg, device)
                    med = summarize(timing.samples_us).median
                    rows.append({**base, "config": label, "median_us": med, "status": "ok", "reason": ""})
                except Exception as exc:  # noqa: BLE001 - a config may not fit (shared memory...)
                    msg = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
                    rows.append({**base, "config": label, "median_us": float("nan"), "status": "error",
                                 "reason": f"{type(exc).__name__}: {msg}"})
            winner = ""
            if not runtime.triton_interpreted():
                try:
                    with runtime.matmul_precision(case.dtype):
                        call()
                    runtime.synchronize()
                    winner = triton_utils.best_config(kernel)
                except Exception:  # noqa: BLE001 - fall back to the fastest timed config
                    winner = ""
            if not winner:
                ok = [r for r in rows if r["status"] == "ok"]
                winner = min(ok, key=lambda r: r["median_us"])["config"] if ok else ""
            for r in rows:
                r["is_best"] = r["config"] == winner
                yield r

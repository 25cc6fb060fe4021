"""The overview and methodology sections: the machine, the software, how cases were measured."""

from __future__ import annotations

import math

from kernellab.engine.survey import not_meaningful
from kernellab.report import fmt
from kernellab.report.load import Results
from kernellab.report.tables import Table, kv_table


def hardware_table(res: Results) -> Table:
    s = res.survey
    rows = [
        ("hardware (slug)", res.hardware),
        ("device", fmt.text(s.get("device_name")) or fmt.NA),
        ("kind", "CPU" if res.is_cpu else "GPU"),
    ]
    if s.get("sm_count") is not None:
        rows.append(("SMs", fmt.integer(s.get("sm_count"))))
    if s.get("l2_bytes") is not None:
        rows.append(("L2 cache", fmt.nbytes(s.get("l2_bytes"))))
    if s.get("memory_bytes") is not None:
        rows.append(("memory", fmt.nbytes(s.get("memory_bytes"))))
    rows.append(("measured copy bandwidth", f"{fmt.num(s.get('copy_gbps'), 1)} GB/s"))
    mm = s.get("matmul_tflops") if isinstance(s.get("matmul_tflops"), dict) else {}
    unfit = not_meaningful(s)
    for d in sorted(mm):
        flag = " (not meaningful: no native arithmetic)" if d in unfit else ""
        rows.append((f"measured matmul {d}", f"{fmt.sig(mm[d], 4)} TFLOP/s{flag}"))
    ds = s.get("datasheet") if isinstance(s.get("datasheet"), dict) else None
    if ds:
        rows.append(("datasheet", fmt.text(ds.get("name")) or fmt.NA))
        bw = fmt.to_float(ds.get("bw_gbps"))
        copy = fmt.to_float(s.get("copy_gbps"))
        share = f" (measured copy: {fmt.pct(100 * copy / bw)})" if bw > 0 and math.isfinite(copy) else ""
        rows.append(("datasheet bandwidth", f"{fmt.num(bw, 1)} GB/s{share}"))
        tf = ds.get("tflops") if isinstance(ds.get("tflops"), dict) else {}
        for d in sorted(tf):
            m = fmt.to_float(mm.get(d))
            t = fmt.to_float(tf[d])
            share = f" (measured: {fmt.pct(100 * m / t)})" if t > 0 and math.isfinite(m) else ""
            rows.append((f"datasheet {d}", f"{fmt.sig(t, 4)} TFLOP/s{share}"))
    clocks = s.get("clocks") if isinstance(s.get("clocks"), dict) else {}
    for k in sorted(clocks):
        rows.append((f"clock: {k}", fmt.text(clocks[k])))
    return kv_table(rows, "hardware", "value")


def environment_table(res: Results) -> Table:
    e = res.environment
    keys = [
        "gpu_name",
        "sm_count",
        "driver",
        "cuda",
        "torch",
        "triton",
        "python",
        "snakemake",
        "git_commit",
        "git_dirty",
        "config_hash",
        "run_id",
        "start",
        "end",
        "mode",
        "hardware",
    ]
    rows = [(k, fmt.text(e.get(k)) if e.get(k) not in (None, "") else fmt.NA) for k in keys]
    clocks = e.get("clocks_at_start") if isinstance(e.get("clocks_at_start"), dict) else {}
    for k in sorted(clocks):
        rows.append((f"clocks at start: {k}", fmt.text(clocks[k])))
    return kv_table(rows, "environment", "value")


def _timing_cfg(config) -> dict:
    if not isinstance(config, dict):
        return {}
    if isinstance(config.get("timing"), dict):
        return config["timing"]
    for v in config.values():
        if isinstance(v, dict) and ("rel_std" in v or "min_samples" in v):
            return v
    return {}


def method(res: Results) -> list[str]:
    cfg = _timing_cfg(res.environment.get("config"))

    def c(key, suffix=""):
        v = cfg.get(key)
        if v in (None, "") or isinstance(v, (dict, list)):
            return "(not recorded)"
        return f"{v:g}{suffix}" if isinstance(v, float) else f"{fmt.text(v)}{suffix}"

    modes = sorted({r["mode"] for r in res.summary if r["mode"]})
    try:
        from kernellab.engine.runtime import TOLERANCE

        tol = ", ".join(f"{k} {v:g}" for k, v in TOLERANCE.items())
    except ImportError:  # pragma: no cover - the package is always there
        tol = "per dtype"
    timer = (
        "time.perf_counter_ns around each call"
        if res.is_cpu
        else "CUDA events around each call, with a spin kernel holding the stream while the host enqueues "
        "each batch of samples (nvbench's blocking kernel), so the events time the GPU's work and not "
        "the host's launch overhead"
    )
    graph = cfg.get("graph")
    graph_txt = "on" if graph is True else "off" if graph is False else "(not recorded)"
    return [
        f"Timing: {timer}. Statistics are over clean samples: median, p20–p80, mean, "
        "inter-quartile range and relative standard deviation (stdrel, the noise column).",
        f"Stopping rule: sampling stops once stdrel falls to {c('rel_std')} after at least "
        f"{c('min_samples')} samples (the case is then converged), or when {c('max_samples')} samples "
        f"or {c('budget_s', ' s')} are spent (not converged). Warm-up: {c('warmup_s', ' s')}.",
        f"L2 flush: timing mode(s) in this run: {', '.join(modes) or '(not recorded)'}; configured: "
        f"{c('mode')}. In cold mode a buffer twice the size of the L2 (the last-level cache on a CPU) "
        "is read before every sample, outside the timed region, so inputs come from memory and no "
        "dirty line of the flush is left to be written back inside the timed call; warm mode does not "
        "flush.",
        f"CUDA-graph replay (GPU only): {graph_txt}; kernels shorter than {c('graph_max_us', ' µs')} "
        "are also captured into a CUDA graph and replayed; graph_us is the replay median, without the "
        "GPU-side cost of launching the call's kernels one by one. Throttling: batches during which "
        "NVML reported thermal or power throttling "
        "are discarded and counted (throttled samples).",
        "Correctness: every implementation is compared with a float64 reference on several seeds; "
        "the relative norm error ||out − ref|| / ||ref|| must stay within the dtype's tolerance "
        f"({tol}). Rows whose status is not ok, or whose check did not pass, are flagged ⚠, never chosen "
        "as best, and left out of speedups, geomeans, plots and the roofline.",
        "Peaks: % of peak is against this machine's measured ceilings (copy bandwidth for "
        "memory-bound kernels, the measured matmul rate of the dtype for matmul families), not the "
        "datasheet; datasheet values are drawn for reference. Speedups are torch_fused's median over "
        "the implementation's median in the same case (kernel, shape, dtype, parameters, mode).",
    ]

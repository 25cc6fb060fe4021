"""Nsight Compute on each ladder step at its representative shape, and on the cases a
family's config lists under ``ncu_cases``.

Each step's call is wrapped in an NVTX range (``ncu_target``) and ncu profiles the
kernels inside it (``--nvtx-include``), so a step that launches several kernels
(naive PyTorch softmax) is measured whole: durations add up, rates are weighted by
duration. Clocks are left as the card has them (``--clock-control none``). Where ncu is
absent or refuses (no GPU, no permission for the counters), the step records
``unavailable`` with ncu's message.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

RANGE = "kernellab_measure"

STALLS = ["long_scoreboard", "short_scoreboard", "mio_throttle", "lg_throttle", "wait", "barrier",
          "math_pipe_throttle", "not_selected", "dispatch_stall", "drain", "membar", "no_instruction",
          "branch_resolving", "tex_throttle", "imc_miss", "sleeping"]

METRICS = {
    "gpu__time_duration.sum": "duration_ns",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    # the MMA units (mma.sync and Hopper's wgmma alike): how busy the tensor cores were
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy",
    "launch__registers_per_thread": "registers",
    "launch__shared_mem_per_block_static": "smem_static",
    "launch__shared_mem_per_block_dynamic": "smem_dynamic",
    "l1tex__t_sector_hit_rate.pct": "l1_hit_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    # the bytes behind the rates: what DRAM moved against the family's byte model, and what the
    # SMs read from the L2 (hits and misses) for each byte of it, with how busy that kept the L2
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "lts__t_sectors_srcunit_tex_op_read.sum": "l2_read_sectors",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "l2_pct",
    **{f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio": f"stall_{s}" for s in STALLS},
}

COLUMNS = ["kernel", "ladder", "impl_key", "step", "shape", "dtype", "status", "reason", "duration_us",
           "dram_pct", "sm_pct", "tensor_pct", "achieved_occupancy", "registers", "smem_per_block", "l1_hit_pct",
           "l2_hit_pct", "l2_pct", "dram_read_mb", "dram_write_mb", "model_mb", "dram_vs_model", "l2_read_mb",
           "top_stalls", "n_kernels"]
L2_SECTOR_BYTES = 32


# Every ladder step of the run is profiled in one ncu session (one Python start-up, one
# CUDA context: each session cost about 10 s before its first kernel on the H200). Inside the measured
# range, each step begins with a one-thread marker kernel (``torch.cuda._sleep``, ATen's
# ``spin_kernel``); the rows between two markers are that step's kernels.
MARKER = "spin_kernel"


def step_spec(kernel: str, impl_key: str, dtype: str, shape: str, params: dict | None = None) -> str:
    """One step on ``ncu_target``'s command line: ``KERNEL:IMPL_KEY:DTYPE:SHAPE[:NAME=VALUE,...]``,
    each value as JSON (``causal=true``, ``p=0.1``); no parameters: the family's first defaults."""
    spec = f"{kernel}:{impl_key}:{dtype}:{shape}"
    return spec + (":" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(params.items())) if params else "")


def parse_step_spec(spec: str) -> tuple[str, str, str, str, dict | None]:
    """``step_spec``'s inverse: (kernel, impl_key, dtype, shape, params or None)."""
    kernel, impl_key, dtype, shape, *rest = spec.split(":")
    params = dict((k, json.loads(v)) for k, v in (kv.split("=", 1) for kv in rest[0].split(","))) if rest else None
    return kernel, impl_key, dtype, shape, params


def command(steps: list[tuple], build_json: str | list[str], status_json: str,
            kernel_dirs: list[str] | None = None) -> list[str]:
    """``steps``: (kernel, impl_key, dtype, shape[, params]) of each step, in profiling order;
    ``build_json``: the families' build.json files (one per family with CUDA)."""
    from kernellab.engine import registry

    dirs = os.pathsep.join(str(d) for d in registry.kernel_dirs(kernel_dirs))
    if not isinstance(build_json, str):
        build_json = os.pathsep.join(map(str, build_json))
    return [
        "ncu", "--clock-control", "none", "--target-processes", "all", "--csv", "--page", "raw",
        # base units: bytes as bytes and times in ns, never rescaled per value; the range is the
        # process's, not the pushing thread's: autograd launches a backward's kernels from its own
        # device thread, outside a per-thread range (every autograd backward's row was "no kernel")
        "--print-units", "base", "--nvtx", "--nvtx-push-pop-scope", "process", "--nvtx-include", f"{RANGE}/",
        "--metrics", ",".join(METRICS),
        sys.executable, "-m", "kernellab.engine.ncu_target", build_json, status_json, dirs,
        *[step_spec(*step) for step in steps],
    ]


def parse(stdout: str) -> pd.DataFrame:
    """ncu's raw CSV page (header, units row, one row per kernel) -> one row per kernel."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith('"')]
    if len(lines) < 3:
        return pd.DataFrame()
    df = pd.read_csv(io.StringIO("\n".join([lines[0]] + lines[2:])), thousands=",")
    keep = {m: c for m, c in METRICS.items() if m in df.columns}
    out = df[list(keep)].rename(columns=keep).apply(pd.to_numeric, errors="coerce")
    out["name"] = df.get("Kernel Name", pd.Series([""] * len(df)))
    return out


def combine(per_kernel: pd.DataFrame) -> dict:
    """Kernels of one step -> one record: durations add, rates weighted by duration."""
    if per_kernel.empty:
        return {"status": "error", "reason": "ncu profiled no kernel inside the measured range"}
    w = per_kernel["duration_ns"].fillna(0)
    total = float(w.sum()) or 1.0

    def wavg(col):
        return float((per_kernel[col] * w).sum() / total) if col in per_kernel else float("nan")

    def mb(col, scale=1.0):
        return float(per_kernel[col].sum()) * scale / 1e6 if col in per_kernel else float("nan")

    stalls = {s: wavg(f"stall_{s}") for s in STALLS if f"stall_{s}" in per_kernel}
    top = sorted(stalls.items(), key=lambda kv: -(kv[1] if kv[1] == kv[1] else -1))[:3]
    smem = per_kernel.get("smem_static", 0) + per_kernel.get("smem_dynamic", 0)
    return {
        "status": "ok", "reason": "",
        "duration_us": float(per_kernel["duration_ns"].sum()) / 1e3,
        "dram_pct": wavg("dram_pct"), "sm_pct": wavg("sm_pct"), "tensor_pct": wavg("tensor_pct"),
        "achieved_occupancy": wavg("achieved_occupancy"),
        "registers": float(per_kernel["registers"].max()) if "registers" in per_kernel else float("nan"),
        "smem_per_block": float(smem.max()) if hasattr(smem, "max") else float("nan"),
        "l1_hit_pct": wavg("l1_hit_pct"), "l2_hit_pct": wavg("l2_hit_pct"), "l2_pct": wavg("l2_pct"),
        "dram_read_mb": mb("dram_read_bytes"), "dram_write_mb": mb("dram_write_bytes"),
        "l2_read_mb": mb("l2_read_sectors", L2_SECTOR_BYTES),
        "top_stalls": ", ".join(f"{k} {v:.2f}" for k, v in top if v == v),
        "n_kernels": int(len(per_kernel)),
    }


def split_steps(per_kernel: pd.DataFrame, n_steps: int) -> list[pd.DataFrame]:
    """Rows of one session -> one frame per step, cut at the marker kernels."""
    if per_kernel.empty:
        return [per_kernel] * n_steps
    is_marker = per_kernel["name"].astype(str).str.contains(MARKER, regex=False)
    if not is_marker.any():  # a single step profiled without markers
        return [per_kernel] + [per_kernel.iloc[0:0]] * (n_steps - 1)
    group = is_marker.cumsum() - 1
    kernels = per_kernel[~is_marker]
    return [kernels[group[~is_marker] == i] for i in range(n_steps)]


def profile_steps(steps: list[tuple], build_json: str | list[str], timeout_s: float,
                  kernel_dirs: list[str] | None = None) -> list[dict]:
    """Profile ``steps`` ((kernel, impl_key, dtype, shape[, params]) of each) in one session: one
    record per step."""
    if shutil.which("ncu") is None:
        return [{"status": "unavailable", "reason": "Nsight Compute (ncu) not found on PATH"}] * len(steps)
    with tempfile.TemporaryDirectory() as tmp:
        status_json = str(Path(tmp) / "status.json")
        try:
            proc = subprocess.run(command(steps, build_json, status_json, kernel_dirs),
                                  capture_output=True,
                                  text=True, timeout=timeout_s * len(steps))
        except subprocess.TimeoutExpired:
            return [{"status": "timeout", "reason": f"ncu did not finish within {timeout_s * len(steps):g} s"}
                    ] * len(steps)
        try:
            target = json.loads(Path(status_json).read_text())
        except (OSError, ValueError):
            target = [{"status": "ok", "reason": ""}] * len(steps)
    errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "==ERROR==" in ln or "ERR_" in ln]
    per_kernel = parse(proc.stdout)
    if per_kernel.empty:
        msg = errors[0] if errors else (proc.stderr.strip().splitlines() or ["no output"])[-1]
        status = "unavailable" if ("ERR_NVGPUCTRPERM" in msg or "permission" in msg.lower()) else "error"
        return [{"status": status, "reason": f"ncu: {msg[:300]}"}] * len(steps)
    out = []
    for rows, told in zip(split_steps(per_kernel, len(steps)), target, strict=True):
        out.append(combine(rows) if told.get("status") == "ok" else told)
    return out


# A family's rows are kept beside the run's other caches with the key of what made them (its
# code, CUDA sources and config): the set's one ncu job profiles again only the families whose
# key changed, and copies the others' rows (Snakemake removes a job's outputs before it runs,
# so the kept copy cannot be the output itself).
def kept_rows(path: str | Path, key: str) -> list[dict] | None:
    """The rows kept at ``path`` if they were made with ``key`` and none of them failed (an
    error may be passing: a timeout, a busy GPU), else None."""
    try:
        kept = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    rows = kept.get("rows") if isinstance(kept, dict) and kept.get("key") == key else None
    if not isinstance(rows, list) or any(r.get("status") == "error" for r in rows):
        return None
    return rows


def keep_rows(path: str | Path, key: str, rows: list[dict]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"key": key, "rows": rows}, default=str))

"""Derived numbers: which ceiling a kernel is judged against, speedups and best rows.

Nothing here trusts the ``is_best`` or ``speedup_vs_torch_fused`` columns: both are
recomputed from rows that are measured and correct (``load.is_valid``), so a fast
but wrong or failed row is never best and never enters a speedup.
"""

from __future__ import annotations

import math
import re

from kernellab.report.fmt import to_float
from kernellab.report.load import Results, case_key, check_failed, is_valid

BASELINE = "torch_fused"
_COMPUTE_NAME = re.compile(r"matmul|gemm|(^|_)b?mm($|_)|conv|attention|attn", re.IGNORECASE)


def kernel_metric(res: Results, kernel: str) -> str:
    """``"tflops"`` for compute-bound kernels (matmul families), ``"gbps"`` otherwise.

    In order: a ``bound`` column in summary.csv, the ladders' ``metric``, the kernel's
    name (matmul, gemm, mm, conv, attention).
    """
    bounds = sorted({r["bound"].lower() for r in res.summary if r["kernel"] == kernel and r.get("bound")})
    if bounds:
        return "tflops" if "compute" in bounds else "gbps"
    metrics = sorted({ld["metric"] for ld in res.ladders if ld["kernel"] == kernel})
    if metrics:
        return "tflops" if "tflops" in metrics else "gbps"
    return "tflops" if _COMPUTE_NAME.search(kernel) else "gbps"


def metric_label(metric: str) -> str:
    return "TFLOP/s" if metric == "tflops" else "GB/s"


def ceiling(survey: dict, metric: str, dtype: str) -> float:
    """This machine's measured ceiling: copy GB/s, or matmul TFLOP/s of the dtype."""
    if not isinstance(survey, dict):
        return math.nan
    if metric == "gbps":
        return to_float(survey.get("copy_gbps"))
    mm = survey.get("matmul_tflops")
    return to_float(mm.get(dtype)) if isinstance(mm, dict) else math.nan


def datasheet(survey: dict, metric: str, dtype: str) -> float:
    ds = survey.get("datasheet") if isinstance(survey, dict) else None
    if not isinstance(ds, dict):
        return math.nan
    if metric == "gbps":
        return to_float(ds.get("bw_gbps"))
    tf = ds.get("tflops")
    return to_float(tf.get(dtype)) if isinstance(tf, dict) else math.nan


def value(r: dict, metric: str) -> float:
    return r["tflops"] if metric == "tflops" else r["gbps"]


def pct_of_ceiling(r: dict, metric: str, survey: dict) -> float:
    """Percent of the measured ceiling: the summary's column, else computed from the survey."""
    col = r.get("pct_of_peak_flops" if metric == "tflops" else "pct_of_peak_bw", math.nan)
    if isinstance(col, float) and math.isfinite(col):
        return col
    c = ceiling(survey, metric, r["dtype"])
    v = value(r, metric)
    return 100.0 * v / c if math.isfinite(v) and math.isfinite(c) and c > 0 else math.nan


def annotate(res: Results) -> None:
    """Add ``valid``, ``speedup`` (torch_fused over this, same case) and ``best`` to each row."""
    base: dict[tuple, dict] = {}
    for r in res.summary:
        r["valid"] = is_valid(r)
        if r["valid"] and r["impl_key"] == BASELINE:
            base.setdefault(case_key(r), r)
    fastest: dict[tuple, dict] = {}
    for r in res.summary:
        r["speedup"] = math.nan
        r["best"] = False
        if not r["valid"]:
            continue
        b = base.get(case_key(r))
        if b is not None:
            r["speedup"] = b["median_us"] / r["median_us"]
        k = case_key(r)
        cur = fastest.get(k)
        if cur is None or (r["median_us"], r["impl_key"]) < (cur["median_us"], cur["impl_key"]):
            fastest[k] = r
    for r in fastest.values():
        r["best"] = True


def flag_of(r: dict) -> tuple[str, str]:
    """(css flag, mark text) of a summary row."""
    if r["status"] != "ok":
        return "bad", f"⚠ {r['status'] or 'unknown'}"
    if r["check_status"] == "failed":
        return "bad", "⚠ incorrect"
    if check_failed(r):
        return "bad", f"⚠ check {r['check_status']}"
    if not r.get("valid"):
        return "bad", "⚠ no time"
    if r.get("best"):
        return "best", "★ best"
    return "", ""

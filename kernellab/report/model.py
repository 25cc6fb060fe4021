"""Derived numbers: which ceiling a kernel is judged against, speedups and best rows.

Nothing here trusts the ``is_best`` or ``speedup_vs_torch_fused`` columns: both are
recomputed from rows that are measured and correct (``load.is_valid``), so a fast
but wrong or failed row is never best and never enters a speedup.
"""

from __future__ import annotations

import math
import re

from kernellab.engine.survey import not_meaningful
from kernellab.passes import pass_key
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


def _peak(table, gbps_key: str, tflops_key: str, metric: str, dtype: str) -> float:
    """GB/s under ``gbps_key``, or the dtype's TFLOP/s under ``tflops_key``, of a survey's table."""
    if not isinstance(table, dict):
        return math.nan
    if metric == "gbps":
        return to_float(table.get(gbps_key))
    tf = table.get(tflops_key)
    return to_float(tf.get(dtype)) if isinstance(tf, dict) else math.nan


def ceiling(survey: dict, metric: str, dtype: str) -> float:
    """This machine's measured ceiling: copy GB/s, or matmul TFLOP/s of the dtype."""
    return _peak(survey, "copy_gbps", "matmul_tflops", metric, dtype)


def datasheet(survey: dict, metric: str, dtype: str) -> float:
    ds = survey.get("datasheet") if isinstance(survey, dict) else None
    return _peak(ds, "bw_gbps", "tflops", metric, dtype)


def value(r: dict, metric: str) -> float:
    return r["tflops"] if metric == "tflops" else r["gbps"]


def pct_of_ceiling(r: dict, metric: str, survey: dict) -> float:
    """Percent of the measured ceiling: the summary's column, else computed from the survey.

    A column above 100% was computed against a survey figure the benchmark beat; the report's
    survey holds the corrected ceiling (``correct_ceilings``), so it is recomputed against that."""
    col = r.get("pct_of_peak_flops" if metric == "tflops" else "pct_of_peak_bw", math.nan)
    if isinstance(col, float) and math.isfinite(col) and col <= 100.0:
        return col
    return _pct(value(r, metric), ceiling(survey, metric, r["dtype"]))


def pct_of_survey(r: dict, metric: str, survey: dict) -> float:
    """Percent of the survey's own ceiling (``survey_ceiling``; above 100% where a case beat
    the survey), not of the ceiling raised to the best observed that ``pct_of_ceiling`` uses."""
    return _pct(value(r, metric), survey_ceiling(survey, metric, r["dtype"]))


def _pct(v: float, c: float) -> float:
    return 100.0 * v / c if math.isfinite(v) and math.isfinite(c) and c > 0 else math.nan


def survey_ceiling(survey: dict, metric: str, dtype: str) -> float:
    """The survey's own figure for a ceiling, before ``correct_ceilings`` raised it."""
    fixed = (survey.get("ceiling_corrected") or {}) if isinstance(survey, dict) else {}
    entry = fixed.get(ceiling_key(metric, dtype))
    return to_float(entry.get("survey")) if isinstance(entry, dict) else ceiling(survey, metric, dtype)


def ceiling_key(metric: str, dtype: str) -> str:
    """The survey's name of a ceiling, as ``ceiling_corrected`` keys it: "copy" or the dtype."""
    return "copy" if metric == "gbps" else dtype


def correct_ceilings(res: Results) -> None:
    """Raise each ceiling that a correct case beat to what that case reached, in ``res.survey``.

    A ceiling holds what it caps: a case above it means the survey measured less than the
    machine gives (on a CPU its small fp16 matmul ran below the benchmark's large ones). The
    corrections, with those the pipeline recorded in environment.json, go to
    ``survey["ceiling_corrected"]`` ({key: {"survey": x, "observed": y}}) and each row above its
    survey figure gets ``above_survey``, so tables, notes and the roofline can say so."""
    survey = dict(res.survey) if isinstance(res.survey, dict) else {}
    survey["matmul_tflops"] = dict(survey.get("matmul_tflops") or {})
    fixed = {k: dict(v) for k, v in (survey.get("ceiling_corrected") or {}).items() if isinstance(v, dict)}
    env_fixed = res.environment.get("ceiling_corrected") if isinstance(res.environment, dict) else None
    for k, v in (env_fixed or {}).items():
        if isinstance(v, dict):
            fixed.setdefault(k, dict(v))
    metrics = {k: kernel_metric(res, k) for k in {r["kernel"] for r in res.summary}}
    for r in res.summary:
        m = metrics[r["kernel"]]
        if not is_valid(r):
            continue
        key = ceiling_key(m, r["dtype"])
        original = to_float(fixed[key]["survey"]) if key in fixed else ceiling(survey, m, r["dtype"])
        v = value(r, m)
        r["above_survey"] = math.isfinite(original) and math.isfinite(v) and v > original > 0
        if r["above_survey"]:
            best = max(v, to_float(fixed.get(key, {}).get("observed")) if key in fixed else v)
            fixed[key] = {"survey": original, "observed": best}
    for key, v in fixed.items():
        observed = to_float(v.get("observed"))
        if not math.isfinite(observed):
            continue
        if key == "copy":
            survey["copy_gbps"] = max(observed, to_float(survey.get("copy_gbps")) or 0.0)
        else:
            survey["matmul_tflops"][key] = max(observed, to_float(survey["matmul_tflops"].get(key)) or 0.0)
    survey["ceiling_corrected"] = fixed
    res.survey = survey


def ceiling_notes(res: Results) -> list[str]:
    """One sentence per corrected ceiling: what the survey measured, what the benchmark reached."""
    notes = []
    for key, v in sorted((res.survey.get("ceiling_corrected") or {}).items()):
        s, o = to_float(v.get("survey")), to_float(v.get("observed"))
        what, unit = ("copy bandwidth", "GB/s") if key == "copy" else (f"{key} matmul rate", "TFLOP/s")
        notes.append(
            f"↑ Above the measured ceiling: the survey's {what} ({s:,.4g} {unit}) is below what the benchmark "
            f"reaches ({o:,.4g} {unit}); the ceiling shown, in the percentages and the roofline, is "
            f"max(survey, best observed) = {o:,.4g} {unit}. Cases above the survey's figure are marked ↑."
        )
    for dtype, why in not_meaningful(res.survey).items():
        notes.append(
            f"Not a meaningful ceiling: the {dtype} matmul rate ({why}); its percentages bound nothing "
            "and no comparison predicts from it."
        )
    return notes


def baseline_of(r: dict) -> str:
    """The baseline of a row's pass: PyTorch's fused op, its autograd backward for a backward."""
    return pass_key(BASELINE, r.get("pass"))


def annotate(res: Results) -> None:
    """Add ``valid``, ``speedup`` (torch_fused over this, same case) and ``best`` to each row,
    and correct the ceilings a case beat (``correct_ceilings``)."""
    base: dict[tuple, dict] = {}
    for r in res.summary:
        r["valid"] = is_valid(r)
        if r["valid"] and r["impl_key"] == baseline_of(r):
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
    correct_ceilings(res)


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

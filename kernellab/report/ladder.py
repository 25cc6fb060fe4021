"""Optimization ladders: each step's measured outcome beside its idea and prediction.

A ladder (from ladders.json) names its steps, a representative shape and dtype and a
baseline implementation. For each step this module finds the summary row of that
case, computes time, throughput, % of the measured ceiling, % of the baseline and the
speedups over the previous and the first step, pulls the step's Nsight Compute row,
and checks the numeric prediction (``expect_speedup`` over the previous step,
``expect_pct_of_peak``) against the measurement. Slower-than-previous steps stay in
the table and are labelled regressions. The table itself is ``ladder_table``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kernellab.engine.stats import AMBIGUOUS, SLOWER, classify
from kernellab.report import fmt
from kernellab.report.fmt import gh_anchor
from kernellab.report.ladder_table import ladder_table
from kernellab.report.load import Results, check_failed, shape_numel, shape_sort_key
from kernellab.report.model import ceiling, metric_label, pct_of_ceiling, value
from kernellab.report.tables import Table

NOT_MEASURED = "not measured on this hardware"


@dataclass
class StepView:
    impl_key: str
    step: str
    order: str
    idea: str
    prediction: str
    finding: str  # ladder.yaml's, written after measuring; "" when none
    expect_speedup: tuple | None
    expect_pct: tuple | None
    evidence: list[dict]
    cuda_kernels: list[str]
    row: dict | None = None
    measured: bool = False
    status_text: str = ""  # why there is no measurement
    time_us: float = math.nan
    value: float = math.nan
    pct_ceiling: float = math.nan
    pct_baseline: float = math.nan
    speedup_prev: float = math.nan
    speedup_first: float = math.nan
    prev_step: str = ""
    regression: str = ""  # "" | "regression" | "possible regression"
    ncu: dict | None = None
    ncu_text: str = ""  # every metric ncu recorded for the step, or why there are none
    held: str = "unknown"  # yes | no | unknown
    held_detail: list[str] = field(default_factory=list)
    outcome: str = ""
    heading: str = ""
    anchor: str = ""


@dataclass
class LadderView:
    kernel: str
    ladder: str
    metric: str
    metric_label: str
    shape: str
    requested_shape: str
    dtype: str
    mode: str
    params: str
    baseline_key: str
    baseline_row: dict | None
    baseline_pct: float
    ceiling: float
    note: str
    steps: list[StepView]
    table: Table
    heading: str
    anchor: str


def _held_range(measured: float, rng: tuple, what: str, unit: str) -> tuple[bool, str]:
    lo, hi = rng
    inside = lo <= measured <= hi
    where = "within" if inside else ("above" if measured > hi else "below")
    return inside, f"{what} {measured:.3g}{unit}, predicted {lo:g}–{hi:g}{unit}: {where} the range"


def _pick_rows(res: Results, ld: dict) -> tuple[str, str, str, str]:
    """(shape, mode, params, note) the ladder is read at."""
    kernel, dtype = ld["kernel"], ld["dtype"]
    keys = {s["impl_key"] for s in ld["steps"]}
    rows = [r for r in res.summary if r["kernel"] == kernel and r["impl_key"] in keys and r["dtype"] == dtype]
    shape = ld["shape"]
    note = ""
    valid_here = [r for r in rows if r["shape"] == shape and r.get("valid")]
    if not valid_here:
        valid = [r for r in rows if r.get("valid")]
        if valid:
            best = max(valid, key=lambda r: shape_sort_key(r["shape"], r["numel"]))
            note = (
                f"The ladder's shape {shape or '(none)'} was not measured here; "
                f"its steps are compared at the largest measured shape, {best['shape']}."
            )
            shape = best["shape"]
    at = [r for r in rows if r["shape"] == shape]
    modes = sorted({r["mode"] for r in at if r.get("valid")} or {r["mode"] for r in at})
    mode = ld.get("mode") or (modes[0] if modes else "")
    params = sorted({r["params"] for r in at if r["mode"] == mode} or {""})[0]
    return shape, mode, params, note


def _find(res: Results, kernel: str, key: str, shape: str, dtype: str, mode: str, params: str) -> dict | None:
    for r in res.summary:
        if (
            r["kernel"] == kernel
            and r["impl_key"] == key
            and r["shape"] == shape
            and r["dtype"] == dtype
            and r["mode"] == mode
            and r["params"] == params
        ):
            return r
    return None


def _why_not(res: Results, kernel: str, key: str, dtype: str, row: dict | None) -> str:
    """Reason text for a step without a usable measurement."""
    if row is not None:
        if row["status"] != "ok":
            return _status_text(row)
        if check_failed(row):
            return f"measured but not correct (correctness check {row['check_status']})" + (
                f": {row['reason']}" if row["reason"] else ""
            )
        return f"{NOT_MEASURED}: no time recorded"
    others = [r for r in res.summary if r["kernel"] == kernel and r["impl_key"] == key]
    others.sort(key=lambda r: (r["dtype"] != dtype, r["status"] == "ok", r["shape"]))
    if others and others[0]["status"] != "ok":
        return _status_text(others[0])
    if others:
        return f"{NOT_MEASURED}: no result at this shape and dtype"
    return f"{NOT_MEASURED}: no result for this step in summary.csv"


def _status_text(r: dict) -> str:
    reason = r["reason"] or "no reason given"
    if r["status"] in ("unavailable", "unknown"):
        return f"{NOT_MEASURED}: {reason}"
    return f"failed on this hardware ({r['status']}): {reason}"


def _ncu_text(res: Results, kernel: str, key: str, n: dict | None) -> str:
    """One line with all that Nsight Compute recorded for the step (the table shows only
    the key columns), or the reason it has nothing."""
    if n is None:
        why = [r.get("reason", "") for r in res.ncu.get(kernel, []) if r.get("impl_key") == key]
        return f"not measured ({why[0]})" if why and why[0] else ""

    def num(k, unit="", digits=1):
        v = n.get(k, math.nan)
        return f"{v:,.{digits}f}{unit}" if isinstance(v, (int, float)) and math.isfinite(v) else fmt.NA

    # a column with a failed row's empty cell reads back as floats ("1.0")
    n_kernels = n.get("n_kernels", math.nan)
    count = int(n_kernels) if isinstance(n_kernels, (int, float)) and math.isfinite(n_kernels) else 1
    parts = [f"{num('duration_us', ' µs')} over {count} kernel(s)",
             f"DRAM {num('dram_pct', '%')} and SM {num('sm_pct', '%')} of peak"
             + (f", tensor pipe {num('tensor_pct', '%')} busy" if (n.get("tensor_pct") or 0) > 0.5 else ""),
             f"achieved occupancy {num('achieved_occupancy', '%')}",
             f"{num('registers', '', 0)} registers per thread",
             f"{num('smem_per_block', ' B', 0)} of shared memory per block",
             f"L1 hit {num('l1_hit_pct', '%')}, L2 hit {num('l2_hit_pct', '%')}"]
    if math.isfinite(n.get("dram_read_mb", math.nan)):  # sets from before these counters have none
        parts.append(f"DRAM read {num('dram_read_mb', ' MB')} and wrote {num('dram_write_mb', ' MB')} "
                     f"({num('dram_vs_model', 'x', 2)} the byte model's {num('model_mb', ' MB')}), "
                     f"the SMs read {num('l2_read_mb', ' MB')} from the L2, {num('l2_pct', '%')} busy")
    text = ", ".join(parts)
    stalls = n.get("top_stalls")
    if isinstance(stalls, str) and stalls:
        text += f"; top warp stalls (cycles per issued instruction): {stalls}"
    return text + "."


def _ncu_row(res: Results, kernel: str, key: str, dtype: str, shape: str) -> dict | None:
    rows = [
        r
        for r in res.ncu.get(kernel, [])
        if r.get("impl_key") == key
        and r.get("dtype", dtype) in (dtype, "")
        and r.get("status", "ok") in ("ok", "")
    ]
    if not rows:
        return None

    def key(r):
        n = shape_numel(r.get("shape", ""))
        return (r.get("shape") != shape, -n if math.isfinite(n) else math.inf, r.get("shape", ""))

    return min(rows, key=key)


def _step_view(res: Results, ld: dict, s: dict, at: tuple, base_row: dict | None) -> StepView:
    """One step with its measurement at ``at`` (shape, dtype, mode, params), or why it has none."""
    kernel, metric = ld["kernel"], ld["metric"]
    shape, dtype, mode, params = at
    order = str(int(s["order"])) if math.isfinite(s["order"]) else ""
    v = StepView(
        impl_key=s["impl_key"],
        step=s["step"] or s["impl_key"],
        order=order,
        idea=s["idea"],
        prediction=s["prediction"],
        finding=s.get("finding") or "",
        expect_speedup=s["expect_speedup"],
        expect_pct=s["expect_pct_of_peak"],
        evidence=s["evidence"],
        cuda_kernels=s["cuda_kernels"],
    )
    v.row = _find(res, kernel, s["impl_key"], shape, dtype, mode, params)
    v.measured = bool(v.row is not None and v.row.get("valid"))
    if v.measured:
        r = v.row
        v.time_us = r["median_us"]
        v.value = value(r, metric)
        v.pct_ceiling = pct_of_ceiling(r, metric, res.survey)
        if base_row is not None and base_row.get("valid"):
            v.pct_baseline = 100.0 * base_row["median_us"] / r["median_us"]
    else:
        v.status_text = _why_not(res, kernel, s["impl_key"], dtype, v.row)
    v.ncu = _ncu_row(res, kernel, s["impl_key"], dtype, shape)
    v.ncu_text = _ncu_text(res, kernel, s["impl_key"], v.ncu)
    return v


def _compare_steps(steps: list[StepView], skip: str, base_key: str, unit: str, metric: str) -> None:
    """Each step against the previous and the first: speedups, regressions, the prediction's verdict."""
    first = steps[0] if steps else None
    for i, v in enumerate(steps):
        prev = steps[i - 1] if i > 0 else None
        v.prev_step = prev.step if prev else ""
        if v.measured and prev is not None and prev.measured:
            v.speedup_prev = prev.time_us / v.time_us
            verdict, _ = classify(prev.row, v.row)
            if verdict == SLOWER:
                v.regression = "regression"
            elif verdict == AMBIGUOUS and v.speedup_prev < 1:
                v.regression = "possible regression"
        if v.measured and first is not None and first.measured and i > 0:
            v.speedup_first = first.time_us / v.time_us
        _judge(v, prev, skip)
        v.outcome = _outcome(v, first, base_key, unit, metric)
        v.heading = f"{v.order + '. ' if v.order else ''}{v.step} ({v.impl_key})"
        if v.regression:
            v.heading += f" — {v.regression}"


def analyse(res: Results, ld: dict) -> LadderView:
    kernel, dtype, metric = ld["kernel"], ld["dtype"], ld["metric"]
    shape, mode, params, note = _pick_rows(res, ld)
    ceil = ceiling(res.survey, metric, dtype)
    base_key = ld["baseline_impl_key"]
    base_row = _find(res, kernel, base_key, shape, dtype, mode, params)
    base_ok = base_row is not None and base_row.get("valid")
    unit = metric_label(metric)
    steps = [_step_view(res, ld, s, (shape, dtype, mode, params), base_row) for s in ld["steps"]]

    skip = ""
    if res.is_cpu:
        skip = "this is a CPU run; the predictions are for the GPU"
    elif note:
        skip = f"the ladder's shape {ld['shape']} was not measured; predictions refer to it"
    _compare_steps(steps, skip, base_key, unit, metric)

    heading = f"{kernel} {ld['ladder']} ladder"
    lv = LadderView(
        kernel=kernel,
        ladder=ld["ladder"],
        metric=metric,
        metric_label=unit,
        shape=shape,
        requested_shape=ld["shape"],
        dtype=dtype,
        mode=mode,
        params=params,
        baseline_key=base_key,
        baseline_row=base_row,
        baseline_pct=pct_of_ceiling(base_row, metric, res.survey) if base_ok else math.nan,
        ceiling=ceil,
        note=note,
        steps=steps,
        table=Table([]),
        heading=heading,
        anchor=gh_anchor(heading),
    )
    lv.table = ladder_table(lv)
    return lv


def _judge(v: StepView, prev: StepView | None, skip: str = "") -> None:
    """held = yes when every numeric prediction that can be checked is inside its range,
    no when one is outside, unknown when none can be checked (or ``skip`` says why not)."""
    if skip:
        v.held = "unknown"
        v.held_detail.append(skip)
        return
    checks: list[bool] = []
    if v.expect_speedup:
        if math.isfinite(v.speedup_prev):
            ok, txt = _held_range(v.speedup_prev, v.expect_speedup, f"speedup over {prev.step}", "×")
            checks.append(ok)
            v.held_detail.append(txt)
        else:
            lo, hi = v.expect_speedup
            why = (
                "this step"
                if not v.measured
                else (f"previous step {prev.step}" if prev else "no previous step")
            )
            v.held_detail.append(f"speedup predicted {lo:g}–{hi:g}×, not measurable ({why} not measured)")
    if v.expect_pct:
        if v.measured and math.isfinite(v.pct_ceiling):
            ok, txt = _held_range(v.pct_ceiling, v.expect_pct, "share of the measured ceiling", "%")
            checks.append(ok)
            v.held_detail.append(txt)
        else:
            lo, hi = v.expect_pct
            v.held_detail.append(f"share of the ceiling predicted {lo:g}–{hi:g}%, not measurable")
    if not v.expect_speedup and not v.expect_pct:
        v.held_detail.append("no numeric prediction")
    v.held = "unknown" if not checks else ("yes" if all(checks) else "no")


def _outcome(v: StepView, first: StepView | None, base_key: str, unit: str, metric: str) -> str:
    if not v.measured:
        return v.status_text
    parts = [
        f"{fmt.us(v.time_us)} µs",
        f"{fmt.throughput(v.value, metric)} {unit}",
        f"{fmt.pct(v.pct_ceiling)} of the measured ceiling",
    ]
    if math.isfinite(v.pct_baseline):
        parts.append(f"{fmt.pct(v.pct_baseline)} of {base_key}")
    if math.isfinite(v.speedup_prev):
        parts.append(f"{fmt.ratio(v.speedup_prev)} over {v.prev_step}")
    if math.isfinite(v.speedup_first) and first is not None and first.step != v.prev_step:
        parts.append(f"{fmt.ratio(v.speedup_first)} over {first.step}")
    text = ", ".join(parts) + "."
    if v.regression == "regression":
        text += f" Regression: slower than {v.prev_step} beyond the noise; kept on the ladder."
    elif v.regression:
        text += f" Possibly slower than {v.prev_step} (the p20–p80 intervals overlap)."
    return text


def analyse_all(res: Results) -> list[LadderView]:
    views = [analyse(res, ld) for ld in res.ladders if ld["kernel"]]
    seen: dict[str, int] = {}
    for lv in views:  # GitHub numbers repeated anchors: name, name-1, name-2
        n = seen.get(lv.anchor, 0)
        seen[lv.anchor] = n + 1
        if n:
            lv.anchor = f"{lv.anchor}-{n}"
    return views

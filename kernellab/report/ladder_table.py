"""A ladder's table: each step's measurement, Nsight Compute counters and verdict as display text
(the analysis that fills a ``ladder.LadderView`` is ``kernellab.report.ladder``'s)."""

from __future__ import annotations

import math

from kernellab.report import fmt
from kernellab.report.model import value
from kernellab.report.tables import Table


def delta(cur: float, prev: float, kind: str) -> str:
    """ncu cell: the value and its change from the previous step."""
    if not math.isfinite(cur):
        return fmt.NA
    base = f"{cur:,.1f}" if kind != "int" else f"{int(round(cur))}"
    if not math.isfinite(prev):
        return base
    if kind == "rel":
        return f"{base} ({(cur / prev - 1) * 100:+.0f}%)" if prev > 0 else base
    if kind == "int":
        return f"{base} ({int(round(cur - prev)):+d})"
    return f"{base} ({cur - prev:+.1f})"


def ladder_table(lv) -> Table:
    """The ladder's table: a row per step (a ``ladder.StepView``: its measurement, its Nsight Compute
    counters beside the previous step's, whether its prediction held), then the baseline's."""
    unit = lv.metric_label
    t = Table(
        [
            "step",
            "impl_key",
            "time µs",
            unit,
            "% of ceiling",
            f"% of {lv.baseline_key}",
            "× prev",
            "× first",
            "ncu µs",
            "DRAM %",
            "SM %",
            "occupancy %",
            "registers",
            "prediction held",
            "note",
        ],
        numeric=[
            False,
            False,
            True,
            True,
            True,
            True,
            True,
            True,
            True,
            True,
            True,
            True,
            True,
            False,
            False,
        ],
    )
    prev_ncu: dict | None = None
    for v in lv.steps:
        n = v.ncu or {}
        p = prev_ncu or {}

        def g(d, k):
            return d.get(k, math.nan) if isinstance(d.get(k, math.nan), float) else math.nan

        ncu_cells = [
            delta(g(n, "duration_us"), g(p, "duration_us"), "rel"),
            delta(g(n, "dram_pct"), g(p, "dram_pct"), "pp"),
            delta(g(n, "sm_pct"), g(p, "sm_pct"), "pp"),
            delta(g(n, "achieved_occupancy"), g(p, "achieved_occupancy"), "pp"),
            delta(g(n, "registers"), g(p, "registers"), "int"),
        ]
        if v.measured:
            note = v.regression
            flag = "warn" if v.regression else ""
            cells = [
                fmt.us(v.time_us),
                fmt.throughput(v.value, lv.metric),
                fmt.pct(v.pct_ceiling),
                fmt.pct(v.pct_baseline),
                fmt.ratio(v.speedup_prev),
                fmt.ratio(v.speedup_first),
            ]
        else:
            note = "⚠ " + v.status_text
            flag = "bad"
            cells = [fmt.NA] * 6
        t.add(
            [f"{v.order}. {v.step}" if v.order else v.step, v.impl_key, *cells, *ncu_cells, v.held, note],
            flag,
        )
        prev_ncu = v.ncu
    b = lv.baseline_row
    if b is not None and b.get("valid"):
        t.add(
            [
                f"baseline: {lv.baseline_key}",
                lv.baseline_key,
                fmt.us(b["median_us"]),
                fmt.throughput(value(b, lv.metric), lv.metric),
                fmt.pct(lv.baseline_pct),
                "100.0%",
                fmt.NA,
                fmt.NA,
                *[fmt.NA] * 5,
                "",
                "reference",
            ],
            "good",
        )
    elif b is not None:
        t.add(
            [
                f"baseline: {lv.baseline_key}",
                lv.baseline_key,
                *[fmt.NA] * 11,
                "",
                f"⚠ baseline {b['status'] if b['status'] != 'ok' else 'incorrect'}"
                + (f": {b['reason']}" if b["reason"] else ""),
            ],
            "bad",
        )
    return t

"""A ladder's table: each step's measurement, Nsight Compute counters and verdict as display text
(the analysis that fills a ``ladder.LadderView`` is ``kernellab.report.ladder``'s)."""

from __future__ import annotations

import math

from kernellab.report import fmt
from kernellab.report.model import value
from kernellab.report.tables import Column, Table, table_of


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


def _ncu(d: dict, k: str) -> float:
    return d.get(k, math.nan) if isinstance(d.get(k, math.nan), float) else math.nan


def _ncu_column(name: str, key: str, kind: str) -> Column:
    """A counter of the step's ncu row, with its change from the previous step's."""
    return Column(name, "num", lambda s: delta(_ncu(s[1], key), _ncu(s[2], key), kind))


def _measured(name: str, cell) -> Column:
    """A cell of the step's measurement; NA for a step without one."""
    return Column(name, "num", lambda s: cell(s[0]) if s[0].measured else fmt.NA)


def _step_columns(lv) -> list[Column]:
    """The columns of a step's row; a record is (step, its ncu row, the previous step's ncu row)."""
    return [
        Column("step", "text", lambda s: f"{s[0].order}. {s[0].step}" if s[0].order else s[0].step),
        Column("impl_key", "text", lambda s: s[0].impl_key),
        _measured("time µs", lambda v: fmt.us(v.time_us)),
        _measured(lv.metric_label, lambda v: fmt.throughput(v.value, lv.metric)),
        _measured("% of ceiling", lambda v: fmt.pct(v.pct_ceiling)),
        _measured(f"% of {lv.baseline_key}", lambda v: fmt.pct(v.pct_baseline)),
        _measured("× prev", lambda v: fmt.ratio(v.speedup_prev)),
        _measured("× first", lambda v: fmt.ratio(v.speedup_first)),
        _ncu_column("ncu µs", "duration_us", "rel"),
        _ncu_column("DRAM %", "dram_pct", "pp"),
        _ncu_column("SM %", "sm_pct", "pp"),
        _ncu_column("occupancy %", "achieved_occupancy", "pp"),
        _ncu_column("registers", "registers", "int"),
        Column("prediction held", "text", lambda s: s[0].held),
        Column("note", "text", lambda s: s[0].regression if s[0].measured else "⚠ " + s[0].status_text),
    ]


def _step_flag(s) -> str:
    v = s[0]
    if not v.measured:
        return "bad"
    return "warn" if v.regression else ""


def ladder_table(lv) -> Table:
    """The ladder's table: a row per step (a ``ladder.StepView``: its measurement, its Nsight Compute
    counters beside the previous step's, whether its prediction held), then the baseline's."""
    prev = [None, *(v.ncu for v in lv.steps)]
    records = [(v, v.ncu or {}, p or {}) for v, p in zip(lv.steps, prev, strict=False)]
    t = table_of(_step_columns(lv), records, flag=_step_flag)
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

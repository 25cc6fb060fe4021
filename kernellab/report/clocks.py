"""Compute-bound cases this set runs SLOWER than another: the clocks and power recorded with them.

A compute-bound kernel runs at the SM clock; a clock below the device's maximum while the
case ran points to power or thermal capping rather than to the code. Each case's SM clock is
NVML's reading after its last timed batch (summary.csv ``sm_clock_mhz``), its board power the
same reading's (bench/<kernel>.csv ``power_w``, where recorded); the maximum and the power
limit are survey.json's ``nvml`` block.
"""

from __future__ import annotations

import math

from kernellab.engine.stats import SLOWER
from kernellab.report import fmt
from kernellab.report.load import Results
from kernellab.report.tables import Table

MAX_ROWS = 15  # the slowest first; the rest are in the common cases table


def _nvml(survey: dict) -> dict:
    v = survey.get("nvml") if isinstance(survey, dict) else None
    return v if isinstance(v, dict) else {}


def max_sm_clock(survey: dict) -> float:
    """The device's maximum SM clock in MHz: survey.json's nvml ``max_sm_clock_mhz``, else
    ``clocks.sm_max_mhz`` (older surveys); NaN when neither is recorded."""
    mhz = fmt.to_float(_nvml(survey).get("max_sm_clock_mhz"))
    if math.isfinite(mhz) and mhz > 0:
        return mhz
    clocks = survey.get("clocks") if isinstance(survey, dict) else None
    mhz = fmt.to_float(clocks.get("sm_max_mhz")) if isinstance(clocks, dict) else math.nan
    return mhz if math.isfinite(mhz) and mhz > 0 else math.nan


def power_limit(survey: dict) -> float:
    w = fmt.to_float(_nvml(survey).get("power_limit_w"))
    return w if math.isfinite(w) and w > 0 else math.nan


def _mhz(x: float) -> str:
    return fmt.integer(x) if math.isfinite(x) else fmt.NA


def _watts(x: float) -> str:
    return f"{x:,.0f}" if math.isfinite(x) else fmt.NA


def clock_note(r: dict, res: Results) -> str:
    """Why a case of ``res`` (the slower set) may have been slow, from its clock and power."""
    clk, top = r.get("sm_clock_mhz", math.nan), max_sm_clock(res.survey)
    if not math.isfinite(clk):
        note = f"no SM clock recorded on {res.hardware}"
    elif not math.isfinite(top):
        note = f"{res.hardware}'s max SM clock is not in survey.json"
    elif clk < top:
        note = (
            f"{res.hardware} at {_mhz(clk)} of its max {_mhz(top)} MHz ({fmt.pct(100 * clk / top, 0)}): "
            "power- or thermally-capped clocks"
        )
        power, limit = r.get("power_w", math.nan), power_limit(res.survey)
        if math.isfinite(power) and math.isfinite(limit):
            note += f", drawing {_watts(power)} of its {_watts(limit)} W limit"
    else:
        note = f"{res.hardware} at its max SM clock: not clock-capped"
    throttled = r.get("throttled_samples", math.nan)
    if math.isfinite(throttled) and throttled > 0:
        note += f"; {fmt.integer(throttled)} sample(s) taken while NVML reported throttling"
    return note


def slower_compute_table(res: Results, other: Results, pairs: list[dict]) -> tuple[Table | None, str]:
    """(table, sentence): the compute-bound pairs SLOWER on ``res``, slowest first, with both sets'
    SM clocks, both sets' power where either recorded it, and a note on the slower one's clock."""
    this, that = res.hardware, other.hardware
    compute = [p for p in pairs if p["bound"] == "compute"]
    slow = sorted(
        (p for p in compute if p["verdict"] == SLOWER),
        key=lambda p: (p["ratio"], p["kernel"], p["impl_key"], p["dtype"], p["shape"], p["params"]),
    )
    if not compute:
        return None, ""
    if not slow:
        return None, f"No compute-bound case is SLOWER on {this} than on {that}."
    if res.is_cpu:
        return None, f"{len(slow)} compute-bound case(s) SLOWER on {this}, a CPU run: no SM clock to explain them."
    power = any(math.isfinite(p[side].get("power_w", math.nan)) for p in slow for side in ("a", "b"))
    cols = ["kernel", "impl_key", "dtype", "shape", "params", f"time ratio {that} / {this}"]
    cols += [f"{this} SM MHz", f"{that} SM MHz"]
    cols += [f"{this} W", f"{that} W"] if power else []
    t = Table([*cols, "note"], numeric=[False] * 5 + [True] * (len(cols) - 5) + [False])
    for p in slow[:MAX_ROWS]:
        a, b = p["a"], p["b"]
        cells = [p["kernel"], p["impl_key"], p["dtype"], p["shape"], p["params"], fmt.ratio(p["ratio"])]
        cells += [_mhz(a.get("sm_clock_mhz", math.nan)), _mhz(b.get("sm_clock_mhz", math.nan))]
        cells += [_watts(a.get("power_w", math.nan)), _watts(b.get("power_w", math.nan))] if power else []
        t.add([*cells, clock_note(a, res)], "bad")
    sentence = (
        f"Compute-bound cases SLOWER on {this}: the SM clock NVML read after each case's last timed batch "
        f"on both sets{' and the board power at that reading' if power else ''}. A compute-bound case runs at "
        "the SM clock: one below the device's maximum (survey.json nvml max_sm_clock_mhz) points to power- "
        "or thermally-capped clocks, not to the code."
    )
    if len(slow) > MAX_ROWS:
        sentence += f" The {MAX_ROWS} slowest of {len(slow)}; the others are in the common cases table."
    return t, sentence

"""Per-kernel tables: cases, correctness, profiler and autotuning."""

from __future__ import annotations

import math

from kernellab.report import fmt
from kernellab.report.load import Results, check_failed, shape_sort_key
from kernellab.report.model import (
    flag_of,
    metric_label,
    pct_of_ceiling,
    value,
)
from kernellab.report.tables import Column, Table, field_column, table_of
from kernellab.rows import columns as row_columns


def _pass_rank(r) -> int:
    order = next(c.enum for c in row_columns() if c.name == "pass")  # the schema's: forward first
    p = r.get("pass") or "forward"
    return order.index(p) if p in order else len(order)


def _case_columns(res: Results, metric: str, passes: bool = False) -> list[Column]:
    def spread(r):
        if math.isfinite(r["p20_us"]) and math.isfinite(r["p80_us"]):
            return f"{fmt.us(r['p20_us'])}–{fmt.us(r['p80_us'])}"
        return fmt.NA

    return [
        Column("mark", "text", lambda r: flag_of(r)[1]),
        field_column("impl_key"),
        *([Column("pass", "text", lambda r: r.get("pass") or "forward")] if passes else []),
        field_column("dtype"),
        field_column("shape"),
        field_column("params"),
        field_column("mode"),
        Column("median µs", "num", lambda r: fmt.us(r["median_us"])),
        Column("p20–p80 µs", "num", spread),
        Column(metric_label(metric), "num", lambda r: fmt.throughput(value(r, metric), metric)),
        Column("% of peak", "num",
               lambda r: fmt.pct(pct_of_ceiling(r, metric, res.survey)) + (" ↑" if r.get("above_survey") else "")),
        Column("speedup", "num", lambda r: fmt.ratio(r["speedup"])),
        Column("stdrel", "num", lambda r: fmt.pct(100 * r["stdrel"], 2)),
        Column("n", "num", lambda r: fmt.integer(r["n_samples"])),
        Column("converged", "text", lambda r: fmt.yes_no(r["converged"])),
        Column("SM MHz", "num", lambda r: fmt.integer(r["sm_clock_mhz"])),
        Column("graph µs", "num", lambda r: fmt.us(r["graph_us"])),
        Column("throttled", "num", lambda r: fmt.integer(r["throttled_samples"])),
        Column("rel err", "num", lambda r: fmt.sci(r["max_rel_err"])),
        Column("check", "text", lambda r: r["check_status"] or fmt.NA),
        field_column("status"),
        field_column("reason"),
    ]


def cases_table(res: Results, kernel: str, metric: str) -> Table:
    rows = [r for r in res.summary if r["kernel"] == kernel]
    rows.sort(
        key=lambda r: (
            _pass_rank(r),
            r["dtype"],
            r["params"],
            r["mode"],
            shape_sort_key(r["shape"], r["numel"]),
            r["impl_key"],
        )
    )
    # the pass column where the kernel has a backward case (a forward-only set renders as before)
    passes = any(_pass_rank(r) for r in rows)
    return table_of(_case_columns(res, metric, passes), rows, flag=lambda r: flag_of(r)[0])


def correctness_table(res: Results, kernel: str) -> tuple[Table, str]:
    checks = res.checks.get(kernel, [])
    t = Table(
        [
            "mark",
            "impl_key",
            "dtype",
            "shape",
            "params",
            "seeds",
            "worst rel err",
            "worst max abs",
            "tolerance",
            "status",
            "reason",
        ],
        numeric=[False, False, False, False, False, True, True, True, True, False, False],
    )
    if checks:
        groups: dict[tuple, list[dict]] = {}
        for c in checks:
            groups.setdefault((c["impl_key"], c["dtype"], c["shape"], c.get("params", "")), []).append(c)
        order = {"failed": 0, "error": 1, "timeout": 2, "oom": 3, "unavailable": 4, "ok": 6}
        for (key, dtype, shape, params), cs in sorted(
            groups.items(), key=lambda kv: (kv[0][1], kv[0][3], shape_sort_key(kv[0][2]), kv[0][0])
        ):
            statuses = sorted({c["status"] or "unknown" for c in cs}, key=lambda s: (order.get(s, 5), s))
            status = statuses[0]
            rel = [c["rel_err"] for c in cs if math.isfinite(c["rel_err"])]
            mab = [c["max_abs"] for c in cs if math.isfinite(c["max_abs"])]
            tols = sorted({c["tol"] for c in cs if math.isfinite(c["tol"])})
            reasons = sorted({c["reason"] for c in cs if c["reason"]})
            bad = status not in ("ok", "unavailable")
            t.add(
                [
                    "⚠" if bad else "✓" if status == "ok" else "",
                    key,
                    dtype,
                    shape,
                    params,
                    str(len(cs)),
                    fmt.sci(max(rel)) if rel else fmt.NA,
                    fmt.sci(max(mab)) if mab else fmt.NA,
                    ", ".join(fmt.sci(x) for x in tols) or fmt.NA,
                    status,
                    "; ".join(reasons),
                ],
                "bad" if bad else "",
            )
        return t, f"check/{kernel}.csv"
    rows = [r for r in res.summary if r["kernel"] == kernel]
    rows.sort(key=lambda r: (r["dtype"], r["params"], shape_sort_key(r["shape"], r["numel"]), r["impl_key"]))
    seen = set()
    for r in rows:
        k = (r["impl_key"], r["dtype"], r["shape"], r["params"])
        if k in seen:
            continue
        seen.add(k)
        bad = check_failed(r)
        t.add(
            [
                "⚠" if bad else "✓" if r["check_status"] == "ok" else "",
                r["impl_key"],
                r["dtype"],
                r["shape"],
                r["params"],
                fmt.NA,
                fmt.sci(r["max_rel_err"]),
                fmt.sci(r["max_abs_err"]),
                fmt.NA,
                r["check_status"] or fmt.NA,
                r["reason"] if bad else "",
            ],
            "bad" if bad else "",
        )
    return t, "summary.csv (max_rel_err, check_status)"


def profile_table(res: Results, kernel: str) -> Table:
    t = Table(
        ["impl_key", "dtype", "shape", "rank", "device kernel", "calls", "CPU µs", "device µs", "% of time"],
        numeric=[False, False, False, True, False, True, True, True, True],
    )
    rows = sorted(
        res.profiles.get(kernel, []),
        key=lambda r: (
            r["impl_key"],
            r["dtype"],
            shape_sort_key(r["shape"]),
            r["rank"] if math.isfinite(r["rank"]) else math.inf,
            r["name"],
        ),
    )
    for r in rows:
        if math.isfinite(r["rank"]) and r["rank"] > 10:
            continue
        t.add(
            [
                r["impl_key"],
                r["dtype"],
                r["shape"],
                fmt.integer(r["rank"]),
                r["name"],
                fmt.integer(r["calls"]),
                fmt.us(r["cpu_time_us"]),
                fmt.us(r["device_time_us"]),
                fmt.pct(r["pct"]),
            ]
        )
    return t


_TUNED = [field_column("impl_key"), field_column("Triton kernel", "triton_kernel"), field_column("dtype"),
          field_column("shape")]  # what a timed config and a winner row both start with


def _ratio_to_slowest(g: dict) -> str:
    return fmt.ratio(max(r["median_us"] for r in g["ok"]) / g["winner"]["median_us"])


AUTOTUNE_WINNER_COLUMNS = [
    *_TUNED,
    Column("winning config", "text", lambda g: g["winner"]["config"] if g["winner"] else "⚠ no config ran"),
    Column("median µs", "num", lambda g: fmt.us(g["winner"]["median_us"]) if g["winner"] else fmt.NA),
    Column("configs timed", "num", lambda g: str(len(g["runs"]))),
    Column("failed", "num", lambda g: str(len(g["runs"]) - len(g["ok"]))),
    Column("slowest / winner", "num", lambda g: _ratio_to_slowest(g) if g["winner"] else fmt.NA),
]
AUTOTUNE_RUN_COLUMNS = [  # a record: a timed config's row with its share of its group's winner
    *_TUNED,
    field_column("config"),
    Column("median µs", "num", lambda r: fmt.us(r["median_us"])),
    Column("× winner", "num", lambda r: fmt.ratio(r["over_winner"])),
    Column("status", "text", lambda r: ("⚠ " if r["failed"] else "") + (r["status"] or fmt.NA)),
    Column("winner", "text", lambda r: "★" if r["is_winner"] else ""),
]


def _autotune_groups(rows: list[dict]) -> list[dict]:
    """A record per (impl_key, Triton kernel, dtype, shape): its runs, those that ran, and the winner
    (the fastest of those marked best, else of those that ran; None where none ran)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["impl_key"], r["triton_kernel"], r["dtype"], r["shape"]), []).append(r)
    out = []
    for (key, tk, dtype, shape), rs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], shape_sort_key(kv[0][3]))
    ):
        ok = [r for r in rs if r["status"] in ("ok", "") and math.isfinite(r["median_us"]) and r["median_us"] > 0]
        marked = [r for r in ok if r["is_best"]]
        winner = min(marked or ok, key=lambda r: (r["median_us"], r["config"]), default=None)
        out.append({"impl_key": key, "triton_kernel": tk, "dtype": dtype, "shape": shape, "runs": rs, "ok": ok,
                    "winner": winner})
    return out


def _autotune_runs(g: dict) -> list[dict]:
    """A group's runs, fastest first, each with its time over the winner's and whether it failed."""
    ok_ids = {id(r) for r in g["ok"]}
    winner = g["winner"]
    return [
        {**r, "over_winner": r["median_us"] / winner["median_us"] if winner is not None else math.nan,
         "is_winner": winner is not None and r is winner, "failed": id(r) not in ok_ids}
        for r in sorted(g["runs"], key=lambda r: (r["median_us"] if math.isfinite(r["median_us"]) else math.inf,
                                                  r["config"]))
    ]


def autotune_tables(res: Results, kernel: str) -> tuple[Table, Table]:
    """The winner of each autotuned case, and every config timed (the winner starred)."""
    groups = _autotune_groups(res.autotune.get(kernel, []))
    win = table_of(AUTOTUNE_WINNER_COLUMNS, groups, lambda g: "best" if g["winner"] else "bad")
    runs = [r for g in groups for r in _autotune_runs(g)]
    full = table_of(AUTOTUNE_RUN_COLUMNS, runs,
                    lambda r: "best" if r["is_winner"] else ("bad" if r["failed"] else ""))
    return win, full

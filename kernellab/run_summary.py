"""The screen a finished run ends with: each result set written, its cases by outcome, and
where its report is."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

ABSENT = ("unavailable",)  # expected absences (no GPU, no ncu), not failures


def run_summary(results: str | Path, sets) -> str:
    lines = ["kernellab: run complete"]
    for name in sets:
        summary = Path(results) / name / "summary.csv"
        if not summary.exists():
            lines.append(f"  {name}: no summary.csv (not published)")
            continue
        df = pd.read_csv(summary, keep_default_na=False)
        ok = int(((df["status"] == "ok") & (df["check_status"] == "ok")).sum())
        absent = int(df["status"].isin(ABSENT).sum())
        failed = len(df) - ok - absent
        lines.append(f"  {name}: {len(df)} cases: {ok} ok, {failed} failed, {absent} unavailable here")
        lines.append(f"    report: {summary.parent / 'report.html'}   log: {summary.parent / 'KERNEL_LOG.md'}")
    return "\n".join(lines)

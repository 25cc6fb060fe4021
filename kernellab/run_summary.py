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


def stopped_message(snakemake_log) -> str:
    """What a run that stopped early says last: after Ctrl-C (Snakemake's log says it
    terminated the jobs on user request) the one line a job says too, else that a job failed.
    ``snakemake_log``: what Snakemake hands its onerror handler (a path, a list of them, None)."""
    from kernellab.pipeline import INTERRUPTED

    paths = [snakemake_log] if isinstance(snakemake_log, (str, Path)) else list(snakemake_log or [])
    text = ""
    for path in paths:
        try:
            text += Path(path).read_text(errors="replace")
        except OSError:
            pass
    if "Terminating processes on user request" in text:
        return f"kernellab: {INTERRUPTED}"
    return ("kernellab: the run stopped before its end (a job failed: its log is above); finished jobs are kept, "
            "and rerunning the same command resumes.")

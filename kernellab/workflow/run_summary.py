"""The screen a finished run ends with: each result set written, its cases by outcome, the cases
that failed or raised and the families skipped at load, each with its reason, and where its
report is; and the run's exit status (``finish``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from kernellab.engine.case_status import ABSENT, case_label, check_only_groups, failure_status
from kernellab.io import read_json

MAX_GROUPS = 12  # failure lines per set; the report's failure table has them all


def _failure_lines(df: pd.DataFrame) -> list[str]:
    """One line per kernel, implementation, status and reason, naming its cases."""
    bad = df[~((df["status"] == "ok") & (df["check_status"] == "ok")) & ~df["status"].isin(ABSENT)]
    groups: dict[tuple, list[str]] = {}
    for r in bad.to_dict("records"):
        status = failure_status(r["status"], r["check_status"])
        case = f"{r.get('dtype', '')} {r.get('shape', '')}" + (f" {r['params']}" if r.get("params") else "")
        groups.setdefault((r.get("kernel", ""), r.get("impl_key", ""), status, r.get("reason", "")), []).append(case)
    lines = []
    for (kernel, key, status, reason), cases in sorted(groups.items()):
        which = ", ".join(cases[:4]) + (f", +{len(cases) - 4}" if len(cases) > 4 else "")
        lines.append(f"    {status}: {kernel} {key} ({which}): {reason or 'no reason recorded'}")
    if len(lines) > MAX_GROUPS:
        lines[MAX_GROUPS:] = [f"    ... and {len(lines) - MAX_GROUPS} more (the report's Failures table)"]
    return lines


def _check_only_lines(check_dir: Path, summary: pd.DataFrame) -> list[str]:
    """One line per kernel, implementation and reason that failed a check on a shape only checked
    (no summary row holds it), naming its cases."""
    frames = []
    for p in sorted(check_dir.glob("*.csv")):
        try:
            frames.append(pd.read_csv(p, keep_default_na=False, dtype=str))
        except pd.errors.EmptyDataError:  # a job that wrote no row writes an empty table
            continue
    rows = pd.concat(frames).to_dict("records") if frames else []
    groups = check_only_groups(rows, summary.astype(str).to_dict("records"))
    return [f"    {status} on a shape only checked: {kernel} {key} ({', '.join(map(case_label, cases))}): {reason}"
            for (kernel, key, status, reason), cases in sorted(groups.items())]


def closing(results: str | Path, sets, skipped: dict[str, str] | None = None) -> tuple[str, bool]:
    """(the closing summary, whether the run was clean: no case of a published set failed or
    raised, no family was skipped at load). ``skipped``: family folder -> why it did not load,
    beside those each published set's environment.json lists (``skipped_families``)."""
    lines, clean, skipped = [], True, dict(skipped or {})
    for name in sets:
        summary = Path(results) / name / "summary.csv"
        if not summary.exists():
            lines.append(f"  {name}: no summary.csv (not published)")  # a run of some targets only
            continue
        try:
            env = read_json(summary.parent / "environment.json")
        except (OSError, ValueError):
            env = {}
        skipped.update((env.get("skipped_families") if isinstance(env, dict) else None) or {})
        df = pd.read_csv(summary, keep_default_na=False)
        ok = int(((df["status"] == "ok") & (df["check_status"] == "ok")).sum())
        absent = int(df["status"].isin(ABSENT).sum())
        failed = len(df) - ok - absent
        clean = clean and failed == 0
        lines.append(f"  {name}: {len(df)} cases: {ok} ok, {failed} failed, {absent} unavailable here")
        lines += _failure_lines(df)
        unseen = _check_only_lines(summary.parent / "check", df)
        clean = clean and not unseen
        lines += unseen
        lines.append(f"    report: {summary.parent / 'report.html'}   log: {summary.parent / 'KERNEL_LOG.md'}")
    for family, why in sorted(skipped.items()):
        lines.append(f"  family {family!r} skipped: it did not load: {why}")
        clean = False
    head = "kernellab: run complete" if clean else (
        "kernellab: run complete, with failures (exit status 1): the set and its report are published; "
        "each case's reason is below and in the report, its traceback in logs/measure/<family>.log")
    return "\n".join([head, *lines]), clean


def run_summary(results: str | Path, sets, skipped: dict[str, str] | None = None) -> str:
    return closing(results, sets, skipped)[0]


def finish(results: str | Path, sets, skipped: dict[str, str] | None = None, stream=None) -> int:
    """Print the closing summary; the exit status the run should end with (1: not clean)."""
    text, clean = closing(results, sets, skipped)
    print(text, file=stream or sys.stderr, flush=True)
    return 0 if clean else 1


def stopped_message(snakemake_log, interrupted: bool = False) -> str:
    """What a run that stopped early says last: after Ctrl-C (``interrupted``, or Snakemake's log
    says it terminated the jobs on user request) the one line a job says too, else that a job
    failed. ``snakemake_log``: what Snakemake hands its onerror handler (a path, a list, None)."""
    from kernellab.workflow.pipeline import INTERRUPTED

    if interrupted:
        return f"kernellab: {INTERRUPTED}"
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

"""What a case's status says: which statuses are expected absences rather than failures, and
what a case that gave no result is called. The run's closing screen
(``kernellab.workflow.run_summary``) and the report (``kernellab.report.outcomes``) both count
cases by these, so they live below both."""

from __future__ import annotations

ABSENT = ("unavailable",)  # expected absences (no GPU, no ncu), not failures


def failure_status(status: str, check_status: str) -> str:
    """What a case that did not give a result is called: its status, else (the benchmark ran)
    its check's ("incorrect": wrong numbers)."""
    if status != "ok":
        return status
    return "incorrect" if check_status == "failed" else f"check {check_status}"


def check_only_failures(checks, summary) -> list[dict]:
    """The check rows (any seed) that did not pass on a case the benchmark does not time: a shape
    only checked (rows no multiple of a tile, one element). The summary has no row for such a case,
    so without this a wrong result there would go unseen. ``checks`` and ``summary``: iterables of
    row dicts (kernel, impl_key, shape, dtype, params, status, reason)."""
    def key(r):
        return tuple(str(r.get(k, "")) for k in ("kernel", "impl_key", "shape", "dtype", "params"))

    timed = {key(r) for r in summary}
    return [r for r in checks if r.get("status") not in ("ok", *ABSENT) and key(r) not in timed]


def case_label(r: dict) -> str:
    """A case as the closing screen and the report name it: dtype, shape and parameters."""
    return f"{r['dtype']} {r['shape']}" + (f" {r['params']}" if r.get("params") else "")


def check_only_groups(checks, summary) -> dict[tuple, list[dict]]:
    """``check_only_failures`` grouped by (kernel, impl_key, status, reason): each group's cases
    in the order met, one row per case whatever its seeds."""
    groups: dict[tuple, list[dict]] = {}
    seen: set[tuple] = set()
    for r in check_only_failures(checks, summary):
        group = (r["kernel"], r["impl_key"], r["status"], r["reason"])
        rows = groups.setdefault(group, [])
        if (group, case_label(r)) not in seen:
            seen.add((group, case_label(r)))
            rows.append(r)
    return groups

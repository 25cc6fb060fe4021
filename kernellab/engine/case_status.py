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

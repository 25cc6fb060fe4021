"""Cases that did not measure: real failures apart from expected absences, and the families that did
not load (no case of theirs in the set)."""

from __future__ import annotations

import math

from kernellab.engine.case_status import ABSENT, case_label, check_only_groups, failure_status  # absences: not failures
from kernellab.report import fmt
from kernellab.report.load import Results, check_failed, shape_sort_key
from kernellab.report.tables import Table


def absences_table(res: Results) -> Table:
    """What could not run here, one line per implementation and reason (the kernels listed)."""
    groups: dict[tuple, list[dict]] = {}
    for r in res.summary:
        if r["status"] in ABSENT:
            groups.setdefault((r["impl_key"], r["reason"]), []).append(r)
    t = Table(["implementation", "kernels", "cases", "why"], numeric=[False, False, True, False])
    for (key, reason), rows in sorted(groups.items()):
        kernels = sorted({r["kernel"] for r in rows})
        t.add([key, ", ".join(kernels), str(len(rows)), reason or fmt.NA])
    return t


def failures_table(res: Results) -> Table:
    groups: dict[tuple, list[dict]] = {}
    for r in res.summary:
        if r["status"] in ABSENT:
            continue
        if r["status"] != "ok" or check_failed(r):
            status = failure_status(r["status"], r["check_status"])
            reason = r["reason"]
            if r["status"] == "ok" and not reason:
                reason = f"correctness check {r['check_status']}"
            groups.setdefault((r["kernel"], r["impl_key"], status, reason), []).append(r)
    checks = [r for rows in res.checks.values() for r in rows]
    for (kernel, key, status, reason), cases in check_only_groups(checks, res.summary).items():
        groups[(kernel, key, f"{status} (a shape only checked)", reason)] = [{**r, "numel": math.nan} for r in cases]
    t = Table(["kernel", "impl_key", "status", "cases", "which", "reason"], numeric=[False, False, False, True])
    for (kernel, key, status, reason), rows in sorted(groups.items()):
        rows = sorted(rows, key=lambda r: (r["dtype"], shape_sort_key(r["shape"], r["numel"])))
        which = [case_label(r) for r in rows]
        shown = ", ".join(which[:6]) + (f", … (+{len(which) - 6})" if len(which) > 6 else "")
        t.add([kernel, key, f"⚠ {status}", str(len(rows)), shown, reason or fmt.NA], "bad")
    return t


def skipped_table(res: Results) -> Table:
    """The families skipped at load (environment.json's ``skipped_families``), each with why: the
    set holds no row of theirs."""
    t = Table(["family", "why it did not load"])
    for family, why in sorted((res.environment.get("skipped_families") or {}).items()):
        t.add([family, f"⚠ {why}"], "bad")
    return t

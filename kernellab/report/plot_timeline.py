"""The run's timeline as a Gantt chart: one bar per job on a lane of its device (a GPU, or the
CPU: jobs that ran side by side on one get a lane each), coloured by rule, with the phases of
the measure jobs (tuning, checking, timing, compiling) shaded inside their bars."""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from kernellab.report.fmt import mpl_text
from kernellab.report.plots import DPI, colors_for, png_bytes, style

# the phases' own colours, apart from the rules' (which come from the palette)
PHASE_COLORS = {"tune": "#6a3d9a", "check": "#33a02c", "bench": "#e31a1c", "compile": "#ff7f00",
                "compile ahead": "#fdbf6f", "torch.compile": "#b15928", "profile": "#1f78b4",
                "start-up": "#bbbbbb"}


def _finite(r: dict) -> bool:
    return math.isfinite(r["start"]) and math.isfinite(r["end"])


def devices(jobs: list[dict]) -> list[str]:
    """Each job's device as the chart names it: ``gpu 0``, or ``host: gpu 0`` where the jobs ran on
    several hosts (a cluster)."""
    hosts = {j["host"] for j in jobs}
    return [f"{j['host']}: {j['device']}" if len(hosts) > 1 else j["device"] for j in jobs]


def lanes(jobs: list[dict]) -> tuple[list[str], dict[int, int]]:
    """(lane labels, {index of a job: its lane}): a lane per device and host (GPUs first), split
    where jobs overlap on it (a job takes the first of its device's lanes free at its start)."""
    dev_of = devices(jobs)
    ends: dict[str, list[float]] = {}  # device -> the last end on each of its lanes
    sub: dict[int, int] = {}
    for i in sorted(range(len(jobs)), key=lambda i: jobs[i]["start"]):
        taken = ends.setdefault(dev_of[i], [])
        k = next((k for k, end in enumerate(taken) if end <= jobs[i]["start"]), len(taken))
        taken[k:k + 1] = [jobs[i]["end"]]
        sub[i] = k
    labels, offset = [], {}
    for dev in sorted(ends, key=lambda d: (d.endswith("cpu"), d)):
        offset[dev] = len(labels)
        labels += [dev if k == 0 else f"{dev} #{k + 1}" for k in range(len(ends[dev]))]
    return labels, {i: offset[dev_of[i]] + sub[i] for i in sub}


def timeline_figure(jobs: list[dict], phases: list[dict], title: str) -> bytes | None:
    """The Gantt chart of ``jobs`` and ``phases`` (timeline.csv's rows, times in seconds since
    the epoch); None without a finished job."""
    jobs = [j for j in jobs if _finite(j)]
    if not jobs:
        return None
    t0 = min(j["start"] for j in jobs)
    names, lane_of = lanes(jobs)
    lane_by_job = {j["job"]: lane_of[i] for i, j in enumerate(jobs)}
    rule_colors = colors_for(j["rule"] for j in jobs)
    with style():
        fig = Figure(figsize=(10.0, 1.8 + 0.32 * len(names)), dpi=DPI)
        ax = fig.add_subplot()
        for i, j in enumerate(jobs):
            ax.barh(lane_of[i], j["end"] - j["start"], left=j["start"] - t0, height=0.8, color=rule_colors[j["rule"]],
                    alpha=0.45, edgecolor=rule_colors[j["rule"]], linewidth=0.6)
        shown = set()
        # the longest first, so that a phase nested in another (compiling inside tuning) shows on top
        for p in sorted((p for p in phases if _finite(p) and p["job"] in lane_by_job),
                        key=lambda p: -(p["end"] - p["start"])):
            color = PHASE_COLORS.get(p["phase"], "#999999")
            ax.barh(lane_by_job[p["job"]], p["end"] - p["start"], left=p["start"] - t0, height=0.42, color=color,
                    linewidth=0)
            shown.add(p["phase"])
        ax.set_yticks(range(len(names)), [mpl_text(n) for n in names])
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_xlim(0, max(j["end"] for j in jobs) - t0)
        ax.set_xlabel("seconds since the first job started")
        ax.grid(axis="y", visible=False)
        handles = [Patch(color=c, alpha=0.45, label=mpl_text(r)) for r, c in rule_colors.items()]
        handles += [Patch(color=PHASE_COLORS.get(p, "#999999"), label=mpl_text(f"phase: {p}")) for p in sorted(shown)]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        fig.suptitle(mpl_text(title))
        fig.tight_layout()
        return png_bytes(fig)

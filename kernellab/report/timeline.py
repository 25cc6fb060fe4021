"""The report's section on where the run's time went, from the set's timeline.csv
(``kernellab.workflow.timeline``): the Gantt chart, the ten costliest jobs, the run's wall time
against the sum of its jobs, the time each GPU waited between its jobs, and each phase's
total. A set without timeline.csv (one made before timelines, a reference) has no section."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from kernellab.report import fmt, plot_timeline
from kernellab.report.tables import Table
from kernellab.report.views import Image

NAME = "timeline.csv"
TOP = 10
GAPS = 3  # the longest waits of a GPU named in the note
MIN_GAP_S = 5.0  # shorter waits are a job's exit and Snakemake's turn, not worth naming


@dataclass
class TimelineView:
    note: str  # the run's wall time against the sum of its jobs
    costliest: Table
    phases: Table
    image: Image | None = None


def read(path: Path) -> list[dict]:
    """timeline.csv's rows, times as floats (nan where empty); [] without the file."""
    if not path.is_file():
        return []
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in ("start", "end", "seconds"):
            r[k] = fmt.to_float(r.get(k))
        for k in ("kind", "job", "rule", "impl", "phase", "device", "host", "status"):
            r[k] = r.get(k) or ""
    return rows


def duration(seconds: float) -> str:
    """``42.0 s``, ``10 min 45 s``."""
    if not math.isfinite(seconds):
        return "–"
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s"


def _costliest(jobs: list[dict], total: float, t0: float) -> Table:
    t = Table(["job", "device", "started at (s)", "seconds", "share of all jobs", "status"],
              numeric=[False, False, True, True, True, False])
    done = [j for j in jobs if math.isfinite(j["seconds"])]
    for j in sorted(done, key=lambda j: -j["seconds"])[:TOP]:
        t.add([j["job"], j["device"], fmt.num(j["start"] - t0), fmt.num(j["seconds"]),
               fmt.pct(100 * j["seconds"] / total) if total > 0 else "–", j["status"]],
              flag="" if j["status"] == "ok" else "bad")
    return t


@dataclass
class GpuWait:
    device: str  # "gpu 0", or "host: gpu 0" on a cluster
    span: float  # from the device's first job's start to its last job's end
    idle: float  # the part of span no job of the device ran
    gaps: list[tuple[float, str, str]]  # the longest waits: (seconds, the job before, the job after)


def gpu_waits(jobs: list[dict]) -> list[GpuWait]:
    """For each GPU of the run, the time between its first job's start and its last job's end
    in which none of its jobs ran, with the longest such waits and the jobs either side: what the
    jobs' own records cannot show (a job's exit after its last record, the scheduler's turn
    between two jobs, an attempt whose record is gone)."""
    by: dict[str, list[dict]] = {}
    for j, device in zip(jobs, plot_timeline.devices(jobs), strict=True):
        if j["device"].startswith("gpu") and math.isfinite(j["start"]) and math.isfinite(j["end"]):
            by.setdefault(device, []).append(j)
    waits = []
    for device, own in sorted(by.items()):
        own.sort(key=lambda j: j["start"])
        idle, gaps, last = 0.0, [], own[0]
        for j in own[1:]:
            if j["start"] > last["end"]:
                gap = j["start"] - last["end"]
                idle += gap
                if gap >= MIN_GAP_S:
                    gaps.append((gap, last["job"], j["job"]))
            if j["end"] > last["end"]:
                last = j
        span = max(j["end"] for j in own) - own[0]["start"]
        waits.append(GpuWait(device, span, idle, sorted(gaps, key=lambda g: -g[0])[:GAPS]))
    return waits


def _ran_again(jobs: list[dict]) -> list[dict]:
    """The attempts of a job that ran again after them (a resumed run's interrupted jobs)."""
    last: dict[str, dict] = {}
    for j in sorted(jobs, key=lambda j: j["start"]):
        last[j["job"]] = j
    return [j for j in jobs if last[j["job"]] is not j]


def _waits_note(waits: list[GpuWait]) -> str:
    parts = []
    for w in waits:
        if w.span <= 0:
            continue
        text = (f" On {w.device} no job ran for {duration(w.idle)} ({100 * w.idle / w.span:.0f}% of the "
                f"{duration(w.span)} from its first job's start to its last job's end)")
        if w.gaps:
            text += "; the longest waits: " + ", ".join(f"{duration(g)} between {a} and {b}" for g, a, b in w.gaps)
        parts.append(text + ".")
    return "".join(parts)


def _phase_totals(jobs: list[dict], phases: list[dict]) -> Table:
    """Each phase's seconds over every measure job, against the measure jobs' own."""
    measure = sum(j["seconds"] for j in jobs if j["rule"] == "measure" and math.isfinite(j["seconds"]))
    t = Table(["phase", "seconds", "share of the measure jobs' time", "implementations"],
              numeric=[False, True, True, True])
    by: dict[str, list[dict]] = {}
    for p in phases:
        if p["rule"] == "measure" and math.isfinite(p["seconds"]):
            by.setdefault(p["phase"], []).append(p)
    for name, rows in sorted(by.items(), key=lambda kv: -sum(p["seconds"] for p in kv[1])):
        seconds = sum(p["seconds"] for p in rows)
        t.add([name, fmt.num(seconds), fmt.pct(100 * seconds / measure) if measure > 0 else "–",
               str(len({(p["job"], p["impl"]) for p in rows}))])
    return t


def section(set_dir: Path, hardware: str) -> TimelineView | None:
    """The section of the set at ``set_dir``; None without a timeline.csv or a job in it."""
    rows = read(Path(set_dir) / NAME)
    jobs = [r for r in rows if r["kind"] == "job"]
    if not jobs:
        return None
    phases = [r for r in rows if r["kind"] == "phase"]
    finished = [j for j in jobs if math.isfinite(j["end"])]
    t0 = min(j["start"] for j in jobs)
    wall = max((j["end"] for j in finished), default=math.nan) - t0
    total = sum(j["seconds"] for j in finished)
    note = (f"From the first job's start to the last job's end: {duration(wall)}. The {len(finished)} jobs took "
            f"{duration(total)} together")
    note += f" ({total / wall:.1f}× the wall time: jobs ran side by side)." if wall > 0 else "."
    again = _ran_again(jobs)
    if again:
        spent = sum(j["seconds"] for j in again if math.isfinite(j["seconds"]))
        note += (f" {len(again)} attempt(s) ended early ({', '.join(sorted({j['status'] for j in again}))}) and their "
                 f"jobs ran again: {duration(spent)} of work no result comes from.")
    note += _waits_note(gpu_waits(finished))
    if len(finished) < len(jobs):
        note += f" {len(jobs) - len(finished)} job(s) never recorded their end (killed): left out of the sums."
    data = plot_timeline.timeline_figure(jobs, phases, f"{hardware}: where the run's time went")
    image = Image(name="timeline", alt=f"timeline of the run of {hardware}: jobs per device over time",
                  caption="Each job of the run as a bar on its device's lane (jobs side by side on one device get "
                          "lanes of their own), coloured by rule; inside the measure jobs, their phases.",
                  data=data) if data else None
    return TimelineView(note=note, costliest=_costliest(jobs, total, t0), phases=_phase_totals(jobs, phases),
                        image=image)

"""The run's timeline: each job's start, end, rule, wildcards and device, and the phases of its
work (``kernellab.engine.phases``), as the set's ``timeline.csv``.

Every job records itself (``job_record``, entered by ``pipeline.logged``, which every script
passes through) in a small JSON file beside its log, ``<log>.job.json``: once when it starts
(status ``running``) and again when it ends, with its phases. A job killed outright leaves its
first record, which ``gather`` reports as ``unfinished``. A job that runs again (a run resumed
after an interruption or a failure) moves the record of its attempt that did not end well aside
(``<log>.attempt-<ms>.job.json``), so the time it cost stays in the timeline. The report and
publish steps ``gather`` a set's records into its ``timeline.csv``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import socket
import sys
import time
from pathlib import Path

from kernellab.engine import phases
from kernellab.io import write_csv, write_json

log = logging.getLogger("kernellab")

COLUMNS = ["kind", "job", "rule", "family", "set", "impl", "phase", "device", "host", "start", "end", "seconds",
           "status"]
SUFFIX = ".job.json"
ATTEMPT = ".attempt-"
NAME = "timeline.csv"
# an earlier attempt belongs to the run that resumed it when that run came within this time; one
# older (a run interrupted last week, then the code changed) is another run's and is left out
RESUMED_WITHIN_S = 3600.0
STARTUP_MAX_S = 600.0


def record_path(log_path: str | os.PathLike) -> Path:
    """Where the job with this log keeps its record: ``logs/measure/softmax.log`` ->
    ``logs/measure/softmax.job.json``."""
    p = Path(log_path)
    return p.with_name(p.name.removesuffix(".log") + SUFFIX)


def snakemake_job():
    """The ``snakemake`` object Snakemake puts into a script's namespace (rule, wildcards,
    resources), or None outside a Snakemake job: read here so that no script has to pass it."""
    return getattr(sys.modules.get("__main__"), "snakemake", None)


def _wildcards(job) -> dict[str, str]:
    w = getattr(job, "wildcards", None)
    return {str(k): str(v) for k, v in w.items()} if hasattr(w, "items") else {}


def device_of(uses_gpu: bool) -> str:
    """``gpu <CUDA_VISIBLE_DEVICES>`` for a job holding a GPU (pinned by ``pipeline.job``, or by
    SLURM), else ``cpu``: a GPU job on a host without one pins nothing."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    return f"gpu {visible}" if uses_gpu and visible not in ("", "-1") else "cpu"


def process_start() -> float | None:
    """When this process started (seconds since the epoch), or None where /proc has no answer: a
    job's start-up (the interpreter, Snakemake's preamble, imports) comes before it can record
    itself. /proc gives the start in clock ticks after boot, the boot clock the time since."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        since = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return time.time() - since


def _status(exc: BaseException | None) -> str:
    if exc is None:
        return "ok"
    if isinstance(exc, KeyboardInterrupt) or (isinstance(exc, SystemExit) and exc.code == 130):
        return "interrupted"
    if isinstance(exc, SystemExit) and exc.code in (0, None):
        return "ok"
    return "error"


@contextlib.contextmanager
def job_record(log_path: str | None, job=None):
    """Record the job around the block in ``record_path(log_path)``; ``job``: Snakemake's
    object of the job (by default the script's). Nothing is recorded outside a Snakemake job
    or without a log. A record that cannot be written costs the job nothing but a log line."""
    job = snakemake_job() if job is None else job
    if job is None or not log_path:
        yield
        return
    path = record_path(log_path)
    _set_attempt_aside(path)
    resources = getattr(job, "resources", None)
    gpu = resources.get("gpu", 0) if hasattr(resources, "get") else 0
    rec = {"rule": str(getattr(job, "rule", "")), "wildcards": _wildcards(job), "host": socket.gethostname(),
           "pid": os.getpid(), "process_start": process_start(), "start": time.time(), "status": "running",
           "device": device_of(bool(gpu))}
    _write(path, rec)
    exc = None
    try:
        yield
    except BaseException as e:
        exc = e
        raise
    finally:
        rec.update(end=time.time(), status=_status(exc), device=device_of(bool(gpu)), phases=phases.recorded())
        _write(path, rec)


def _set_attempt_aside(path: Path) -> None:
    """An earlier record of this job that did not end well (interrupted, failed, killed: a job runs
    again only after one of those or a change) keeps its time as an attempt beside it."""
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if not isinstance(rec, dict) or rec.get("status") == "ok":
        return
    start = _number(rec.get("start"))
    stamp = round(1000 * (start if math.isfinite(start) else time.time()))
    try:
        path.rename(path.with_name(f"{path.name.removesuffix(SUFFIX)}{ATTEMPT}{stamp}{SUFFIX}"))
    except OSError as exc:
        log.warning("timeline: the earlier attempt %s not kept: %s", path, exc)


def _write(path: Path, rec: dict) -> None:
    try:
        write_json(path, rec)
    except OSError as exc:
        log.warning("timeline: record %s not written: %s", path, exc)


# ------------------------------------------------------------------ gathering
def _number(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def job_name(rule: str, wildcards: dict) -> str:
    """``measure softmax``: the rule and its wildcards other than the set."""
    return " ".join([rule, *(str(v) for k, v in sorted(wildcards.items()) if k != "set")])


def rows_of(rec: dict) -> list[dict]:
    """A job record as timeline rows: the job's, then its phases' (``kind`` job | phase)."""
    wc = _record_wildcards(rec)
    name = job_name(rec["rule"], wc)
    start, end = _number(rec.get("start")), _number(rec.get("end"))
    # the job began with its process: what came before its record is its start-up phase (a
    # process start ten minutes early is not a job's start-up: a clock gone wrong, a record by hand)
    began = _number(rec.get("process_start"))
    began = began if math.isfinite(began) and start - STARTUP_MAX_S < began < start else start
    status = rec.get("status") or ""
    if not math.isfinite(end):
        status = "unfinished"  # killed before it could write its end
    base = {"job": name, "rule": rec["rule"], "family": wc.get("kernel", ""), "set": wc.get("set", ""),
            "device": rec.get("device", ""), "host": rec.get("host", "")}
    rows = [{**base, "kind": "job", "impl": "", "phase": "", "start": began, "end": end, "seconds": end - began,
             "status": status}]
    if began < start:
        rows.append({**base, "kind": "phase", "impl": "", "phase": "start-up", "start": began, "end": start,
                     "seconds": start - began, "status": ""})
    for p in rec.get("phases") or []:
        ps, pe = _number(p.get("start")), _number(p.get("end"))
        if math.isfinite(ps) and math.isfinite(pe):
            rows.append({**base, "kind": "phase", "impl": p.get("impl", ""), "phase": p.get("phase", ""),
                         "start": ps, "end": pe, "seconds": pe - ps, "status": ""})
    return rows


def gather(set_dir: str | os.PathLike) -> list[dict]:
    """Every job record under ``set_dir``'s logs as timeline rows, by start. A record that cannot
    be read, or has no rule or start, is left out with a warning; the record of the job calling
    this (still running) is left out, and so is an earlier attempt that the job's own record did
    not follow within RESUMED_WITHIN_S (another run's)."""
    records = []
    for path in sorted(Path(set_dir).glob(f"logs/**/*{SUFFIX}")):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            log.warning("timeline: %s left out: %s", path, exc)
            continue
        if not isinstance(rec, dict) or not rec.get("rule") or not math.isfinite(_number(rec.get("start"))):
            log.warning("timeline: %s left out: no rule or start", path)
            continue
        if rec.get("status") == "running" and rec.get("pid") == os.getpid():
            continue
        records.append((ATTEMPT in path.name, rec))
    latest = {_name(rec): _number(rec["start"]) for attempt, rec in records if not attempt}
    rows = []
    for attempt, rec in records:
        if attempt and not _resumed(rec, latest.get(_name(rec))):
            continue
        rows += rows_of(rec)
    rows.sort(key=lambda r: (r["start"], r["kind"] != "job"))
    return rows


def _record_wildcards(rec: dict) -> dict:
    return rec.get("wildcards") if isinstance(rec.get("wildcards"), dict) else {}


def _name(rec: dict) -> str:
    return job_name(rec["rule"], _record_wildcards(rec))


def _resumed(attempt: dict, next_start: float | None) -> bool:
    """Whether the job's latest record (starting at ``next_start``; None: none yet) followed this
    attempt within RESUMED_WITHIN_S of its end (of its start, if it never wrote one)."""
    if next_start is None:
        return True
    end = _number(attempt.get("end"))
    last = end if math.isfinite(end) else _number(attempt.get("start"))
    return next_start - last <= RESUMED_WITHIN_S


def write(set_dir: str | os.PathLike, out_csv: str | os.PathLike | None = None) -> Path | None:
    """``timeline.csv`` of the set (in ``set_dir`` unless ``out_csv``) from its job records;
    None, and no file, where the set has no record (a set made by hand, or before timelines)."""
    out = Path(out_csv) if out_csv is not None else Path(set_dir) / NAME
    rows = [{**r, **{k: round(r[k], 3) for k in ("start", "end", "seconds") if math.isfinite(r[k])}}
            for r in gather(set_dir)]
    if not rows:
        return None
    write_csv(out, rows, columns=COLUMNS)
    return out

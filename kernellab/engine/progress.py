"""What a measure job says on the terminal: a line now and then with the cases done (the rows
``summary.csv`` will have), the time so far and an estimate of the time left, for the job and
for the run; each failing case as it happens; the job's total at its end.

The estimate weighs each implementation's records by what they cost, not by their count:
a benchmark case runs for its time budget, a check is one call, an autotune config is timed
like a benchmark case, torch.compile compiles once per dtype, and an implementation that cannot
run here (CUDA without a GPU) costs nothing. Counting cases instead made the cheap torch
implementations, measured first, promise a job a fifth of its time (issue 33: "about 22 s
left" at 18 s, done at 114 s). The implementation running now is extrapolated at its own rate."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# relative cost of one record (a benchmark case is 1); only the ratios matter, the scale is
# learnt from the job's own clock. Under Triton's interpreter a call runs every program in
# Python: its benchmark cases and checks cost several compiled ones (fitted to the recorded
# CPU jobs of tests/fixtures/progress/)
BENCH, TUNE, CHECK, COMPILE_PER_DTYPE, UNAVAILABLE = 1.0, 1.0, 0.02, 12.0, 0.01
BENCH_INTERPRETED, CHECK_INTERPRETED = 3.0, 0.5


@dataclass
class ImplWork:
    """One implementation's records in a job: checks (cases x seeds), benchmark cases (the
    rows of summary.csv), autotune configs timed, and what it costs."""

    checks: int = 0
    benches: int = 0
    tunes: int = 0
    dtypes: int = 1
    backend: str = "torch"
    runs_here: bool = True  # False: every case will be 'unavailable' (CUDA without a GPU)
    interpreted: bool = False  # Triton under its interpreter: a check costs like a call of a benchmark

    def weight(self, kind: str) -> float:
        if not self.runs_here:
            return UNAVAILABLE
        if kind == "bench":
            return BENCH_INTERPRETED if self.interpreted else BENCH
        if kind == "autotune":
            return TUNE
        check = CHECK_INTERPRETED if self.interpreted else CHECK
        if self.backend == "compile":  # the compiles happen in the first calls: the checks
            check += COMPILE_PER_DTYPE * self.dtypes / max(self.checks, 1)
        return check

    @property
    def total(self) -> float:
        return sum(n * self.weight(kind) for kind, n in (("check", self.checks), ("bench", self.benches),
                                                         ("autotune", self.tunes)))


class Estimator:
    """Seconds left of a job whose implementations run one after the other in ``works``' order:
    the finished work at the job's rate so far, the running implementation at its own rate once
    it has done some of its work."""

    def __init__(self, works: dict[str, ImplWork], t0: float):
        self.works, self.t0 = works, t0
        self.finished: set[str] = set()
        self.current, self.current_t0, self.current_done = None, t0, 0.0

    def record(self, impl: str, kind: str, now: float) -> None:
        if impl != self.current:
            self.current, self.current_t0, self.current_done = impl, self._last_done_at(now), 0.0
        if impl in self.works:
            self.current_done += self.works[impl].weight(kind)

    def _last_done_at(self, now: float) -> float:
        return getattr(self, "_done_at", self.t0)

    def done(self, impl: str, now: float) -> None:
        self.finished.add(impl)
        self._done_at = now
        self.current, self.current_done = None, 0.0

    @property
    def work_total(self) -> float:
        return sum(w.total for w in self.works.values())

    def work_done(self) -> float:
        return sum(self.works[k].total for k in self.finished if k in self.works) + self.current_done

    def left(self, now: float) -> float | None:
        done = self.work_done()
        if done <= 0:
            return None
        rate = (now - self.t0) / done
        future = sum(w.total for k, w in self.works.items() if k not in self.finished and k != self.current)
        left = future * rate
        if self.current is not None and self.current in self.works:
            cur = self.works[self.current].total
            cur_left = max(cur - self.current_done, 0.0)
            # its own rate once a quarter of it is done (its first record may carry a compile)
            own = (now - self.current_t0) / self.current_done if self.current_done >= cur / 4 else rate
            left += cur_left * max(own, rate)
        return max(left, 0.0)

    def rate(self, now: float) -> float | None:
        done = self.work_done()
        return (now - self.t0) / done if done > 0 else None


def _fmt(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class Progress:
    """A measure job's lines on the terminal (the process's original stderr, which Snakemake
    shows; the job's own output goes to its log). ``total``: the job's cases, as summary.csv
    counts them; ``works``: each implementation's records (``ImplWork``) for the estimate;
    ``run_left``: a function (this job's work done, ``ImplWork`` units) -> the seconds the run's
    measurements have left, this job's included, or None (``run_left``)."""

    # failing cases named one by one, per family; the rest are counted on the "done" lines (the
    # closing summary and the report list them all)
    MAX_NAMED = 10

    def __init__(self, family: str, total: int, stream=None, every_s: float = 30.0, clock=time.monotonic,
                 works: dict[str, ImplWork] | None = None, run_left=None):
        self.family, self.total, self.count = family, max(total, 1), 0
        self.stream, self.every_s, self.clock = stream, every_s, clock
        self.t0 = self.last = clock()
        self.bad: dict[str, set] = {}  # implementation -> its cases that failed or raised
        self.works = works
        self.estimator = Estimator(works, self.t0) if works else None
        self.run_left = run_left

    def _print(self, line: str) -> str:
        print(line, file=self.stream or terminal(), flush=True)
        return line

    def left(self, count: int) -> float:
        now = self.clock()
        if self.estimator is not None:
            left = self.estimator.left(now)
            if left is not None:
                return left
        elapsed = now - self.t0
        return elapsed / count * (self.total - count) if count else float("nan")

    def _line(self, impl: str, state: str, count: int, problem: str = "") -> str:
        self.last = self.clock()
        elapsed = self.last - self.t0
        left = self.left(count)
        bad = len(self.bad.get(impl, ()))
        run = ""
        if self.run_left is not None and self.estimator is not None:
            rest = self.run_left(self.estimator.work_done())
            if rest is not None:
                run = f"; run: about {_fmt(rest)} left"
        return self._print(f"measure {self.family}: {impl} {state}, {count}/{self.total} cases, {elapsed:.0f} s"
                           + (f", about {_fmt(left)} left" if 0 < count < self.total and left == left else "")
                           + run
                           + (f", {bad} case{'s' * (bad != 1)} failed" if bad and state == "done" else "")
                           + (f" ({problem.splitlines()[0][:80]})" if problem else ""))

    def case(self, impl: str, row: dict, kind: str = "") -> str | None:
        """A check, bench or autotune record as it arrives: a case that failed or raised is named
        at once (implementation, shape, dtype, parameters, status and reason), once per case."""
        if self.estimator is not None and kind:
            self.estimator.record(impl, kind, self.clock())
        if kind == "autotune":
            return None
        status = row.get("status", "ok")
        if status in ("ok", "unavailable"):
            return None
        case = (row.get("shape"), row.get("dtype"), row.get("params") or "")
        mine = self.bad.setdefault(impl, set())
        if case in mine:
            return None
        mine.add(case)
        named = sum(map(len, self.bad.values()))
        if named > self.MAX_NAMED:
            return None
        shape, dtype, params = case
        reason = str(row.get("reason") or "").splitlines()[0][:200] if row.get("reason") else ""
        line = (f"measure {self.family}: {impl} {shape} {dtype}{' ' + params if params else ''} "
                f"{status.upper()}: {reason or 'no reason recorded'}")
        if named == self.MAX_NAMED:
            line += f"\nmeasure {self.family}: further failing cases are counted, not named (the report lists all)"
        return self._print(line)

    def running(self, impl: str, cases: int) -> str | None:
        """While an implementation runs (a Triton one under the interpreter can take minutes):
        a line at most every ``every_s`` seconds, so a job is never silent for long."""
        if self.clock() - self.last < self.every_s:
            return None
        return self._line(impl, "running", min(self.count + cases, self.total))

    def done(self, impl: str, cases: int, problem: str = "") -> str | None:
        """An implementation finished: a line when it failed, or when the last line is
        ``every_s`` old; the job's last implementation ends with a line in any case."""
        self.count += cases
        if self.estimator is not None:
            self.estimator.done(impl, self.clock())
        last = self.count >= self.total
        if not (self.bad.get(impl) or problem or last or self.clock() - self.last >= self.every_s):
            return None
        return self._line(impl, "done", self.count, problem)


_TERMINAL = None


def terminal():
    """Where a job's progress goes: the stream that was stderr before the job's log took over
    file descriptors 1 and 2 (``pipeline.job``), else stderr."""
    return _TERMINAL or sys.__stderr__


def set_terminal(stream) -> None:
    global _TERMINAL
    _TERMINAL = stream


# ------------------------------------------------------------------ the run's estimate
# The run's estimate: its time so far per unit of measure work done (every family's finished
# measure job, and this job's work done), times the units left. Each job's own rate would swing
# it with the family measuring (a torch family's rate is a fraction of an interpreted Triton
# one's: 10, 11, 5, 18, 6, 3 minutes left in one CPU run, issue 41). What is shown is smoothed,
# the same for every job of the run (a state file beside the plan): it follows a lower estimate
# halfway, and a higher one only by a tenth and half a minute at a time.
UP_FRACTION, UP_S, SMOOTH = 0.1, 30.0, 0.5


def write_plan(path: str | Path, works: dict[str, float], now: float | None = None) -> None:
    """The run's families and each one's work (``ImplWork`` units), and the run's start (wall
    clock), for the run's estimate; the shown estimate of an earlier run is forgotten."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"t0": time.time() if now is None else now, "works": works}))
    _state_path(path).unlink(missing_ok=True)


def _state_path(plan: str | Path) -> Path:
    return Path(plan).with_suffix(".shown.json")


def run_left(plan: str | Path, set_dir: str | Path, kernel: str, clock=time.time):
    """A function (this job's work done, in ``ImplWork`` units) -> the seconds the run's
    measurements have left, this job's included, smoothed across the run's jobs; None without
    a plan. A family's job is finished when its bench/<family>.csv exists."""
    try:
        data = json.loads(Path(plan).read_text())
        works, t0 = {k: float(v) for k, v in data["works"].items()}, float(data["t0"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    state = _state_path(plan)

    def left(job_done: float) -> float | None:
        now = clock()
        finished = [k for k in works if k != kernel and (Path(set_dir) / "bench" / f"{k}.csv").exists()]
        done = sum(works[k] for k in finished) + job_done
        if done <= 0 or now <= t0:
            return None
        raw = (now - t0) / done * max(sum(works.values()) - done, 0.0)
        try:
            shown = json.loads(state.read_text())
            predicted = max(float(shown["left"]) - (now - float(shown["at"])), 0.0)
        except (OSError, ValueError, KeyError, TypeError):
            predicted = None
        if predicted is not None:
            target = min(raw, predicted * (1 + UP_FRACTION) + UP_S)
            raw = predicted + SMOOTH * (target - predicted)
        tmp = state.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"at": now, "left": raw}))
        tmp.replace(state)  # jobs running side by side: each replaces it whole
        return raw

    return left


# ------------------------------------------------------------------ Snakemake's own output
def keep_snakemake_detail(logger, output_settings) -> None:
    """The profile's ``quiet`` is for the terminal of a real run: a dry run (``-n``) still lists
    its jobs, and Snakemake's log file (.snakemake/log/, its handler made after the Snakefile is
    read, from ``output_settings``) keeps every job block."""
    import logging

    quiet = set(getattr(output_settings, "quiet", None) or ())
    dryrun = any(getattr(f, "dryrun", False) for h in logger.handlers for f in h.filters)
    for handler in logger.handlers:
        detail = dryrun or isinstance(handler, logging.FileHandler)
        for f in handler.filters:
            if hasattr(f, "quiet") and hasattr(f, "dryrun"):  # Snakemake's DefaultFilter
                f.quiet = set() if detail else set(quiet)
        if hasattr(handler.formatter, "quiet"):
            handler.formatter.quiet = set() if detail else set(quiet)
        if not detail and "progress" in {str(getattr(q, "name", q)).lower() for q in quiet}:
            handler.addFilter(_scheduler_chatter)
    if quiet and not dryrun:
        try:
            output_settings.quiet = set()
        except (AttributeError, TypeError):  # a frozen settings object: the log file stays quiet
            pass


def _scheduler_chatter(record) -> bool:
    """False for the scheduler's two lines per job, which its quiet settings do not cover
    ("Select jobs to execute...", "Execute 1 jobs...")."""
    event = str(getattr(record, "event", "")).lower()
    return not (record.getMessage() == "Select jobs to execute..." or event.endswith("job_started"))

"""A measure job's progress on the terminal: its estimate of the time left, replayed on the
recorded timings of real CPU jobs (tests/fixtures/progress/: each record's arrival), and the
terminal of the tiny run: our lines, not Snakemake's job blocks nor the profiler's."""

import io
import json
from pathlib import Path

import pytest

from kernellab.engine.progress import Estimator, ImplWork, Progress

ROOT = Path(__file__).resolve().parents[1]
RECORDED = sorted((ROOT / "tests" / "fixtures" / "progress").glob("*.json"))


def _replay(path: Path):
    """(seconds the job took, [(time, its estimate of the total, the old estimate)]) after each record."""
    data = json.loads(path.read_text())
    works = {k: ImplWork(**w) for k, w in data["works"].items()}
    records = data["records"]
    total_s, n_records = records[-1][0], sum(kind != "done" for _, _, kind in records)
    est, seen, out = Estimator(works, 0.0), 0, []
    for t, impl, kind in records:
        if kind == "done":
            est.done(impl, t)
            continue
        est.record(impl, kind, t)
        seen += 1
        left = est.left(t)
        old = t / seen * (n_records - seen)  # what the count of records promised
        out.append((t, t + left, t + old))
    return total_s, out


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_the_estimate_weighs_work(path):
    total_s, points = _replay(path)
    late = [(t, est, old) for t, est, old in points if t >= total_s / 5]
    err = [abs(est / total_s - 1) for _, est, _ in late]
    old_err = [abs(old / total_s - 1) for _, _, old in late]
    # once a fifth of the job is done: on average within 30% of the truth (counting records:
    # softmax 0.20), and never the old fifth of the time (issue 33: 22 s left at 18 s of 114)
    assert sum(err) / len(err) <= 0.30, (path.stem, sum(err) / len(err), sum(old_err) / len(old_err))
    assert min(est / total_s for _, est, _ in late) >= 0.45, path.stem


def test_an_implementation_that_cannot_run_here_costs_nothing():
    gpu_only = ImplWork(checks=18, benches=4, backend="cuda", runs_here=False)
    torch = ImplWork(checks=18, benches=4)
    assert gpu_only.total < torch.total / 15


def test_the_count_is_summary_csvs_and_lines_are_few():
    out = io.StringIO()
    now = [0.0]
    works = {"a": ImplWork(checks=3, benches=2), "b": ImplWork(checks=3, benches=2)}
    progress = Progress("mine", 4, stream=out, clock=lambda: now[0], works=works, run_left=lambda done: 100 - done)
    for kind in ("check", "check", "check", "bench", "bench"):
        now[0] += 1
        progress.case("a", {"status": "ok"}, kind)
    assert progress.done("a", 2) is None  # nothing new: no line
    now[0] += 40
    progress.case("b", {"status": "ok"}, "check")
    line = progress.running("b", 0)
    assert line.startswith("measure mine: b running, 2/4 cases, 45 s, about ") and "; run: about" in line
    now[0] += 5
    assert progress.done("b", 2).startswith("measure mine: b done, 4/4 cases, 50 s; run: about ")
    assert len(out.getvalue().splitlines()) == 2


@pytest.mark.slow
def test_the_tiny_runs_terminal_is_ours(tiny_run, tiny_terminal):
    """The tiny run (2 families, 15 jobs) prints a screen; a full CPU run (10 families,
    about 130 jobs, 22 minutes) adds the same per-job lines, hence its measure: see below."""
    out, terminal = tiny_run[0], tiny_terminal
    lines = terminal.splitlines()
    assert "USDT" not in terminal and "profiler_start" not in terminal  # Kineto's, in logs/measure/
    assert "localrule " not in terminal and "steps (" not in terminal and "Execute 1 jobs" not in terminal
    measure = [ln for ln in lines if ln.startswith("measure ")]
    assert measure and all(" cases, " in ln for ln in measure)
    # one count of cases: the last line of each family counts its rows of summary.csv
    import pandas as pd

    rows = pd.read_csv(out / "summary.csv").groupby("kernel").size()
    for kernel, n in rows.items():
        last = [ln for ln in measure if ln.startswith(f"measure {kernel}: ")][-1]
        assert f" {n}/{n} cases, " in last, last
    other = [ln for ln in lines if not ln.startswith("measure ")]
    # what does not grow with the run: Snakemake's few lines, the closing summary
    assert len(other) <= 20, other
    assert len(lines) <= 40, lines


# ------------------------------------------------------------------ the run's estimate
def _minutes(line: str) -> float:
    """The run's time left a line shows, in seconds."""
    value, unit = line.split("; run: about ")[1].split(" left")[0].split()
    return float(value) * (60 if unit == "min" else 1)


def test_the_runs_estimate_never_jumps_up_when_a_slower_family_starts(tmp_path):
    """Three families of one run measured one after the other, each at its own cost per unit of
    work (the plan's weights are never exact: a torch family is quicker than its weight, an
    interpreted Triton one slower). Each job's rate made the run's estimate jump (issue 41:
    10, 11, 5, 18, 6, 3 minutes left); the run's own rate, smoothed, goes down steadily."""
    from kernellab.engine import progress as prog

    per_unit = {"torch_fam": 0.5, "triton_fam": 6.0, "cuda_fam": 1.0}  # seconds per unit, truth
    units = 100
    plan, set_dir = tmp_path / ".run" / "set.json", tmp_path / "set"
    now = [1000.0]
    prog.write_plan(plan, {k: units for k in per_unit}, now=now[0])
    shown = []
    for fam, cost in per_unit.items():
        now[0] += 20  # the jobs between (build, profile, ptx)
        out = io.StringIO()
        p = Progress(fam, units, stream=out, clock=lambda: now[0], every_s=30,
                     works={"impl": ImplWork(benches=units)},
                     run_left=prog.run_left(plan, set_dir, fam, clock=lambda: now[0]))
        for i in range(units):
            now[0] += cost
            p.case("impl", {"status": "ok"}, "bench")
            p.running("impl", i + 1)
        p.done("impl", units)
        (set_dir / "bench").mkdir(parents=True, exist_ok=True)
        (set_dir / "bench" / f"{fam}.csv").write_text("")
        shown += [_minutes(ln) for ln in out.getvalue().splitlines() if "; run: about" in ln]
    assert len(shown) > 10
    for before, after in zip(shown, shown[1:], strict=False):
        # up by no more than noise: a tenth, and a minute of rounding to whole minutes
        assert after <= before * 1.1 + 60, shown
    assert shown[-1] <= 60, shown  # the run ends saying so

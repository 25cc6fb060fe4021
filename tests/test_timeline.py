"""The run's timeline: job records written by the jobs, gathered into timeline.csv, and its
section of the report."""

import json
import math
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from kernellab.engine import phases
from kernellab.workflow import timeline

_STARTED = time.monotonic()  # at import: after this process started, before any test ran


class _Wildcards(dict):
    """What Snakemake's wildcards offer the record: items()."""


def _job(rule, gpu=0, **wildcards):
    return SimpleNamespace(rule=rule, wildcards=_Wildcards(wildcards), resources={"gpu": gpu})


def _record(path, **rec):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))


@pytest.fixture(autouse=True)
def _no_phases():
    phases.clear()
    yield
    phases.clear()


def test_this_process_start_is_read_before_this_module_was_imported():
    imported = time.time() - (time.monotonic() - _STARTED)
    assert imported - timeline.STARTUP_MAX_S < timeline.process_start() <= imported


def test_a_job_records_its_rule_wildcards_device_and_phases(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    # a job's process started 2 s before it records itself (pytest's own started long before)
    monkeypatch.setattr(timeline, "process_start", lambda: time.time() - 2.0)
    log = tmp_path / "set" / "logs" / "measure" / "softmax.log"
    with timeline.job_record(str(log), _job("measure", gpu=1, set="cpu-x", kernel="softmax")):
        with phases.phase("check", "triton"):
            pass
        running = json.loads(timeline.record_path(log).read_text())
    assert running["status"] == "running" and "end" not in running
    rows = timeline.gather(tmp_path / "set")
    job, startup, phase = rows
    assert (job["kind"], job["job"], job["rule"], job["family"], job["set"]) == (
        "job", "measure softmax", "measure", "softmax", "cpu-x")
    assert job["device"] == "gpu 3" and job["status"] == "ok" and job["seconds"] >= 0
    assert (phase["kind"], phase["job"], phase["impl"], phase["phase"]) == ("phase", "measure softmax", "triton",
                                                                           "check")
    # the job began with its process: the start-up until its record
    assert startup["phase"] == "start-up" and job["start"] == startup["start"] < startup["end"] == running["start"]
    assert startup["seconds"] == pytest.approx(2.0, abs=0.5)
    assert job["start"] <= phase["start"] <= phase["end"] <= job["end"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")  # a GPU job on a host without one pins none
    assert timeline.device_of(True) == "cpu" and timeline.device_of(False) == "cpu"


def test_a_job_that_raises_or_is_interrupted_says_so(tmp_path):
    ends = ((ValueError("x"), "error"), (KeyboardInterrupt(), "interrupted"), (SystemExit(130), "interrupted"))
    for exc, status in ends:
        log = tmp_path / "logs" / f"{status}-{type(exc).__name__}.log"
        with pytest.raises(type(exc)), timeline.job_record(str(log), _job("survey", set="s")):
            raise exc
        assert json.loads(timeline.record_path(log).read_text())["status"] == status


def test_outside_snakemake_nothing_is_recorded(tmp_path):
    with timeline.job_record(str(tmp_path / "logs" / "x.log")):
        pass
    assert not list(tmp_path.rglob("*.job.json"))
    assert timeline.write(tmp_path) is None and not (tmp_path / "timeline.csv").exists()


def test_gather_keeps_a_killed_job_and_leaves_out_broken_records(tmp_path, caplog):
    logs = tmp_path / "logs"
    _record(logs / "survey.job.json", rule="survey", wildcards={"set": "s"}, start=100.0, end=102.5, status="ok",
            device="gpu 0", host="h", phases=[])
    # killed outright: only its first record, without an end
    _record(logs / "measure" / "gelu.job.json", rule="measure", wildcards={"set": "s", "kernel": "gelu"},
            start=103.0, status="running", pid=-1, device="gpu 0", host="h")
    (logs / "ptx").mkdir()
    (logs / "ptx" / "gelu.job.json").write_text('{"rule": "ptx", "sta')  # cut short
    _record(logs / "ncu.job.json", wildcards={}, start=1.0)  # no rule
    # a phase without an end is left out, its job kept
    _record(logs / "measure" / "softmax.job.json", rule="measure", wildcards={"set": "s", "kernel": "softmax"},
            start=101.0, end=110.0, status="ok", device="gpu 0", host="h",
            phases=[{"phase": "check", "impl": "t", "start": 101.5, "end": 104.0}, {"phase": "bench", "start": 105}])
    out = timeline.write(tmp_path)
    df = pd.read_csv(out, keep_default_na=False)
    assert list(df.columns) == timeline.COLUMNS
    assert list(zip(df["kind"], df["job"], df["phase"], strict=True)) == [
        ("job", "survey", ""), ("job", "measure softmax", ""), ("phase", "measure softmax", "check"),
        ("job", "measure gelu", "")]
    gelu = df[df["job"] == "measure gelu"].iloc[0]
    assert gelu["status"] == "unfinished" and gelu["end"] == "" and gelu["seconds"] == ""
    assert df[df["job"] == "survey"].iloc[0]["seconds"] == "2.5"
    # a record without its process's start (made before timelines had it) starts where it says
    assert not (df["phase"] == "start-up").any()
    assert "ptx/gelu.job.json left out" in caplog.text and "ncu.job.json left out" in caplog.text


def test_a_job_run_again_keeps_its_interrupted_attempt_and_a_stale_one_is_left_out(tmp_path, monkeypatch):
    from kernellab.report.timeline import section

    monkeypatch.setattr(timeline, "process_start", lambda: None)  # each attempt its own process: by its record

    log = tmp_path / "logs" / "measure" / "gelu.log"
    job = _job("measure", gpu=1, set="s", kernel="gelu")
    with pytest.raises(KeyboardInterrupt), timeline.job_record(str(log), job):
        raise KeyboardInterrupt  # the device's time limit, say: the run is resumed
    with timeline.job_record(str(log), job):
        pass
    records = sorted(p.name for p in log.parent.glob("*.job.json"))
    assert len(records) == 2 and records[1] == "gelu.job.json" and records[0].startswith("gelu.attempt-")
    rows = [r for r in timeline.gather(tmp_path) if r["kind"] == "job"]
    assert [(r["job"], r["status"]) for r in rows] == [("measure gelu", "interrupted"), ("measure gelu", "ok")]
    # a job that ends well replaces its record: a rerun after a change is a new run of it
    with timeline.job_record(str(log), job):
        pass
    assert len(list(log.parent.glob("*.job.json"))) == 2
    # the report counts the attempt's time as work no result comes from
    timeline.write(tmp_path)
    assert "1 attempt(s) ended early (interrupted) and their jobs ran again" in section(tmp_path, "x").note
    # an attempt the job's record followed only after RESUMED_WITHIN_S is another run's
    (attempt,) = log.parent.glob("*.attempt-*")
    rec = json.loads(attempt.read_text())
    rec.update(start=rec["start"] - 2 * timeline.RESUMED_WITHIN_S, end=rec["end"] - 2 * timeline.RESUMED_WITHIN_S)
    attempt.write_text(json.dumps(rec))
    assert [r["status"] for r in timeline.gather(tmp_path) if r["kind"] == "job"] == ["ok"]


def test_gather_leaves_out_the_job_that_gathers(tmp_path):
    import os

    _record(tmp_path / "logs" / "report.job.json", rule="report", wildcards={}, start=1.0, status="running",
            pid=os.getpid())
    assert timeline.gather(tmp_path) == []


def test_phases_of_a_forked_worker_reach_the_parent_once():
    import multiprocessing as mp

    with phases.phase("tune", "a"):
        pass
    assert [p["phase"] for p in phases.unsent()] == ["tune"]
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)

    def work():
        with phases.phase("check", "a"):
            pass
        child.send(phases.unsent())  # only the worker's own: not the parent's "tune"

    proc = ctx.Process(target=work)
    proc.start()
    got = parent.recv()
    proc.join()
    phases.add(got)
    phases.add(phases.unsent())  # this process's own are never added twice
    assert [p["phase"] for p in phases.recorded()] == ["tune", "check"]
    assert all(math.isfinite(p["end"] - p["start"]) for p in phases.recorded())


# ------------------------------------------------------------------ the report's section
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "results"


def test_section_of_the_fixture_timeline():
    from kernellab.report.timeline import section

    view = section(FIXTURE / "fake-gpu", "fake-gpu")
    # wall: 0 s to the report's end at 328.2 s; the jobs' sum: 368.5 s
    assert view.note.startswith("From the first job's start to the last job's end: 5 min 28 s. "
                                "The 10 jobs took 6 min 08 s together (1.1× the wall time")
    assert view.note.endswith("On gpu 0 no job ran for 36.0 s (11% of the 5 min 19 s from its first job's start to "
                              "its last job's end); the longest waits: 35.4 s between survey and measure gelu.")
    assert [r.cells[0] for r in view.costliest.rows][:3] == ["measure matmul", "measure gelu", "build_cuda gelu"]
    assert len(view.costliest) == 10 and view.costliest.rows[0].cells[2:5] == ["136.6", "130.0", "35.3%"]
    # phases summed over the measure jobs (225 s): tuning 20 + 70 s, over two implementations
    assert view.phases.rows[0].cells == ["tune", "90.0", "40.0%", "2"]
    assert {r.cells[0] for r in view.phases.rows} == {"tune", "check", "bench", "compile", "torch.compile"}
    assert view.image.data.startswith(b"\x89PNG") and view.image.file == "plots/timeline.png"


def test_no_section_without_a_timeline_and_killed_jobs_said(tmp_path):
    from kernellab.report.timeline import section

    assert section(FIXTURE / "cpu-x86_64", "cpu-x86_64") is None
    rows = [{"kind": "job", "job": "survey", "rule": "survey", "device": "gpu 0", "host": "h", "start": 10.0,
             "end": 14.0, "seconds": 4.0, "status": "ok"},
            {"kind": "job", "job": "measure gelu", "rule": "measure", "device": "gpu 0", "host": "h", "start": 14.0,
             "status": "unfinished"}]
    pd.DataFrame(rows, columns=timeline.COLUMNS).to_csv(tmp_path / "timeline.csv", index=False)
    view = section(tmp_path, "x")
    assert "1 job(s) never recorded their end (killed)" in view.note and "4.0 s" in view.note
    assert [r.cells[0] for r in view.costliest.rows] == ["survey"] and not view.phases


def test_the_gpus_waits_between_jobs_are_summed_and_the_longest_named():
    from kernellab.report.timeline import gpu_waits

    def job(name, device, start, end, host="h"):
        return {"job": name, "device": device, "start": start, "end": end, "host": host}

    jobs = [job("survey", "gpu 0", 0, 10), job("build", "cpu", 0, 100), job("measure a", "gpu 0", 11, 50),
            # b overlaps a (two jobs on one GPU): no wait between them, and c waits for b's end
            job("measure b", "gpu 0", 40, 60), job("measure c", "gpu 0", 160, 170), job("ncu", "gpu 0", 172, 200)]
    (w,) = gpu_waits(jobs)
    assert (w.device, w.span, w.idle) == ("gpu 0", 200, 1 + 100 + 2)
    # waits under MIN_GAP_S are the scheduler's turn: summed, not named
    assert w.gaps == [(100, "measure b", "measure c")]
    two = gpu_waits([job("x", "gpu 0", 0, 1, "a"), job("y", "gpu 0", 30, 31, "a"), job("z", "gpu 0", 0, 5, "b")])
    assert [(w.device, w.idle, [g[1:] for g in w.gaps]) for w in two] == [("a: gpu 0", 29, [("x", "y")]),
                                                                          ("b: gpu 0", 0, [])]
    assert gpu_waits([job("build", "cpu", 0, 9)]) == []


def test_jobs_side_by_side_on_one_device_get_lanes_of_their_own():
    from kernellab.report.plot_timeline import lanes

    def job(device, start, end, host="h"):
        return {"device": device, "start": start, "end": end, "host": host}

    jobs = [job("cpu", 0, 10), job("gpu 0", 0, 5), job("cpu", 2, 4), job("cpu", 5, 12), job("gpu 0", 5, 9)]
    labels, lane = lanes(jobs)
    assert labels == ["gpu 0", "cpu", "cpu #2"]
    assert [labels[lane[i]] for i in range(len(jobs))] == ["cpu", "gpu 0", "cpu #2", "cpu #2", "gpu 0"]
    labels, _ = lanes([job("gpu 0", 0, 1, "a"), job("gpu 0", 0, 1, "b")])
    assert labels == ["a: gpu 0", "b: gpu 0"]

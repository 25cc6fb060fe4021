"""The run's timeline: job records written by the jobs, gathered into timeline.csv."""

import json
import math
from types import SimpleNamespace

import pandas as pd
import pytest

from kernellab.engine import phases
from kernellab.workflow import timeline


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


def test_a_job_records_its_rule_wildcards_device_and_phases(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    log = tmp_path / "set" / "logs" / "measure" / "softmax.log"
    with timeline.job_record(str(log), _job("measure", gpu=1, set="cpu-x", kernel="softmax")):
        with phases.phase("check", "triton"):
            pass
        running = json.loads(timeline.record_path(log).read_text())
    assert running["status"] == "running" and "end" not in running
    rows = timeline.gather(tmp_path / "set")
    job, phase = rows
    assert (job["kind"], job["job"], job["rule"], job["family"], job["set"]) == (
        "job", "measure softmax", "measure", "softmax", "cpu-x")
    assert job["device"] == "gpu 3" and job["status"] == "ok" and job["seconds"] >= 0
    assert (phase["kind"], phase["job"], phase["impl"], phase["phase"]) == ("phase", "measure softmax", "triton",
                                                                           "check")
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
    assert "ptx/gelu.job.json left out" in caplog.text and "ncu.job.json left out" in caplog.text


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

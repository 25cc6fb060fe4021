"""The workflow itself: a dry run of the default config, and the tiny config end to end on
the CPU in a temporary directory, uninterrupted and killed half-way then resumed."""

import fnmatch
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kernellab.engine.testing import sigint_as_default

ROOT = Path(__file__).resolve().parents[1]


def _snakemake(*args, cwd=ROOT, timeout=1500, **kw):
    cmd = [sys.executable, "-m", "snakemake", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)


def _dirs(tmp: Path) -> list[str]:
    return ["--config", f"staging={tmp / 'staging'}", f"results={tmp / 'results'}"]


@pytest.mark.slow  # torch.compile's Inductor, or Snakemake, end to end: CI's second stage
def test_dry_run_of_the_default_config_lists_every_rule(tmp_path):
    proc = _snakemake("-n", "--cores", "1", *_dirs(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    for rule in ("survey", "build_cuda", "measure", "ptx", "ncu", "aggregate", "report",
                 "publish"):
        assert rule in proc.stdout


@pytest.mark.slow
def test_tiny_cpu_run_produces_the_results_contract(tiny_run):
    out, _ = tiny_run
    for name in ("summary.csv", "report.html", "report.md", "KERNEL_LOG.md", "survey.json", "environment.json"):
        assert (out / name).is_file(), name
    df = pd.read_csv(out / "summary.csv", keep_default_na=False)
    tiny = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    assert set(df["kernel"]) == set(tiny["kernels"])  # every kernel of the tiny config
    cpu_impls = df[df["backend"] != "cuda"]
    assert (cpu_impls["status"] == "ok").all(), cpu_impls[cpu_impls["status"] != "ok"][["impl_key", "reason"]]
    assert (cpu_impls["check_status"] == "ok").all()
    cuda = df[df["backend"] == "cuda"]
    assert len(cuda) and (cuda["status"] == "unavailable").all() and (cuda["reason"] != "").all()
    html = (out / "report.html").read_text()
    assert "CPU run" in html
    assert list((out / "ptx" / "gelu").glob("*.ptx.xz")), "Triton PTX is produced without a GPU"


@pytest.mark.slow
def test_tiny_run_set_has_a_timeline_row_per_job_and_phases_of_measure_jobs(tiny_run):
    out, _ = tiny_run
    tl = pd.read_csv(out / "timeline.csv", keep_default_na=False)
    jobs = tl[tl["kind"] == "job"]
    # a row per job of the set: each job's log is logs/<rule>.log or logs/<rule>/<wildcard>.log
    logged = {" ".join(p.relative_to(out / "logs").with_suffix("").parts) for p in (out / "logs").rglob("*.log")}
    assert set(jobs["job"]) == logged and len(jobs) == len(logged)
    assert (jobs["status"] == "ok").all() and (jobs["device"] == "cpu").all() and (jobs["seconds"] > 0).all()
    assert {"survey", "aggregate", "report"} <= set(jobs["rule"])
    phases = tl[tl["kind"] == "phase"]
    tiny = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    for kernel in tiny["kernels"]:
        mine = phases[phases["job"] == f"measure {kernel}"]
        assert {"check", "bench"} <= set(mine["phase"]), kernel
        job = jobs[jobs["job"] == f"measure {kernel}"].iloc[0]
        assert (mine["start"] >= job["start"]).all() and (mine["end"] <= job["end"]).all()
    # every job's start-up (its process's start to its first record), and the measure jobs' work
    startup = phases["phase"] == "start-up"
    assert set(phases[startup]["job"]) == set(jobs["job"]) and (phases[startup]["seconds"] > 0).all()
    assert set(phases[~startup]["rule"]) == {"measure"}
    env = json.loads((out / "environment.json").read_text())
    assert env["wall_s"] >= 0


@pytest.mark.slow
def test_the_readme_outputs_table_names_every_file_of_a_set(tiny_run):
    """Each file of a published set matches a row of the README's table of outputs (its name, or
    its folder's pattern: `check/<kernel>.csv`, `ptx/<kernel>/`, `build/`, `logs/`)."""
    out, _ = tiny_run
    table = (ROOT / "README.md").read_text().split("## What a run gives you", 1)[1].split("\n\n| status", 1)[0]
    names = {n.replace("<kernel>", "*") for n in re.findall(r"`([^`]+)`", table)}
    patterns = [n + "*" if n.endswith("/") else n for n in names]  # a folder's row covers its files
    files = [str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()]
    unlisted = [f for f in files if not any(fnmatch.fnmatch(f, n) for n in patterns)]
    assert not unlisted, f"files of a set that the README's outputs table does not name: {unlisted}"


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_cases_and_columns(tiny_run, tmp_path):
    reference, _ = tiny_run
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "config/test.yaml",
           "--replace-workflow-config", *_dirs(tmp_path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    stage = tmp_path / "staging"
    deadline = time.time() + 600
    while time.time() < deadline and not list(stage.glob("*/bench/*.csv")):
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)  # SIGKILL half-way: no cleanup of any kind
    proc.wait()
    assert not list((tmp_path / "results").glob("*/summary.csv")), "a half run must not publish"
    again = _snakemake("--cores", "1", "--configfile", "config/test.yaml", "--replace-workflow-config",
                       *_dirs(tmp_path))
    assert again.returncode == 0, (again.stdout + again.stderr)[-5000:]
    resumed = pd.read_csv(next((tmp_path / "results").glob("*/summary.csv")), keep_default_na=False)
    full = pd.read_csv(reference / "summary.csv", keep_default_na=False)
    assert list(resumed.columns) == list(full.columns)
    key = ["kernel", "impl_key", "shape", "dtype", "params"]
    assert sorted(map(tuple, resumed[key].values.tolist())) == sorted(map(tuple, full[key].values.tolist()))
    expected = full.set_index(key).loc[list(map(tuple, resumed[key].values))]["status"].values
    assert (resumed["status"].values == expected).all()


@pytest.mark.slow
def test_snakemake_report_collects_the_outputs(tiny_run, tmp_path):
    out = tmp_path / "report.zip"
    staging = tiny_run[0].parents[1] / "staging"
    proc = _snakemake("--cores", "1", "--configfile", "config/test.yaml", "--replace-workflow-config", "--config",
                      f"staging={staging}", f"results={tiny_run[0].parent}", "--report", str(out))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert out.stat().st_size > 10_000
    import zipfile

    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        pages = "".join(zf.read(n).decode("utf-8", "replace") for n in names if n.endswith(".html"))
    for wanted in ("/summary.csv", "/KERNEL_LOG.md"):
        assert any(n.endswith(wanted) for n in names), wanted
    # the report keeps base names: gelu's correctness, profile and autotune tables
    assert sum(n.endswith("/gelu.csv") for n in names) == 3, [n for n in names if n.endswith(".csv")]
    assert any(n.endswith(".png") for n in names)
    for category in ("Summary", "Report", "Plots", "Correctness", "Profiles", "Autotuning", "CUDA build"):
        assert category in pages, category
    assert "float64 reference" in pages  # a caption (report/captions/correctness.rst)


def _changed_config(tmp: Path, **changes) -> Path:
    import yaml

    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    for key, value in changes.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    # named as config/test.yaml is: the tiny run's set (a config file's name names its set)
    path = tmp / "test.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _dry_jobs(tiny_run, config: Path) -> str:
    staging = tiny_run[0].parents[1] / "staging"
    proc = _snakemake("-n", "--cores", "1", "--configfile", str(config), "--replace-workflow-config", "--config",
                      f"staging={staging}", f"results={tiny_run[0].parent}")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("changes", [{"check": {"seeds": [3, 4, 5]}}, {"bench": {"timeout_s": 901}},
                                     {"autotune": {"budget_s": 0.02}}, {"isolate": False}, {"target": "cpu"}])
def test_measure_reruns_when_any_config_it_reads_changes(tiny_run, tmp_path, changes):
    out = _dry_jobs(tiny_run, _changed_config(tmp_path, **changes))
    assert "rule measure:" in out and "params" in out.lower(), out[-3000:]


@pytest.mark.slow
def test_measure_does_not_rerun_for_config_it_does_not_read(tiny_run, tmp_path):
    out = _dry_jobs(tiny_run, _changed_config(tmp_path, compare={"threshold": 0.05}))
    assert "rule measure:" not in out, out[-3000:]


@pytest.mark.slow
def test_ctrl_c_ends_the_run_with_one_line_and_no_traceback(tiny_run, tmp_path):
    """Ctrl-C (SIGINT to the whole process group) while the measure jobs run again, on a copy
    of the tiny run's staging area."""
    import shutil

    staging = tmp_path / "staging"
    shutil.copytree(tiny_run[0].parents[1] / "staging", staging)
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "config/test.yaml",
           "--forcerun", "measure", "--until", "measure", "--config",
           f"staging={staging}", f"results={tmp_path / 'results'}"]
    t0 = time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=sigint_as_default)
    logs = list((staging / tiny_run[0].name / "logs" / "measure").glob("*.log"))
    assert logs
    deadline = time.time() + 300
    # a job's script (re)creates its log when it starts (Snakemake removes the old one first)
    while time.time() < deadline and not any(p.exists() and p.stat().st_mtime > t0 for p in logs):
        time.sleep(0.2)
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0
    assert out.rstrip().splitlines()[-1] != "", out[-3000:]
    assert "kernellab: interrupted: rerun the same command to resume" in out, out[-3000:]
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]

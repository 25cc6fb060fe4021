"""One run at a time per staging folder (kernellab.workflow.runlock): a second run stops with one sentence
naming the first's pid, a killed run (SIGKILL) leaves nothing to unlock, and a dry run is never
blocked. Real processes and real flock: the lock belongs to a process, which a mock cannot show."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end to end: runs the workflow (CI's second stage)

ROOT = Path(__file__).resolve().parents[1]

HOLD = ("import sys, time; from kernellab.workflow.runlock import acquire; acquire(sys.argv[1]); "
        "print('held', flush=True); time.sleep(600)")


@pytest.fixture
def holder(tmp_path):
    """Another process holding the run lock of ``tmp_path/staging``."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "staging")], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def _snakemake(tmp_path, *args):
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "config/test.yaml", *args,
           "--config", f"staging={tmp_path / 'staging'}", f"results={tmp_path / 'results'}"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_lock_file_names_its_holder(tmp_path, holder):
    assert (tmp_path / "staging" / "run.lock").read_text().strip() == str(holder.pid)


def test_a_second_run_stops_with_one_sentence_naming_the_first(tmp_path, holder):
    proc = _snakemake(tmp_path)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if f"pid {holder.pid}" in line]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("Another run is using") and lines[0].endswith("to resume."), lines[0]
    assert lines[0].count(". ") == 0  # one sentence
    # stopped before any job: nothing of the set was written
    assert not list((tmp_path / "staging").glob("*/survey.json"))


def test_a_dry_run_is_not_blocked(tmp_path, holder):
    proc = _snakemake(tmp_path, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rule measure:" in proc.stdout
    assert holder.poll() is None  # and the lock was not taken from the holder


@pytest.mark.slow
def test_after_the_holder_is_killed_a_new_run_starts(tmp_path, holder):
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    # one cheap job: the run takes the lock, runs it in a job process, and ends
    proc = _snakemake(tmp_path, "--until", "survey")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list((tmp_path / "staging").glob("*/survey.json"))
    # the lock named the new run (its pid, not the killed holder's) and is free again now
    assert (tmp_path / "staging" / "run.lock").read_text().strip() != str(holder.pid)
    again = subprocess.run([sys.executable, "-c", HOLD.replace("time.sleep(600)", "0"),
                            str(tmp_path / "staging")], cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout.strip() == "held", again.stderr

"""One run at a time per staging folder (kernellab.workflow.runlock): a second run stops with one sentence
naming the first's pid, a killed run (SIGKILL) leaves nothing to unlock, and a dry run is never
blocked. A killed run's jobs die with it, a job's lock is held until its last worker ends, and
kill -INT stops the running job at once with one line. Real processes and real flock: the lock
belongs to a process, which a mock cannot show."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab.engine.testing import sigint_as_default

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


@pytest.mark.slow  # end to end: runs the workflow (CI's second stage)
def test_the_lock_file_names_its_holder(tmp_path, holder):
    assert (tmp_path / "staging" / "run.lock").read_text().strip() == str(holder.pid)


@pytest.mark.slow  # end to end: runs the workflow (CI's second stage)
def test_a_second_run_stops_with_one_sentence_naming_the_first(tmp_path, holder):
    proc = _snakemake(tmp_path)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if f"pid {holder.pid}" in line]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("Another run is using") and lines[0].endswith("to resume."), lines[0]
    assert lines[0].count(". ") == 0  # one sentence
    # stopped before any job: nothing of the set was written
    assert not list((tmp_path / "staging").glob("*/survey.json"))


@pytest.mark.slow  # end to end: runs the workflow (CI's second stage)
def test_a_dry_run_is_not_blocked(tmp_path, holder):
    proc = _snakemake(tmp_path, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rule measure:" in proc.stdout
    assert holder.poll() is None  # and the lock was not taken from the holder


@pytest.mark.slow  # end to end: runs the workflow (CI's second stage)
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


# ---------------------------------------------------------------- a job's lock and its death
def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pids, within_s: float = 60.0) -> bool:
    import time

    deadline = time.monotonic() + within_s
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(_alive(p) for p in pids)


JOB = ("import os, sys, time\nfrom kernellab.workflow.runlock import hold_job\nhold_job(sys.argv[1])\n"
       "worker = os.fork()\nif worker == 0:\n    time.sleep(600)\n    os._exit(0)\n"
       "print(worker, flush=True)\n")


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_job_lock_is_held_until_the_jobs_last_worker_ends(tmp_path):
    """The job ends at once; its forked worker, which inherits the lock, still runs: a second job
    of the same log is refused, naming the job, and gets the lock once the worker is gone."""
    from kernellab.workflow.runlock import RunLocked, hold_job

    key = tmp_path / "logs" / "measure" / "gelu.log"
    job = subprocess.Popen([sys.executable, "-c", JOB, str(key)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    worker = int(job.stdout.readline())  # the worker keeps the pipe open: no wait for its end
    assert job.wait(timeout=60) == 0
    try:
        with pytest.raises(RunLocked, match=r"A job of an earlier run still runs on .*gelu\.log \(pid \d+\)"):
            hold_job(key, wait_s=0)
    finally:
        os.kill(worker, signal.SIGKILL)
    assert _gone([worker])
    assert hold_job(key, wait_s=30).is_file()


WORKER = ("import os, sys, time\nfrom kernellab.engine import isolate\n"
          "def work():\n    print(os.getpid(), flush=True)\n    time.sleep(600)\n    yield {}\n"
          "isolate.run(work, 600)\n")


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_dies_with_its_job(tmp_path):
    job = subprocess.Popen([sys.executable, "-c", WORKER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    worker = int(job.stdout.readline())
    assert _alive(worker)
    job.kill()
    job.wait()
    assert _gone([worker])


# ---------------------------------------------------------------- a real run, killed
def _run(tmp_path, *args, **kw):
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "config/test.yaml", *args,
           "--config", "only=[gelu]", f"staging={tmp_path / 'staging'}", f"results={tmp_path / 'results'}"]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def _measure_job(run) -> tuple[int, list[int]]:
    """Once the run's measure job has a worker: the job's pid and the pids of everything under it."""
    import time

    from kernellab.workflow.interrupt import descendants

    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and run.poll() is None:
        for pid in descendants(run.pid):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if cmd.endswith(b".measure.py\0") and descendants(pid):
                return pid, descendants(pid)
        time.sleep(0.2)
    raise AssertionError(f"no measure job with a worker: {run.communicate()[0][-3000:]}")


@pytest.mark.slow  # end to end: runs the workflow (CI's second stage)
@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_runs_measure_job_dies_with_it(tmp_path):
    run = _run(tmp_path, "--until", "measure")
    job, workers = _measure_job(run)
    run.kill()  # SIGKILL: Snakemake can do nothing about it
    run.communicate()
    assert _gone([job, *workers]), [p for p in [job, *workers] if _alive(p)]


@pytest.mark.slow  # end to end: runs the workflow (CI's second stage)
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_kill_int_stops_the_measure_job_now_with_two_lines(tmp_path):
    """``kill -INT`` reaches Snakemake alone: it passes the interruption on, so the measure job
    stops without finishing its work (before, Snakemake waited for it to end), and the terminal
    gets two lines (the job's and the run's), no RuleException or CalledProcessError."""
    import threading

    from kernellab.workflow.pipeline import INTERRUPTED

    run = _run(tmp_path, "--until", "measure", start_new_session=True, preexec_fn=sigint_as_default)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)
    reader.start()
    job, workers = _measure_job(run)
    seen = len(lines)
    os.kill(run.pid, signal.SIGINT)
    assert run.wait(timeout=600) == 130
    reader.join(60)
    after = [line.rstrip("\n") for line in lines[seen:] if not line.startswith("measure gelu: ")]
    assert after == [INTERRUPTED, f"kernellab: {INTERRUPTED}"], "".join(lines)[-3000:]
    assert _gone([job, *workers])
    log = next((tmp_path / "staging").glob("*/logs/measure/gelu.log")).read_text()
    assert "measure gelu:" not in log  # the job's closing line: it did not run to its end


def test_a_job_whose_parent_is_pid_1_is_orphaned_unless_pid_1_is_the_run(tmp_path):
    """In a container Snakemake is often the first process, the parent of every job: a job started
    there is not an orphan; elsewhere a parent of pid 1 means the run ended before the job began."""
    from kernellab.engine.isolate import orphaned

    init = tmp_path / "cmdline"
    init.write_bytes(b"/opt/venv/bin/python3\0/opt/venv/bin/snakemake\0--cores\0001\0")
    assert not orphaned(1, init)
    init.write_bytes(b"/sbin/init\0")
    assert orphaned(1, init)
    assert orphaned(1, tmp_path / "unreadable")
    assert not orphaned(4242, init)

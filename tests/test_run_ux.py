"""What a newcomer meets first: one-line config errors, every key settable from --config,
target=gpu refused without a GPU, Ctrl-C without a traceback, result files readable by others."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab import io
from kernellab.engine import runtime
from kernellab.errors import ConfigError
from kernellab.workflow import config as kl_config
from kernellab.workflow import pipeline

ROOT = Path(__file__).resolve().parents[1]


def _dry(tmp: Path, *items: str) -> subprocess.CompletedProcess:
    """``snakemake -n`` with ``--config items...`` (one --config: a second one replaces the first)."""
    cmd = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--config", *items,
           f"staging={tmp / 'staging'}", f"results={tmp / 'results'}"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("args,first", [
    (["kernels={gelu: {dtypes: [fp32], shapes: [-5]}}"],
     "kernels.gelu.shapes[0]: -5 is less than the minimum of 1"),
    (["timing={budgt_s: 1}"], "timing: unknown key 'budgt_s'; allowed: "),
    (["kernels={gelux: {dtypes: [fp32], shapes: [3]}}"], "kernels.gelux: unknown kernel 'gelux'"),
    (["isolate=maybe"], "isolate: 'maybe' is not of type 'boolean'"),
])
@pytest.mark.slow
def test_config_errors_name_the_key_in_a_few_lines(tmp_path, args, first):
    proc = _dry(tmp_path, *args)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"Invalid configuration: {first}" in out, out[-2000:]
    assert "Failed validating" not in out and "On instance" not in out  # no schema dump
    assert len(out.strip().splitlines()) < 10, out


@pytest.mark.slow
def test_numbers_from_the_command_line_are_numbers(tmp_path):
    proc = _dry(tmp_path, "check={seeds: [5, 6, 7], timeout_s: 60}", "isolate=no")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]


def test_coerce_scalars_follows_the_schema():
    config = {"check": {"seeds": ["5", "6", "7"]}, "isolate": "false", "timing": {"budget_s": "0.5"}, "label": "7"}
    kl_config.coerce_scalars(config)
    assert config == {"check": {"seeds": [5, 6, 7]}, "isolate": False, "timing": {"budget_s": 0.5}, "label": "7"}


@pytest.mark.skipif(runtime.has_gpu(), reason="checks the machine without a GPU")
@pytest.mark.slow
def test_target_gpu_without_a_gpu_is_refused_before_any_job(tmp_path):
    proc = _dry(tmp_path, "target=gpu")
    assert proc.returncode != 0
    assert "target: 'gpu', but this machine has no visible CUDA GPU" in proc.stdout + proc.stderr
    with pytest.raises(ConfigError, match="target=auto"):
        kl_config.check_target("gpu", has_gpu=False)
    kl_config.check_target("gpu", has_gpu=True)
    kl_config.check_target("auto", has_gpu=False)


def test_ctrl_c_in_a_job_ends_with_one_line(tmp_path, capfd):
    with pytest.raises(SystemExit) as stop:
        with pipeline.logged(str(tmp_path / "job.log")):
            raise KeyboardInterrupt
    assert stop.value.code == 130
    err = capfd.readouterr().err
    assert err.strip() == pipeline.INTERRUPTED and "Traceback" not in err


def test_ctrl_c_during_a_c_extension_import_ends_with_one_line(tmp_path, capfd):
    """A C extension's init interrupted by Ctrl-C raises ImportError from the KeyboardInterrupt
    (seen in CI: triton._C.libtriton); that is an interruption too, and other errors are not."""
    with pytest.raises(SystemExit) as stop:
        with pipeline.logged(str(tmp_path / "job.log")):
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as cause:
                raise ImportError("initialization failed") from cause
    assert stop.value.code == 130
    err = capfd.readouterr().err
    assert err.strip() == pipeline.INTERRUPTED and "Traceback" not in err
    with pytest.raises(ImportError, match="initialization failed"):
        with pipeline.logged(str(tmp_path / "job.log")):
            raise ImportError("initialization failed")


def test_result_files_are_written_0644_under_umask_022(tmp_path):
    old = os.umask(0o022)
    try:
        for path, write in ((tmp_path / "a.json", lambda p: io.write_json(p, {"x": 1})),
                            (tmp_path / "b.csv", lambda p: io.write_csv(p, [{"x": 1}])),
                            (tmp_path / "c.ptx.xz", lambda p: io.write_text(p, "ptx"))):
            write(path)
            assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    finally:
        os.umask(old)
    assert io.read_text(tmp_path / "c.ptx.xz") == "ptx"


def test_a_ceiling_a_case_beats_is_raised_and_recorded():
    import pandas as pd

    from kernellab.workflow.aggregate import corrected_ceilings

    survey = {"copy_gbps": 100.0, "matmul_tflops": {"fp16": 0.0025, "fp32": 0.1}}
    df = pd.DataFrame([
        {"kernel": "mm", "dtype": "fp16", "status": "ok", "check_status": "ok", "gbps": 1.0, "tflops": 0.006},
        {"kernel": "mm", "dtype": "fp32", "status": "ok", "check_status": "ok", "gbps": 1.0, "tflops": 0.05},
        {"kernel": "mm", "dtype": "fp32", "status": "failed", "check_status": "failed", "gbps": 1.0, "tflops": 9.0},
        {"kernel": "add", "dtype": "fp32", "status": "ok", "check_status": "ok", "gbps": 120.0, "tflops": 0.01},
    ])
    out = corrected_ceilings(survey, df, {"mm": "compute", "add": "memory"})
    assert out["matmul_tflops"] == {"fp16": 0.006, "fp32": 0.1}  # a failed case raises nothing
    assert out["copy_gbps"] == 120.0
    assert out["ceiling_corrected"] == {"fp16": {"survey": 0.0025, "observed": 0.006},
                                        "copy": {"survey": 100.0, "observed": 120.0}}
    assert survey["matmul_tflops"]["fp16"] == 0.0025  # the survey itself stays as measured


def test_progress_lines_count_cases_and_estimate_the_rest():
    """An implementation's end is a line only when 30 s have passed since the last one, when it
    failed, or when it is the job's last; each counts cases as summary.csv does."""
    import io as _io

    from kernellab.engine.harness import Progress

    now = [0.0]
    out = _io.StringIO()
    progress = Progress("gelu", 30, stream=out, clock=lambda: now[0])
    now[0] = 5.0
    assert progress.done("torch_naive", 10) is None
    now[0] = 40.0
    middle = progress.done("compiled", 5)
    assert middle == "measure gelu: compiled done, 15/30 cases, 40 s, about 40 s left"
    now[0] = 45.0
    last = progress.done("triton", 15, problem="timeout after 5 s")
    assert last == "measure gelu: triton done, 30/30 cases, 45 s (timeout after 5 s)"
    assert out.getvalue().splitlines() == [middle, last]


def test_a_long_implementation_says_it_is_running_every_few_seconds():
    import io as _io

    from kernellab.engine.harness import Progress

    now = [0.0]
    out = _io.StringIO()
    progress = Progress("gelu", 30, stream=out, every_s=15, clock=lambda: now[0])
    now[0] = 5.0
    assert progress.running("triton", 2) is None  # quiet within 15 s of the last line
    now[0] = 20.0
    line = progress.running("triton", 6)  # 6 of 30 in 20 s: 24 left, about 80 s
    assert line == "measure gelu: triton running, 6/30 cases, 20 s, about 80 s left"
    now[0] = 25.0
    assert progress.running("triton", 7) is None
    assert out.getvalue().splitlines() == [line]


def test_a_worker_reports_each_record_as_it_arrives():
    from kernellab.engine import isolate

    seen = []
    records, problem = isolate.run(lambda: iter([{"a": 1}, {"a": 2}]), 30, isolate=False, progress=seen.append)
    assert problem == "" and [r for r in seen if r is not None] == records == [{"a": 1}, {"a": 2}]


def test_a_code_digest_changes_only_with_its_files(tmp_path):
    from kernellab.workflow import manifest

    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 1\n")
    first = manifest.digest([a, b])
    assert manifest.digest([b, a]) == first  # the order of the list does not matter
    a.write_text("x = 2\n")
    assert manifest.digest([a, b]) != first


def test_run_summary_counts_absences_apart_from_failures(tmp_path):
    import pandas as pd

    from kernellab.workflow.run_summary import run_summary

    (tmp_path / "s1").mkdir()
    pd.DataFrame({"status": ["ok", "unavailable", "error", "ok"],
                  "check_status": ["ok", "unavailable", "error", "failed"]}).to_csv(tmp_path / "s1" / "summary.csv")
    text = run_summary(tmp_path, ["s1", "s2"])
    assert "s1: 4 cases: 1 ok, 2 failed, 1 unavailable here" in text
    assert "s2: no summary.csv" in text and str(tmp_path / "s1" / "report.html") in text


def _asleep(pid: int) -> bool:
    """Whether process ``pid`` is blocked (its state in /proc is S: sleeping), not running."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "S"
    except (OSError, IndexError):
        return False


def test_ctrl_c_in_a_running_script_exits_130_with_one_line(tmp_path):
    """The script starts from Python's own Ctrl-C handling, whatever the test runner's is (a
    runner started in the background of a shell ignores SIGINT, and its children inherit that:
    the script then slept its 120 s through the signal). The signal is sent once the script is
    blocked in its sleep, not after a fixed delay that a busy machine can outlast."""
    import signal
    import time

    # inside the job, fds 1 and 2 are its log: the terminal is progress.terminal()
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
            "from kernellab.engine import progress\nfrom kernellab.workflow import pipeline\n"
            f"with pipeline.logged({str(tmp_path / 'job.log')!r}):\n"
            "    print('ready', file=progress.terminal(), flush=True)\n    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()
    assert first.strip() == "ready", first + proc.stderr.read()
    deadline = time.monotonic() + 60
    while not _asleep(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the script did not stop on SIGINT") from None
    assert proc.returncode == 130
    assert err.strip() == pipeline.INTERRUPTED and "Traceback" not in err


def test_the_run_says_interrupted_only_when_it_was(tmp_path):
    from kernellab.workflow.run_summary import stopped_message

    log = tmp_path / "snakemake.log"
    log.write_text("Select jobs to execute...\nTerminating processes on user request, this might take some time.\n")
    assert stopped_message(str(log)) == "kernellab: interrupted: rerun the same command to resume"
    assert stopped_message([str(log)]) == stopped_message(str(log))  # Snakemake 9 hands a list
    log.write_text("Error in rule measure:\n")
    assert "a job failed" in stopped_message(str(log))
    assert "a job failed" in stopped_message(None)

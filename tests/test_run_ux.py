"""What a newcomer meets first: one-line config errors, every key settable from --config,
target=gpu refused without a GPU, Ctrl-C without a traceback, result files readable by others."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab import config as kl_config
from kernellab import io, pipeline, runtime
from kernellab.errors import ConfigError

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
def test_config_errors_name_the_key_in_a_few_lines(tmp_path, args, first):
    proc = _dry(tmp_path, *args)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"Invalid configuration: {first}" in out, out[-2000:]
    assert "Failed validating" not in out and "On instance" not in out  # no schema dump
    assert len(out.strip().splitlines()) < 10, out


def test_numbers_from_the_command_line_are_numbers(tmp_path):
    proc = _dry(tmp_path, "check={seeds: [5, 6, 7], timeout_s: 60}", "isolate=no")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]


def test_coerce_scalars_follows_the_schema():
    config = {"check": {"seeds": ["5", "6", "7"]}, "isolate": "false", "timing": {"budget_s": "0.5"}, "label": "7"}
    kl_config.coerce_scalars(config)
    assert config == {"check": {"seeds": [5, 6, 7]}, "isolate": False, "timing": {"budget_s": 0.5}, "label": "7"}


@pytest.mark.skipif(runtime.has_gpu(), reason="checks the machine without a GPU")
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


def test_result_files_are_written_0644_under_umask_022(tmp_path):
    old = os.umask(0o022)
    try:
        for path, write in ((tmp_path / "a.json", lambda p: io.write_json(p, {"x": 1})),
                            (tmp_path / "b.csv", lambda p: io.write_csv(p, [{"x": 1}])),
                            (tmp_path / "c.ptx.gz", lambda p: io.write_text(p, "ptx"))):
            write(path)
            assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    finally:
        os.umask(old)
    assert io.read_text(tmp_path / "c.ptx.gz") == "ptx"

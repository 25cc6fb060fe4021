"""Result sets per GPU model, the check that a job runs on its set's model, and the checks made
before anything is submitted to SLURM."""

import subprocess
import sys
from pathlib import Path

import pytest

from kernellab.engine import hardware
from kernellab.errors import ConfigError
from kernellab.workflow import cluster

ROOT = Path(__file__).resolve().parents[1]


def test_set_names_per_model():
    assert hardware.set_names(["h100", "H200"]) == {"nvidia-h100": "h100", "nvidia-h200": "H200"}
    assert hardware.set_names(["h100"], label="run2") == {"nvidia-h100-run2": "h100"}
    assert hardware.set_names(["cpu-x86_64"]) == {"cpu-x86_64": ""}  # no GPU to ask for


@pytest.mark.parametrize("set_name,slug", [("nvidia-h100", "nvidia-h100-80gb-hbm3"), ("nvidia-h200", "nvidia-h200"),
                                           ("nvidia-h100-run2", "nvidia-h100-80gb-hbm3")])
def test_a_job_on_its_model_passes(set_name, slug):
    hardware.check_identity(set_name, slug)


@pytest.mark.parametrize("set_name,slug", [("nvidia-h100", "nvidia-h200"), ("nvidia-h200", "nvidia-h20"),
                                           ("nvidia-h100", "cpu-x86_64")])
def test_a_job_on_another_model_fails_naming_both(set_name, slug):
    with pytest.raises(RuntimeError, match=rf"result set '{set_name}' but landed on '{slug}'"):
        hardware.check_identity(set_name, slug)


def test_slurm_preflight_messages():
    with pytest.raises(ConfigError, match="sbatch not found"):
        cluster.check_slurm([], which=lambda tool: None)
    found = lambda tool: f"/usr/bin/{tool}"  # noqa: E731
    with pytest.raises(ConfigError, match=r"GPU model\(s\) h200 not offered.*gpu:h100:4"):
        cluster.check_slurm(["h100", "h200"], which=found, sinfo=lambda: ["gpu:h100:4(S:0-1)"])
    cluster.check_slurm(["h100"], which=found, sinfo=lambda: ["gpu:h100:4(S:0-1)", "gpu:a100:8"])
    cluster.check_slurm(["cpu-x86_64"], which=found, sinfo=lambda: [])


@pytest.mark.slow  # torch.compile's Inductor, or Snakemake, end to end: CI's second stage
def test_one_command_plans_a_set_per_model(tmp_path):
    """Each listed model is its own set: its own survey and measure jobs, asking for its model."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", "config/test.yaml",
                           "--config", "hardware=[h100, h200]", "target=gpu", f"staging={tmp_path / 's'}",
                           f"results={tmp_path / 'r'}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    out = proc.stdout
    for model in ("h100", "h200"):  # config/test.yaml's families: sets of their own, named after the file
        assert f"{tmp_path / 's'}/nvidia-{model}-test/survey.json" in out
        assert f"gpu_model={model}" in out
    assert out.count("rule measure:") == 4  # two kernels on each of two models

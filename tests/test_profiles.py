"""The Snakemake profiles: every key is an option of this Snakemake (a typo would fail the run), and
each profile gives GPU jobs what its machine needs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def snakemake_help() -> str:
    exe = shutil.which("snakemake") or shutil.which("snakemake", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("snakemake is not installed (pip install -r envs/requirements-test.txt)")
    return subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=120).stdout


def test_profile_keys_are_snakemake_options():
    """Every key of profiles/*/config.yaml is an option of this Snakemake (a typo would fail the run)."""
    help_text = snakemake_help()
    options = set(re.findall(r"--([a-z][a-z0-9-]*)", help_text))
    profiles = sorted((ROOT / "profiles").glob("*/config.yaml"))
    assert {p.parent.name for p in profiles} >= {"default", "apptainer"}
    for profile in profiles:
        keys = set(yaml.safe_load(profile.read_text()))
        unknown = sorted(keys - options)
        assert not unknown, f"{profile.relative_to(ROOT)}: not Snakemake options: {unknown}"
    apptainer = yaml.safe_load((ROOT / "profiles" / "apptainer" / "config.yaml").read_text())
    assert apptainer["software-deployment-method"] == ["apptainer"]
    assert "--nv" in apptainer["apptainer-args"].split()
    for profile in profiles:
        conf = yaml.safe_load(profile.read_text())
        if "executor" in conf:  # a cluster: the scheduler gives each GPU job its own GPU
            assert conf["executor"] == "slurm", profile
        else:  # one host: GPU jobs never overlap unless the user asks for more (--resources gpu=K)
            assert "gpu=1" in conf["resources"], profile

"""Lint and format checks (ruff, snakefmt, snakemake --lint, hadolint) and the CI configuration.

The tools come from envs/requirements-test.txt; a test whose tool is not installed is skipped with the
reason. The checks run on the real tree: a finding anywhere fails them, with the tool's report.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
README_TEST_COMMAND = "python -m pip install -r envs/requirements-test.txt -e . && python -m pytest -q"


def tool(name: str) -> str:
    """Path of a command-line tool: PATH, else next to this Python (a virtual environment not activated)."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -r envs/requirements-test.txt)")
    return found


def run(*cmd: str, timeout: float = 600) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "NO_COLOR": "1"}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def report(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n{proc.stdout[-8000:]}\n{proc.stderr[-4000:]}"


def test_ruff_check():
    proc = run(tool("ruff"), "check", ".", "--output-format", "concise")
    assert proc.returncode == 0, report(proc)


def test_snakefmt_check():
    proc = run(tool("snakefmt"), "--check", "--compact-diff", ".")
    assert proc.returncode == 0, report(proc)


def test_snakemake_lint():
    proc = run(tool("snakemake"), "--lint")
    assert proc.returncode == 0, report(proc)
    assert "Lints for" not in proc.stdout + proc.stderr, report(proc)


def test_hadolint_dockerfile():
    proc = run(tool("hadolint"), "--no-color", "Dockerfile")
    assert proc.returncode == 0 and not proc.stdout.strip(), report(proc)


def test_profile_keys_are_snakemake_options():
    """Every key of profiles/*/config.yaml is an option of this Snakemake (a typo would fail the run)."""
    help_text = run(tool("snakemake"), "--help").stdout
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


# -- the GitHub workflow ---------------------------------------------------------------------------------


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def steps(job: str) -> list[dict]:
    return workflow()["jobs"][job]["steps"]


def test_workflow_actions_are_pinned_to_commit_shas():
    uses = [step["uses"] for job in workflow()["jobs"].values() for step in job["steps"] if "uses" in step]
    assert len(uses) >= 4, uses
    for use in uses:
        action, _, ref = use.partition("@")
        assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{use}: not pinned to a full commit SHA"
    # and every pin says which version it is
    for line in WORKFLOW.read_text().splitlines():
        if re.match(r"\s*(-\s+)?uses:", line):
            pinned = re.search(r"@[0-9a-f]{40}\s+#\s*v\d+(\.\d+)*\s*$", line)
            assert pinned, f"no version comment: {line.strip()}"


def test_workflow_jobs():
    data = workflow()
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in triggers and "push" in triggers
    assert set(data["jobs"]) >= {"lint", "test", "image"}
    lint = " ".join(step.get("run", "") for step in steps("lint"))
    for command in ("ruff check .", "snakefmt --check .", "snakemake --lint", "hadolint Dockerfile"):
        assert command in lint, f"lint job does not run {command!r}"
    test = steps("test")
    assert any(step.get("run", "").strip() == README_TEST_COMMAND for step in test)
    assert any(step.get("with", {}).get("python-version") == "3.11" for step in test)
    assert any("chromium" in step.get("run", "") for step in test)
    assert data["jobs"]["test"]["runs-on"].startswith("ubuntu")
    build = [step for step in steps("image") if step.get("uses", "").startswith("docker/build-push-action@")]
    assert build and build[0]["with"]["push"] is False
    assert any(step.get("uses", "").startswith("docker/setup-buildx-action@") for step in steps("image"))


def test_readme_test_command_is_what_ci_runs():
    """The README's test command, verbatim in .ci/run (after the lint checks) and in the workflow."""
    readme = (ROOT / "README.md").read_text()
    assert README_TEST_COMMAND in readme
    ci_run = (ROOT / ".ci" / "run").read_text().splitlines()
    assert README_TEST_COMMAND in ci_run
    position = ci_run.index(README_TEST_COMMAND)
    for command in ("ruff check .", "snakefmt --check .", "snakemake --lint", "hadolint Dockerfile"):
        assert command in ci_run[:position], f".ci/run does not run {command!r} before the tests"

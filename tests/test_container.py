"""The container: the CPU flavour of the Dockerfile built with podman (``.ci/container``, once per
session; its base image made with debootstrap, no registry needed) and the test config run in it as
the README's container command runs it: the checkout mounted at /workspace, a non-root user. The set
must be complete, hold the cases and statuses of a run outside the container (``tiny_run``), and say
in environment.json that it ran in a container, and which image. Skipped, with the reason, where
podman cannot run.

And Snakemake's own container support, as far as it can be tested without Apptainer (no registry here
offers it): a dry run with ``--sdm apptainer`` gives every job the configured image.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.slow  # end to end: runs the workflow (CI's second stage)

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
CPU_IMAGE = f"kernel-lab:{VERSION}-cpu"
SIF = f"kernel-lab-{VERSION}.sif"
IMAGE_UID = 10001  # the Dockerfile's non-root user
# The README's commands for the flavour CI builds, word for word ("$(id -u):$(id -g)" is the
# checkout's owner: uid 10001 when CI, which runs as root, makes the copy it mounts).
README_BUILD = f"docker build --build-arg FLAVOUR=cpu -t {CPU_IMAGE} ."
README_RUN = (f'docker run --rm --user "$(id -u):$(id -g)" -e HOME=/tmp -v "$PWD":/workspace {CPU_IMAGE} '
              "snakemake --cores 1 --configfile config/test.yaml")


def _say(request, line: str) -> None:
    """A line in pytest's output even under -q (the build and run times CI measures)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)


@pytest.fixture(scope="session")
def cpu_image(request):
    """The CPU image built (or found up to date) by .ci/container: (name, environment for podman)."""
    t0 = time.time()
    proc = subprocess.run([str(ROOT / ".ci" / "container")], cwd=ROOT, capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode == 3:
        pytest.skip(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    conf, image = proc.stdout.strip().splitlines()[-2:]
    steps = [ln.removeprefix("container: ") for ln in proc.stderr.splitlines() if ln.startswith("container: ")]
    _say(request, f"container: image {image} in {time.time() - t0:.0f} s ({', '.join(steps)})")
    env = {**os.environ, "CONTAINERS_CONF": conf.removeprefix("CONTAINERS_CONF=")}
    return image, env


def _checkout_copy(dest: Path) -> None:
    """The checkout as a clone has it: a .git whose HEAD is this checkout's commit (its objects
    borrowed from this one, --shared), and the files (tracked and untracked, not ignored: no results,
    no .venv)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "update-ref", "--no-deref", "HEAD", head.stdout.strip()], check=True)
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True)
    assert listed.returncode == 0, listed.stderr
    for rel in filter(None, listed.stdout.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


@pytest.mark.slow
def test_tiny_config_in_the_cpu_image_matches_a_local_run(cpu_image, tiny_run, tmp_path, request):
    image, env = cpu_image
    assert image == CPU_IMAGE
    work = tmp_path / "checkout"
    _checkout_copy(work)
    if os.geteuid() == 0:  # CI: the checkout belongs to a non-root user, the image's
        for path in [work, *work.rglob("*")]:
            os.lchown(path, IMAGE_UID, IMAGE_UID)
        user, extra = f"{IMAGE_UID}:{IMAGE_UID}", []
    else:  # rootless podman: the container's uid is ours
        user, extra = f"{os.getuid()}:{os.getgid()}", ["--userns=keep-id"]
    cmd = ["podman", "run", "--rm", *extra, "--user", user, "-e", "HOME=/tmp", "-v", f"{work}:/workspace", image,
           "snakemake", "--cores", "1", "--configfile", "config/test.yaml"]
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    _say(request, f"container: test config run in {image} in {time.time() - t0:.0f} s "
                  f"(outside the container: {tiny_run[1]:.0f} s)")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]

    # the set is complete: published (only a complete run publishes), every file, every kernel
    sets = [p for p in (work / "results").iterdir() if p.is_dir()]
    assert [p.name for p in sets] == [tiny_run[0].name], sets
    out = sets[0]
    for name in ("summary.csv", "report.html", "report.md", "KERNEL_LOG.md", "survey.json", "environment.json"):
        assert (out / name).is_file(), name
    assert (out / "summary.csv").stat().st_uid == (IMAGE_UID if os.geteuid() == 0 else os.getuid())
    ours = pd.read_csv(out / "summary.csv", keep_default_na=False)
    kernels = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())["kernels"]
    assert set(ours["kernel"]) == set(kernels)

    # the cases and their statuses are those of the run outside the container
    key = ["kernel", "impl_key", "shape", "dtype", "params", "status"]
    local = pd.read_csv(tiny_run[0] / "summary.csv", keep_default_na=False)
    assert sorted(map(tuple, ours[key].values.tolist())) == sorted(map(tuple, local[key].values.tolist()))

    # environment.json: in a container (podman's), this image, its pins; the run outside names no image
    inside = json.loads((out / "environment.json").read_text())
    assert inside["container"] == {"engine": "podman", "image": CPU_IMAGE}, inside["container"]
    assert inside["torch"] == "2.13.0+cpu" and inside["cuda"] is None, (inside["torch"], inside["cuda"])
    outside = json.loads((tiny_run[0] / "environment.json").read_text())
    assert (outside.get("container") or {}).get("image") is None, outside.get("container")
    assert inside["triton"] == outside["triton"] and inside["snakemake"] == outside["snakemake"]
    # the commit, though the image has no git: read from the mounted checkout's .git (issue 41)
    assert inside["git_commit"] == outside["git_commit"] and re.fullmatch(r"[0-9a-f]{40}", inside["git_commit"])


@pytest.mark.slow
def test_the_images_history_holds_no_pip_setting(cpu_image):
    """Issue 41: .ci/container's pip settings (the CA bundle and wheel folders it mounts under
    /run/kernellab-ci) went in as build arguments, and `podman history` showed them. They come as a
    build secret now: no step of the image's history names them."""
    image, env = cpu_image
    proc = subprocess.run(["podman", "history", "--no-trunc", "--format", "{{.CreatedBy}}", image],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    steps = proc.stdout.splitlines()
    assert any("pip install" in step for step in steps), steps  # the history is the build's
    leaked = [step for step in steps if "/run/kernellab-ci" in step or re.search(r"\bPIP_[A-Z_]+=[^\"$]", step)]
    assert not leaked, leaked


# -- Snakemake's own container support (Apptainer), dry runs ------------------------------------------

_JOBS = r"""
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import (ConfigSettings, DAGSettings, DeploymentSettings, OutputSettings,
                                      ResourceSettings, StorageSettings)
from snakemake_interface_executor_plugins.settings import DeploymentMethod

root, tmp, extra = Path.cwd(), Path(sys.argv[1]), json.loads(sys.argv[2])
with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
    wf = api.workflow(
        resource_settings=ResourceSettings(cores=1),
        config_settings=ConfigSettings(configfiles=[root / "config" / "test.yaml"],
                                       config={"staging": str(tmp / "staging"), "results": str(tmp / "results"),
                                               **extra}),
        storage_settings=StorageSettings(),
        deployment_settings=DeploymentSettings(deployment_method={DeploymentMethod.APPTAINER}),
        snakefile=root / "Snakefile", workdir=root)
    wf.dag(DAGSettings()).execute_workflow(executor="dryrun")
    jobs = [(j.rule.name, j.container_img_url, j.container_img.is_local) for j in wf._workflow.dag.jobs]
print("JOBS" + json.dumps(jobs))
"""


@pytest.fixture()
def fake_apptainer(tmp_path):
    """PATH with an `apptainer` that only answers --version: Snakemake checks for the program even in
    a dry run, and no registry here offers Apptainer. Any other call fails the test."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "apptainer"
    stub.write_text('#!/bin/sh\n[ "$1" = --version ] && exec echo "apptainer version 1.4.5"\n'
                    'echo "fake apptainer called: $*" >&2; exit 99\n')
    stub.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.parametrize("override", [None, "docker://registry.example.org/kernel-lab:0.1.0"])
def test_apptainer_dry_run_gives_every_job_the_configured_image(fake_apptainer, tmp_path, override):
    extra = {"container": override} if override else {}
    proc = subprocess.run([sys.executable, "-c", _JOBS, str(tmp_path), json.dumps(extra)], cwd=ROOT,
                          env={**os.environ, "PATH": fake_apptainer}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    jobs = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("JOBS"))[4:])
    rules = {name for name, _, _ in jobs}
    assert {"survey", "build_cuda", "measure", "ptx", "ncu", "aggregate", "report", "publish"} <= rules
    want = override or SIF
    assert {(url, local) for _, url, local in jobs} == {(want, override is None)}, jobs


def test_default_image_is_a_local_sif_not_a_registry_tag(fake_apptainer, tmp_path):
    """The config's default image is the SIF the README builds: the profile's dry run pulls nothing."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert cfg["container"] == SIF
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--profile", "profiles/apptainer",
                           "--configfile", "config/test.yaml",
                           "--config", f"staging={tmp_path / 'staging'}", f"results={tmp_path / 'results'}"],
                          cwd=ROOT, env={**os.environ, "PATH": fake_apptainer}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    assert "will be pulled" not in proc.stdout + proc.stderr


def test_readme_container_section_is_what_ci_runs():
    """The README's commands for the CPU flavour are the ones this test runs, word for word, and its
    default image is the SIF that its apptainer build makes."""
    readme = (ROOT / "README.md").read_text()
    assert README_BUILD in readme and README_RUN in readme
    assert f"apptainer build {SIF} " in readme
    assert "docker://ghcr.io/kernel-lab" not in readme, "the README presents an image no registry holds"
    # podman on a machine like CI's needs the containers.conf that .ci/container writes (issue 41)
    script = (ROOT / ".ci" / "container").read_text()
    conf = script.split('cat >"$cache/containers.conf" <<\'EOF\'\n', 1)[1].split("\nEOF\n", 1)[0]
    assert f"```toml\n{conf}\n```" in readme and "export CONTAINERS_CONF=" in readme


def test_environment_names_the_container_from_its_marks(tmp_path, monkeypatch):
    from kernellab.workflow.aggregate import container

    for var in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER", "KERNELLAB_FLAVOUR"):
        monkeypatch.delenv(var, raising=False)
    assert container(tmp_path) is None  # no mark, no image: not in a container
    (tmp_path / ".dockerenv").touch()
    assert container(tmp_path) == {"engine": "docker", "image": None}  # a container, not one of ours
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".containerenv").touch()
    monkeypatch.setenv("KERNELLAB_FLAVOUR", "cpu")  # the Dockerfile's; the version is the checkout's
    assert container(tmp_path) == {"engine": "podman", "image": CPU_IMAGE}
    monkeypatch.setenv("APPTAINER_CONTAINER", f"/work/{SIF}")
    assert container(tmp_path) == {"engine": "apptainer", "image": CPU_IMAGE, "sif": f"/work/{SIF}"}

"""Checks before anything is submitted to a cluster: the executor plugin, the scheduler's
commands and the GPU models the run asks for. Each problem is one sentence naming the fix."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess

from kernellab.errors import ConfigError


def check_slurm(models: list[str], which=shutil.which, sinfo=None) -> None:
    """Raise ConfigError when ``--executor slurm`` cannot work here, or when a GPU model of
    ``models`` is not among the cluster's GPU resources (sinfo's GRES list)."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        raise ConfigError("--executor slurm needs the plugin: pip install snakemake-executor-plugin-slurm "
                          "(envs/requirements-test.txt pins it)")
    for tool in ("sbatch", "squeue", "sinfo"):
        if which(tool) is None:
            raise ConfigError(f"--executor slurm: {tool} not found on PATH; run from a host with SLURM's "
                              f"client commands (a login node)")
    wanted = [m for m in models if m and not m.startswith("cpu-")]
    if not wanted:
        return
    gres = (sinfo or _sinfo_gres)()
    offered = {part.split(":")[1] for g in gres for part in g.split(",") if part.startswith("gpu:")
               and len(part.split(":")) > 2}
    missing = [m for m in wanted if m not in offered]
    if missing:
        raise ConfigError(f"hardware: GPU model(s) {', '.join(missing)} not offered by this cluster; its GPU "
                          f"resources (sinfo -o %G): {', '.join(sorted(gres)) or 'none'}")


def _sinfo_gres() -> list[str]:
    out = subprocess.run(["sinfo", "-h", "-o", "%G"], capture_output=True, text=True, timeout=60).stdout
    return [line.strip() for line in out.splitlines() if line.strip() and line.strip() != "(null)"]

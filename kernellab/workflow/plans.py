"""A run's families and cases from its config: which shape set it uses, the registry of its
kernel folders, and each family's plan."""

from __future__ import annotations

from kernellab.engine import runtime


def target_of(config: dict) -> str:
    """``gpu`` or ``cpu``: which shape set this run uses."""
    target = config.get("target", "auto")
    if target == "auto":
        return "gpu" if runtime.has_gpu() else "cpu"
    return target


def registry_of(config: dict):
    """The Registry of the config's kernel folders: ``.family(name)`` raises a family's load
    error (its file and line) for one that did not load."""
    from kernellab.engine import registry

    return registry.load(config.get("kernel_dirs"))


def plan_of(config: dict, kernel: str):
    from kernellab.engine.cases import kernel_plan

    return kernel_plan(kernel, config["kernels"][kernel], target_of(config))

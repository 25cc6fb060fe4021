"""Result sets named after GPU models, and the check that a job runs on the model of its set.

A run that lists models (config ``hardware: [h100, h200]``) measures each on a node of that
model and writes one result set per model (``nvidia-h100``, ``nvidia-h200``). The submitting
host decides nothing about hardware; each GPU job compares the GPU it landed on with its set,
so a job scheduled on the wrong model fails instead of mixing two machines in one set.
"""

from __future__ import annotations

from kernellab.engine.survey import slugify

VENDORS = ("nvidia-", "amd-", "cpu-")


def set_base(model: str) -> str:
    """``h100`` -> ``nvidia-h100``; names that carry a vendor (``cpu-x86_64``) stay as they are."""
    slug = slugify(model)
    return slug if slug.startswith(VENDORS) else f"nvidia-{slug}"


def set_names(models: list[str], label: str = "") -> dict[str, str]:
    """Result set name -> the GPU model its jobs ask the scheduler for ('' for CPU entries)."""
    suffix = f"-{label}" if label else ""
    return {set_base(m) + suffix: ("" if set_base(m).startswith("cpu-") else m) for m in models}


def check_identity(set_name: str, slug: str) -> None:
    """Raise unless ``slug`` (this machine's ``survey.hardware_slug()``) is the model of
    ``set_name`` (an H100 80GB HBM3, ``nvidia-h100-80gb-hbm3``, belongs to ``nvidia-h100``)."""
    base = next((b for b in _bases(set_name) if slug == b or slug.startswith(b + "-")), None)
    if base is None:
        raise RuntimeError(f"this job measures result set {set_name!r} but landed on {slug!r}: a node of "
                           f"another GPU model. Its results would mix two machines, so it stops here; ask the "
                           f"scheduler for that model (gpu_model) or remove it from config key hardware.")


def _bases(set_name: str) -> list[str]:
    """The set's name and its shorter prefixes (a label may follow the model: nvidia-h100-run2)."""
    parts = set_name.split("-")
    return ["-".join(parts[:i]) for i in range(len(parts), 1, -1)]

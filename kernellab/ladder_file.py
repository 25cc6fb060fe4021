"""A family's ``ladder.yaml``: its ladders' steps in order, each with its idea, prediction and
finding. Data only, read by the registry when it loads a family and by the report when it renders
a set again (a finding is written after the measurement it explains: the checkout's is the latest
reading of a step), so neither has to import the other, nor a family."""

from __future__ import annotations

from pathlib import Path

from kernellab.errors import FamilyError

LADDER_FILE = "ladder.yaml"
# Ladders renamed to the one convention of folder names, <language>_<idea> (cuda_rows, triton_loop):
# (family or "*", the old name) -> the name; a set made before reads under the new one
RENAMED = {("*", "hopper_rows"): "cuda_rows", ("softmax", "softmax"): "triton_rows"}


def current_name(kernel: str, ladder: str) -> str:
    """The name ``kernel``'s ladder ``ladder`` has now (a set may name it as it was)."""
    return RENAMED.get((kernel, ladder)) or RENAMED.get(("*", ladder)) or ladder
STEP_TEXTS = ("idea", "prediction", "finding", "expect_speedup", "expect_pct_of_peak")
STEP_KEYS = ("step", "kernels", *STEP_TEXTS)


def ladder_texts(folder: Path) -> dict[tuple[str, str], dict]:
    """(ladder, step) -> {order, idea, prediction, finding, expect_speedup, expect_pct_of_peak,
    kernels} from the folder's ladder.yaml: ``{ladder: [{step, idea, prediction, expect_speedup:
    [lo, hi], ...}]}``, steps in ladder order: the one place a ladder's order is written."""
    import yaml

    path = folder / LADDER_FILE
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise FamilyError(f"{path}: expected a mapping of ladder name -> list of steps")
    out = {}
    for ladder, steps in data.items():
        if not isinstance(steps, list):
            raise FamilyError(f"{path}: ladder {ladder!r} must be a list of steps")
        for order, entry in enumerate(steps, start=1):
            unknown = set(entry) - set(STEP_KEYS)
            if "step" not in entry or unknown:
                raise FamilyError(f"{path}: ladder {ladder!r}, entry {order}: needs 'step'"
                                  + (f"; unknown keys {sorted(unknown)}" if unknown else ""))
            texts = {k: entry.get(k, "") for k in ("idea", "prediction", "finding")}
            for k in ("expect_speedup", "expect_pct_of_peak"):
                v = entry.get(k)
                if v is not None and (not isinstance(v, list) or len(v) != 2):
                    raise FamilyError(f"{path}: {ladder}/{entry['step']}: {k} must be [low, high]")
                texts[k] = tuple(float(x) for x in v) if v is not None else None
            kernels = entry.get("kernels")
            if kernels is not None and (not isinstance(kernels, list) or not all(isinstance(k, str) for k in kernels)):
                raise FamilyError(f"{path}: {ladder}/{entry['step']}: kernels must be a list of kernel names")
            key = (str(ladder), str(entry["step"]))
            if key in out:
                raise FamilyError(f"{path}: ladder {ladder!r} lists step {entry['step']!r} twice")
            out[key] = {"order": order, **texts, "kernels": kernels}
    return out

"""Issue 41: the README's table of outputs promised what a CPU set lacks (a library log and sources
under build/<kernel>/). Its "in a CPU set" column names what the CUDA build leaves there on this
machine (a CPU torch), no more, no less."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernellab.engine import cuda_build, runtime

ROOT = Path(__file__).resolve().parents[1]


def _row(first_cell: str) -> list[str]:
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith(f"| {first_cell} |"):
            return [c.strip() for c in line.strip().strip("|").split(" | ")]
    raise AssertionError(f"the README's outputs table has no row {first_cell}")


@pytest.mark.skipif(runtime.has_gpu(), reason="what a CPU set holds: needs a CPU torch")
def test_the_build_row_names_what_a_cpu_build_leaves(tmp_path):
    from kernellab.workflow import pipeline

    if cuda_build.find_nvcc() is None:
        pytest.skip("nvcc not found: the CPU cell names the cubins nvcc makes without a GPU")
    out = tmp_path / "build" / "gelu"
    info = pipeline.build_cuda(str(out / "build.json"), str(out / "resources.csv"), str(ROOT / "kernels" / "gelu"))
    assert info["status"] == "unavailable" and info["library"] is None
    held = {p.name + ("/" if p.is_dir() else "") for p in out.iterdir()} - {"resources.csv"}

    _, what, on_cpu = _row("`build/`")
    promised = set(re.findall(r"`([^`]+)`", on_cpu.split("`<kernel>/`:", 1)[1]))
    assert promised == held, (promised, held)
    # the GPU's extra files are in the row's description, not in its CPU cell
    assert {"build.log", "sources.json"} <= set(re.findall(r"`([^`]+)`", what)) and "no library" in on_cpu

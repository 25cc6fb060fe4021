"""The report: results/<hardware>/ rendered as one self-contained HTML page, a Markdown
page with PNG plots beside it, and KERNEL_LOG.md (the optimization ladders).

    from kernellab.report import render, kernel_log
    render(Path("results"), "nvidia-h200", Path("results/nvidia-h200"),
           references=[Path("reference/nvidia-h100-80gb-hbm3")])

Rendering is deterministic: the same inputs give byte-identical files.
"""

from __future__ import annotations

from pathlib import Path


def render(results_root: Path, hardware: str, out_dir: Path, **options) -> dict[str, Path]:
    """Render results_root/hardware into out_dir; ``options`` (others, references, workers) and
    the rest: kernellab.report.render.render."""
    from kernellab.report.render import render as _render

    return _render(results_root, hardware, out_dir, **options)


def kernel_log(results_dir: Path) -> str:
    from kernellab.report.render import kernel_log as _kernel_log

    return _kernel_log(results_dir)


__all__ = ["kernel_log", "render"]

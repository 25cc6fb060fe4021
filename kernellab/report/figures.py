"""The report's figures: per-kernel plots and the roofline, as embedded images."""

from __future__ import annotations

import math

from kernellab.engine import isolate
from kernellab.passes import PASSES
from kernellab.report import fmt, plot_kernel, plot_roofline
from kernellab.report.fmt import html_id
from kernellab.report.load import Results
from kernellab.report.model import (
    ceiling,
    datasheet,
    metric_label,
)
from kernellab.report.views import Image

# a case's pass, in the order the report shows them (summary.schema.yaml's enum)
PASS_ORDER = PASSES


def _panel_key(r: dict) -> tuple[str, str, str, int]:
    """One panel (figure, table group) per dtype, parameters, mode and pass: a backward is never
    drawn or compared beside a forward."""
    p = r.get("pass") or "forward"
    return (r["dtype"], r["params"], r["mode"], PASS_ORDER.index(p) if p in PASS_ORDER else len(PASS_ORDER))


def _panel_label(key: tuple[str, str, str, int], multi_mode: bool) -> str:
    dtype, params, mode, pass_ = key
    parts = [dtype or "(no dtype)"]
    if params:
        parts.append(params)
    if multi_mode and mode:
        parts.append(mode)
    if 0 < pass_ < len(PASS_ORDER):
        parts.append(PASS_ORDER[pass_])
    return ", ".join(parts)


KINDS = ("latency", "throughput", "speedup")


def _figure_args(res: Results, kernel: str, metric: str) -> tuple:
    """The arguments of ``plot_kernel.kernel_figure`` for one kernel, less the kind."""
    rows = [r for r in res.summary if r["kernel"] == kernel]
    multi_mode = len({r["mode"] for r in rows}) > 1
    keys = sorted({r["impl_key"] for r in rows})
    panels, ceilings = [], {}
    for pk in sorted({_panel_key(r) for r in rows}):
        label = _panel_label(pk, multi_mode)
        panels.append((label, [r for r in rows if _panel_key(r) == pk and r["valid"]]))
        ceilings[label] = (ceiling(res.survey, metric, pk[0]), datasheet(res.survey, metric, pk[0]))
    return kernel, panels, metric, ceilings, keys


def kernel_images(res: Results, metrics: dict[str, str], workers: int = 1) -> dict[str, list[Image]]:
    """Each kernel's latency, throughput and speedup figures (those with data), drawn on up to
    ``workers`` processes: drawing is most of a report's time (0.5-0.8 s a figure)."""
    calls = [(kind, *_figure_args(res, kernel, metric)) for kernel, metric in metrics.items() for kind in KINDS]
    drawn = iter(isolate.forked_map(plot_kernel.kernel_figure, calls, workers))
    out: dict[str, list[Image]] = {}
    for kernel, metric in metrics.items():
        unit = metric_label(metric)
        out[kernel] = []
        for kind, alt in zip(KINDS, (
            "median time per call vs number of elements, log-log",
            f"achieved {unit} vs number of elements, with the measured ceiling",
            "speedup over torch_fused vs number of elements",
        ), strict=True):
            data = next(drawn)
            if data:
                out[kernel].append(Image(name=f"{html_id(kernel)}_{kind}", alt=f"{kernel}: {alt}",
                                         caption=f"{kernel}: {alt}.", data=data))
    return out


def roofline_image(res: Results) -> tuple[Image | None, str]:
    points, zero = [], 0
    for r in res.summary:
        if not r["valid"]:
            continue
        fl, by = r["flops"], r["bytes"]
        if not (math.isfinite(fl) and math.isfinite(by) and by > 0):
            continue
        if fl <= 0:
            zero += 1
            continue
        points.append(
            {
                "kernel": r["kernel"],
                "dtype": r["dtype"],
                "intensity": fl / by,
                "flops_per_s": fl / (r["median_us"] * 1e-6),
            }
        )
    data = plot_roofline.roofline(points, res.survey, res.hardware)
    note = f"{len(points)} correct cases drawn."
    if zero:
        note += f" {zero} case(s) with zero FLOPs cannot be drawn on a log axis."
    if res.survey.get("ceiling_corrected"):
        note += " Roofs marked \"corrected from data\" are drawn at max(survey, best observed)."
    above = _above_roof(points, res.survey)
    if above:
        # a roof is an upper bound: a point above it is explained here, never left to the eye
        note += (
            f" {len(above)} point(s) above their roof ({', '.join(sorted(set(above)))}): faster than the "
            "measured copy bandwidth allows at their intensity, i.e. data served from cache."
        )
    if data is None:
        return None, "No case with FLOPs, bytes and a time to draw."
    return Image(
        name="roofline",
        alt=f"roofline of {res.hardware}",
        caption=f"Roofline: {res.hardware}. " + note,
        data=data,
    ), note


def _above_roof(points: list[dict], survey: dict) -> list[str]:
    """The kernels of points above min(copy bandwidth × intensity, the dtype's matmul rate)."""
    bw = fmt.to_float(survey.get("copy_gbps")) * 1e9
    mm = survey.get("matmul_tflops") if isinstance(survey.get("matmul_tflops"), dict) else {}
    out = []
    for p in points:
        peak = fmt.to_float(mm.get(p["dtype"])) * 1e12
        roof = min(bw * p["intensity"] if math.isfinite(bw) else math.inf, peak if math.isfinite(peak) else math.inf)
        if math.isfinite(roof) and p["flops_per_s"] > roof * 1.0001:
            out.append(p["kernel"])
    return out

"""The roofline figure: attained FLOP/s against arithmetic intensity under the measured roofs."""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from kernellab.report import plots  # plots.png_bytes by name: the tests look at each figure through it
from kernellab.report.fmt import mpl_text, to_float
from kernellab.report.plots import DPI, colors_for, finite_pos, log_log_axes, log_ticks, markers_for, side_legend, style


def _fixed(fixed: dict, key: str) -> str:
    # a roof raised to what a case reached (model.correct_ceilings): no point sits above it unexplained
    return " (corrected from data)" if key in fixed or (key != "copy" and "copy" in fixed) else ""


def _measured_roofs(ax, grid: list[float], bw: float, peaks: dict[str, float], fixed: dict) -> list[Line2D]:
    """The measured roofs: copy bandwidth times intensity, capped by each dtype's matmul rate."""
    styles = ["-", "--", "-.", (0, (5, 1, 1, 1))]
    roofs: list[Line2D] = []
    if math.isfinite(bw):
        if peaks:
            for i, d in enumerate(sorted(peaks)):
                (ln,) = ax.plot(
                    grid,
                    [min(bw * x, peaks[d]) for x in grid],
                    color="#333333",
                    linestyle=styles[i % len(styles)],
                    linewidth=1.3,
                    label=mpl_text(f"roof {d}: {bw / 1e9:,.4g} GB/s, {peaks[d] / 1e12:,.4g} TFLOP/s{_fixed(fixed, d)}"),
                )
                roofs.append(ln)
        else:
            (ln,) = ax.plot(
                grid,
                [bw * x for x in grid],
                color="#333333",
                linewidth=1.3,
                label=f"memory roof: {bw / 1e9:,.4g} GB/s{_fixed(fixed, 'copy')}",
            )
            roofs.append(ln)
    elif peaks:
        for i, d in enumerate(sorted(peaks)):
            roofs.append(
                ax.axhline(
                    peaks[d],
                    color="#333333",
                    linestyle=styles[i % len(styles)],
                    label=mpl_text(f"compute roof {d}: {peaks[d] / 1e12:,.4g} TFLOP/s{_fixed(fixed, d)}"),
                )
            )
    return roofs


def _datasheet_roofs(ax, grid: list[float], ds_bw: float, ds_tf: dict, dtypes: list[str]) -> list[Line2D]:
    """The datasheet's roofs, dotted, for the dtypes it lists."""
    roofs: list[Line2D] = []
    if math.isfinite(ds_bw):
        for d in dtypes:
            if finite_pos(to_float(ds_tf.get(d))):
                p = to_float(ds_tf.get(d)) * 1e12
                (ln,) = ax.plot(
                    grid,
                    [min(ds_bw * x, p) for x in grid],
                    color="#aaaaaa",
                    linestyle=":",
                    linewidth=1.0,
                    label=mpl_text(f"datasheet roof {d}"),
                )
                roofs.append(ln)
    return roofs


def roofline(points: list[dict], survey: dict, hardware: str) -> bytes | None:
    """Attained FLOP/s vs arithmetic intensity, one point per valid case, colored by kernel.

    ``points``: dicts with kernel, dtype, intensity (FLOP/byte), flops_per_s.
    Roofs: the measured copy bandwidth times intensity, capped by the measured matmul
    rate of each dtype present; datasheet roofs dotted when the survey has them.
    """
    pts = [p for p in points if finite_pos(p["intensity"], p["flops_per_s"])]
    if not pts:
        return None
    survey = survey if isinstance(survey, dict) else {}
    mm = survey.get("matmul_tflops") if isinstance(survey.get("matmul_tflops"), dict) else {}
    ds = survey.get("datasheet") if isinstance(survey.get("datasheet"), dict) else {}
    ds_tf = ds.get("tflops") if isinstance(ds.get("tflops"), dict) else {}
    bw = to_float(survey.get("copy_gbps")) * 1e9
    ds_bw = to_float(ds.get("bw_gbps")) * 1e9
    bw = bw if finite_pos(bw) else math.nan
    ds_bw = ds_bw if finite_pos(ds_bw) else math.nan
    dtypes = sorted({p["dtype"] for p in pts})
    kernels = sorted({p["kernel"] for p in pts})
    colors = colors_for(kernels)
    marks = markers_for(dtypes)
    xs = [p["intensity"] for p in pts]
    xmin, xmax = min(xs) / 4, max(xs) * 4
    fixed = survey.get("ceiling_corrected") or {}

    peaks = {d: to_float(mm.get(d)) * 1e12 for d in dtypes if finite_pos(to_float(mm.get(d)))}
    if math.isfinite(bw):
        for p in peaks.values():
            ridge = p / bw
            xmin, xmax = min(xmin, ridge / 4), max(xmax, ridge * 4)
    with style():
        fig = Figure(figsize=(10.0, 6.0), dpi=DPI)
        fig.subplots_adjust(left=0.09, right=0.72, top=0.93, bottom=0.1)
        ax = log_log_axes(fig)
        grid = [xmin * (xmax / xmin) ** (i / 200) for i in range(201)]
        roofs = _measured_roofs(ax, grid, bw, peaks, fixed) + _datasheet_roofs(ax, grid, ds_bw, ds_tf, dtypes)
        for k in kernels:
            for d in dtypes:
                sel = sorted(
                    (p["intensity"], p["flops_per_s"]) for p in pts if p["kernel"] == k and p["dtype"] == d
                )
                if sel:
                    ax.scatter(
                        [s[0] for s in sel],
                        [s[1] for s in sel],
                        color=colors[k],
                        marker=marks[d],
                        s=22,
                        alpha=0.85,
                        edgecolors="none",
                    )
        ax.set_xlim(xmin, xmax)
        log_ticks(ax.xaxis)
        log_ticks(ax.yaxis)
        ax.set_xlabel("arithmetic intensity (FLOP / byte)")
        ax.set_ylabel("attained FLOP/s")
        ax.set_title(mpl_text(f"Roofline: {hardware}"))
        kernel_h = [
            Line2D([], [], color=colors[k], marker="o", linestyle="", label=mpl_text(k)) for k in kernels
        ]
        dtype_h = [
            Line2D([], [], color="#555555", marker=marks[d], linestyle="", label=mpl_text(d)) for d in dtypes
        ]
        handles = roofs + kernel_h + dtype_h
        side_legend(fig, handles, (0.74, 0.93), 7, ncol=1 if len(handles) <= 30 else 2)
        return plots.png_bytes(fig)

"""A kernel's figures: latency, throughput (against the measured ceiling) and speedup over
torch_fused, each against the number of elements, one panel per dtype, parameters and mode."""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from kernellab.report import plots  # plots.png_bytes by name: the tests look at each figure through it
from kernellab.report.fmt import mpl_text
from kernellab.report.plots import DPI, colors_for, finite_pos, log_ticks, markers_for, ratio_label, style


def _ceiling_lines(ax, ceiling: tuple[float, float], unit: str, handles: dict) -> None:
    """The measured ceiling and the datasheet value as horizontal lines (where known)."""
    measured, sheet = ceiling
    # the "~" keys sort the two lines after the kernels in the legend, the measured one first
    for y, color, dash, name, key in ((measured, "#444444", "-", "measured ceiling", "~"),
                                       (sheet, "#999999", ":", "datasheet", "~~")):
        if finite_pos(y):
            ln = ax.axhline(y, color=color, linewidth=1.1, linestyle=dash, label=f"{name} ({y:,.4g} {unit})")
            handles.setdefault(key + ln.get_label(), ln)


def _panel(ax, kind: str, label: str, rows: list[dict], axis: tuple[str, str, str],
           ceiling: tuple[float, float], style_of: tuple[dict, dict], handles: dict) -> bool:
    """One panel: a line per impl_key of ``rows`` (``axis``: the row field drawn, the y label, the
    unit); the ceilings on a throughput panel. Its lines go to ``handles``; whether it drew any."""
    field, ylabel, unit = axis
    colors, markers = style_of
    ax.set_title(mpl_text(label))
    ax.set_xscale("log")
    ax.set_xlabel("elements")
    ax.set_ylabel(ylabel)
    drawn = False
    by_key: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        x, y = r.get("numel", math.nan), r.get(field, math.nan)
        if finite_pos(x, y) and not (kind == "speedup" and r["impl_key"] == "torch_fused"):
            by_key.setdefault(r["impl_key"], []).append((x, y))
    for key in sorted(by_key):
        pts = sorted(by_key[key])
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        (line,) = ax.plot(
            xs,
            ys,
            marker=markers.get(key, "o"),
            markersize=4,
            linewidth=1.4,
            color=colors.get(key, "#333333"),
            label=mpl_text(key),
        )
        handles.setdefault(mpl_text(key), line)
        drawn = True
    if kind == "latency":
        ax.set_yscale("log")
    elif kind == "speedup":
        ax.set_yscale("log")
        ax.axhline(1.0, color="#555555", linewidth=0.9, linestyle="--")
    else:
        _ceiling_lines(ax, ceiling, unit, handles)
        ax.set_ylim(bottom=0)
    if not drawn:
        ax.text(
            0.5,
            0.5,
            "no correct measurement",
            transform=ax.transAxes,
            ha="center",
            va="center",
            color="#a00000",
        )
    return drawn


def kernel_figure(
    kind: str,
    kernel: str,
    panels: list[tuple[str, list[dict]]],
    metric: str,
    ceilings: dict[str, tuple[float, float]],
    keys: list[str],
) -> bytes | None:
    """One figure, one panel per (dtype, params, mode); one line per impl_key.

    kind: ``latency`` (µs, log-log), ``throughput`` (GB/s or TFLOP/s with the measured
    ceiling and the datasheet value as horizontal lines) or ``speedup`` (over
    torch_fused, log-log, 1× line). ``rows`` are valid rows only. ``ceilings`` maps a
    panel label to (measured, datasheet).
    """
    if not panels:
        return None
    colors = colors_for(keys)
    markers = markers_for(keys)
    unit = "TFLOP/s" if metric == "tflops" else "GB/s"
    field = {
        "latency": "median_us",
        "throughput": "tflops" if metric == "tflops" else "gbps",
        "speedup": "speedup",
    }[kind]
    ylabel = {"latency": "median time (µs)", "throughput": unit, "speedup": "speedup over torch_fused"}[kind]
    title = {
        "latency": "latency vs size",
        "throughput": f"achieved {unit} vs size",
        "speedup": "speedup over torch_fused vs size",
    }[kind]
    n = len(panels)
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    n_legend = len(keys) + (2 * n if kind == "throughput" else 0)
    width = 4.6 * ncols + 0.6
    legend_cols = max(1, min(n_legend, int((width - 0.3) // 2.3)))
    legend_h = 0.2 * math.ceil(n_legend / legend_cols) + 0.25
    height = 3.3 * nrows + 0.55 + legend_h + 0.45
    with style():
        fig = Figure(figsize=(width, height), dpi=DPI)
        fig.subplots_adjust(
            left=0.85 / width,
            right=1 - 0.25 / width,
            top=1 - 0.6 / height,
            bottom=(legend_h + 0.5) / height,
            wspace=0.28,
            hspace=0.5,
        )
        axes = fig.subplots(nrows, ncols, squeeze=False)
        handles: dict[str, Line2D] = {}
        any_data = False
        for idx, (label, rows) in enumerate(panels):
            ax = axes[idx // ncols][idx % ncols]
            drawn = _panel(ax, kind, label, rows, (field, ylabel, unit), ceilings.get(label, (math.nan, math.nan)),
                           (colors, markers), handles)
            any_data = any_data or drawn
            if drawn:
                log_ticks(ax.xaxis)
                if kind == "latency":
                    log_ticks(ax.yaxis)
                elif kind == "speedup":
                    log_ticks(ax.yaxis, ratio_label)
        for idx in range(n, nrows * ncols):
            axes[idx // ncols][idx % ncols].set_visible(False)
        if not any_data:
            return None
        fig.suptitle(mpl_text(f"{kernel}: {title}"))
        items = sorted(handles.items())
        fig.legend(
            [h for _, h in items],
            [h.get_label() for _, h in items],
            loc="lower center",
            bbox_to_anchor=(0.5, 0.1 / height),
            ncol=max(1, min(legend_cols, len(items))),
            frameon=False,
        )
        return plots.png_bytes(fig)

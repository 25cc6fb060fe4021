"""The figures of this set against another (the report's comparison section): each common
case's medians on the two machines, and the time ratios per family against the ceilings'."""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from kernellab.report import plots  # plots.png_bytes by name: the tests look at each figure through it
from kernellab.report.fmt import mpl_text
from kernellab.report.plots import (
    DPI,
    finite_pos,
    log_log_axes,
    log_ticks,
    markers_for,
    ratio_ticks,
    side_legend,
    style,
)

VERDICT_COLORS = {"SAME": "#888888", "FASTER": "#2a9d4a", "SLOWER": "#d1495b", "AMBIGUOUS": "#e0a030"}


def medians(pairs: list[dict], this: str, other: str) -> bytes | None:
    """Scatter of medians, this hardware (x) against the other (y), log-log, y = x dashed.

    Colored by each pair's ``verdict`` for this hardware (SAME, FASTER, SLOWER,
    AMBIGUOUS; the counts in the legend), one marker per kernel."""
    pts = [p for p in pairs if finite_pos(p["a_us"], p["b_us"])]
    if not pts:
        return None
    kernels = sorted({p["kernel"] for p in pts})
    marks = markers_for(kernels)
    lo = min(min(p["a_us"], p["b_us"]) for p in pts) / 2
    hi = max(max(p["a_us"], p["b_us"]) for p in pts) * 2
    with style():
        fig = Figure(figsize=(7.5, 6.0), dpi=DPI)
        fig.subplots_adjust(left=0.12, right=0.7, top=0.92, bottom=0.1)
        ax = log_log_axes(fig)
        (same,) = ax.plot([lo, hi], [lo, hi], color="#555555", linestyle="--", linewidth=1.0, label="same time")
        handles: list = [same]
        for verdict, color in VERDICT_COLORS.items():
            sel = [p for p in pts if p.get("verdict") == verdict]
            handles.append(Line2D([], [], color=color, marker="o", linestyle="", label=f"{verdict} ({len(sel)})"))
            for k in kernels:
                xy = sorted((p["a_us"], p["b_us"]) for p in sel if p["kernel"] == k)
                if xy:
                    ax.scatter([s[0] for s in xy], [s[1] for s in xy], color=color, marker=marks[k], s=24)
        handles += [
            Line2D([], [], color="#555555", marker=marks[k], linestyle="", label=mpl_text(k)) for k in kernels
        ]
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        log_ticks(ax.xaxis)
        log_ticks(ax.yaxis)
        ax.set_xlabel(mpl_text(f"median µs on {this}"))
        ax.set_ylabel(mpl_text(f"median µs on {other}"))
        ax.set_title(mpl_text(f"common cases (above the line: {this} faster)"))
        side_legend(fig, handles, (0.72, 0.92), 8, title=mpl_text(f"verdict for {this}"), title_fontsize=8)
        return plots.png_bytes(fig)


def _rank_spread(values: list[float], height: float) -> list[float]:
    """Offsets in (-height / 2, height / 2), evenly spaced by the rank of each value (smallest
    lowest; a value that is not finite below every other, ties in the order given)."""
    if len(values) < 2:
        return [0.0] * len(values)
    order = sorted(range(len(values)), key=lambda k: (values[k] if math.isfinite(values[k]) else -math.inf, k))
    out = [0.0] * len(values)
    for rank, k in enumerate(order):
        out[k] = (rank / (len(values) - 1) - 0.5) * height
    return out


def _draw_rows(ax, rows: list[dict]) -> None:
    """Each family's row: its cases by verdict, the ceilings' ratio (a bar), the median (a diamond)."""
    n = len(rows)
    for i, r in enumerate(rows):
        y = n - 1 - i
        if i:
            ax.axhline(y + 0.5, color="#dddddd", linewidth=0.6)
        dys = _rank_spread([us for _, _, us in r["points"]], 0.56)
        for verdict, color in VERDICT_COLORS.items():
            sel = [(x, y + dy) for (x, v, _), dy in zip(r["points"], dys, strict=True) if v == verdict]
            if sel:
                ax.scatter(
                    [s[0] for s in sel],
                    [s[1] for s in sel],
                    color=color,
                    s=22,
                    alpha=0.85,
                    edgecolors="none",
                    zorder=2,
                )
        if finite_pos(r["predicted"]):
            # under the points: a case exactly at the prediction stays visible
            ax.plot([r["predicted"]] * 2, [y - 0.42, y + 0.42], color="#000000", linewidth=2.4, zorder=1.5)
        if finite_pos(r["median"]):
            ax.scatter(
                [r["median"]],
                [y],
                marker="D",
                s=46,
                facecolors="none",
                edgecolors="#000000",
                linewidths=1.3,
                zorder=4,
            )


def _legend(fig, same, counts: dict[str, int], this: str, anchor: tuple[float, float]) -> None:
    """The verdicts with their counts, the ceilings' ratio, the median and the 1× line, right of the plot."""
    handles: list = [
        Line2D([], [], color=c, marker="o", linestyle="", label=f"{v} ({counts[v]})")
        for v, c in VERDICT_COLORS.items()
    ]
    handles += [
        Line2D(
            [],
            [],
            color="#000000",
            marker="|",
            markersize=12,
            markeredgewidth=2.4,
            linestyle="",
            label="ceilings' ratio",
        ),
        Line2D([], [], color="#000000", marker="D", markerfacecolor="none", linestyle="", label="median"),
        same,
    ]
    side_legend(fig, handles, anchor, 8, title=mpl_text(f"verdict for {this}"), title_fontsize=8)


def ceiling_ratios(rows: list[dict], this: str, other: str) -> bytes | None:
    """One row per family: each case's time ratio other / this (log x), colored by verdict,
    against a black bar at the ratio the two machines' ceilings predict and a diamond at the
    row's median; 1× dashed. Within a row the cases rise with their time on ``this``, shortest
    at the bottom: the cases that launch overhead rather than a ceiling governs stay apart.

    ``rows``: dicts with label, points ([(ratio, verdict, µs on this)]), predicted and median (NaN:
    not drawn), top to bottom in the order given."""
    rows = [
        {**r, "points": sorted(pt for pt in r["points"] if finite_pos(pt[0]))}
        for r in rows
        if any(finite_pos(pt[0]) for pt in r["points"])
    ]
    if not rows:
        return None
    xs = [x for r in rows for x, _, _ in r["points"]] + [r["predicted"] for r in rows if finite_pos(r["predicted"])]
    lo, hi = min([*xs, 1.0]) / 1.6, max([*xs, 1.0]) * 1.6
    n = len(rows)
    label_w = 0.35 + 0.075 * max(len(r["label"]) for r in rows)  # inches: DejaVu Sans 9 pt, about
    plot_w, legend_w = 5.2, 2.3
    width = label_w + plot_w + legend_w
    height = max(3.2, 0.42 * n + 1.3)
    counts = {v: sum(1 for r in rows for _, vv, _ in r["points"] if vv == v) for v in VERDICT_COLORS}
    with style():
        fig = Figure(figsize=(width, height), dpi=DPI)
        fig.subplots_adjust(
            left=label_w / width, right=(label_w + plot_w) / width, top=1 - 0.45 / height, bottom=0.7 / height
        )
        ax = fig.subplots()
        ax.set_xscale("log")
        ax.grid(axis="y", visible=False)
        same = ax.axvline(1.0, color="#555555", linestyle="--", linewidth=1.0, label="same time (1×)")
        _draw_rows(ax, rows)
        ax.set_yticks(range(n))
        ax.set_yticklabels([mpl_text(r["label"]) for r in reversed(rows)])
        ax.set_ylim(-0.6, n - 0.4)
        ax.set_xlim(lo, hi)
        ratio_ticks(ax.xaxis)
        ax.set_xlabel(mpl_text(f"time ratio {other} / {this} (right of 1×: {this} faster)"))
        ax.set_title("time ratio per family against the ceilings' ratio")
        _legend(fig, same, counts, this, ((label_w + plot_w + 0.2) / width, 1 - 0.45 / height))
        return plots.png_bytes(fig)

"""Matplotlib figures as PNG bytes, deterministic: same data, same bytes.

No pyplot (no global figure state): each figure is a ``Figure`` drawn by the Agg
canvas under fixed rcParams (``rcdefaults`` plus a few settings, ``svg.hashsalt``
fixed), saved without the ``Software`` metadata and at a fixed dpi. Inputs arrive
sorted; colors are assigned from sorted names.
"""

from __future__ import annotations

import io
import math
import struct
from contextlib import contextmanager

import matplotlib as mpl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

from kernellab.report.fmt import mpl_text, to_float

DPI = 100
RC = {
    "svg.hashsalt": "kernellab-report",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "legend.fontsize": 8.0,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "path.simplify": False,
    "text.usetex": False,
}
PALETTE = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#393b79",
    "#ad494a",
    "#637939",
    "#7b4173",
    "#3182bd",
    "#e6550d",
    "#31a354",
]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p"]
# PyTorch's in black and grey; the other libraries' in colours of their own, outside the palette
FIXED = {"torch_fused": "#000000", "torch_naive": "#7f7f7f", "quack": "#e7298a", "liger": "#a6761d"}


@contextmanager
def style():
    with mpl.rc_context():
        mpl.rcdefaults()
        mpl.rcParams.update(RC)
        yield


def png_bytes(fig: Figure) -> bytes:
    """The figure as a 256-colour PNG: a third of the bytes of matplotlib's RGBA PNG for line and
    bar charts (the reference sets the repository keeps, and report.html, embed every plot)."""
    from PIL import Image as PILImage  # matplotlib's own dependency

    canvas = FigureCanvasAgg(fig)
    fig.set_dpi(DPI)
    canvas.draw()
    rgb = PILImage.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).convert("RGB")
    buf = io.BytesIO()
    rgb.quantize(256, method=PILImage.Quantize.MEDIANCUT).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the PNG header."""
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n":
        return (0, 0)
    return struct.unpack(">II", data[16:24])


def colors_for(names) -> dict[str, str]:
    out, i = {}, 0
    for n in sorted(set(names)):
        if n in FIXED:
            out[n] = FIXED[n]
        else:
            out[n] = PALETTE[i % len(PALETTE)]
            i += 1
    return out


def markers_for(names) -> dict[str, str]:
    return {n: MARKERS[i % len(MARKERS)] for i, n in enumerate(sorted(set(names)))}


def _finite_pos(*xs) -> bool:
    return all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in xs)


def _times(v, _pos) -> str:
    return f"{v:g}×"


def _compact(v, _pos) -> str:
    """A short label for a round tick value: 20k, 1M, 2G, 0.5 (shorter than 2×10⁴, so labels never touch)."""
    for scale, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:g}{suffix}"
    return f"{v:g}"


def log_ticks(axis, fmt=_compact) -> None:
    """Major ticks only on a log axis, as many as fit: 1-2-5 per decade across a narrow range,
    decades only across a wide one. Matplotlib's default labels minor ticks when the range is
    under a decade or two, and those labels (2×10⁴ 3×10⁴ 4×10⁴) overlap."""
    lo, hi = sorted(axis.get_view_interval())
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    # under a decade, 1-2-3-5 keeps at least two ticks in view (else LogLocator falls back to a
    # linear locator with many labels); over two decades, powers of ten alone
    subs = (1.0, 2.0, 3.0, 5.0) if decades < 1 else (1.0, 2.0, 5.0) if decades <= 2.2 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=8))
    axis.set_major_formatter(FuncFormatter(fmt))
    axis.set_minor_formatter(NullFormatter())


# round ratios for an axis spanning under a decade: at least 0.079 decade apart, so their labels
# keep clear of each other on a panel 5 inches wide
RATIO_TICKS = (0.1, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)


def ratio_ticks(axis) -> None:
    """Ratio labels (``1.25×``) on a log axis: round ratios across under a decade, where
    ``log_ticks`` leaves two or three, else ``log_ticks``."""
    lo, hi = sorted(axis.get_view_interval())
    if not (0 < lo and hi / lo < 10):
        log_ticks(axis, _times)
        return
    axis.set_major_locator(FixedLocator([t for t in RATIO_TICKS if lo <= t <= hi]))
    axis.set_major_formatter(FuncFormatter(_times))
    axis.set_minor_formatter(NullFormatter())


def overlapping_tick_labels(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of visible tick labels on one axis whose drawn boxes intersect (the renderer's extents)."""
    renderer = FigureCanvasAgg(fig).get_renderer()  # the backend savefig uses: same text metrics
    fig.draw(renderer)
    clashes = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            labels = [
                (t.get_text(), t.get_window_extent(renderer))
                for t in axis.get_ticklabels(which="both")
                if t.get_visible() and t.get_text()
            ]
            for i, (ta, a) in enumerate(labels):
                for tb, b in labels[i + 1 :]:
                    if a.overlaps(b):
                        clashes.append((ta, tb))
    return clashes


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
            ax.set_title(mpl_text(label))
            ax.set_xscale("log")
            ax.set_xlabel("elements")
            ax.set_ylabel(ylabel)
            drawn = False
            by_key: dict[str, list[tuple[float, float]]] = {}
            for r in rows:
                x, y = r.get("numel", math.nan), r.get(field, math.nan)
                if _finite_pos(x, y) and not (kind == "speedup" and r["impl_key"] == "torch_fused"):
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
                measured, sheet = ceilings.get(label, (math.nan, math.nan))
                if _finite_pos(measured):
                    ln = ax.axhline(
                        measured,
                        color="#444444",
                        linewidth=1.1,
                        linestyle="-",
                        label=f"measured ceiling ({measured:,.4g} {unit})",
                    )
                    handles.setdefault("~" + ln.get_label(), ln)
                if _finite_pos(sheet):
                    ln = ax.axhline(
                        sheet,
                        color="#999999",
                        linewidth=1.1,
                        linestyle=":",
                        label=f"datasheet ({sheet:,.4g} {unit})",
                    )
                    handles.setdefault("~~" + ln.get_label(), ln)
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
            any_data = any_data or drawn
            if drawn:
                log_ticks(ax.xaxis)
                if kind == "latency":
                    log_ticks(ax.yaxis)
                elif kind == "speedup":
                    log_ticks(ax.yaxis, _times)
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
        return png_bytes(fig)


def roofline(points: list[dict], survey: dict, hardware: str) -> bytes | None:
    """Attained FLOP/s vs arithmetic intensity, one point per valid case, colored by kernel.

    ``points``: dicts with kernel, dtype, intensity (FLOP/byte), flops_per_s.
    Roofs: the measured copy bandwidth times intensity, capped by the measured matmul
    rate of each dtype present; datasheet roofs dotted when the survey has them.
    """
    pts = [p for p in points if _finite_pos(p["intensity"], p["flops_per_s"])]
    if not pts:
        return None
    survey = survey if isinstance(survey, dict) else {}
    mm = survey.get("matmul_tflops") if isinstance(survey.get("matmul_tflops"), dict) else {}
    ds = survey.get("datasheet") if isinstance(survey.get("datasheet"), dict) else {}
    ds_tf = ds.get("tflops") if isinstance(ds.get("tflops"), dict) else {}
    bw = to_float(survey.get("copy_gbps")) * 1e9
    ds_bw = to_float(ds.get("bw_gbps")) * 1e9
    bw = bw if _finite_pos(bw) else math.nan
    ds_bw = ds_bw if _finite_pos(ds_bw) else math.nan
    dtypes = sorted({p["dtype"] for p in pts})
    kernels = sorted({p["kernel"] for p in pts})
    colors = colors_for(kernels)
    marks = markers_for(dtypes)
    xs = [p["intensity"] for p in pts]
    xmin, xmax = min(xs) / 4, max(xs) * 4
    fixed = survey.get("ceiling_corrected") or {}

    def _fixed(key: str) -> str:
        # a roof raised to what a case reached (model.correct_ceilings): no point sits above it unexplained
        return " (corrected from data)" if key in fixed or (key != "copy" and "copy" in fixed) else ""

    peaks = {d: to_float(mm.get(d)) * 1e12 for d in dtypes if _finite_pos(to_float(mm.get(d)))}
    if math.isfinite(bw):
        for p in peaks.values():
            ridge = p / bw
            xmin, xmax = min(xmin, ridge / 4), max(xmax, ridge * 4)
    with style():
        fig = Figure(figsize=(10.0, 6.0), dpi=DPI)
        fig.subplots_adjust(left=0.09, right=0.72, top=0.93, bottom=0.1)
        ax = fig.subplots()
        ax.set_xscale("log")
        ax.set_yscale("log")
        grid = [xmin * (xmax / xmin) ** (i / 200) for i in range(201)]
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
                        label=mpl_text(f"roof {d}: {bw / 1e9:,.4g} GB/s, {peaks[d] / 1e12:,.4g} TFLOP/s{_fixed(d)}"),
                    )
                    roofs.append(ln)
            else:
                (ln,) = ax.plot(
                    grid,
                    [bw * x for x in grid],
                    color="#333333",
                    linewidth=1.3,
                    label=f"memory roof: {bw / 1e9:,.4g} GB/s{_fixed('copy')}",
                )
                roofs.append(ln)
        elif peaks:
            for i, d in enumerate(sorted(peaks)):
                roofs.append(
                    ax.axhline(
                        peaks[d],
                        color="#333333",
                        linestyle=styles[i % len(styles)],
                        label=mpl_text(f"compute roof {d}: {peaks[d] / 1e12:,.4g} TFLOP/s{_fixed(d)}"),
                    )
                )
        if math.isfinite(ds_bw):
            for d in dtypes:
                if _finite_pos(to_float(ds_tf.get(d))):
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
        fig.legend(
            handles,
            [h.get_label() for h in handles],
            loc="upper left",
            bbox_to_anchor=(0.74, 0.93),
            fontsize=7,
            frameon=False,
            ncol=1 if len(handles) <= 30 else 2,
        )
        return png_bytes(fig)


VERDICT_COLORS = {"SAME": "#888888", "FASTER": "#2a9d4a", "SLOWER": "#d1495b", "AMBIGUOUS": "#e0a030"}


def comparison(pairs: list[dict], this: str, other: str) -> bytes | None:
    """Scatter of medians, this hardware (x) against the other (y), log-log, y = x dashed.

    Colored by each pair's ``verdict`` for this hardware (SAME, FASTER, SLOWER,
    AMBIGUOUS; the counts in the legend), one marker per kernel."""
    pts = [p for p in pairs if _finite_pos(p["a_us"], p["b_us"])]
    if not pts:
        return None
    kernels = sorted({p["kernel"] for p in pts})
    marks = markers_for(kernels)
    lo = min(min(p["a_us"], p["b_us"]) for p in pts) / 2
    hi = max(max(p["a_us"], p["b_us"]) for p in pts) * 2
    with style():
        fig = Figure(figsize=(7.5, 6.0), dpi=DPI)
        fig.subplots_adjust(left=0.12, right=0.7, top=0.92, bottom=0.1)
        ax = fig.subplots()
        ax.set_xscale("log")
        ax.set_yscale("log")
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
        fig.legend(
            handles,
            [h.get_label() for h in handles],
            loc="upper left",
            bbox_to_anchor=(0.72, 0.92),
            fontsize=8,
            frameon=False,
            title=mpl_text(f"verdict for {this}"),
            title_fontsize=8,
        )
        return png_bytes(fig)


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


def ceiling_ratios(rows: list[dict], this: str, other: str) -> bytes | None:
    """One row per family: each case's time ratio other / this (log x), colored by verdict,
    against a black bar at the ratio the two machines' ceilings predict and a diamond at the
    row's median; 1× dashed. Within a row the cases rise with their time on ``this``, shortest
    at the bottom: the cases that launch overhead rather than a ceiling governs stay apart.

    ``rows``: dicts with label, points ([(ratio, verdict, µs on this)]), predicted and median (NaN:
    not drawn), top to bottom in the order given."""
    rows = [
        {**r, "points": sorted(pt for pt in r["points"] if _finite_pos(pt[0]))}
        for r in rows
        if any(_finite_pos(pt[0]) for pt in r["points"])
    ]
    if not rows:
        return None
    xs = [x for r in rows for x, _, _ in r["points"]] + [r["predicted"] for r in rows if _finite_pos(r["predicted"])]
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
            if _finite_pos(r["predicted"]):
                # under the points: a case exactly at the prediction stays visible
                ax.plot([r["predicted"]] * 2, [y - 0.42, y + 0.42], color="#000000", linewidth=2.4, zorder=1.5)
            if _finite_pos(r["median"]):
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
        ax.set_yticks(range(n))
        ax.set_yticklabels([mpl_text(r["label"]) for r in reversed(rows)])
        ax.set_ylim(-0.6, n - 0.4)
        ax.set_xlim(lo, hi)
        ratio_ticks(ax.xaxis)
        ax.set_xlabel(mpl_text(f"time ratio {other} / {this} (right of 1×: {this} faster)"))
        ax.set_title("time ratio per family against the ceilings' ratio")
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
        fig.legend(
            handles,
            [h.get_label() for h in handles],
            loc="upper left",
            bbox_to_anchor=((label_w + plot_w + 0.2) / width, 1 - 0.45 / height),
            fontsize=8,
            frameon=False,
            title=mpl_text(f"verdict for {this}"),
            title_fontsize=8,
        )
        return png_bytes(fig)

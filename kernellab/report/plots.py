"""What every figure of the report shares: Matplotlib figures as PNG bytes, deterministic (same
data, same bytes), their colors, markers and tick labels.

No pyplot (no global figure state): each figure is a ``Figure`` drawn by the Agg
canvas under fixed rcParams (``rcdefaults`` plus a few settings, ``svg.hashsalt``
fixed), saved without the ``Software`` metadata and at a fixed dpi. Inputs arrive
sorted; colors are assigned from sorted names.

The figures themselves, one module per kind: ``plot_kernel`` (a kernel's latency, throughput
and speedup against size), ``plot_roofline`` (the roofline) and ``plot_comparison`` (this set
against another: medians and time ratios against the ceilings').
"""

from __future__ import annotations

import io
import math
import struct
from contextlib import contextmanager

import matplotlib as mpl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

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
FIXED = {"torch_fused": "#000000", "torch_naive": "#7f7f7f", "quack": "#e7298a", "liger": "#a6761d",
         "fa4": "#1b9e77"}


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


def finite_pos(*xs) -> bool:
    return all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in xs)


def ratio_label(v, _pos) -> str:
    return f"{v:g}×"


def _compact(v, _pos) -> str:
    """A short label for a round tick value: 20k, 1M, 2G, 0.5 (shorter than 2×10⁴, so labels never touch)."""
    for scale, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:g}{suffix}"
    return f"{v:g}"


def log_log_axes(fig):
    """The figure's one axes, both scales logarithmic."""
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    return ax


def side_legend(fig, handles, anchor: tuple[float, float], fontsize: int, **options) -> None:
    """The legend of ``handles`` (their labels) in the figure's right margin, its top left corner at
    ``anchor``; ``options`` go to ``Figure.legend`` (a title, columns)."""
    fig.legend(handles, [h.get_label() for h in handles], loc="upper left", bbox_to_anchor=anchor,
               fontsize=fontsize, frameon=False, **options)


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
        log_ticks(axis, ratio_label)
        return
    axis.set_major_locator(FixedLocator([t for t in RATIO_TICKS if lo <= t <= hi]))
    axis.set_major_formatter(FuncFormatter(ratio_label))
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

"""What the two machines' measured ceilings predict for a hardware comparison, family by family.

A memory-bound case takes time in inverse proportion to the copy bandwidth it gets, a
compute-bound one to the matmul rate of its dtype. The ratio of the two sets' ceilings
(this set's over the other's, as the report uses them: the survey's, raised where a case
beat it, ``model.correct_ceilings``) is therefore the time ratio other / this that the
hardware alone explains. Each family's cases are set against it: near the mark the kernel
scales with the machine; away from it something else counts (caches, launch overhead,
clocks, another code path).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from kernellab.engine.survey import not_meaningful
from kernellab.report import fmt, plot_comparison
from kernellab.report.fmt import html_id
from kernellab.report.load import Results
from kernellab.report.model import ceiling, ceiling_key
from kernellab.report.views import Image

MEMORY, COMPUTE = "memory", "compute"


@dataclass
class Group:
    """One family (one per dtype when compute-bound: each dtype has its own matmul rate)."""

    kernel: str
    bound: str  # MEMORY | COMPUTE
    dtype: str  # the dtype of a compute-bound group; "" for a memory-bound one
    this_ceiling: float
    other_ceiling: float
    pairs: list[dict] = field(default_factory=list)
    # {hardware: why} for a side whose ceiling bounds nothing (``survey.not_meaningful``)
    not_meaningful: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The ceiling's name as the survey keys it: "copy" or the dtype."""
        return ceiling_key("tflops" if self.bound == COMPUTE else "gbps", self.dtype)

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.dtype}" if self.bound == COMPUTE else self.kernel

    @property
    def ceiling_name(self) -> str:
        return f"{self.dtype} matmul" if self.bound == COMPUTE else "copy"

    @property
    def unit(self) -> str:
        return "TFLOP/s" if self.bound == COMPUTE else "GB/s"

    @property
    def predicted(self) -> float:
        """The time ratio other / this that the ceilings predict: this set's ceiling over the other's."""
        a, b = self.this_ceiling, self.other_ceiling
        if self.not_meaningful:
            return math.nan
        return a / b if math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0 else math.nan

    @property
    def median(self) -> float:
        return statistics.median(p["ratio"] for p in self.pairs) if self.pairs else math.nan


def groups(res: Results, other: Results, pairs: list[dict]) -> list[Group]:
    """The pairs (``comparison.comparison_view``'s, with ``bound`` and ``dtype``) by family and
    ceiling, each with both sets' ceiling for it, sorted by family then dtype."""
    out: dict[tuple[str, str], Group] = {}
    for p in pairs:
        compute = p["bound"] == COMPUTE
        dtype = p["dtype"] if compute else ""
        g = out.get((p["kernel"], dtype))
        if g is None:
            metric = "tflops" if compute else "gbps"
            g = out[(p["kernel"], dtype)] = Group(
                kernel=p["kernel"],
                bound=COMPUTE if compute else MEMORY,
                dtype=dtype,
                this_ceiling=ceiling(res.survey, metric, dtype),
                other_ceiling=ceiling(other.survey, metric, dtype),
                not_meaningful={
                    r.hardware: why for r in (res, other) if compute and (why := not_meaningful(r.survey).get(dtype))
                },
            )
        g.pairs.append(p)
    return [out[k] for k in sorted(out)]


def faster_text(ratio: float, this: str, other: str) -> str:
    """A time ratio other / this in words: "1.38× faster on <this>"."""
    side = fmt.faster_side(ratio, this, other)
    if side:
        return f"{side[1]} faster on {side[0]}"
    return "the same time on both" if ratio == 1 else fmt.NA


def _corrected(res: Results, key: str) -> bool:
    return key in (res.survey.get("ceiling_corrected") or {})


def group_line(g: Group, res: Results, other: Results) -> str:
    """One sentence: "softmax: 1.38× faster on A (median of 12 case(s)); ceilings predict 1.41×
    faster on A (copy: 4,216 vs 2,990 GB/s)"."""
    this, that = res.hardware, other.hardware
    head = f"{g.label}: {faster_text(g.median, this, that)} (median of {len(g.pairs)} case(s))"
    if g.not_meaningful:
        why = "; ".join(f"on {hw}, {reason}" for hw, reason in g.not_meaningful.items())
        return f"{head}; no prediction: the {g.ceiling_name} ceiling is not meaningful ({why})"
    if not math.isfinite(g.predicted):
        missing = [hw for hw, c in ((this, g.this_ceiling), (that, g.other_ceiling)) if not (c > 0)]
        return f"{head}; no ceiling ratio: the {g.ceiling_name} ceiling was not measured on {', '.join(missing)}"
    fixed = [hw for hw, r in ((this, res), (that, other)) if _corrected(r, g.key)]
    note = f"; raised to the best observed on {' and '.join(fixed)}" if fixed else ""
    return (
        f"{head}; ceilings predict {faster_text(g.predicted, this, that)} "
        f"({g.ceiling_name}: {fmt.sig(g.this_ceiling, 4)} vs {fmt.sig(g.other_ceiling, 4)} {g.unit}{note})"
    )


def ceiling_image(gs: list[Group], res: Results, other: Results) -> Image | None:
    this, that = res.hardware, other.hardware
    rows = [
        {
            "label": g.label,
            "points": [(p["ratio"], p["verdict"], p["a_us"]) for p in g.pairs],
            "predicted": g.predicted,
            "median": g.median,
        }
        for g in gs
    ]
    data = plot_comparison.ceiling_ratios(rows, this, that)
    if not data:
        return None
    return Image(
        name=f"ceilings_{html_id(that)}",
        alt=f"time ratio {that} / {this} per family against the ratio of the two machines' ceilings",
        caption=(
            f"Each common case's time ratio {that} / {this} (log; right of 1×: {this} faster), one row per "
            "family and, for compute-bound families, per dtype, colored by the verdict for "
            f"{this}; within a row the cases rise with their time on {this}, the shortest at the bottom "
            "(where launch overhead, not a ceiling, weighs most). The black bar is what the two machines' "
            "measured ceilings predict for the row: "
            f"{this}'s over {that}'s copy bandwidth for memory-bound families, matmul rate of the dtype "
            "for compute-bound ones; the diamond is the row's median."
        ),
        data=data,
    )

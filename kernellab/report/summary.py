"""The summary section: best implementation per kernel and geometric means against the baseline."""

from __future__ import annotations

import math

from kernellab.report import fmt
from kernellab.report.figures import _panel_key, _panel_label
from kernellab.report.load import Results, shape_sort_key
from kernellab.report.model import (
    BASELINE,
    metric_label,
    pct_of_ceiling,
    pct_of_survey,
    value,
)
from kernellab.report.tables import Table
from kernellab.stats import geomean


def summary_table(res: Results, metrics: dict[str, str]) -> Table:
    t = Table(
        [
            "kernel",
            "case",
            "shape",
            "best implementation",
            "median µs",
            "GB/s or TFLOP/s",
            "% of measured peak",
            "speedup over torch_fused",
            "note",
        ],
        numeric=[False, False, False, False, True, True, True, True, False],
    )
    for kernel in sorted({r["kernel"] for r in res.summary}):
        rows = [r for r in res.summary if r["kernel"] == kernel]
        metric = metrics[kernel]
        multi_mode = len({r["mode"] for r in rows}) > 1
        for pk in sorted({_panel_key(r) for r in rows}):
            prow = [r for r in rows if _panel_key(r) == pk]
            label = _panel_label(pk, multi_mode)
            valid = [r for r in prow if r["valid"]]
            largest_any = max(prow, key=lambda r: shape_sort_key(r["shape"], r["numel"]))["shape"]
            if not valid:
                t.add(
                    [
                        kernel,
                        label,
                        largest_any,
                        "⚠ no correct implementation",
                        fmt.NA,
                        fmt.NA,
                        fmt.NA,
                        fmt.NA,
                        "every row failed or is unavailable",
                    ],
                    "bad",
                )
                continue
            shape = max(valid, key=lambda r: shape_sort_key(r["shape"], r["numel"]))["shape"]
            best = [r for r in valid if r["shape"] == shape and r["best"]]
            b = best[0]
            note = "" if shape == largest_any else f"largest shape {largest_any} has no correct result"
            t.add(
                [
                    kernel,
                    label,
                    shape,
                    b["impl_key"],
                    fmt.us(b["median_us"]),
                    f"{fmt.throughput(value(b, metric), metric)} {metric_label(metric)}",
                    fmt.pct(pct_of_ceiling(b, metric, res.survey)) + (" ↑" if b.get("above_survey") else ""),
                    fmt.ratio(b["speedup"]),
                    note,
                ],
                "best",
            )
    return t


def geomean_table(res: Results) -> Table:
    t = Table(
        ["kernel", "impl_key", "cases", "geomean speedup", "min", "max", "cases left out"],
        numeric=[False, False, True, True, True, True, True],
    )
    keys = sorted({(r["kernel"], r["impl_key"]) for r in res.summary})
    for kernel, key in keys:
        if key == BASELINE:
            continue
        rows = [r for r in res.summary if r["kernel"] == kernel and r["impl_key"] == key]
        sp = [r["speedup"] for r in rows if math.isfinite(r["speedup"])]
        left = len(rows) - len(sp)
        if sp:
            t.add(
                [
                    kernel,
                    key,
                    str(len(sp)),
                    fmt.ratio(geomean(sp)),
                    fmt.ratio(min(sp)),
                    fmt.ratio(max(sp)),
                    str(left),
                ],
                "" if geomean(sp) <= 1 else "good",
            )
        else:
            t.add([kernel, key, "0", fmt.NA, fmt.NA, fmt.NA, str(left)], "warn")
    return t


OURS = ("triton", "cuda")  # the lab's own kernels
PYTORCH = ("torch", "compile")  # what PyTorch gives: its ops, fused or not, and torch.compile


def ours_vs_pytorch(res: Results, metrics: dict[str, str]) -> Table:
    """Per kernel and case (dtype, parameters, mode): at every shape where both ran correctly,
    the fastest of our own implementations (Triton, CUDA) against the fastest of PyTorch's
    (its ops, torch.compile). The row gives both at the largest such shape, with their share of
    the survey's ceiling, and every shape where PyTorch was faster."""
    t = Table(
        [
            "kernel",
            "case",
            "largest shape",
            "ours",
            "ours: % of survey ceiling",
            "PyTorch's best",
            "PyTorch: % of survey ceiling",
            "PyTorch time / ours",
            "shapes PyTorch is faster",
            "lowest PyTorch / ours",
        ],
        numeric=[False, False, False, False, True, False, True, True, True, False],
    )
    for kernel in sorted({r["kernel"] for r in res.summary}):
        rows = [r for r in res.summary if r["kernel"] == kernel and r["valid"]]
        metric = metrics[kernel]
        multi_mode = len({r["mode"] for r in res.summary if r["kernel"] == kernel}) > 1
        for pk in sorted({_panel_key(r) for r in rows}):
            best: dict[str, dict[str, dict]] = {}  # shape -> side -> fastest row
            for r in rows:
                side = "ours" if r["backend"] in OURS else "torch" if r["backend"] in PYTORCH else ""
                if side and _panel_key(r) == pk:  # valid rows: a finite time
                    held = best.setdefault(r["shape"], {}).get(side)
                    if held is None or r["median_us"] < held["median_us"]:
                        best[r["shape"]][side] = r
            both = sorted((s for s, b in best.items() if len(b) == 2),
                          key=lambda s: shape_sort_key(s, best[s]["ours"]["numel"]))
            if not both:
                continue
            ratios = {s: best[s]["torch"]["median_us"] / best[s]["ours"]["median_us"] for s in both}
            ahead = [s for s in both if ratios[s] < 1]
            low = min(both, key=ratios.__getitem__)  # the smallest shape among equal ratios: both is in shape order
            top = best[both[-1]]
            t.add(
                [
                    kernel,
                    _panel_label(pk, multi_mode),
                    both[-1],
                    top["ours"]["impl_key"],
                    fmt.pct(pct_of_survey(top["ours"], metric, res.survey)),
                    top["torch"]["impl_key"],
                    fmt.pct(pct_of_survey(top["torch"], metric, res.survey)),
                    fmt.ratio(ratios[both[-1]]),
                    f"{len(ahead)} of {len(both)}",
                    f"{fmt.ratio(ratios[low])} at {low}",
                ],
                "warn" if ratios[both[-1]] < 1 else "good" if not ahead else "",
            )
    return t

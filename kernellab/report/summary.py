"""The summary section: best implementation per kernel and geometric means against the baseline."""

from __future__ import annotations

import math

from kernellab.engine.stats import geomean
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
        if key.split(".")[0] == BASELINE:  # the baseline of a pass, over itself
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
# The field beside ours, by side: PyTorch's best, then the other libraries (kernellab.kit.peers)
FIELD = (("torch", "PyTorch", PYTORCH), ("quack", "QuACK", ("quack",)), ("liger", "Liger", ("liger",)),
         ("fa4", "FlashAttention-4", ("fa4",)))


def _side(backend: str) -> str:
    if backend in OURS:
        return "ours"
    return next((side for side, _title, backends in FIELD if backend in backends), "")


def ours_vs_field(res: Results, metrics: dict[str, str]) -> tuple[Table, Table]:
    """Our fastest correct kernel (Triton, CUDA, any step) against the field: PyTorch's fastest
    (its ops, torch.compile), QuACK and Liger-Kernel, per kernel, case (dtype, parameters, mode) and
    shape, each as its median time and its share of the survey's ceiling.

    Returns (per-case counts, per-shape table). A shape is listed where ours and at least one of
    the field ran correctly; the counts give, per kernel and case, the shapes where one of the
    field was faster than ours, and which."""
    counts = Table(
        ["kernel", "case", "shapes", "shapes another is faster", "faster there", "lowest other / ours"],
        numeric=[False, False, True, True, False, False],
    )
    columns = ["kernel", "case", "shape", "ours", "ours µs", "ours %"]
    numeric = [False, False, False, False, True, True]
    for side, title, _backends in FIELD:
        columns += ([f"{title}'s best"] if side == "torch" else []) + [f"{title} µs", f"{title} %"]
        numeric += ([False] if side == "torch" else []) + [True, True]
    columns.append("fastest other / ours")
    numeric.append(True)
    shapes = Table(columns, numeric=numeric)
    for kernel in sorted({r["kernel"] for r in res.summary}):
        rows = [r for r in res.summary if r["kernel"] == kernel and r["valid"]]
        metric = metrics[kernel]
        multi_mode = len({r["mode"] for r in res.summary if r["kernel"] == kernel}) > 1
        for pk in sorted({_panel_key(r) for r in rows}):
            best: dict[str, dict[str, dict]] = {}  # shape -> side -> fastest row
            for r in rows:
                side = _side(r["backend"])
                if side and _panel_key(r) == pk:  # valid rows: a finite time
                    held = best.setdefault(r["shape"], {}).get(side)
                    if held is None or r["median_us"] < held["median_us"]:
                        best[r["shape"]][side] = r
            listed = sorted((s for s, b in best.items() if "ours" in b and len(b) > 1),
                            key=lambda s: shape_sort_key(s, best[s]["ours"]["numel"]))
            if not listed:
                continue
            label = _panel_label(pk, multi_mode)
            ratios, fastest = {}, {}
            for s in listed:
                ours = best[s]["ours"]
                other = min((r for side, r in best[s].items() if side != "ours"), key=lambda r: r["median_us"])
                ratios[s], fastest[s] = other["median_us"] / ours["median_us"], other["impl_key"]
                cells = [kernel, label, s, ours["impl_key"], fmt.us(ours["median_us"]),
                         fmt.pct(pct_of_survey(ours, metric, res.survey))]
                for side, _title, _backends in FIELD:
                    r = best[s].get(side)
                    cells += ([r["impl_key"] if r else fmt.NA] if side == "torch" else []) + [
                        fmt.us(r["median_us"]) if r else fmt.NA,
                        fmt.pct(pct_of_survey(r, metric, res.survey)) if r else fmt.NA]
                cells.append(fmt.ratio(ratios[s]))
                shapes.add(cells, "warn" if ratios[s] < 1 else "")
            ahead = [s for s in listed if ratios[s] < 1]
            by: dict[str, int] = {}
            for s in ahead:
                by[fastest[s]] = by.get(fastest[s], 0) + 1
            low = min(listed, key=ratios.__getitem__)  # the smallest shape among equal ratios: listed is in shape order
            counts.add(
                [kernel, label, str(len(listed)), f"{len(ahead)} of {len(listed)}",
                 ", ".join(f"{k} ({n})" for k, n in sorted(by.items())) or "none",
                 f"{fmt.ratio(ratios[low])} at {low} ({fastest[low]})"],
                "warn" if ahead else "good",
            )
    return counts, shapes

"""The comparison section: this set against other result sets, case by case."""

from __future__ import annotations

import math

from kernellab.engine.stats import AMBIGUOUS, FASTER, SAME, SLOWER, classify, geomean
from kernellab.report import fmt, plot_comparison, scaling
from kernellab.report.clocks import slower_compute_table
from kernellab.report.fmt import html_id
from kernellab.report.load import Results, shape_sort_key
from kernellab.report.model import kernel_metric
from kernellab.report.tables import Table
from kernellab.report.views import ComparisonView, Image

COMPARE_THRESHOLD = 0.03  # config compare.threshold's default (config schema, stats.classify)
VERDICTS = (SAME, FASTER, SLOWER, AMBIGUOUS)
VERDICT_FLAGS = {SLOWER: "bad", FASTER: "good", AMBIGUOUS: "warn"}


def _pick_pair(a_rows: list[dict], b_rows: list[dict]) -> tuple[dict, dict]:
    common = sorted({r["mode"] for r in a_rows} & {r["mode"] for r in b_rows})
    if common:
        return (
            next(r for r in a_rows if r["mode"] == common[0]),
            next(r for r in b_rows if r["mode"] == common[0]),
        )
    return a_rows[0], b_rows[0]


def compare_threshold(res: Results) -> float:
    """The run's ``compare.threshold`` (environment.json's config), else the default."""
    cfg = res.environment.get("config")
    cmp = cfg.get("compare") if isinstance(cfg, dict) else None
    t = fmt.to_float(cmp.get("threshold")) if isinstance(cmp, dict) else math.nan
    return t if math.isfinite(t) and t >= 0 else COMPARE_THRESHOLD


def comparison_view(res: Results, other: Results) -> ComparisonView:
    """This set against another, case by case. Each common case gets the verdict of
    ``stats.classify`` with the other set as the baseline: FASTER or SLOWER says how this
    set did, SAME is within the threshold or the noise, AMBIGUOUS has overlapping p20–p80."""
    cv = ComparisonView(other=other.hardware, found=other.exists and bool(other.summary))
    if not cv.found:
        cv.note = f"results/{other.hardware}/summary.csv was not found or is empty: nothing to compare."
        return cv
    threshold = compare_threshold(res)

    def index(rs):
        out: dict[tuple, list[dict]] = {}
        for r in rs:
            if r["valid"]:
                out.setdefault((r["kernel"], r["impl_key"], r["dtype"], r["shape"], r["params"]), []).append(r)
        for v in out.values():
            v.sort(key=lambda r: r["mode"])
        return out

    a, b = index(res.summary), index(other.summary)
    keys = sorted(set(a) & set(b), key=lambda k: (k[0], k[2], k[4], shape_sort_key(k[3]), k[1]))
    t, pairs = _common_cases(res, other, a, b, keys, threshold)
    cv.table = t
    cv.by_kernel = _by_kernel(res, other, pairs)
    data = plot_comparison.medians(pairs, res.hardware, other.hardware)
    if data:
        cv.image = Image(
            name=f"compare_{html_id(other.hardware)}",
            alt=f"median times, {res.hardware} vs {other.hardware}, colored SAME, FASTER, SLOWER, AMBIGUOUS",
            caption=(
                f"Median time of each common case: {res.hardware} (x) against {other.hardware} (y), "
                f"colored by the verdict for {res.hardware}."
            ),
            data=data,
        )
    groups = scaling.groups(res, other, pairs)
    cv.ceilings = scaling.ceiling_image(groups, res, other)
    cv.ceiling_lines = [scaling.group_line(g, res, other) for g in groups]
    cv.slower_clocks, cv.clocks_note = slower_compute_table(res, other, pairs)
    if not pairs:
        cv.note = "No case was measured correctly on both."
    else:
        cv.note = (
            f"{len(pairs)} common case(s), correct on both. A ratio above 1× means {res.hardware} is "
            "faster. Modes are matched when both ran the same one. Verdict for "
            f"{res.hardware}, against {other.hardware}: SAME when the medians differ by at most "
            f"{100 * threshold:g}% (compare.threshold) or the two runs' noise (stdrel) added together; "
            "FASTER or SLOWER when they differ by more and the p20–p80 intervals do not overlap; "
            "AMBIGUOUS when they differ by more but the intervals overlap."
        )
    return cv


def _common_cases(res: Results, other: Results, a: dict, b: dict, keys: list[tuple],
                  threshold: float) -> tuple[Table, list[dict]]:
    """The common cases' table, and each case as a pair of rows with its time ratio and verdict."""
    t = Table(
        [
            "kernel",
            "impl_key",
            "dtype",
            "shape",
            "params",
            "mode",
            f"{res.hardware} µs",
            f"{other.hardware} µs",
            f"time ratio {other.hardware} / {res.hardware}",
            "faster on",
            f"verdict for {res.hardware}",
        ],
        numeric=[False, False, False, False, False, False, True, True, True, False, False],
    )
    pairs = []
    # a family's bound as this set's report judges it (summary.csv's bound, the ladders, the name)
    bounds = {name: "compute" if kernel_metric(res, name) == "tflops" else "memory" for name in {k[0] for k in keys}}
    for k in keys:
        ra, rb = _pick_pair(a[k], b[k])
        ratio = rb["median_us"] / ra["median_us"]
        verdict, _ = classify(rb, ra, threshold)
        mode = ra["mode"] if ra["mode"] == rb["mode"] else f"{ra['mode']} / {rb['mode']}"
        side = fmt.faster_side(ratio, res.hardware, other.hardware)
        faster = f"{side[0]} by {side[1]}" if side else "same"
        t.add(
            [
                k[0],
                k[1],
                k[2],
                k[3],
                k[4],
                mode,
                fmt.us(ra["median_us"]),
                fmt.us(rb["median_us"]),
                fmt.ratio(ratio),
                faster,
                ("⚠ " if verdict == SLOWER else "") + verdict,
            ],
            VERDICT_FLAGS.get(verdict, ""),
        )
        pairs.append(
            {
                "kernel": k[0],
                "impl_key": k[1],
                "dtype": k[2],
                "shape": k[3],
                "params": k[4],
                "bound": bounds[k[0]],
                "a": ra,
                "b": rb,
                "a_us": ra["median_us"],
                "b_us": rb["median_us"],
                "ratio": ratio,
                "verdict": verdict,
            }
        )
    return t, pairs


def _by_kernel(res: Results, other: Results, pairs: list[dict]) -> Table:
    """Per kernel: the common cases, their verdicts and time ratios."""
    bk = Table(
        ["kernel", "common cases", *VERDICTS, f"geomean {other.hardware} / {res.hardware}", "min", "max"],
        numeric=[False, True] + [True] * len(VERDICTS) + [True, True, True],
    )
    for kernel in sorted({p["kernel"] for p in pairs}):
        ps = [p for p in pairs if p["kernel"] == kernel]
        rs = [p["ratio"] for p in ps]
        counts = [str(sum(p["verdict"] == v for p in ps)) for v in VERDICTS]
        bk.add([kernel, str(len(rs)), *counts, fmt.ratio(geomean(rs)), fmt.ratio(min(rs)), fmt.ratio(max(rs))])
    return bk


def compare_verdicts(res: Results) -> Table:
    t = Table(
        [
            "file",
            "a",
            "b",
            "kernel",
            "impl_key",
            "dtype",
            "shape",
            "params",
            "median a µs",
            "median b µs",
            "change",
            "verdict",
        ],
        numeric=[False] * 8 + [True, True, True, False],
    )
    rows = sorted(
        res.compare,
        key=lambda r: (
            r["file"],
            r["kernel"],
            r["impl_key"],
            r["dtype"],
            shape_sort_key(r["shape"]),
            r["params"],
        ),
    )
    for r in rows:
        v = r["verdict"].upper()
        t.add(
            [
                r["file"],
                r["a"],
                r["b"],
                r["kernel"],
                r["impl_key"],
                r["dtype"],
                r["shape"],
                r["params"],
                fmt.us(r["median_a_us"]),
                fmt.us(r["median_b_us"]),
                f"{100 * r['change']:+.1f}%" if math.isfinite(r["change"]) else fmt.NA,
                ("⚠ " if v == "SLOWER" else "") + (r["verdict"] or fmt.NA),
            ],
            VERDICT_FLAGS.get(v, ""),
        )
    return t

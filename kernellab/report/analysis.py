"""From loaded results to the report's content: tables, texts and figures.

The HTML and Markdown templates render the same view, so both pages say the same
thing. Every table cell is plain text here; escaping is the templates' job.
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kernellab.io import read_text
from kernellab.report import fmt, plots
from kernellab.report.fmt import gh_anchor, html_id
from kernellab.report.ladder import LadderView, analyse_all
from kernellab.report.load import Results, check_failed, is_valid, shape_sort_key
from kernellab.report.model import (
    BASELINE,
    annotate,
    ceiling,
    datasheet,
    flag_of,
    kernel_metric,
    metric_label,
    pct_of_ceiling,
    value,
)
from kernellab.report.tables import Table, kv_table
from kernellab.stats import AMBIGUOUS, FASTER, SAME, SLOWER, classify, geomean

PTX_LINES = 40
COMPARE_THRESHOLD = 0.03  # config compare.threshold's default (config schema, stats.classify)
VERDICTS = (SAME, FASTER, SLOWER, AMBIGUOUS)
VERDICT_FLAGS = {SLOWER: "bad", FASTER: "good", AMBIGUOUS: "warn"}
PTX_MAX_BYTES = 4 << 20
HIGHLIGHT = [
    ("ld.global.v4", re.compile(r"\bld\.global(\.\w+)*\.v4\b")),
    ("ld.global.v2", re.compile(r"\bld\.global(\.\w+)*\.v2\b")),
    ("st.global.v4", re.compile(r"\bst\.global(\.\w+)*\.v4\b")),
    ("wgmma", re.compile(r"\bwgmma\b")),
    ("mma", re.compile(r"(?<![\w.])mma\.")),
    ("tanh.approx", re.compile(r"\btanh\.approx\b")),
    ("ld.local", re.compile(r"\bld\.local\b")),
    ("st.local", re.compile(r"\bst\.local\b")),
    ("LDG.128", re.compile(r"\bLDG\.E(\.\w+)*\.128\b")),
    ("STG.128", re.compile(r"\bSTG\.E(\.\w+)*\.128\b")),
    ("HGMMA", re.compile(r"\bHGMMA\b")),
    ("HMMA", re.compile(r"\bHMMA\b")),
    ("MUFU.TANH", re.compile(r"\bMUFU\.TANH\b")),
    ("LDL/STL (local memory)", re.compile(r"\b(LDL|STL)(\.\w+)*\b")),
]


@dataclass
class Image:
    name: str  # file stem in plots/
    alt: str
    caption: str
    data: bytes

    @property
    def file(self) -> str:
        return f"plots/{self.name}.png"

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.data).decode("ascii")

    @property
    def width(self) -> int:
        return plots.png_size(self.data)[0]

    @property
    def height(self) -> int:
        return plots.png_size(self.data)[1]


@dataclass
class Excerpt:
    kind: str  # ptx | sass | ...
    path: str
    lines: list[dict]  # {"no": int|None, "text": str, "hl": bool, "gap": bool}
    counts: str
    note: str = ""

    @property
    def plain(self) -> str:
        out = []
        for ln in self.lines:
            if ln["gap"]:
                out.append(f"{'':>6}   {ln['text']}")
            else:
                out.append(f"{ln['no']:>6} {'»' if ln['hl'] else ' '} {ln['text']}")
        return "\n".join(out)


@dataclass
class PtxView:
    title: str
    facts: str
    excerpts: list[Excerpt]
    missing: list[str]


@dataclass
class KernelView:
    name: str
    id: str
    metric: str
    metric_label: str
    images: list[Image] = field(default_factory=list)
    plot_note: str = ""
    cases: Table | None = None
    correctness: Table | None = None
    correctness_source: str = ""
    correctness_failed: Table | None = None
    profile: Table | None = None
    autotune_winners: Table | None = None
    autotune_all: Table | None = None
    ptx: list[PtxView] = field(default_factory=list)
    resources: Table | None = None
    ncu: Table | None = None
    ladders: list[LadderView] = field(default_factory=list)

    title: str = ""

    def __post_init__(self):
        self.title = self.title or f"Kernel: {self.name}"

    @property
    def md_anchor(self) -> str:
        return gh_anchor(self.title)

    @property
    def md_page(self) -> str:
        """The kernel's own Markdown page, beside report.md."""
        return f"report-{html_id(self.name)}.md"


@dataclass
class ComparisonView:
    other: str
    found: bool
    table: Table | None = None
    by_kernel: Table | None = None
    image: Image | None = None
    note: str = ""


@dataclass
class View:
    hardware: str
    device_name: str
    is_cpu: bool
    warnings: list[str]
    hardware_table: Table
    environment_table: Table
    method: list[str]
    failures: Table
    absences: Table
    summary: Table
    geomean: Table
    roofline: Image | None
    roofline_note: str
    kernels: list[KernelView]
    comparisons: list[ComparisonView]
    compare_verdicts: Table
    command: str
    versions: Table
    config_yaml: str
    config_hash: str
    git: str
    n_rows: int
    n_valid: int
    run_id: str


# ------------------------------------------------------------------ helpers
def _panel_key(r: dict) -> tuple[str, str, str]:
    return (r["dtype"], r["params"], r["mode"])


def _panel_label(key: tuple[str, str, str], multi_mode: bool) -> str:
    dtype, params, mode = key
    parts = [dtype or "(no dtype)"]
    if params:
        parts.append(params)
    if multi_mode and mode:
        parts.append(mode)
    return ", ".join(parts)


def _s(x) -> str:
    return fmt.text(x)


# ------------------------------------------------------------------ overview
def hardware_table(res: Results) -> Table:
    s = res.survey
    rows = [
        ("hardware (slug)", res.hardware),
        ("device", _s(s.get("device_name")) or fmt.NA),
        ("kind", "CPU" if res.is_cpu else "GPU"),
    ]
    if s.get("sm_count") is not None:
        rows.append(("SMs", fmt.integer(s.get("sm_count"))))
    if s.get("l2_bytes") is not None:
        rows.append(("L2 cache", fmt.nbytes(s.get("l2_bytes"))))
    if s.get("memory_bytes") is not None:
        rows.append(("memory", fmt.nbytes(s.get("memory_bytes"))))
    rows.append(("measured copy bandwidth", f"{fmt.num(s.get('copy_gbps'), 1)} GB/s"))
    mm = s.get("matmul_tflops") if isinstance(s.get("matmul_tflops"), dict) else {}
    for d in sorted(mm):
        rows.append((f"measured matmul {d}", f"{fmt.sig(mm[d], 4)} TFLOP/s"))
    ds = s.get("datasheet") if isinstance(s.get("datasheet"), dict) else None
    if ds:
        rows.append(("datasheet", _s(ds.get("name")) or fmt.NA))
        bw = fmt.to_float(ds.get("bw_gbps"))
        copy = fmt.to_float(s.get("copy_gbps"))
        share = f" (measured copy: {fmt.pct(100 * copy / bw)})" if bw > 0 and math.isfinite(copy) else ""
        rows.append(("datasheet bandwidth", f"{fmt.num(bw, 1)} GB/s{share}"))
        tf = ds.get("tflops") if isinstance(ds.get("tflops"), dict) else {}
        for d in sorted(tf):
            m = fmt.to_float(mm.get(d))
            t = fmt.to_float(tf[d])
            share = f" (measured: {fmt.pct(100 * m / t)})" if t > 0 and math.isfinite(m) else ""
            rows.append((f"datasheet {d}", f"{fmt.sig(t, 4)} TFLOP/s{share}"))
    clocks = s.get("clocks") if isinstance(s.get("clocks"), dict) else {}
    for k in sorted(clocks):
        rows.append((f"clock: {k}", _s(clocks[k])))
    return kv_table(rows, "hardware", "value")


def environment_table(res: Results) -> Table:
    e = res.environment
    keys = [
        "gpu_name",
        "sm_count",
        "driver",
        "cuda",
        "torch",
        "triton",
        "python",
        "snakemake",
        "git_commit",
        "git_dirty",
        "config_hash",
        "run_id",
        "start",
        "end",
        "mode",
        "hardware",
    ]
    rows = [(k, _s(e.get(k)) if e.get(k) not in (None, "") else fmt.NA) for k in keys]
    clocks = e.get("clocks_at_start") if isinstance(e.get("clocks_at_start"), dict) else {}
    for k in sorted(clocks):
        rows.append((f"clocks at start: {k}", _s(clocks[k])))
    return kv_table(rows, "environment", "value")


def _timing_cfg(config) -> dict:
    if not isinstance(config, dict):
        return {}
    if isinstance(config.get("timing"), dict):
        return config["timing"]
    for v in config.values():
        if isinstance(v, dict) and ("rel_std" in v or "min_samples" in v):
            return v
    return {}


def method(res: Results) -> list[str]:
    cfg = _timing_cfg(res.environment.get("config"))

    def c(key, suffix=""):
        v = cfg.get(key)
        if v in (None, "") or isinstance(v, (dict, list)):
            return "(not recorded)"
        return f"{v:g}{suffix}" if isinstance(v, float) else f"{fmt.text(v)}{suffix}"

    modes = sorted({r["mode"] for r in res.summary if r["mode"]})
    try:
        from kernellab.runtime import TOLERANCE

        tol = ", ".join(f"{k} {v:g}" for k, v in TOLERANCE.items())
    except ImportError:  # pragma: no cover - the package is always there
        tol = "per dtype"
    timer = ("time.perf_counter_ns around each call" if res.is_cpu else
             "CUDA events around each call, with a spin kernel holding the stream while the host enqueues "
             "each batch of samples (nvbench's blocking kernel), so the events time the GPU's work and not "
             "the host's launch overhead")
    graph = cfg.get("graph")
    graph_txt = "on" if graph is True else "off" if graph is False else "(not recorded)"
    return [
        f"Timing: {timer}. Statistics are over clean samples: median, p20–p80, mean, "
        "inter-quartile range and relative standard deviation (stdrel, the noise column).",
        f"Stopping rule: sampling stops once stdrel falls to {c('rel_std')} after at least "
        f"{c('min_samples')} samples (the case is then converged), or when {c('max_samples')} samples "
        f"or {c('budget_s', ' s')} are spent (not converged). Warm-up: {c('warmup_s', ' s')}.",
        f"L2 flush: timing mode(s) in this run: {', '.join(modes) or '(not recorded)'}; configured: "
        f"{c('mode')}. In cold mode a buffer twice the size of the L2 (the last-level cache on a CPU) "
        "is written before every sample, outside the timed region, so inputs come from memory; warm "
        "mode does not flush.",
        f"CUDA-graph replay (GPU only): {graph_txt}; kernels shorter than {c('graph_max_us', ' µs')} "
        "are also captured into a CUDA graph and replayed; graph_us is the replay median, without the "
        "GPU-side cost of launching the call's kernels one by one. Throttling: batches during which "
        "NVML reported thermal or power throttling "
        "are discarded and counted (throttled samples).",
        "Correctness: every implementation is compared with a float64 reference on several seeds; "
        "the relative norm error ||out − ref|| / ||ref|| must stay within the dtype's tolerance "
        f"({tol}). Rows whose status is not ok, or whose check did not pass, are flagged ⚠, never chosen "
        "as best, and left out of speedups, geomeans, plots and the roofline.",
        "Peaks: % of peak is against this machine's measured ceilings (copy bandwidth for "
        "memory-bound kernels, the measured matmul rate of the dtype for matmul families), not the "
        "datasheet; datasheet values are drawn for reference. Speedups are torch_fused's median over "
        "the implementation's median in the same case (kernel, shape, dtype, parameters, mode).",
    ]


# ------------------------------------------------------------------ summary
ABSENT = "unavailable"  # expected absences (no GPU, no ncu, no extension): not failures


def absences_table(res: Results) -> Table:
    """What could not run here, one line per implementation and reason (the kernels listed)."""
    groups: dict[tuple, list[dict]] = {}
    for r in res.summary:
        if r["status"] == ABSENT:
            groups.setdefault((r["impl_key"], r["reason"]), []).append(r)
    t = Table(["implementation", "kernels", "cases", "why"], numeric=[False, False, True, False])
    for (key, reason), rows in sorted(groups.items()):
        kernels = sorted({r["kernel"] for r in rows})
        t.add([key, ", ".join(kernels), str(len(rows)), reason or fmt.NA])
    return t


def failures_table(res: Results) -> Table:
    groups: dict[tuple, list[dict]] = {}
    for r in res.summary:
        if r["status"] == ABSENT:
            continue
        if r["status"] != "ok" or check_failed(r):
            if r["status"] != "ok":
                status = r["status"]
            else:
                status = "incorrect" if r["check_status"] == "failed" else f"check {r['check_status']}"
            reason = r["reason"]
            if r["status"] == "ok" and not reason:
                reason = f"correctness check {r['check_status']}"
            groups.setdefault((r["kernel"], r["impl_key"], status, reason), []).append(r)
    t = Table(
        ["kernel", "impl_key", "status", "cases", "which", "reason"], numeric=[False, False, False, True]
    )
    for (kernel, key, status, reason), rows in sorted(groups.items()):
        rows = sorted(rows, key=lambda r: (r["dtype"], shape_sort_key(r["shape"], r["numel"])))
        which = [f"{r['dtype']} {r['shape']}{(' ' + r['params']) if r['params'] else ''}" for r in rows]
        shown = ", ".join(which[:6]) + (f", … (+{len(which) - 6})" if len(which) > 6 else "")
        t.add([kernel, key, f"⚠ {status}", str(len(rows)), shown, reason or fmt.NA], "bad")
    return t


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
                    fmt.pct(pct_of_ceiling(b, metric, res.survey)),
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


# ------------------------------------------------------------------ per kernel
def cases_table(res: Results, kernel: str, metric: str) -> Table:
    unit = metric_label(metric)
    t = Table(
        [
            "mark",
            "impl_key",
            "dtype",
            "shape",
            "params",
            "mode",
            "median µs",
            "p20–p80 µs",
            unit,
            "% of peak",
            "speedup",
            "stdrel",
            "n",
            "converged",
            "SM MHz",
            "graph µs",
            "throttled",
            "rel err",
            "check",
            "status",
            "reason",
        ],
        numeric=[
            False,
            False,
            False,
            False,
            False,
            False,
            True,
            True,
            True,
            True,
            True,
            True,
            True,
            False,
            True,
            True,
            True,
            True,
            False,
            False,
            False,
        ],
    )
    rows = [r for r in res.summary if r["kernel"] == kernel]
    rows.sort(
        key=lambda r: (
            r["dtype"],
            r["params"],
            r["mode"],
            shape_sort_key(r["shape"], r["numel"]),
            r["impl_key"],
        )
    )
    for r in rows:
        flag, mark = flag_of(r)
        spread = (
            f"{fmt.us(r['p20_us'])}–{fmt.us(r['p80_us'])}"
            if math.isfinite(r["p20_us"]) and math.isfinite(r["p80_us"])
            else fmt.NA
        )
        t.add(
            [
                mark,
                r["impl_key"],
                r["dtype"],
                r["shape"],
                r["params"],
                r["mode"],
                fmt.us(r["median_us"]),
                spread,
                fmt.throughput(value(r, metric), metric),
                fmt.pct(pct_of_ceiling(r, metric, res.survey)),
                fmt.ratio(r["speedup"]),
                fmt.pct(100 * r["stdrel"], 2),
                fmt.integer(r["n_samples"]),
                fmt.yes_no(r["converged"]),
                fmt.integer(r["sm_clock_mhz"]),
                fmt.us(r["graph_us"]),
                fmt.integer(r["throttled_samples"]),
                fmt.sci(r["max_rel_err"]),
                r["check_status"] or fmt.NA,
                r["status"],
                r["reason"],
            ],
            flag,
        )
    return t


def correctness_table(res: Results, kernel: str) -> tuple[Table, str]:
    checks = res.checks.get(kernel, [])
    t = Table(
        [
            "mark",
            "impl_key",
            "dtype",
            "shape",
            "params",
            "seeds",
            "worst rel err",
            "worst max abs",
            "tolerance",
            "status",
            "reason",
        ],
        numeric=[False, False, False, False, False, True, True, True, True, False, False],
    )
    if checks:
        groups: dict[tuple, list[dict]] = {}
        for c in checks:
            groups.setdefault((c["impl_key"], c["dtype"], c["shape"], c.get("params", "")), []).append(c)
        order = {"failed": 0, "error": 1, "timeout": 2, "oom": 3, "unavailable": 4, "ok": 6}
        for (key, dtype, shape, params), cs in sorted(
            groups.items(), key=lambda kv: (kv[0][1], kv[0][3], shape_sort_key(kv[0][2]), kv[0][0])
        ):
            statuses = sorted({c["status"] or "unknown" for c in cs}, key=lambda s: (order.get(s, 5), s))
            status = statuses[0]
            rel = [c["rel_err"] for c in cs if math.isfinite(c["rel_err"])]
            mab = [c["max_abs"] for c in cs if math.isfinite(c["max_abs"])]
            tols = sorted({c["tol"] for c in cs if math.isfinite(c["tol"])})
            reasons = sorted({c["reason"] for c in cs if c["reason"]})
            bad = status not in ("ok", "unavailable")
            t.add(
                [
                    "⚠" if bad else "✓" if status == "ok" else "",
                    key,
                    dtype,
                    shape,
                    params,
                    str(len(cs)),
                    fmt.sci(max(rel)) if rel else fmt.NA,
                    fmt.sci(max(mab)) if mab else fmt.NA,
                    ", ".join(fmt.sci(x) for x in tols) or fmt.NA,
                    status,
                    "; ".join(reasons),
                ],
                "bad" if bad else "",
            )
        return t, f"check/{kernel}.csv"
    rows = [r for r in res.summary if r["kernel"] == kernel]
    rows.sort(key=lambda r: (r["dtype"], r["params"], shape_sort_key(r["shape"], r["numel"]), r["impl_key"]))
    seen = set()
    for r in rows:
        k = (r["impl_key"], r["dtype"], r["shape"], r["params"])
        if k in seen:
            continue
        seen.add(k)
        bad = check_failed(r)
        t.add(
            [
                "⚠" if bad else "✓" if r["check_status"] == "ok" else "",
                r["impl_key"],
                r["dtype"],
                r["shape"],
                r["params"],
                fmt.NA,
                fmt.sci(r["max_rel_err"]),
                fmt.sci(r["max_abs_err"]),
                fmt.NA,
                r["check_status"] or fmt.NA,
                r["reason"] if bad else "",
            ],
            "bad" if bad else "",
        )
    return t, "summary.csv (max_rel_err, check_status)"


def profile_table(res: Results, kernel: str) -> Table:
    t = Table(
        ["impl_key", "dtype", "shape", "rank", "device kernel", "calls", "CPU µs", "device µs", "% of time"],
        numeric=[False, False, False, True, False, True, True, True, True],
    )
    rows = sorted(
        res.profiles.get(kernel, []),
        key=lambda r: (
            r["impl_key"],
            r["dtype"],
            shape_sort_key(r["shape"]),
            r["rank"] if math.isfinite(r["rank"]) else math.inf,
            r["name"],
        ),
    )
    for r in rows:
        if math.isfinite(r["rank"]) and r["rank"] > 10:
            continue
        t.add(
            [
                r["impl_key"],
                r["dtype"],
                r["shape"],
                fmt.integer(r["rank"]),
                r["name"],
                fmt.integer(r["calls"]),
                fmt.us(r["cpu_time_us"]),
                fmt.us(r["device_time_us"]),
                fmt.pct(r["pct"]),
            ]
        )
    return t


def autotune_tables(res: Results, kernel: str) -> tuple[Table, Table]:
    rows = res.autotune.get(kernel, [])
    win = Table(
        [
            "impl_key",
            "Triton kernel",
            "dtype",
            "shape",
            "winning config",
            "median µs",
            "configs timed",
            "failed",
            "slowest / winner",
        ],
        numeric=[False, False, False, False, False, True, True, True, True],
    )
    full = Table(
        [
            "impl_key",
            "Triton kernel",
            "dtype",
            "shape",
            "config",
            "median µs",
            "× winner",
            "status",
            "winner",
        ],
        numeric=[False, False, False, False, False, True, True, False, False],
    )
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["impl_key"], r["triton_kernel"], r["dtype"], r["shape"]), []).append(r)
    for (key, tk, dtype, shape), rs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], shape_sort_key(kv[0][3]))
    ):
        ok = [
            r
            for r in rs
            if r["status"] in ("ok", "") and math.isfinite(r["median_us"]) and r["median_us"] > 0
        ]
        ok_ids = {id(r) for r in ok}
        marked = [r for r in ok if r["is_best"]]
        winner = min(marked or ok, key=lambda r: (r["median_us"], r["config"]), default=None)
        if winner is None:
            win.add(
                [key, tk, dtype, shape, "⚠ no config ran", fmt.NA, str(len(rs)), str(len(rs)), fmt.NA], "bad"
            )
        else:
            slow = max(r["median_us"] for r in ok)
            win.add(
                [
                    key,
                    tk,
                    dtype,
                    shape,
                    winner["config"],
                    fmt.us(winner["median_us"]),
                    str(len(rs)),
                    str(len(rs) - len(ok)),
                    fmt.ratio(slow / winner["median_us"]),
                ],
                "best",
            )
        for r in sorted(
            rs, key=lambda r: (r["median_us"] if math.isfinite(r["median_us"]) else math.inf, r["config"])
        ):
            is_w = winner is not None and r is winner
            rel = r["median_us"] / winner["median_us"] if winner is not None else math.nan
            bad = id(r) not in ok_ids
            t_flag = "best" if is_w else ("bad" if bad else "")
            full.add(
                [
                    key,
                    tk,
                    dtype,
                    shape,
                    r["config"],
                    fmt.us(r["median_us"]),
                    fmt.ratio(rel),
                    ("⚠ " if bad else "") + (r["status"] or fmt.NA),
                    "★" if is_w else "",
                ],
                t_flag,
            )
    return win, full


def _safe_file(res: Results, entry: dict, rel: str) -> Path | None:
    """The file ``rel`` names, only if it lies inside this hardware's results directory."""
    root = res.path.resolve()
    for base in (res.path, entry["index_dir"]):
        try:
            p = (base / rel).resolve()
        except (OSError, RuntimeError):
            continue
        if p.is_file() and (p == root or root in p.parents):
            return p
    return None


def excerpt_lines(text: str, limit: int = PTX_LINES) -> tuple[list[dict], dict[str, int]]:
    lines = [ln.rstrip().expandtabs(4) for ln in text.splitlines()]
    counts: dict[str, int] = {}
    hits: list[int] = []
    for i, ln in enumerate(lines):
        matched = False
        for label, rx in HIGHLIGHT:
            if rx.search(ln):
                counts[label] = counts.get(label, 0) + 1
                matched = True
        if matched:
            hits.append(i)
    hit_set = set(hits)
    entry = next(
        (i for i, ln in enumerate(lines) if ".entry" in ln or ln.lstrip().startswith("Function :")), None
    )
    chosen: set[int] = set() if entry is None else {entry}
    if hits:
        for i in hits:  # every highlighted line first, then growing context around them
            if len(chosen) < limit:
                chosen.add(i)
        for ctx in (1, 2, 3):
            for i in hits:
                for j in (i - ctx, i + ctx):
                    if 0 <= j < len(lines) and len(chosen) < limit:
                        chosen.add(j)
    else:
        start = entry if entry is not None else 0
        chosen |= set(range(start, min(len(lines), start + limit)))
    out: list[dict] = []
    last = -1
    for i in sorted(chosen):
        if i > last + 1:
            out.append({"no": None, "text": f"⋮ ({i - last - 1} lines)", "hl": False, "gap": True})
        out.append({"no": i + 1, "text": lines[i], "hl": i in hit_set, "gap": False})
        last = i
    if last < len(lines) - 1:
        out.append({"no": None, "text": f"⋮ ({len(lines) - 1 - last} lines)", "hl": False, "gap": True})
    return out, counts


def ptx_views(res: Results, kernel: str) -> list[PtxView]:
    views = []
    for e in res.ptx.get(kernel, []):
        hl = e["highlights"]
        facts = []
        for k in ("vector_loads_128", "wgmma", "mma", "spills", "registers"):
            if k in hl:
                v = hl[k]
                facts.append(f"{k}: {fmt.NA if v is None else fmt.text(v)}")
        excerpts, missing = [], []
        for kind in ("ptx", "sass"):
            rel = e["files"].get(kind)
            if not rel:
                continue
            p = _safe_file(res, e, rel)
            if p is None:
                missing.append(f"{kind}: {rel} (not found inside the results directory)")
                continue
            lines, counts = excerpt_lines(read_text(p, PTX_MAX_BYTES))
            c = ", ".join(f"{k} ×{v}" for k, v in sorted(counts.items())) or "no highlighted instructions"
            excerpts.append(Excerpt(kind=kind, path=rel, lines=lines, counts=c))
        for kind, rel in sorted(e["files"].items()):
            if kind not in ("ptx", "sass") and _safe_file(res, e, rel) is None:
                missing.append(f"{kind}: {rel} (not found inside the results directory)")
        title = f"{e['impl_key'] or '?'} · {e['dtype'] or '?'} · {e['source'] or '?'} · {e['name'] or '?'}"
        views.append(PtxView(title=title, facts="; ".join(facts), excerpts=excerpts, missing=missing))
    return views


def assign_resources(res: Results) -> tuple[dict[str, list[dict]], list[dict]]:
    """Resource rows per kernel family: a ladder's cuda_kernels first, else the longest
    family name that the symbol contains as ``<family>_``."""
    families = sorted(res.kernels(), key=lambda k: (-len(k), k))
    by_symbol: dict[str, str] = {}
    for ld in res.ladders:
        for s in ld["steps"]:
            for ck in s["cuda_kernels"]:
                by_symbol.setdefault(ck, ld["kernel"])
    out: dict[str, list[dict]] = {}
    rest: list[dict] = []
    for r in res.resources:
        sym = r["kernel"]
        fam = None
        for ck in sorted(by_symbol, key=lambda s: (-len(s), s)):
            if sym == ck or re.search(rf"(?<![A-Za-z]){re.escape(ck)}(?![A-Za-z0-9_])", sym):
                fam = by_symbol[ck]
                break
        if fam is None:
            fam = next((f for f in families if f + "_" in sym or Path(r["file"]).stem == f), None)
        if fam is None:
            rest.append(r)
        else:
            out.setdefault(fam, []).append(r)
    return out, rest


def resources_table(rows: list[dict]) -> Table:
    t = Table(
        [
            "file",
            "CUDA kernel",
            "registers",
            "spill stores B",
            "spill loads B",
            "stack frame B",
            "smem B",
            "cmem B",
        ],
        numeric=[False, False, True, True, True, True, True, True],
    )
    for r in rows:
        spills = (r["spill_stores_bytes"] if math.isfinite(r["spill_stores_bytes"]) else 0) + (
            r["spill_loads_bytes"] if math.isfinite(r["spill_loads_bytes"]) else 0
        )
        t.add(
            [
                r["file"],
                r["kernel"],
                fmt.integer(r["registers"]),
                fmt.integer(r["spill_stores_bytes"]),
                fmt.integer(r["spill_loads_bytes"]),
                fmt.integer(r["stack_frame_bytes"]),
                fmt.integer(r["smem_bytes"]),
                fmt.integer(r["cmem_bytes"]),
            ],
            "warn" if spills > 0 else "",
        )
    return t


def ncu_table(res: Results, kernel: str) -> Table:
    t = Table(
        [
            "impl_key",
            "dtype",
            "shape",
            "status",
            "duration µs",
            "DRAM %",
            "SM %",
            "occupancy %",
            "registers",
            "smem/block",
            "L1 hit %",
            "L2 hit %",
            "top stalls",
            "reason",
        ],
        numeric=[False, False, False, False, True, True, True, True, True, True, True, True, False, False],
    )
    rows = sorted(
        res.ncu.get(kernel, []), key=lambda r: (r["impl_key"], r["dtype"], shape_sort_key(r["shape"]))
    )
    for r in rows:
        bad = r["status"] not in ("ok", "")
        t.add(
            [
                r["impl_key"],
                r["dtype"],
                r["shape"],
                ("⚠ " if bad else "") + (r["status"] or "ok"),
                fmt.us(r["duration_us"]),
                fmt.num(r["dram_pct"]),
                fmt.num(r["sm_pct"]),
                fmt.num(r["achieved_occupancy"]),
                fmt.integer(r["registers"]),
                fmt.integer(r["smem_per_block"]),
                fmt.num(r["l1_hit_pct"]),
                fmt.num(r["l2_hit_pct"]),
                r["top_stalls"],
                r["reason"],
            ],
            "bad" if bad else "",
        )
    return t


def kernel_images(res: Results, kernel: str, metric: str) -> list[Image]:
    rows = [r for r in res.summary if r["kernel"] == kernel]
    multi_mode = len({r["mode"] for r in rows}) > 1
    keys = sorted({r["impl_key"] for r in rows})
    panels, ceilings = [], {}
    for pk in sorted({_panel_key(r) for r in rows}):
        label = _panel_label(pk, multi_mode)
        panels.append((label, [r for r in rows if _panel_key(r) == pk and r["valid"]]))
        ceilings[label] = (ceiling(res.survey, metric, pk[0]), datasheet(res.survey, metric, pk[0]))
    out = []
    stem = html_id(kernel)
    unit = metric_label(metric)
    for kind, alt in (
        ("latency", "median time per call vs number of elements, log-log"),
        ("throughput", f"achieved {unit} vs number of elements, with the measured ceiling"),
        ("speedup", "speedup over torch_fused vs number of elements"),
    ):
        data = plots.kernel_figure(kind, kernel, panels, metric, ceilings, keys)
        if data:
            out.append(
                Image(name=f"{stem}_{kind}", alt=f"{kernel}: {alt}", caption=f"{kernel}: {alt}.", data=data)
            )
    return out


# ------------------------------------------------------------------ roofline, comparison
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
    data = plots.roofline(points, res.survey, res.hardware)
    note = f"{len(points)} correct cases drawn."
    corrected = res.environment.get("ceiling_corrected") or {}
    if isinstance(corrected, dict) and corrected:
        note += (" Roofs raised to what a correct case reached, where it beat the survey's figure: "
                 + "; ".join(f"{k} {fmt.text(v.get('survey'))} → {fmt.text(v.get('observed'))}"
                             for k, v in sorted(corrected.items()) if isinstance(v, dict)) + ".")
    if zero:
        note += f" {zero} case(s) with zero FLOPs cannot be drawn on a log axis."
    if data is None:
        return None, "No case with FLOPs, bytes and a time to draw."
    return Image(
        name="roofline",
        alt=f"roofline of {res.hardware}",
        caption=f"Roofline: {res.hardware}. " + note,
        data=data,
    ), note


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
                out.setdefault((r["kernel"], r["impl_key"], r["dtype"], r["shape"], r["params"]), []).append(
                    r
                )
        for v in out.values():
            v.sort(key=lambda r: r["mode"])
        return out

    a, b = index(res.summary), index(other.summary)
    keys = sorted(set(a) & set(b), key=lambda k: (k[0], k[2], k[4], shape_sort_key(k[3]), k[1]))
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
    for k in keys:
        ra, rb = _pick_pair(a[k], b[k])
        ratio = rb["median_us"] / ra["median_us"]
        verdict, _ = classify(rb, ra, threshold)
        mode = ra["mode"] if ra["mode"] == rb["mode"] else f"{ra['mode']} / {rb['mode']}"
        faster = (
            f"{res.hardware} by {fmt.ratio(ratio)}"
            if ratio > 1
            else f"{other.hardware} by {fmt.ratio(1 / ratio)}"
            if ratio < 1
            else "same"
        )
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
                "a_us": ra["median_us"],
                "b_us": rb["median_us"],
                "ratio": ratio,
                "verdict": verdict,
            }
        )
    cv.table = t
    bk = Table(
        ["kernel", "common cases", *VERDICTS, f"geomean {other.hardware} / {res.hardware}", "min", "max"],
        numeric=[False, True] + [True] * len(VERDICTS) + [True, True, True],
    )
    for kernel in sorted({p["kernel"] for p in pairs}):
        ps = [p for p in pairs if p["kernel"] == kernel]
        rs = [p["ratio"] for p in ps]
        counts = [str(sum(p["verdict"] == v for p in ps)) for v in VERDICTS]
        bk.add([kernel, str(len(rs)), *counts, fmt.ratio(geomean(rs)), fmt.ratio(min(rs)), fmt.ratio(max(rs))])
    cv.by_kernel = bk
    data = plots.comparison(pairs, res.hardware, other.hardware)
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


# ------------------------------------------------------------------ all
def build(res: Results, others: list[Results]) -> View:
    annotate(res)
    for o in others:
        annotate(o)
    kernels = res.kernels()
    metrics = {k: kernel_metric(res, k) for k in kernels}
    ladders = analyse_all(res)
    res_by_kernel, res_rest = assign_resources(res)
    kviews = []
    for k in kernels:
        m = metrics[k]
        kv = KernelView(name=k, id=html_id("kernel", k), metric=m, metric_label=metric_label(m))
        kv.images = kernel_images(res, k, m)
        if not kv.images:
            kv.plot_note = "No correct measurement to plot."
        kv.cases = cases_table(res, k, m)
        kv.correctness, kv.correctness_source = correctness_table(res, k)
        kv.correctness_failed = Table(
            kv.correctness.columns,
            kv.correctness.numeric,
            [r for r in kv.correctness.rows if r.flag == "bad"],
        )
        kv.profile = profile_table(res, k)
        kv.autotune_winners, kv.autotune_all = autotune_tables(res, k)
        kv.ptx = ptx_views(res, k)
        kv.resources = resources_table(res_by_kernel.get(k, []))
        kv.ncu = ncu_table(res, k)
        kv.ladders = [lv for lv in ladders if lv.kernel == k]
        kviews.append(kv)
    if res_rest:
        extra = KernelView(
            name="other CUDA kernels",
            id="kernel-unassigned",
            metric="gbps",
            metric_label="GB/s",
            title="Other CUDA kernels (no listed family)",
        )
        extra.resources = resources_table(res_rest)
        kviews.append(extra)
    roof, roof_note = roofline_image(res)
    env = res.environment
    config = env.get("config")
    try:
        config_yaml = (
            yaml.safe_dump(config, sort_keys=True, default_flow_style=False, allow_unicode=True, width=100)
            if config is not None
            else ""
        )
    except yaml.YAMLError:
        config_yaml = repr(config)
    versions = kv_table(
        [(k, _s(env.get(k)) or fmt.NA) for k in ("python", "torch", "triton", "cuda", "driver", "snakemake")],
        "software",
        "version",
    )
    git = _s(env.get("git_commit")) or fmt.NA
    if fmt.to_bool(env.get("git_dirty")):
        git += " (working tree had uncommitted changes)"
    return View(
        hardware=res.hardware,
        device_name=_s(res.survey.get("device_name")) or _s(env.get("gpu_name")),
        is_cpu=res.is_cpu,
        warnings=list(res.warnings),
        hardware_table=hardware_table(res),
        environment_table=environment_table(res),
        method=method(res),
        failures=failures_table(res),
        absences=absences_table(res),
        summary=summary_table(res, metrics),
        geomean=geomean_table(res),
        roofline=roof,
        roofline_note=roof_note,
        kernels=kviews,
        comparisons=[comparison_view(res, o) for o in others],
        compare_verdicts=compare_verdicts(res),
        command=_s(env.get("command")),
        versions=versions,
        config_yaml=config_yaml,
        config_hash=_s(env.get("config_hash")) or fmt.NA,
        git=git,
        n_rows=len(res.summary),
        n_valid=sum(1 for r in res.summary if is_valid(r)),
        run_id=_s(env.get("run_id")) or fmt.NA,
    )

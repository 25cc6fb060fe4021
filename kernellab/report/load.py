"""Reading ``results/<hardware>/``: every file optional, every column optional.

Rows come back as plain dicts with typed values (str, float with NaN for missing,
bool or None; summary.csv's typed by its one definition, ``kernellab.rows``), sorted,
so the pages built from them do not depend on file order.
Problems (a malformed JSON file, a CSV without a header) become ``warnings`` shown in
the report instead of exceptions.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from kernellab import rows
from kernellab.errors import FamilyError
from kernellab.ladder_file import current_name, ladder_texts
from kernellab.passes import BACKWARD_PASSES, PASS_SUFFIX
from kernellab.rows import to_bool, to_float

csv.field_size_limit(1 << 24)

CHECK_NUM = ("seed", "rel_err", "max_abs", "tol")
PROFILE_NUM = ("rank", "calls", "cpu_time_us", "device_time_us", "pct")
AUTOTUNE_NUM = ("median_us",)
RESOURCE_NUM = (
    "registers",
    "spill_stores_bytes",
    "spill_loads_bytes",
    "stack_frame_bytes",
    "smem_bytes",
    "cmem_bytes",
)
NCU_NUM = (
    "duration_us",
    "n_kernels",
    "dram_pct",
    "sm_pct",
    "tensor_pct",
    "achieved_occupancy",
    "registers",
    "smem_per_block",
    "l1_hit_pct",
    "l2_hit_pct",
    "l2_pct",
    "dram_read_mb",
    "dram_write_mb",
    "model_mb",
    "dram_vs_model",
    "l2_read_mb",
)
COMPARE_NUM = ("median_a_us", "median_b_us", "change")
# NVML readings the benchmark records per case in bench/<kernel>.csv that summary.csv leaves out
BENCH_NUM = ("power_w", "temperature_c")
BENCH_KEY = ("kernel", "impl_key", "shape", "dtype", "params", "mode")


def shape_numel(shape: str) -> float:
    """Product of the dimensions of ``4096x4096``; NaN when it is not such a string."""
    try:
        dims = [int(d) for d in str(shape).lower().split("x")]
    except ValueError:
        return math.nan
    return float(math.prod(dims)) if dims else math.nan


def shape_sort_key(shape: str, numel: float = math.nan) -> tuple:
    n = numel if math.isfinite(numel) else shape_numel(shape)
    return (0 if math.isfinite(n) else 1, n if math.isfinite(n) else 0.0, str(shape))


@dataclass
class Results:
    """One hardware's results directory, loaded."""

    hardware: str
    path: Path
    exists: bool = False
    summary: list[dict] = field(default_factory=list)
    survey: dict = field(default_factory=dict)
    environment: dict = field(default_factory=dict)
    checks: dict[str, list[dict]] = field(default_factory=dict)
    profiles: dict[str, list[dict]] = field(default_factory=dict)
    autotune: dict[str, list[dict]] = field(default_factory=dict)
    ncu: dict[str, list[dict]] = field(default_factory=dict)
    ptx: dict[str, list[dict]] = field(default_factory=dict)
    resources: list[dict] = field(default_factory=list)
    ladders: list[dict] = field(default_factory=list)
    compare: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def is_cpu(self) -> bool:
        """A CPU run: the survey says so, or (no survey) the slug does."""
        gpu = self.survey.get("is_gpu") if isinstance(self.survey, dict) else None
        if isinstance(gpu, bool):
            return not gpu
        if self.environment.get("gpu_name"):
            return False
        return self.hardware.lower().startswith("cpu")

    def kernels(self) -> list[str]:
        names = {r["kernel"] for r in self.summary if r["kernel"]}
        names |= {ld["kernel"] for ld in self.ladders}
        for d in (self.checks, self.profiles, self.autotune, self.ncu, self.ptx):
            names |= set(d)
        return sorted(names)


# ------------------------------------------------------------------ files
def read_csv(path: Path, warnings: list[str]) -> list[dict]:
    """Rows as dicts of stripped strings ('' for a missing cell); [] if absent or broken."""
    if not path.is_file():
        return []
    try:
        with path.open(newline="", encoding="utf-8-sig", errors="replace") as f:
            reader = csv.DictReader(f)
            if not reader.fieldnames:
                warnings.append(f"{path.name}: empty CSV (no header)")
                return []
            rows = []
            for raw in reader:
                rows.append(
                    {
                        str(k).strip(): ("" if v is None else str(v).strip())
                        for k, v in raw.items()
                        if k is not None
                    }
                )
            return rows
    except (OSError, csv.Error) as e:
        warnings.append(f"{path.name}: unreadable CSV ({e})")
        return []


def read_json(path: Path, warnings: list[str], default):
    if not path.is_file():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as e:
        warnings.append(f"{path.name}: unreadable JSON ({e})")
        return default


def typed(row: dict, strings=(), numbers=(), bools=()) -> dict:
    out = dict(row)
    for c in strings:
        out[c] = str(out.get(c, "") or "")
    for c in numbers:
        out[c] = to_float(out.get(c, ""))
    for c in bools:
        out[c] = to_bool(out.get(c, ""))
    return out


def _per_kernel(
    directory: Path,
    warnings: list[str],
    numbers=(),
    strings=("kernel", "impl_key", "shape", "dtype"),
    bools=(),
) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    if not directory.is_dir():
        return out
    for path in sorted(directory.glob("*.csv")):
        for r in read_csv(path, warnings):
            r = typed(r, strings=strings, numbers=numbers, bools=bools)
            kernel = r.get("kernel") or path.stem
            r["kernel"] = kernel
            out.setdefault(kernel, []).append(r)
    return out


def normalize_summary_row(raw: dict) -> dict:
    r = rows.typed(raw)
    if not r["impl_key"]:
        r["impl_key"] = f"{r['impl']}@{r['step']}" if r["step"] else r["impl"]
    if not r["impl"]:
        r["impl"] = r["impl_key"].split("@", 1)[0]
    if not r["status"]:
        # no status column: a row with a time is taken as measured
        r["status"] = "ok" if math.isfinite(r["median_us"]) and r["median_us"] > 0 else "unknown"
    r["status"] = r["status"].lower()
    r["check_status"] = r["check_status"].lower()
    if not math.isfinite(r["numel"]):
        r["numel"] = shape_numel(r["shape"])
    med = r["median_us"]
    if math.isfinite(med) and med > 0:
        if not math.isfinite(r["gbps"]) and math.isfinite(r["bytes"]):
            r["gbps"] = r["bytes"] / med / 1e3
        if not math.isfinite(r["tflops"]) and math.isfinite(r["flops"]):
            r["tflops"] = r["flops"] / med / 1e6
    return r


# check_status values of a row whose correctness check passed ("": no such column)
CHECK_PASSED = ("ok", "")


def check_failed(r: dict) -> bool:
    """The correctness check did not pass (failed, errored, or was not run)."""
    return r.get("check_status", "") not in CHECK_PASSED


def is_valid(r: dict) -> bool:
    """Measured and correct (status ok, check passed, a positive time): may be best,
    may enter speedups, geomeans, plots and the roofline."""
    med = r.get("median_us", math.nan)
    return (
        r.get("status") == "ok"
        and r.get("check_status") in CHECK_PASSED
        and isinstance(med, float)
        and math.isfinite(med)
        and med > 0
    )


def case_key(r: dict) -> tuple:
    """One case: a backward is not the forward's case (its baseline, its best, its speedups)."""
    return (r["kernel"], r["shape"], r["dtype"], r["params"], r["mode"], r.get("pass") or "forward")


def row_sort_key(r: dict) -> tuple:
    return (
        r["kernel"],
        r["dtype"],
        r["params"],
        r["mode"],
        shape_sort_key(r["shape"], r["numel"]),
        r["impl_key"],
    )


def _baseline(key: str, steps: list[dict]) -> str:
    """A ladder's baseline in its steps' pass: a backward ladder's is torch_fused.bwd (sets made
    before the aggregate said so name the forward's torch_fused)."""
    for suffix in (PASS_SUFFIX[p] for p in BACKWARD_PASSES):
        if steps and all(s["impl_key"].endswith(suffix) for s in steps) and not key.endswith(suffix):
            return key + suffix
    return key


def _ladders(raw, warnings: list[str]) -> list[dict]:
    if not isinstance(raw, list):
        if raw:
            warnings.append("ladders.json: not a list")
        return []
    out = []
    for ld in raw:
        if not isinstance(ld, dict):
            continue
        steps = []
        for s in ld.get("steps") or []:
            if not isinstance(s, dict):
                continue
            ev = [e for e in (s.get("evidence") or []) if isinstance(e, dict)]
            steps.append(
                {
                    "impl_key": str(s.get("impl_key") or ""),
                    "impl": str(s.get("impl") or ""),
                    "step": str(s.get("step") or ""),
                    "order": to_float(s.get("order")),
                    "idea": str(s.get("idea") or ""),
                    "prediction": str(s.get("prediction") or ""),
                    "finding": str(s.get("finding") or ""),
                    "expect_speedup": _range(s.get("expect_speedup")),
                    "expect_pct_of_peak": _range(s.get("expect_pct_of_peak")),
                    "cuda_kernels": [str(k) for k in (s.get("cuda_kernels") or [])],
                    "evidence": [
                        {"label": str(e.get("label") or ""), "line": str(e.get("line") or "")} for e in ev
                    ],
                }
            )
        steps.sort(key=lambda s: (s["order"] if math.isfinite(s["order"]) else math.inf, s["impl_key"]))
        out.append(
            {
                "kernel": str(ld.get("kernel") or ""),
                "ladder": current_name(str(ld.get("kernel") or ""), str(ld.get("ladder") or "")),
                "metric": "tflops" if str(ld.get("metric")) == "tflops" else "gbps",
                "shape": str(ld.get("shape") or ""),
                "dtype": str(ld.get("dtype") or ""),
                "mode": str(ld.get("mode") or ""),
                "baseline_impl_key": _baseline(str(ld.get("baseline_impl_key") or "torch_fused"), steps),
                "steps": steps,
            }
        )
    out.sort(key=lambda ld: (ld["kernel"], ld["ladder"]))
    return out


def _range(x) -> tuple[float, float] | None:
    if isinstance(x, (list, tuple)) and len(x) == 2:
        lo, hi = to_float(x[0]), to_float(x[1])
        if math.isfinite(lo) and math.isfinite(hi):
            return (min(lo, hi), max(lo, hi))
    return None


def _ptx(directory: Path, warnings: list[str]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    if not directory.is_dir():
        return out
    for index in sorted(directory.glob("*/index.json")):
        entries = read_json(index, warnings, [])
        if not isinstance(entries, list):
            warnings.append(f"ptx/{index.parent.name}/index.json: not a list")
            continue
        for e in entries:
            if not isinstance(e, dict):
                continue
            files = e.get("files") if isinstance(e.get("files"), dict) else {}
            hl = e.get("highlights") if isinstance(e.get("highlights"), dict) else {}
            kernel = str(e.get("kernel") or index.parent.name)
            out.setdefault(kernel, []).append(
                {
                    "kernel": kernel,
                    "impl_key": str(e.get("impl_key") or ""),
                    "dtype": str(e.get("dtype") or ""),
                    "source": str(e.get("source") or ""),
                    "name": str(e.get("name") or ""),
                    "files": {str(k): str(v) for k, v in sorted(files.items()) if v},
                    "highlights": hl,
                    "index_dir": index.parent,
                }
            )
    for v in out.values():
        v.sort(key=lambda e: (e["impl_key"], e["dtype"], e["source"], e["name"]))
    return out


def read_compare(directory: Path, warnings: list[str], hardware: str = "") -> list[dict]:
    """Rows of ``directory/*.csv`` written by the compare rule; with ``hardware``, only the
    rows that compare that set (column a or b, else the file name ``<a>__vs__<b>.csv``)."""
    out: list[dict] = []
    if not directory.is_dir():
        return out
    for f in sorted(directory.glob("*.csv")):
        names = f.stem.split("__vs__")
        for r in read_csv(f, warnings):
            r = typed(r, ("kernel", "impl_key", "shape", "dtype", "params", "verdict", "a", "b"), COMPARE_NUM)
            if len(names) == 2:
                r["a"] = r["a"] or names[0]
                r["b"] = r["b"] or names[1]
            if hardware and hardware not in (r["a"], r["b"]):
                continue
            r["file"] = f.name
            out.append(r)
    return out


def attach_bench_readings(rows: list[dict], directory: Path, warnings: list[str]) -> None:
    """Give each summary row the ``BENCH_NUM`` readings of its case in ``directory/*.csv``
    (the benchmark's own records, matched on ``BENCH_KEY``); NaN where none was recorded."""
    readings: dict[tuple, dict] = {}
    if directory.is_dir():
        for path in sorted(directory.glob("*.csv")):
            for r in read_csv(path, warnings):
                r = typed(r, BENCH_KEY, BENCH_NUM)
                readings.setdefault(tuple(r[c] for c in BENCH_KEY), r)
    for r in rows:
        found = readings.get(tuple(r.get(c, "") for c in BENCH_KEY), {})
        for c in BENCH_NUM:
            own = to_float(r.get(c, ""))
            r[c] = own if math.isfinite(own) else found.get(c, math.nan)


def load(results_root: Path, hardware: str) -> Results:
    path = Path(results_root) / hardware
    res = Results(hardware=hardware, path=path, exists=path.is_dir())
    w = res.warnings
    if not res.exists:
        w.append(f"no results directory for {hardware!r}")
        return res
    res.summary = sorted(
        (normalize_summary_row(r) for r in read_csv(path / "summary.csv", w)), key=row_sort_key
    )
    if not (path / "summary.csv").is_file():
        w.append("summary.csv is missing: no timings to show")
    attach_bench_readings(res.summary, path / "bench", w)
    survey = read_json(path / "survey.json", w, {})
    res.survey = survey if isinstance(survey, dict) else {}
    env = read_json(path / "environment.json", w, {})
    res.environment = env if isinstance(env, dict) else {}
    res.checks = _per_kernel(
        path / "check",
        w,
        numbers=CHECK_NUM,
        strings=("kernel", "impl", "impl_key", "step", "shape", "dtype", "params", "status", "reason"),
    )
    res.profiles = _per_kernel(
        path / "profile", w, numbers=PROFILE_NUM, strings=("kernel", "impl_key", "shape", "dtype", "name")
    )
    res.autotune = _per_kernel(
        path / "autotune",
        w,
        numbers=AUTOTUNE_NUM,
        bools=("is_best",),
        strings=("kernel", "impl_key", "triton_kernel", "shape", "dtype", "config", "status"),
    )
    res.ncu = _per_kernel(
        path / "ncu",
        w,
        numbers=NCU_NUM,
        strings=("kernel", "ladder", "impl_key", "step", "shape", "dtype", "status", "reason", "top_stalls"),
    )
    res.ptx = _ptx(path / "ptx", w)
    res.resources = sorted(
        (typed(r, ("file", "kernel"), RESOURCE_NUM) for r in read_csv(path / "build" / "resources.csv", w)),
        key=lambda r: (r["file"], r["kernel"]),
    )
    res.ladders = _ladders(read_json(path / "ladders.json", w, []), w)
    _checkout_findings(res.ladders, res.environment, w)
    res.compare = read_compare(path / "compare", w)
    return res


# the checkout's own kernel folders: a set measured elsewhere names folders this machine may lack
CHECKOUT_KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _checkout_findings(ladders: list[dict], environment: dict, warnings: list[str]) -> None:
    """Each step's finding as the checkout's ladder.yaml has it, where it has one, over the one the
    set recorded: a finding is written after the measurement it explains, so a set rendered again
    shows the latest reading of its steps. The family's folder is looked up in the set's kernel
    folders that exist here, then in the checkout's ``kernels/``."""
    recorded = ((environment.get("config") or {}).get("kernel_dirs") or []) if isinstance(environment, dict) else []
    dirs = [Path(d) for d in recorded if isinstance(d, str) and Path(d).is_dir()] + [CHECKOUT_KERNELS]
    texts: dict[str, dict] = {}
    for ld in ladders:
        kernel = ld.get("kernel", "")
        if kernel not in texts:
            folder = next((d / kernel for d in dirs if (d / kernel).is_dir()), None)
            try:
                texts[kernel] = ladder_texts(folder) if folder is not None else {}
            except FamilyError as exc:
                warnings.append(f"the checkout's ladder texts of {kernel!r} are not read: {exc}")
                texts[kernel] = {}
        for s in ld.get("steps", []):
            finding = texts[kernel].get((ld.get("ladder"), s.get("step")), {}).get("finding")
            if finding:
                s["finding"] = finding

"""Per-kernel code evidence: PTX/SASS excerpts, CUDA resources and Nsight Compute metrics."""

from __future__ import annotations

import math
import re
from pathlib import Path

from kernellab.io import read_text
from kernellab.report import fmt
from kernellab.report.load import Results, shape_sort_key
from kernellab.report.tables import Column, Table, field_column, table_of
from kernellab.report.views import Excerpt, PtxView

PTX_LINES = 40
PTX_MAX_BYTES = 4 << 20
# (label, texts a matching line must hold, pattern): most lines of a listing hold none of the
# texts, and a substring test skips them before the regex searches (which were most of a
# report's rendering time)
def _word(name: str):
    """A highlight for the instruction ``name`` as a whole word."""
    return name, (name,), re.compile(rf"\b{re.escape(name)}\b")


HIGHLIGHT = [
    ("ld.global.v4", ("ld.global",), re.compile(r"\bld\.global(\.\w+)*\.v4\b")),
    ("ld.global.v2", ("ld.global",), re.compile(r"\bld\.global(\.\w+)*\.v2\b")),
    ("st.global.v4", ("st.global",), re.compile(r"\bst\.global(\.\w+)*\.v4\b")),
    _word("wgmma"),
    ("mma", ("mma.",), re.compile(r"(?<![\w.])mma\.")),
    *map(_word, ("tanh.approx", "ld.local", "st.local")),
    ("LDG.128", ("LDG",), re.compile(r"\bLDG\.E(\.\w+)*\.128\b")),
    ("STG.128", ("STG",), re.compile(r"\bSTG\.E(\.\w+)*\.128\b")),
    *map(_word, ("HGMMA", "HMMA", "MUFU.TANH")),
    ("LDL/STL (local memory)", ("LDL", "STL"), re.compile(r"\b(LDL|STL)(\.\w+)*\b")),
]
_NEEDED = tuple({t for _, texts, _ in HIGHLIGHT for t in texts})


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
        if not any(t in ln for t in _NEEDED):
            continue
        for label, _, rx in HIGHLIGHT:
            if rx.search(ln):
                counts[label] = counts.get(label, 0) + 1
                matched = True
        if matched:
            hits.append(i)
    hit_set = set(hits)
    entry = next((i for i, ln in enumerate(lines) if ".entry" in ln or ln.lstrip().startswith("Function :")), None)
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
    """Resource rows per kernel family: a ladder's cuda_kernels first, else the family whose folder
    holds the source (``reduction/cuda_reduction/atomic.cu``: a step file defines kernels of any
    name), else the longest family name that the symbol contains as ``<family>_``."""
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
        folder = Path(r["file"]).parts[0] if r["file"] else ""
        if fam is None and folder in families:
            fam = folder
        if fam is None:
            fam = next((f for f in families if f + "_" in sym or Path(r["file"]).stem == f), None)
        if fam is None:
            rest.append(r)
        else:
            out.setdefault(fam, []).append(r)
    return out, rest


def _integer(name: str, key: str) -> Column:
    return Column(name, "num", lambda r: fmt.integer(r[key]))


def _number(name: str, key: str, digits: int = 1) -> Column:
    """A number the record may lack (an older ncu.csv has fewer metrics)."""
    return Column(name, "num", lambda r: fmt.num(r.get(key), digits))


RESOURCE_COLUMNS = [
    field_column("file"),
    field_column("CUDA kernel", "kernel"),
    _integer("registers", "registers"),
    _integer("spill stores B", "spill_stores_bytes"),
    _integer("spill loads B", "spill_loads_bytes"),
    _integer("stack frame B", "stack_frame_bytes"),
    _integer("smem B", "smem_bytes"),
    _integer("cmem B", "cmem_bytes"),
]


def _spills(r: dict) -> float:
    return sum(r[k] if math.isfinite(r[k]) else 0 for k in ("spill_stores_bytes", "spill_loads_bytes"))


def resources_table(rows: list[dict]) -> Table:
    return table_of(RESOURCE_COLUMNS, rows, lambda r: "warn" if _spills(r) > 0 else "")


def _bad(r: dict) -> bool:
    return r["status"] not in ("ok", "")


NCU_COLUMNS = [
    field_column("impl_key"),
    field_column("dtype"),
    field_column("shape"),
    Column("status", "text", lambda r: ("⚠ " if _bad(r) else "") + (r["status"] or "ok")),
    Column("duration µs", "num", lambda r: fmt.us(r["duration_us"])),
    _number("DRAM %", "dram_pct"),
    _number("SM %", "sm_pct"),
    _number("occupancy %", "achieved_occupancy"),
    _integer("registers", "registers"),
    _integer("smem/block", "smem_per_block"),
    _number("L1 hit %", "l1_hit_pct"),
    _number("L2 hit %", "l2_hit_pct"),
    _number("L2 %", "l2_pct"),
    Column("DRAM MB read / written", "num",
           lambda r: f"{fmt.num(r.get('dram_read_mb'))} / {fmt.num(r.get('dram_write_mb'))}"),
    _number("DRAM / model", "dram_vs_model", 2),
    _number("L2 MB read", "l2_read_mb"),
    field_column("top stalls", "top_stalls"),
    field_column("reason"),
]


def ncu_table(res: Results, kernel: str) -> Table:
    rows = sorted(res.ncu.get(kernel, []), key=lambda r: (r["impl_key"], r["dtype"], shape_sort_key(r["shape"])))
    return table_of(NCU_COLUMNS, rows, lambda r: "bad" if _bad(r) else "")

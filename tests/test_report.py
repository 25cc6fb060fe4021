"""The report renders the synthetic results fixture (tests/fixtures/results) correctly,
safely (escaped, self-contained) and deterministically."""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab.report import kernel_log, render
from kernellab.report.code import excerpt_lines
from kernellab.report.fmt import html_id, md_code_block, md_escape
from kernellab.report.load import load
from kernellab.report.model import annotate

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "results"
SCRIPT = "<script>alert(1)</script>"
PNG = b"\x89PNG\r\n\x1a\n"


def all_md(out) -> str:
    """report.md and the kernel pages beside it, as one text."""
    pages = [out / "report.md", *sorted(out.glob("report-*.md"))]
    return "\n".join(p.read_text(encoding="utf-8") for p in pages)


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    out = tmp_path_factory.mktemp("report-gpu")
    files = render(FIXTURE, "fake-gpu", out, others=[FIXTURE / "cpu-x86_64", FIXTURE / "no-such-hardware"], workers=2)
    return {
        "out": out,
        "files": files,
        "html": (out / "report.html").read_text(encoding="utf-8"),
        "md": all_md(out),
        "summary_md": (out / "report.md").read_text(encoding="utf-8"),
        "log": (out / "KERNEL_LOG.md").read_text(encoding="utf-8"),
    }


@pytest.fixture(scope="module")
def cpu(tmp_path_factory):
    out = tmp_path_factory.mktemp("report-cpu")
    render(FIXTURE, "cpu-x86_64", out)
    return {
        "out": out,
        "html": (out / "report.html").read_text(encoding="utf-8"),
        "md": all_md(out),
        "summary_md": (out / "report.md").read_text(encoding="utf-8"),
        "log": (out / "KERNEL_LOG.md").read_text(encoding="utf-8"),
    }


def summary_rows(hardware: str) -> list[dict]:
    with (FIXTURE / hardware / "summary.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, rows: list[dict], columns=None) -> None:
    """Rows as a CSV at path; columns default to the first row's keys, and others are left out."""
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns or list(rows[0]), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def slow_down(r: dict, k: float) -> None:
    """Row r's times k times longer (its empty times stay empty)."""
    for col in ("median_us", "p20_us", "p80_us"):
        r[col] = str(float(r[col]) * k) if r[col] else r[col]


def median(rows, kernel, key, shape, dtype) -> float:
    (r,) = [
        r for r in rows if (r["kernel"], r["impl_key"], r["shape"], r["dtype"]) == (kernel, key, shape, dtype)
    ]
    return float(r["median_us"])


# ------------------------------------------------------------------ outputs
def test_writes_pages_and_plots(gpu):
    out, files = gpu["out"], gpu["files"]
    assert {"report.html", "report.md", "KERNEL_LOG.md"} <= set(files)
    pngs = sorted(p for p in files if p.startswith("plots/"))
    assert {
        "plots/roofline.png",
        "plots/gelu_latency.png",
        "plots/gelu_throughput.png",
        "plots/gelu_speedup.png",
        "plots/matmul_throughput.png",
        "plots/compare_cpu-x86_64.png",
        "plots/ceilings_cpu-x86_64.png",
    } <= set(pngs)
    for p in pngs:
        assert files[p] == out / p and files[p].read_bytes().startswith(PNG)
    # every image the Markdown page links is a file beside it, and every plot is linked
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", gpu["md"])
    assert sorted(linked) == pngs
    assert all((out / p).is_file() for p in linked)


def test_timeline_section_only_where_the_set_has_a_timeline(gpu, cpu):
    """fake-gpu has timeline.csv: its figure, its ten costliest jobs (costliest first) in both pages;
    cpu-x86_64 has none (a set from before timelines): no section, no figure, no link."""
    for page in (gpu["html"], gpu["summary_md"]):
        assert "Where the run's time went" in page and "5 min 28 s" in page
        table = page.index("share of all jobs")  # the note above it names jobs too (the GPU's longest wait)
        costliest = [page.index(job, table) for job in ("measure matmul", "measure gelu", "build_cuda gelu")]
        assert costliest == sorted(costliest)
    assert "plots/timeline.png" in gpu["summary_md"] and (gpu["out"] / "plots" / "timeline.png").is_file()
    for page in (cpu["html"], cpu["summary_md"]):
        assert "Where the run's time went" not in page and "timeline" not in page.lower()
    assert not (cpu["out"] / "plots" / "timeline.png").exists()


def test_all_sections_present(gpu):
    html, md = gpu["html"], gpu["md"]
    for title in (
        "Overview",
        "Hardware",
        "Environment",
        "Method",
        "Failures",
        "Summary",
        "Geomean speedup over torch_fused",
        "Roofline",
        "Kernel: gelu",
        "Kernel: matmul",
        "Kernel: sgemm",
        "Cases",
        "Correctness",
        "Ladders",
        "Profiler",
        "Autotuning",
        "PTX / SASS",
        "CUDA resource usage",
        "Nsight Compute",
        "Comparison",
        "fake-gpu vs cpu-x86_64",
        "Run comparisons (compare/*.csv)",
        "Methodology and reproducibility",
    ):
        assert re.search(rf"<h[1-4][^>]*>{re.escape(title)}", html), title
        assert re.search(rf"^#+ {re.escape(title)}", md, re.M), title
    for page in (html, md):
        # method: timing mode, stopping rule, L2 flush, graph replay, correctness policy
        for words in (
            "Stopping rule",
            "L2 flush",
            "CUDA-graph replay (GPU only)",
            "Correctness: every implementation",
        ):
            assert words in page
        # reproducibility: command, versions, config as YAML, hash, commit
        assert "0123456789abcdef0123456789abcdef01234567" in page
        assert "sha256:feedfacecafe" in page
        assert "rel_std: 0.005" in page and "snakemake --cores 1" in page
        assert "570.86.15" in page and "9.27.1" in page
        # PTX excerpt with the highlighted 16-byte load; resources; autotune winner
        assert (
            "ld.global.v4.b32" in page and "_Z9gelu_vec4PKfPfl" in page and "BLOCK=4096, num_warps=8" in page
        )
        assert "KERNEL_LOG.md#gelu-cuda-ladder" in page
    assert re.search(r"<mark>\s*\d+ » +ld\.global\.v4\.b32", html)
    assert "no-such-hardware" in html and "nothing to compare" in html


def test_html_is_self_contained(gpu):
    html = gpu["html"]
    assert not re.search(r"""(src|href|action|poster|data)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert not re.search(r"<(script|link|iframe|object|embed|base)\b", html, re.I)
    assert "@import" not in html and "url(" not in html
    srcs = re.findall(r"<img[^>]*\ssrc=\"([^\"]*)\"", html)
    assert len(srcs) == html.count("<img") == 13  # the timeline's among them
    for src in srcs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG)
    assert '<meta name="viewport"' in html and "overflow-x: auto" in html
    assert html.count('<div class="table-wrap">') == html.count("<table>")


def outside_fences(md: str) -> str:
    """The Markdown text outside fenced code blocks (whose content is literal by definition)."""
    out, fence = [], ""
    for line in md.splitlines():
        s = line.strip()
        if fence:
            if s == fence:
                fence = ""
            continue
        m = re.match(r"^(`{3,})", s)
        if m:
            fence = m.group(1)
            continue
        out.append(line)
    assert not fence, "unclosed code fence"
    return "\n".join(out)


def test_untrusted_strings_are_escaped(gpu, cpu):
    for page in (gpu["html"], cpu["html"]):
        assert SCRIPT not in page and "<script" not in page.lower()
    for page in (gpu["md"], gpu["log"], cpu["md"], cpu["log"]):
        text = outside_fences(page)
        assert SCRIPT not in text and "<script" not in text.lower()
    # verbatim only inside the config's YAML code block
    assert gpu["md"].count(SCRIPT) == 1 and "note: 'config strings are escaped too: " + SCRIPT in gpu["md"]
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    # shown (escaped) in: a reason, a prediction, an evidence label, a profiler name, a config string
    assert gpu["html"].count(escaped) >= 8
    assert escaped in gpu["md"] and escaped in gpu["log"]
    assert "CUDA out of memory \\| tried to allocate" in gpu["md"]


def md_tables(md: str) -> list[list[str]]:
    tables, cur = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    return tables + ([cur] if cur else [])


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_markdown_tables_keep_their_shape(tmp_path):
    """Cells with | ` < > $ and newlines neither break the table nor inject markup."""
    root = tmp_path / "results"
    shutil.copytree(FIXTURE / "fake-gpu", root / "evil")
    path = root / "evil" / "summary.csv"
    rows = summary_rows("fake-gpu")
    evil = "naive$x|`y`<b>z</b>\nline2"
    for r in rows:
        if r["impl_key"] == "torch_naive":
            r["impl_key"] = evil
            r["reason"] = "a | b ``` c"
        if r["kernel"] == "matmul":
            r["kernel"] = "mat$mul/../" + SCRIPT
    write_rows(path, rows)
    render(root, "evil", tmp_path / "out")
    md = all_md(tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    tables = md_tables(md)
    assert len(tables) > 10
    for t in tables:
        counts = {unescaped_pipes(line) for line in t}
        assert len(counts) == 1, t
    assert "<b>" not in md and "<b>" not in html and "&lt;b&gt;z&lt;/b&gt;" in html
    assert "naive$x\\|\\`y\\`&lt;b&gt;z&lt;/b&gt; line2" in md
    assert SCRIPT not in outside_fences(md) and SCRIPT not in html
    plots = sorted(p.name for p in (tmp_path / "out" / "plots").iterdir())
    assert all(re.fullmatch(r"[a-z0-9_-]+\.png", p) for p in plots) and len(plots) == 11  # with timeline.png


def test_md_escape_and_code_blocks():
    assert md_escape("a|b") == "a\\|b"
    assert md_escape("`x`") == "\\`x\\`"
    assert md_escape("<i>&amp;") == "&lt;i&gt;&amp;amp;"
    assert md_escape("two\nlines") == "two lines"
    assert md_escape("torch_fused") == "torch_fused"
    assert md_escape("_init_") == "\\_init\\_"
    block = md_code_block("x\n````\ny")
    assert block.startswith("`````\n") and block.endswith("\n`````")


# ------------------------------------------------------------------ determinism
def test_rendering_is_byte_identical(gpu, tmp_path):
    """A second rendering, in a fresh interpreter with another hash seed and its figures drawn in
    that process (the first drew them on two forked workers), gives the same bytes."""
    out2 = tmp_path / "again"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    code = (
        "import sys; from pathlib import Path; from kernellab.report import render; "
        "root = Path(sys.argv[1]); "
        "render(root, 'fake-gpu', Path(sys.argv[2]), others=[root / 'cpu-x86_64', root / 'no-such-hardware'], "
        "workers=1)"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(FIXTURE), str(out2)],
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
    )
    first = sorted(p.relative_to(gpu["out"]) for p in gpu["out"].rglob("*") if p.is_file())
    second = sorted(p.relative_to(out2) for p in out2.rglob("*") if p.is_file())
    assert first == second
    for rel in first:
        assert (gpu["out"] / rel).read_bytes() == (out2 / rel).read_bytes(), rel


def test_rerender_removes_stale_plots(tmp_path):
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "old_kernel_latency.png").write_bytes(PNG)
    render(FIXTURE, "cpu-x86_64", tmp_path)
    assert not (tmp_path / "plots" / "old_kernel_latency.png").exists()


def test_rendering_again_replaces_each_page_whole(tmp_path):
    """A reader of the previous report.md (or a figure) keeps reading that file whole while the set is
    rendered again: each page is written beside it and renamed over it, and no scratch file is left."""
    render(FIXTURE, "cpu-x86_64", tmp_path)
    before = (tmp_path / "report.md").read_bytes()
    with (tmp_path / "report.md").open("rb") as reader:
        (tmp_path / "report.md").write_bytes(b"a page being read")  # what the reader holds from here on
        render(FIXTURE, "cpu-x86_64", tmp_path)
        assert reader.read() == b"a page being read"
    assert (tmp_path / "report.md").read_bytes() == before
    assert not [p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


# ------------------------------------------------------------------ failures and best
def test_failing_rows_are_flagged_and_never_best(gpu):
    rows = summary_rows("fake-gpu")
    (bad,) = [r for r in rows if (r["impl_key"], r["dtype"], r["shape"]) == ("triton", "bf16", "268435456")]
    assert bad["check_status"] == "failed" and bad["is_best"] == "True"  # the fixture's trap
    res = load(FIXTURE, "fake-gpu")
    annotate(res)
    for r in res.summary:
        if r["status"] != "ok" or r["check_status"] == "failed":
            assert not r["best"] and math.isnan(r["speedup"]), r["impl_key"]
    best = [
        r
        for r in res.summary
        if r["best"] and r["kernel"] == "gelu" and r["dtype"] == "bf16" and r["shape"] == "268435456"
    ]
    assert [r["impl_key"] for r in best] == ["cuda@vec4"]

    html = gpu["html"]
    summary = html.split('id="summary"')[1].split("</section>")[0]
    gelu_bf16 = [
        row for row in re.findall(r"<tr[^>]*>.*?</tr>", summary) if "<td>gelu</td><td>bf16</td>" in row
    ]
    assert len(gelu_bf16) == 1 and "<td>cuda@vec4</td>" in gelu_bf16[0] and "triton" not in gelu_bf16[0]
    # speedup: torch_fused's median over the best's; % of peak: the best's GB/s over the measured copy GB/s
    speedup = median(rows, "gelu", "torch_fused", "268435456", "bf16") / median(
        rows, "gelu", "cuda@vec4", "268435456", "bf16"
    )
    (vec4,) = [r for r in rows if (r["impl_key"], r["dtype"], r["shape"]) == ("cuda@vec4", "bf16", "268435456")]
    pct = 100 * float(vec4["gbps"]) / load(FIXTURE, "fake-gpu").survey["copy_gbps"]
    assert f'<td class="num">{speedup:.2f}×</td>' in gelu_bf16[0] and f'<td class="num">{pct:.1f}%</td>' in gelu_bf16[0]
    failures = html.split('id="failures"')[1].split("</section>")[0]
    for status, reason in (
        ("oom", "CUDA out of memory"),
        ("error", "launch failed"),
        ("incorrect", "correctness check failed"),
    ):
        assert re.search(rf'<tr class="bad">.*⚠ {status}.*{reason}', failures), status
    cases = [row for row in re.findall(r"<tr[^>]*>.*?</tr>", html) if "⚠ incorrect" in row]
    assert cases and all('class="bad"' in row and "★" not in row for row in cases)
    for page in (html, gpu["md"]):
        assert "⚠ incorrect" in page and "⚠ oom" in page and "⚠ error" in page


# ------------------------------------------------------------------ kernel log
def test_kernel_log_tables_speedups_and_verdicts(gpu):
    log = gpu["log"]
    assert log == kernel_log(FIXTURE / "fake-gpu")
    rows = summary_rows("fake-gpu")
    for kernel, steps, shape in (
        ("gelu", ["course", "vec4", "vec4_ilp"], "268435456"),
        ("sgemm", ["naive", "coalesced", "smem_tiling", "blocktile_1d"], "4096x4096x4096"),
    ):
        section = log.split(f"## {kernel} cuda ladder")[1].split("\n## ")[0]
        assert "| step | impl_key | time µs |" in section
        t = [median(rows, kernel, f"cuda@{s}", shape, "fp32") for s in steps]
        for i in range(1, len(steps)):
            prev, first = t[i - 1] / t[i], t[0] / t[i]
            line = next(x for x in section.splitlines() if x.startswith(f"| {i + 1}. {steps[i]} |"))
            cells = [c.strip() for c in line.split("|")]
            assert f"{prev:.2f}×" in cells and f"{first:.2f}×" in cells, line
    gelu = log.split("## gelu cuda ladder")[1].split("\n## ")[0]
    assert gelu.count("**Prediction held: yes**") == 3
    assert "571.0 (-62%)" in gelu and "24 (-6)" in gelu  # ncu deltas from the previous step
    vec4 = gelu.split("### 2. vec4 (cuda@vec4)")[1].split("### 3.")[0]
    assert ("- **Nsight Compute:** 571.0 µs over 1 kernel(s), DRAM 89.5% and SM 22.0% of peak, achieved occupancy "
            "85.0%, 24 registers per thread, 0 B of shared memory per block, L1 hit 0.0%, L2 hit 33.0%; top warp "
            "stalls (cycles per issued instruction): long_scoreboard 61%") in vec4
    assert "```\nld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4];\n```" in gelu
    sgemm = log.split("## sgemm cuda ladder")[1]
    assert "### 3. smem_tiling (cuda@smem_tiling) — regression" in sgemm
    assert "| regression |" in sgemm
    smem = sgemm.split("### 3. smem_tiling")[1].split("### 4.")[0]
    assert "**Prediction held: no**" in smem and "below the range" in smem
    block = sgemm.split("### 4. blocktile_1d")[1].split("### 5.")[0]
    assert "**Prediction held: no**" in block and "above the range" in block
    warp = sgemm.split("### 5. warptile")[1]
    assert "**Prediction held: unknown**" in warp and "not measured on this hardware" in warp
    assert "| baseline: torch\\_fused |" not in sgemm and "| baseline: torch_fused |" in sgemm


def test_kernel_log_cpu_run_keeps_every_ladder(cpu):
    log = cpu["log"]
    assert "CPU run" in log
    for heading in ("## gelu cuda ladder", "## sgemm cuda ladder"):
        assert heading in log
    # 7 CUDA steps with an unavailable row: once in the table, once as the outcome
    assert log.count("not measured on this hardware: CUDA unavailable: no GPU on this machine") == 2 * 7
    assert "not measured on this hardware: no result for this step in summary.csv" in log  # warptile
    assert "**Idea:** The course's kernel" in log and "**Prediction:** 5-10x over naive." in log
    assert "**Prediction held: yes**" not in log
    assert "this is a CPU run; the predictions are for the GPU" in log


# ------------------------------------------------------------------ CPU, comparison, missing files
def test_cpu_run_is_announced(gpu, cpu):
    assert "This is a CPU run." in cpu["html"] and "This is a CPU run." in cpu["md"]
    assert "not GPU numbers" in cpu["html"]
    assert "CPU run" not in gpu["html"]


def test_comparison_only_when_asked(gpu, cpu):
    assert "cpu-x86_64 vs" not in cpu["html"] and 'id="comparison"' not in cpu["html"]
    cmp = gpu["html"].split('id="comparison"')[1]
    assert "fake-gpu vs cpu-x86_64" in cmp and "common case(s)" in cmp
    runs = cmp.split("Run comparisons (compare/*.csv)")[1]  # compare/baseline_vs_run.csv's verdicts
    for verdict in ("SAME", "FASTER", "⚠ SLOWER", "AMBIGUOUS"):
        assert f"<td>{verdict}</td>" in runs, verdict
    common = cmp.split("Common cases")[1].split("</details>")[0]  # fake-gpu against the CPU: faster
    assert common.count("<td>FASTER</td>") == common.count("<tr") - 1
    # triton bf16 268435456 failed on fake-gpu; gelu 65536 fp32 torch_fused is common
    assert "<td>torch_fused</td><td>fp32</td><td>65536</td>" in common
    assert "268435456" not in common


def test_hardware_comparison_gives_verdicts(tmp_path):
    """The side-by-side table and plot classify each common case (stats.classify, the run's
    compare.threshold): SAME, FASTER, SLOWER and AMBIGUOUS, counted per kernel."""
    root = tmp_path / "results"
    for name in ("here", "there"):
        shutil.copytree(FIXTURE / "fake-gpu", root / name)
        shutil.rmtree(root / name / "compare")
    rows = summary_rows("fake-gpu")
    scale = {"triton": (2.0, 2.0, 2.0), "compiled": (0.5, 0.5, 0.5), "cuda@course": (1.2, 0.8, 1.5)}
    for r in rows:
        if (r["kernel"], r["shape"], r["dtype"]) == ("gelu", "65536", "fp32") and r["impl_key"] in scale:
            base = float(r["median_us"])
            for col, f in zip(("median_us", "p20_us", "p80_us"), scale[r["impl_key"]], strict=True):
                r[col] = str(base * f)
    write_rows(root / "there" / "summary.csv", rows)

    def verdicts(threshold=None):
        env_path = root / "here" / "environment.json"
        env = json.loads((FIXTURE / "fake-gpu" / "environment.json").read_text(encoding="utf-8"))
        if threshold is not None:
            env["config"]["compare"] = {"threshold": threshold}
        env_path.write_text(json.dumps(env), encoding="utf-8")
        out = tmp_path / f"out-{threshold}"
        files = render(root, "here", out, others=[root / "there"])
        md = files["report.md"].read_text(encoding="utf-8")
        html = files["report.html"].read_text(encoding="utf-8")
        assert files["plots/compare_there.png"].read_bytes().startswith(PNG)
        got = {}
        for line in md.splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) == 11 and (cells[0], cells[2], cells[3]) == ("gelu", "fp32", "65536"):
                got[cells[1]] = cells[-1]
        return got, md, html

    got, md, html = verdicts()
    assert got == {
        "compiled": "⚠ SLOWER",
        "cuda@course": "AMBIGUOUS",
        "cuda@vec4": "SAME",
        "torch_fused": "SAME",
        "torch_naive": "SAME",
        "triton": "FASTER",
    }
    assert "| verdict for here |" in md and "at most 3% (compare.threshold)" in md
    cmp = html.split('id="comparison"')[1]
    assert re.search(r'<tr class="bad"><td>gelu</td><td>compiled</td>.*<td>⚠ SLOWER</td></tr>', cmp)
    assert re.search(r'<tr class="good"><td>gelu</td><td>triton</td>.*<td>FASTER</td></tr>', cmp)
    by_kernel = md.split("### here vs there")[1].split("<details>")[0]
    (gelu,) = [ln for ln in by_kernel.splitlines() if ln.startswith("| gelu | ")]
    n, same, faster, slower, ambiguous = [c.strip() for c in gelu.split("|")[2:7]]
    assert (faster, slower, ambiguous) == ("1", "1", "1") and int(same) == int(n) - 3

    got, md, _ = verdicts(threshold=0.25)  # the run's own threshold: a 17% change is now SAME
    assert got["cuda@course"] == "SAME" and got["triton"] == "FASTER" and got["compiled"] == "⚠ SLOWER"
    assert "at most 25% (compare.threshold)" in md


def test_a_ceiling_without_native_arithmetic_predicts_nothing(tmp_path):
    """Issue 41: a CPU without fp16 arithmetic measures 0.003 fp16 TFLOP/s (fp32: 0.158), and the
    comparison with a CPU that does 0.159 predicted "53× faster" from it. The ceiling is marked not
    meaningful in the hardware table and the notes, and its family gets no prediction; the fp32
    family beside it still does."""
    root = tmp_path / "results"
    rates = {"here": {"fp32": 0.158, "tf32": 0.158, "bf16": 0.5, "fp16": 0.003},
             "there": {"fp32": 0.158, "tf32": 0.16, "bf16": 0.86, "fp16": 0.159}}
    for name, slow in (("here", 1000.0), ("there", 1.0)):
        shutil.copytree(FIXTURE / "cpu-x86_64", root / name)
        survey = json.loads((root / name / "survey.json").read_text(encoding="utf-8"))
        survey["matmul_tflops"] = rates[name]
        (root / name / "survey.json").write_text(json.dumps(survey), encoding="utf-8")
        rows = summary_rows("cpu-x86_64")
        for r in rows:  # the matmul cases in fp16, 1000x slower here (each below 0.003 TFLOP/s)
            if r["kernel"] == "matmul":
                r["dtype"] = "fp16"
                slow_down(r, slow)
                r["tflops"] = str(float(r["tflops"]) / slow)
        write_rows(root / name / "summary.csv", rows)
    files = render(root, "here", tmp_path / "out", others=[root / "there"])
    md = files["report.md"].read_text(encoding="utf-8").replace("\\_", "_")
    assert "| measured matmul fp16 | 0.003000 TFLOP/s (not meaningful: no native arithmetic) |" in md
    assert "| measured matmul bf16 | 0.5000 TFLOP/s |" in md  # slower than fp32, yet not ten times
    assert ("> Not a meaningful ceiling: the fp16 matmul rate (0.003 TFLOP/s, under 10% of this machine's "
            "fp32 rate (0.236): no native fp16 arithmetic here)") in md  # fp32 raised by an sgemm case
    (fp16,) = [ln for ln in md.splitlines() if ln.startswith("- matmul fp16: ")]
    assert "predict" not in fp16.replace("no prediction", "")
    assert fp16.endswith("; no prediction: the fp16 matmul ceiling is not meaningful (on here, 0.003 TFLOP/s, "
                         "under 10% of this machine's fp32 rate (0.236): no native fp16 arithmetic here)")
    (sgemm,) = [ln for ln in md.splitlines() if ln.startswith("- sgemm fp32: ")]
    assert "ceilings predict the same time on both (fp32 matmul: " in sgemm


def _two_gpus_for_the_ceilings(root: Path) -> list[dict]:
    """Sets 'here' and 'there' under root for the test below; returns here's summary rows."""
    for name in ("here", "there"):
        shutil.copytree(FIXTURE / "fake-gpu", root / name)
        shutil.rmtree(root / name / "compare")
    survey = json.loads((FIXTURE / "fake-gpu" / "survey.json").read_text(encoding="utf-8"))
    survey["nvml"] = {"max_sm_clock_mhz": 1980, "power_limit_w": 700.0}
    (root / "here" / "survey.json").write_text(json.dumps(survey), encoding="utf-8")
    survey.update(copy_gbps=3000.0, matmul_tflops={"fp32": 40.8, "tf32": 304.0, "bf16": 600.0, "fp16": 608.0})
    (root / "there" / "survey.json").write_text(json.dumps(survey), encoding="utf-8")

    slower_here = {("cuda@coalesced", "4096x4096x4096"): 0.7, ("cuda@blocktile_1d", "4096x4096x4096"): 0.8}
    capped = ("sgemm", "cuda@blocktile_1d", "4096x4096x4096", "fp32")
    here, there = summary_rows("fake-gpu"), summary_rows("fake-gpu")
    for a, b in zip(here, there, strict=True):
        k = slower_here.get((b["impl_key"], b["shape"]), 1.4 if b["kernel"] == "gelu" else 1.25)
        slow_down(b, k)
        for col in ("gbps", "tflops"):
            b[col] = str(float(b[col]) / k) if b[col] else b[col]
        if (a["kernel"], a["impl_key"], a["shape"], a["dtype"]) == capped:
            a["sm_clock_mhz"] = "1740"
    bench_cols = ["kernel", "impl_key", "shape", "dtype", "params", "mode", "power_w", "temperature_c"]
    for name, rows, watts in (("here", here, 690.0), ("there", there, 520.0)):
        write_rows(root / name / "summary.csv", rows)
        (root / name / "bench").mkdir()
        bench = [{**r, "power_w": watts, "temperature_c": 80} for r in rows if r["kernel"] == "sgemm"]
        write_rows(root / name / "bench" / "sgemm.csv", bench, bench_cols)
    return here


def test_hardware_comparison_against_the_ceilings(tmp_path, monkeypatch):
    """Two GPUs: 'there' has a 3000 GB/s copy (here 4200) and 600 bf16 / 40.8 fp32 TFLOP/s
    matmul rates (here 750 / 51), and runs gelu 1.4x and the rest 1.25x slower. Per family,
    the ceilings' ratio comes from the two survey.json files and stands beside the median
    time ratio; two sgemm cases run faster there, and the table of compute-bound SLOWER
    cases shows each side's SM clock from summary.csv and power from bench/*.csv."""
    from kernellab.report import plots

    root = tmp_path / "results"
    here = _two_gpus_for_the_ceilings(root)
    drawn = {}
    real = plots.png_bytes

    def keep(fig):
        drawn[fig.axes[0].get_title()] = plots.overlapping_tick_labels(fig)
        return real(fig)

    monkeypatch.setattr(plots, "png_bytes", keep)
    files = render(root, "here", tmp_path / "out", others=[root / "there"])
    assert files["plots/ceilings_there.png"].read_bytes().startswith(PNG)
    assert drawn["time ratio per family against the ceilings' ratio"] == []
    md = files["report.md"].read_text(encoding="utf-8").replace("\\_", "_")
    page = html.unescape(files["report.html"].read_text(encoding="utf-8"))
    assert "](plots/ceilings_there.png)" in md

    n_gelu = sum(r["kernel"] == "gelu" and r["status"] == "ok" and r["check_status"] == "ok" for r in here)
    for line in (
        f"gelu: 1.40× faster on here (median of {n_gelu} case(s)); ceilings predict 1.40× faster on here "
        "(copy: 4,200 vs 3,000 GB/s)",
        "matmul bf16: 1.25× faster on here (median of 9 case(s)); ceilings predict 1.25× faster on here "
        "(bf16 matmul: 750.0 vs 600.0 TFLOP/s)",
        "matmul fp32: 1.25× faster on here (median of 9 case(s)); ceilings predict 1.25× faster on here "
        "(fp32 matmul: 51.00 vs 40.80 TFLOP/s)",
        "sgemm fp32: 1.25× faster on here (median of 10 case(s)); ceilings predict 1.25× faster on here "
        "(fp32 matmul: 51.00 vs 40.80 TFLOP/s)",
    ):
        assert f"- {line}" in md and f"<li>{line}" in page, line

    table = md.split("#### Against the ceilings")[1].split("<details>")[0]
    lines = [ln for ln in table.splitlines() if ln.startswith("| ") and "---" not in ln]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    assert rows[0] == [
        "kernel", "impl_key", "dtype", "shape", "params", "time ratio there / here",
        "here SM MHz", "there SM MHz", "here W", "there W", "note",
    ]
    assert [r[:10] for r in rows[1:]] == [
        ["sgemm", "cuda@coalesced", "fp32", "4096x4096x4096", "", "0.70×", "1,980", "1,980", "690", "520"],
        ["sgemm", "cuda@blocktile_1d", "fp32", "4096x4096x4096", "", "0.80×", "1,740", "1,980", "690", "520"],
    ]
    assert rows[1][10] == "here at its max SM clock: not clock-capped"
    assert rows[2][10] == (
        "here at 1,740 of its max 1,980 MHz (88%): power- or thermally-capped clocks, drawing 690 of its 700 W limit"
    )
    assert "<td>here at 1,740 of its max 1,980 MHz (88%)" in page


def test_missing_optional_files_and_columns(tmp_path):
    root = tmp_path / "results"
    (root / "bare").mkdir(parents=True)
    keep = ["kernel", "impl_key", "shape", "dtype", "status", "median_us"]
    write_rows(root / "bare" / "summary.csv", summary_rows("fake-gpu"), keep)
    (root / "bare" / "ladders.json").write_text("{not json", encoding="utf-8")
    files = render(root, "bare", tmp_path / "out")
    html = files["report.html"].read_text(encoding="utf-8")
    assert "Kernel: gelu" in html and "ladders.json: unreadable JSON" in html
    (root / "empty").mkdir()
    files = render(root, "empty", tmp_path / "out2")
    assert "summary.csv is missing" in files["report.html"].read_text(encoding="utf-8")


def test_ptx_paths_stay_inside_results(gpu):
    assert "../../../../etc/passwd (not found inside the results directory)" in gpu["html"]
    assert "root:x:" not in gpu["html"]


def test_excerpt_keeps_the_telling_lines():
    text = "\n".join(
        [".visible .entry k("]
        + [f"mov.u32 %r{i}, 0;" for i in range(200)]
        + [
            "ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];",
            "wgmma.mma_async.sync.aligned.m64n128k16",
            "st.local.u32 [%rd2], %r1;",
        ]
        + ["add.s32 %r1, %r1, 1;"] * 100
    )
    lines, counts = excerpt_lines(text)
    shown = [ln for ln in lines if not ln["gap"]]
    assert len(shown) <= 40
    assert counts == {"ld.global.v4": 1, "wgmma": 1, "st.local": 1}
    assert sum(ln["hl"] for ln in shown) == 3 and shown[0]["text"] == ".visible .entry k("
    assert any(ln["gap"] for ln in lines)


def test_a_report_reads_its_set_and_the_sets_it_names_and_nothing_else(tmp_path):
    """As the report rule runs it: the set in a staging root, rendered into its own directory,
    compared with the set compare.with names and a reference of the same model (named apart
    from the run's own set). What else lies in results/ (another set, compare/*.csv) is not read."""
    stage, results, refs = tmp_path / ".staging", tmp_path / "results", tmp_path / "reference"
    shutil.copytree(FIXTURE / "fake-gpu", stage / "fake-gpu")
    shutil.rmtree(stage / "fake-gpu" / "compare")
    shutil.copytree(FIXTURE / "cpu-x86_64", results / "cpu-x86_64")
    shutil.copytree(FIXTURE / "cpu-x86_64", results / "unnamed-set")
    shutil.copytree(FIXTURE / "fake-gpu", refs / "fake-gpu")
    (results / "compare").mkdir()
    cols = "kernel,impl_key,shape,dtype,params,median_a_us,median_b_us,change,verdict,a,b\n"
    (results / "compare" / "cpu-x86_64__vs__fake-gpu.csv").write_text(
        cols + "gelu,torch_fused,65536,fp32,,60.0,5.1,-0.915,FASTER,cpu-x86_64,fake-gpu\n", encoding="utf-8"
    )
    out = stage / "fake-gpu"
    first = render(stage, "fake-gpu", out, others=[results / "cpu-x86_64"], references=[refs / "fake-gpu"])
    html = first["report.html"].read_text(encoding="utf-8")
    cmp = html.split('id="comparison"')[1]
    assert "fake-gpu vs cpu-x86_64" in cmp and "fake-gpu vs fake-gpu reference" in cmp
    assert "cpu-x86_64__vs__fake-gpu.csv" not in html and "unnamed-set" not in html
    before = {k: p.read_bytes() for k, p in first.items()}
    again = render(stage, "fake-gpu", out, others=[results / "cpu-x86_64"], references=[refs / "fake-gpu"])
    assert {k: p.read_bytes() for k, p in again.items()} == before  # its own pages are not inputs


def test_rows_whose_check_did_not_pass_are_not_results(tmp_path):
    root = tmp_path / "results"
    shutil.copytree(FIXTURE / "fake-gpu", root / "x")
    rows = summary_rows("fake-gpu")
    for r in rows:
        if (r["kernel"], r["impl_key"], r["shape"], r["dtype"]) == ("gelu", "torch_fused", "65536", "fp32"):
            r["check_status"] = "not checked"
    write_rows(root / "x" / "summary.csv", rows)
    res = load(root, "x")
    annotate(res)
    case = [r for r in res.summary if (r["kernel"], r["shape"], r["dtype"]) == ("gelu", "65536", "fp32")]
    assert all(math.isnan(r["speedup"]) for r in case)  # no valid baseline left in this case
    (fused,) = [r for r in case if r["impl_key"] == "torch_fused"]
    assert not fused["valid"] and not fused["best"]
    html = render(root, "x", tmp_path / "out")["report.html"].read_text(encoding="utf-8")
    assert "⚠ check not checked" in html and "correctness check not checked" in html


def test_git_info_prefers_the_commit_the_shipper_named(tmp_path, monkeypatch):
    from kernellab.workflow.aggregate import git_info

    sha = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setenv("KERNELLAB_GIT_COMMIT", sha)
    assert git_info(tmp_path) == {"git_commit": sha, "git_dirty": None}
    monkeypatch.setenv("KERNELLAB_GIT_COMMIT", "8C683F7")  # abbreviated, as git log --oneline prints it
    assert git_info(tmp_path) == {"git_commit": "8c683f7", "git_dirty": None}
    # a value that names no commit is kept as told, and no .git (stale or not) is asked instead
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    monkeypatch.setenv("KERNELLAB_GIT_COMMIT", "not-a-sha")
    assert git_info(repo) == {"git_commit": None, "git_dirty": None, "git_commit_told": "not-a-sha"}
    monkeypatch.delenv("KERNELLAB_GIT_COMMIT")
    assert re.fullmatch(r"[0-9a-f]{40}", git_info(repo)["git_commit"])


def test_expected_absences_are_listed_apart_from_failures(cpu):
    """The CPU fixture's only non-ok rows are CUDA steps that cannot run without a GPU: no failure,
    and one compact line per implementation and reason under 'Not run here'."""
    html = cpu["html"]
    failures = html.split('<section id="failures">', 1)[1].split("</section>", 1)[0]
    assert "None in this run." in failures and "<table" not in failures
    absences = html.split('<section id="absences">', 1)[1].split("</section>", 1)[0]
    rows = summary_rows("cpu-x86_64")
    keys = {(r["impl_key"], r["reason"]) for r in rows if r["status"] == "unavailable"}
    assert absences.count("<tr") == len(keys) + 1  # one line per implementation and reason, plus the header
    assert "## Not run here" in cpu["md"]



def test_a_set_is_compared_with_the_references_of_its_kind(tmp_path):
    from kernellab.workflow.reference import of_kind

    for name in ("cpu-x86_64", "cpu-aarch64", "nvidia-h100", "nvidia-h200", "not-a-set"):
        (tmp_path / name).mkdir()
        if name != "not-a-set":
            (tmp_path / name / "summary.csv").write_text("kernel\n", encoding="utf-8")
    assert [p.name for p in of_kind("nvidia-h200", tmp_path)] == ["nvidia-h100", "nvidia-h200"]
    assert [p.name for p in of_kind("nvidia-l4", tmp_path)] == ["nvidia-h100", "nvidia-h200"]
    assert [p.name for p in of_kind("cpu-x86_64", tmp_path)] == ["cpu-aarch64", "cpu-x86_64"]
    assert of_kind("nvidia-h200", tmp_path / "missing") == []


@pytest.mark.parametrize("which", ["gpu", "cpu"])
def test_report_md_is_a_short_summary_linking_each_kernel_page(which, request):
    rendered = request.getfixturevalue(which)
    summary = rendered["summary_md"]
    assert len(summary.splitlines()) < 400
    pages = re.findall(r"\]\((report-[a-z0-9_-]+\.md)\)", summary)
    assert pages and all((rendered["out"] / page).is_file() for page in pages)
    assert sorted(pages) == sorted(p.name for p in rendered["out"].glob("report-*.md"))


def test_no_plot_has_overlapping_tick_labels(tmp_path, monkeypatch):
    """Every figure the report draws from the fixtures, GPU and CPU sets, with a comparison:
    no two tick labels of one axis intersect when drawn (the renderer's text extents)."""
    from kernellab.report import plots

    drawn = []
    real = plots.png_bytes

    def keep(fig):
        drawn.append((fig.texts[0].get_text() if fig.texts else "", plots.overlapping_tick_labels(fig)))
        return real(fig)

    monkeypatch.setattr(plots, "png_bytes", keep)
    # drawn in this process, where the figures can be looked at
    render(FIXTURE, "fake-gpu", tmp_path / "gpu", others=[FIXTURE / "cpu-x86_64"], workers=1)
    render(FIXTURE, "cpu-x86_64", tmp_path / "cpu", workers=1)
    assert len(drawn) >= 10
    assert [(title, clashes) for title, clashes in drawn if clashes] == []


@pytest.mark.parametrize(
    "lo, hi", [(0.9, 1.1), (0.7, 1.4), (0.3, 3.0), (0.16, 1.0), (1.0, 6.0), (0.001, 5.0), (1, 1e5)]
)
def test_ceiling_ratio_axis_labels_never_overlap(lo, hi, monkeypatch):
    """The ceilings figure's ratio axis, from two GPUs a few percent apart to a GPU against a CPU:
    several round ratio labels, none touching another."""
    from kernellab.report import plot_comparison, plots

    seen = []
    real = plots.png_bytes

    def keep(fig):
        ax = fig.axes[0]
        left, right = ax.get_xlim()
        ticks = zip(ax.xaxis.get_ticklabels(), ax.xaxis.get_ticklocs(), strict=True)
        shown = [t.get_text() for t, x in ticks if left <= x <= right and t.get_text()]
        seen.append((plots.overlapping_tick_labels(fig), shown))
        return real(fig)

    monkeypatch.setattr(plots, "png_bytes", keep)
    rows = [{"label": "softmax", "points": [(lo, "SLOWER", 5.0), (hi, "FASTER", 50.0)], "predicted": 1.2,
             "median": lo}]
    assert plot_comparison.ceiling_ratios(rows, "a", "b").startswith(PNG)
    ((clashes, shown),) = seen
    assert clashes == [] and len(shown) >= 3 and "1×" in shown, shown


def test_ceiling_rows_place_cases_by_their_time(monkeypatch):
    """Within a family's row the cases rise with their time: the longest at the top, the
    shortest (a few microseconds, launch-bound) at the bottom, whatever their ratio or verdict."""
    from kernellab.report import plot_comparison, plots

    seen = {}
    real = plots.png_bytes

    def keep(fig):
        ax = fig.axes[0]
        seen.update({round(float(x), 3): float(y) for c in ax.collections for x, y in c.get_offsets()})
        return real(fig)

    monkeypatch.setattr(plots, "png_bytes", keep)
    points = [(0.71, "SLOWER", 900.0), (1.0, "SAME", 3.0), (0.75, "SLOWER", 40.0), (0.9, "AMBIGUOUS", 8.0)]
    rows = [{"label": "softmax", "points": points, "predicted": 0.7, "median": math.nan}]
    assert plot_comparison.ceiling_ratios(rows, "a", "b").startswith(PNG)
    by_time = [seen[x] for x, _, _ in sorted(points, key=lambda p: p[2])]
    assert by_time == sorted(by_time) and len(set(by_time)) == len(points)
    assert all(-0.5 < y < 0.5 for y in by_time)  # inside the row


def test_log_axis_labels_are_major_ticks_only():
    """A range under a decade (the case that printed 2×10⁴ 3×10⁴ 4×10⁴ on top of each other)
    gets a few round, short labels and no minor labels."""
    from matplotlib.figure import Figure

    from kernellab.report import plots

    fig = Figure(figsize=(4.0, 3.0), dpi=plots.DPI)  # about a report panel
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.plot([15000, 45000], [1, 2])
    plots.log_ticks(ax.xaxis)
    assert plots.overlapping_tick_labels(fig) == []  # draws the figure
    labels = [t.get_text() for t in ax.xaxis.get_ticklabels(which="both") if t.get_visible() and t.get_text()]
    assert labels and all(len(s) <= 4 for s in labels), labels
    assert not [t.get_text() for t in ax.xaxis.get_ticklabels(minor=True) if t.get_text()]


def test_cases_above_the_survey_ceiling_are_flagged_and_explained(cpu, gpu):
    """The CPU fixture's fp32 matmul reaches 0.2386 TFLOP/s, above the survey's 0.21: the
    report explains it, divides by max(survey, best observed) (no share above 100%), marks
    the rows ↑, and labels the roof it raised; the GPU fixture, below its ceilings, says nothing."""
    for page in (cpu["md"].replace("\\_", "_"), html.unescape(cpu["html"])):
        assert "Above the measured ceiling: the survey's fp32 matmul rate (0.21 TFLOP/s)" in page
        assert "max(survey, best observed) = 0.2386 TFLOP/s" in page
        assert "corrected from data" in page
        assert "above their roof" not in page
    marked = [ln for ln in cpu["md"].splitlines() if "% ↑" in ln]
    assert marked
    for ln in marked:
        for pct in re.findall(r"([\d.,]+)% ↑", ln):
            assert float(pct.replace(",", "")) <= 100.0, ln
    assert "Above the measured ceiling" not in gpu["md"] and "% ↑" not in gpu["md"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_reference_sets_render_again_side_by_side(tmp_path, capsys, monkeypatch):
    """``python -m kernellab.report reference/*`` (issue 41): two GPU references measured apart are
    rendered again, each report comparing with the other (and not with itself), into
    results/reference/<set>/ as the command says, leaving the references byte for byte as they were;
    ``--out`` puts them elsewhere, and an ``--out`` that lands on a reference is refused, as is a folder
    that is not a set, by name before anything is written."""
    from kernellab.report.__main__ import main

    root = tmp_path / "reference"
    for name in ("gpu-a", "gpu-b"):
        shutil.copytree(FIXTURE / "fake-gpu", root / name)
    before = _tree(root)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    with pytest.raises(SystemExit):
        main([str(root / "gpu-a"), str(root / "gpu-c"), "--references", str(root)])
    assert f"not a result set (no summary.csv): {root / 'gpu-c'}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(root / "gpu-a"), "--references", str(root), "--out", str(root)])
    err = capsys.readouterr().err
    assert f"would write into the references ({root / 'gpu-a'})" in err and "reference --render" in err
    assert not (tmp_path / "work" / "results").exists()

    assert main([str(root / "gpu-a"), str(root / "gpu-b"), "--references", str(root)]) == 0
    assert _tree(root) == before
    said = capsys.readouterr().out.splitlines()
    for this, other in (("gpu-a", "gpu-b"), ("gpu-b", "gpu-a")):
        where = Path("results") / "reference" / this
        (line,) = [ln for ln in said if ln.startswith(f"{root / this}: ")]
        assert f" files written to {where}/, compared with {other} reference" in line
        md = (tmp_path / "work" / where / "report.md").read_text(encoding="utf-8")
        assert f"time ratio {other} reference / {this}" in md
        assert f"{this} reference" not in md
        assert (where / "plots" / f"ceilings_{html_id(other + ' reference')}.png").is_file()

    assert main([str(root / "gpu-a"), "--references", str(root), "--out", str(tmp_path / "pages")]) == 0
    assert f"files written to {tmp_path / 'pages' / 'gpu-a'}/" in capsys.readouterr().out
    pages = tmp_path / "pages" / "gpu-a" / "report.md"
    assert pages.read_bytes() == (where.parent / "gpu-a" / "report.md").read_bytes()
    assert _tree(root) == before


def test_a_references_committed_pages_are_checked_and_rendered_again_on_purpose(tmp_path, capsys):
    """``python -m kernellab.workflow.reference --check`` lists the pages of a reference that today's
    code renders differently (a changed page, a figure no longer drawn), exit status 1;
    ``--render`` rewrites them in place, after which the check passes."""
    from kernellab.workflow.reference import main

    ref = tmp_path / "reference" / "gpu-a"
    shutil.copytree(FIXTURE / "fake-gpu", ref)
    assert main(["--render", str(ref)]) == 0
    assert f"{ref}: " in capsys.readouterr().out and (ref / "report.md").is_file()
    assert main(["--check", str(ref)]) == 0
    assert capsys.readouterr().out == f"{ref}: as today's code renders it\n"

    (ref / "report.md").write_text("stale\n", encoding="utf-8")
    (ref / "plots" / "gone.png").write_bytes(PNG)
    before = _tree(ref)
    assert main(["--check", str(ref)]) == 1
    assert capsys.readouterr().out == f"{ref}: 2 page(s) differ from today's rendering: plots/gone.png, report.md\n"
    assert _tree(ref) == before  # a check writes nothing there
    assert main(["--render", str(ref)]) == 0
    assert main(["--check", str(ref)]) == 0 and not (ref / "plots" / "gone.png").exists()


def _fake_gpu_with_recorded_finding(tmp_path, kernel: str, step: str, finding: str) -> Path:
    """A copy of the fake GPU set whose ladders.json recorded ``finding`` for one step; its results root."""
    root = tmp_path / "results"
    shutil.copytree(FIXTURE / "fake-gpu", root / "fake-gpu")
    path = root / "fake-gpu" / "ladders.json"
    ladders = json.loads(path.read_text(encoding="utf-8"))
    next(s for ld in ladders if ld["kernel"] == kernel for s in ld["steps"] if s["step"] == step)["finding"] = finding
    path.write_text(json.dumps(ladders), encoding="utf-8")
    return root


def test_kernel_log_shows_a_steps_finding(tmp_path):
    """A step's finding (ladder.yaml, written after measuring) follows its verdict in
    KERNEL_LOG.md and the HTML report: the one its ladders.json recorded (the report reads the set,
    never the families)."""
    root = _fake_gpu_with_recorded_finding(tmp_path, "sgemm", "smem_tiling",
                                           "Bank conflicts on the B tile: <i>shared</i> loads stall.")
    render(root, "fake-gpu", tmp_path / "out")
    log = (tmp_path / "out" / "KERNEL_LOG.md").read_text(encoding="utf-8")
    smem = log.split("### 3. smem_tiling")[1].split("### 4.")[0]
    assert smem.index("**Prediction held: no**") < smem.index("- **Finding:** Bank conflicts on the B tile")
    assert log.count("**Finding:**") == 1
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<strong>Finding:</strong> Bank conflicts on the B tile: &lt;i&gt;shared&lt;/i&gt; loads stall." in page


def test_ladder_yaml_takes_a_finding_and_refuses_unknown_keys(tmp_path):
    from kernellab.engine import registry

    (tmp_path / "ladder.yaml").write_text(
        "steps:\n- step: a\n  idea: i\n  prediction: p\n  finding: f\n", encoding="utf-8")
    assert registry.ladder_texts(tmp_path)[("steps", "a")]["finding"] == "f"
    (tmp_path / "ladder.yaml").write_text("steps:\n- step: a\n  findings: f\n", encoding="utf-8")
    with pytest.raises(registry.FamilyError, match="unknown keys"):
        registry.ladder_texts(tmp_path)


def load_annotated(root):
    res = load(root, "fake-gpu")
    annotate(res)
    return res


def _field(res):
    from kernellab.report.model import kernel_metric
    from kernellab.report.summary import ours_vs_field

    counts, shapes = ours_vs_field(res, {k: kernel_metric(res, k) for k in res.kernels()})
    as_dicts = lambda t: [dict(zip(t.columns, r.cells, strict=True)) for r in t.rows]  # noqa: E731
    return as_dicts(counts), as_dicts(shapes)


def test_ours_against_the_field_takes_the_fastest_of_each_side_at_every_shape(tmp_path):
    """Per kernel, case and shape: the fastest correct Triton or CUDA implementation beside the fastest
    correct PyTorch one (eager or compiled), with their times and shares of the survey's own ceiling;
    per kernel and case, the shapes where PyTorch was faster. Checked against the same figures taken
    from summary.csv with pandas, after one of our cases is made to fail. A set without QuACK or
    Liger rows shows them as missing."""
    import pandas as pd

    root = tmp_path / "results"
    shutil.copytree(FIXTURE / "fake-gpu", root / "fake-gpu")
    path = root / "fake-gpu" / "summary.csv"
    df = pd.read_csv(path, keep_default_na=False)
    ours = df["backend"].isin(["triton", "cuda"])
    largest = df[(df["kernel"] == "gelu") & (df["dtype"] == "fp32")]["numel"].max()
    fastest = df[ours & (df["kernel"] == "gelu") & (df["dtype"] == "fp32") & (df["numel"] == largest)]
    df.loc[fastest["median_us"].astype(float).idxmin(), "check_status"] = "failed"  # no longer counts
    df.to_csv(path, index=False)

    res = load(root, "fake-gpu")
    annotate(res)
    counts, shapes = _field(res)
    rows = {r["shape"]: r for r in shapes if (r["kernel"], r["case"]) == ("gelu", "fp32")}

    ok = df[(df["status"] == "ok") & (df["check_status"] == "ok") & (df["kernel"] == "gelu") & (df["dtype"] == "fp32")]
    ok = ok.assign(us=ok["median_us"].astype(float))
    side = ok["backend"].map(lambda b: "ours" if b in ("triton", "cuda") else "torch" if b in ("torch", "compile")
                             else "")
    best = ok[side != ""].assign(side=side).sort_values("us").groupby(["shape", "side"]).head(1)
    copy = json.loads((root / "fake-gpu" / "survey.json").read_text())["copy_gbps"]
    per_shape = best.pivot(index="shape", columns="side", values="us").dropna()
    assert set(rows) == set(per_shape.index)
    for shape, row in rows.items():
        at = best[best["shape"] == shape].set_index("side")
        assert row["ours"] == at.loc["ours", "impl_key"] and row["PyTorch's best"] == at.loc["torch", "impl_key"]
        assert row["ours %"] == f"{100 * float(at.loc['ours', 'gbps']) / copy:.1f}%"
        assert row["fastest other / ours"] == f"{at.loc['torch', 'us'] / at.loc['ours', 'us']:.2f}×"
        assert row["QuACK µs"] == row["Liger µs"] == row["QuACK %"] == "–"
    (count,) = [c for c in counts if (c["kernel"], c["case"]) == ("gelu", "fp32")]
    faster = int((per_shape["torch"] < per_shape["ours"]).sum())
    assert count["shapes another is faster"] == f"{faster} of {len(per_shape)}"


def test_ours_against_the_field_shows_quack_and_liger_and_counts_the_shapes_they_win(tmp_path):
    """QuACK and Liger rows (a copy of torch_fused's at other times) stand beside ours at each shape,
    each with its time and share of the ceiling; the counts name who was faster and where; a peer
    row that failed its check is left out, and the report renders the section, in both formats."""
    import pandas as pd

    root = tmp_path / "results"
    shutil.copytree(FIXTURE / "fake-gpu", root / "fake-gpu")
    path = root / "fake-gpu" / "summary.csv"
    df = pd.read_csv(path, keep_default_na=False)
    gelu = df[(df["kernel"] == "gelu") & (df["dtype"] == "fp32") & (df["impl_key"] == "torch_fused")]
    ours = df[(df["kernel"] == "gelu") & (df["dtype"] == "fp32") & df["backend"].isin(["triton", "cuda"])
              & (df["status"] == "ok") & (df["check_status"] == "ok")]
    ours_best = ours.assign(us=pd.to_numeric(ours["median_us"], errors="coerce")).groupby("shape")["us"].min()
    shapes = sorted(gelu["shape"], key=int)
    peers = []
    for kind, factor in (("quack", 0.5), ("liger", 2.0)):  # QuACK at half our best time, Liger at twice
        rows = gelu.copy()
        rows["impl"] = rows["backend"] = rows["impl_key"] = kind
        rows["median_us"] = [ours_best[s] * factor for s in rows["shape"]]
        rows["gbps"] = pd.to_numeric(rows["bytes"]) / rows["median_us"] / 1e3
        peers.append(rows)
    peers[0].loc[peers[0]["shape"] == shapes[0], "check_status"] = "failed"  # QuACK wrong at the smallest
    pd.concat([df, *peers]).to_csv(path, index=False)

    res = load(root, "fake-gpu")
    annotate(res)
    counts, table = _field(res)
    rows = {r["shape"]: r for r in table if (r["kernel"], r["case"]) == ("gelu", "fp32")}
    copy = json.loads((root / "fake-gpu" / "survey.json").read_text())["copy_gbps"]
    assert list(rows) == shapes
    assert rows[shapes[0]]["QuACK µs"] == "–" and rows[shapes[0]]["fastest other / ours"] != "0.50×"
    for s in shapes[1:]:
        quack = ours_best[s] * 0.5
        bytes_ = float(gelu[gelu["shape"] == s]["bytes"].iloc[0])
        assert rows[s]["fastest other / ours"] == "0.50×"
        assert rows[s]["QuACK %"] == f"{100 * bytes_ / quack / 1e3 / copy:.1f}%"
        assert rows[s]["Liger %"] == f"{100 * bytes_ / (ours_best[s] * 2.0) / 1e3 / copy:.1f}%"
    (count,) = [c for c in counts if (c["kernel"], c["case"]) == ("gelu", "fp32")]
    assert count["shapes another is faster"] == f"{len(shapes) - 1} of {len(shapes)}"
    assert count["faster there"] == f"quack ({len(shapes) - 1})"
    assert count["lowest other / ours"].startswith("0.50× at ")

    out = tmp_path / "out"
    render(root, "fake-gpu", out)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Our kernels against the field" in page and "QuACK µs" in page and "Liger %" in page
    assert "Our kernels against the field" in (out / "report.md").read_text(encoding="utf-8")


def test_ncu_bytes_are_read_against_the_byte_model():
    """A step whose counters include DRAM and L2 bytes says how they compare with the family's
    byte model; one from an older set (no such counters) says nothing of them."""
    from kernellab.report.code import ncu_table
    from kernellab.report.ladder import _ncu_text
    from kernellab.report.load import Results

    row = {"kernel": "k", "ladder": "", "impl_key": "triton", "step": "", "shape": "64x64", "dtype": "fp32",
           "status": "ok", "reason": "", "duration_us": 10.0, "dram_pct": 80.0, "sm_pct": 20.0, "tensor_pct": 0.0,
           "achieved_occupancy": 50.0, "registers": 32.0, "smem_per_block": 0.0, "l1_hit_pct": 1.0,
           "l2_hit_pct": 60.0, "l2_pct": 71.5, "dram_read_mb": 3.0, "dram_write_mb": 1.0, "model_mb": 2.0,
           "dram_vs_model": 2.0, "l2_read_mb": 9.0, "top_stalls": "", "n_kernels": 1}
    res = Results(hardware="h", path=Path("."), ncu={"k": [row]})
    text = _ncu_text(res, "k", "triton", row)
    assert "DRAM read 3.0 MB and wrote 1.0 MB (2.00x the byte model's 2.0 MB)" in text
    assert "the SMs read 9.0 MB from the L2, 71.5% busy" in text
    old = {k: v for k, v in row.items() if k not in ("dram_read_mb", "dram_write_mb", "model_mb", "dram_vs_model",
                                                      "l2_read_mb", "l2_pct")}
    assert "DRAM read" not in _ncu_text(res, "k", "triton", {**old, "dram_read_mb": math.nan})
    cells = dict(zip(ncu_table(res, "k").columns, ncu_table(res, "k").rows[0].cells, strict=True))
    assert (cells["DRAM MB read / written"], cells["DRAM / model"], cells["L2 MB read"], cells["L2 %"]) == (
        "3.0 / 1.0", "2.00", "9.0", "71.5")


def test_ncu_kernel_count_reads_back_from_a_csv_with_a_failed_row(tmp_path):
    """A failed step leaves its kernel count empty, so pandas writes the column as floats ("2.0"):
    the set still loads, the ok step's text counts its kernels, the failed one gives its reason."""
    from kernellab.engine import ncu
    from kernellab.io import write_csv
    from kernellab.report.ladder import _ncu_text
    from kernellab.report.load import load

    ok = {"kernel": "k", "ladder": "l", "impl_key": "triton@a", "step": "a", "shape": "64x64", "dtype": "fp32",
          "status": "ok", "reason": "", "duration_us": 10.0, "n_kernels": 2}
    failed = {**ok, "impl_key": "triton@b", "step": "b", "status": "error", "reason": "ncu: no kernel in range",
              "duration_us": None, "n_kernels": None}
    write_csv(tmp_path / "hw" / "ncu" / "k.csv", [ok, failed], columns=ncu.COLUMNS)
    assert "2.0" in (tmp_path / "hw" / "ncu" / "k.csv").read_text()
    res = load(tmp_path, "hw")
    rows = {r["impl_key"]: r for r in res.ncu["k"]}
    assert "over 2 kernel(s)" in _ncu_text(res, "k", "triton@a", rows["triton@a"])
    assert _ncu_text(res, "k", "triton@b", None) == "not measured (ncu: no kernel in range)"


def test_a_reference_keeps_what_its_report_reads_and_renders_against_the_others(tmp_path):
    """``kernellab.workflow.reference.make``: the data the report reads and the files the PTX indexes
    name, not the samples, traces or logs; gzip dumps become xz with the same text; the pages
    are rendered there, compared with the other reference of its kind."""
    from kernellab import io
    from kernellab.workflow.reference import kept_files, make, tracked_bytes

    results, refs = tmp_path / "results", tmp_path / "reference"
    shutil.copytree(FIXTURE / "fake-gpu", results / "gpu-a")
    shutil.copytree(FIXTURE / "fake-gpu", refs / "gpu-b")
    index = results / "gpu-a" / "ptx" / "gelu" / "index.json"
    entries = json.loads(index.read_text(encoding="utf-8"))
    sass = next(e for e in entries if "sass" in e["files"])
    text = (results / "gpu-a" / sass["files"]["sass"]).read_text(encoding="utf-8")  # named from the set
    io.write_text(index.parent / "old.sass.gz", text)
    sass["files"]["sass"] = "old.sass.gz"
    index.write_text(json.dumps(entries), encoding="utf-8")
    for junk in ("bench/gelu.samples.json.gz", "profile/gelu/x.trace.json.gz", "logs/measure/gelu.log",
                 "ptx/gelu/unnamed.ptx"):
        (results / "gpu-a" / junk).parent.mkdir(parents=True, exist_ok=True)
        (results / "gpu-a" / junk).write_text("x", encoding="utf-8")
    assert not any("samples" in p.name or "log" in p.parts[-2] for p in kept_files(results / "gpu-a"))

    dest = make(results / "gpu-a", refs, workers=1)
    kept = {str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()}
    assert {"summary.csv", "ladders.json", "ptx/gelu/index.json", "ptx/gelu/old.sass.xz", "report.md",
            "KERNEL_LOG.md", "report.html"} <= kept
    assert not {"bench/gelu.samples.json.gz", "logs/measure/gelu.log", "ptx/gelu/unnamed.ptx",
                "ptx/gelu/old.sass.gz"} & kept
    assert io.read_text(dest / "ptx/gelu/old.sass.xz") == text
    names = {f for e in json.loads((dest / "ptx/gelu/index.json").read_text()) for f in e["files"].values()}
    assert "old.sass.xz" in names and "../../../../etc/passwd" in names  # the fixture's escape: not followed
    assert all(dest.resolve() in p.resolve().parents for p in dest.rglob("*"))
    md = (dest / "report.md").read_text(encoding="utf-8")
    assert "time ratio gpu-b reference / gpu-a" in md and "gpu-a reference" not in md
    assert tracked_bytes(dest) == sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) - (
        dest / "report.html").stat().st_size


def test_a_step_files_kernels_belong_to_the_family_whose_folder_holds_it():
    from kernellab.report.code import assign_resources
    from kernellab.report.load import Results

    def row(file, kernel):
        return {"file": file, "kernel": kernel}

    res = Results(hardware="h", path=Path("."), summary=[{"kernel": "reduction"}, {"kernel": "mine"}])
    # the first fits neither the file stem nor a `<family>_` symbol
    rows = [row("reduction/cuda_reduction/atomic.cu", "store_sum_fp32(double const*, float*)"),
            row("mine/cuda_silu/vec4.cu", "void silu_vec4<float>(float const*, float*, long)"),
            row("other/other.cu", "helper()")]
    by_family, rest = assign_resources(res)
    assert by_family == {} and rest == []
    res.resources = rows
    by_family, rest = assign_resources(res)
    assert by_family == {"reduction": [rows[0]], "mine": [rows[1]]} and rest == [rows[2]]


def test_a_finding_written_after_the_set_replaces_the_one_it_recorded(tmp_path):
    """A set rendered again shows each step's finding as the checkout's ladder.yaml has it (written
    after the measurement it explains), read as data from the set's kernel folders: no family is
    imported; a step the checkout has no finding for keeps the recorded one."""
    shutil.copytree(FIXTURE / "fake-gpu", tmp_path / "fake-gpu")
    env_path = tmp_path / "fake-gpu" / "environment.json"
    env = json.loads(env_path.read_text())
    env["config"] = {**(env.get("config") or {}), "kernel_dirs": [str(tmp_path / "kernels")]}
    env_path.write_text(json.dumps(env))
    (tmp_path / "kernels" / "gelu").mkdir(parents=True)
    (tmp_path / "kernels" / "gelu" / "ladder.yaml").write_text(
        "cuda:\n- step: course\n- step: vec4\n  finding: read again after the set was measured\n")
    recorded = {s["step"]: s.get("finding", "") for ld in load(FIXTURE, "fake-gpu").ladders
                if ld["kernel"] == "gelu" for s in ld["steps"]}
    steps = {s["step"]: s["finding"] for ld in load(tmp_path, "fake-gpu").ladders
             if ld["kernel"] == "gelu" for s in ld["steps"]}
    assert steps["vec4"] == "read again after the set was measured" != recorded["vec4"]
    assert steps["course"] == recorded["course"] and steps["vec4_ilp"] == recorded["vec4_ilp"]


def test_ours_against_the_field_compares_a_backward_with_backwards_only(tmp_path):
    """A backward case is its own case in "Our kernels against the field" (and its own panel in the
    figures): ours beside the field's backward, never beside a forward. The fixture's gelu fp32 rows
    copied as backward rows, PyTorch's made 10x slower there: the forward case keeps its figures,
    and the backward case shows ours ahead with the backward's own keys."""
    import pandas as pd

    root = tmp_path / "results"
    shutil.copytree(FIXTURE / "fake-gpu", root / "fake-gpu")
    path = root / "fake-gpu" / "summary.csv"
    df = pd.read_csv(path, keep_default_na=False)
    if "pass" not in df:
        df["pass"] = "forward"
    before = _field(load_annotated(root))
    bwd = df[(df["kernel"] == "gelu") & (df["dtype"] == "fp32")].copy()
    bwd["pass"] = "backward"
    bwd["impl_key"] = bwd["impl_key"] + ".bwd"
    torch_rows = bwd["backend"].isin(["torch", "compile"]) & (bwd["median_us"] != "")
    bwd.loc[torch_rows, "median_us"] = [str(float(x) * 10) for x in bwd.loc[torch_rows, "median_us"]]
    pd.concat([df, bwd]).to_csv(path, index=False)

    counts, shapes = _field(load_annotated(root))
    forward = [r for r in counts if (r["kernel"], r["case"]) == ("gelu", "fp32")]
    backward = [r for r in counts if (r["kernel"], r["case"]) == ("gelu", "fp32, backward")]
    assert forward == [r for r in before[0] if (r["kernel"], r["case"]) == ("gelu", "fp32")]
    assert len(backward) == 1 and backward[0]["shapes another is faster"].startswith("0 of")
    rows = [r for r in shapes if r["case"] == "fp32, backward"]
    assert rows and all(r["ours"].endswith(".bwd") and r["PyTorch's best"].endswith(".bwd") for r in rows)


def test_a_set_made_before_a_ladder_was_renamed_reads_under_its_name_with_the_checkouts_findings():
    """Ladder folders follow one convention (<language>_<idea>): layer norm's hopper_rows is
    cuda_rows now. A set that recorded the old name shows the ladder under the new one, with the
    finding the checkout's ladder.yaml holds for the step."""
    from kernellab.ladder_file import ladder_texts
    from kernellab.report.load import _checkout_findings, _ladders

    raw = [{"kernel": "layer_norm", "ladder": "hopper_rows", "steps": [{"impl_key": "cuda@staged", "step": "staged",
                                                                       "order": 3, "finding": "an old reading"}]},
           {"kernel": "softmax", "ladder": "softmax", "steps": [{"impl_key": "triton@online", "step": "online"}]}]
    got = _ladders(raw, [])
    assert [(ld["kernel"], ld["ladder"]) for ld in got] == [("layer_norm", "cuda_rows"), ("softmax", "triton_rows")]
    _checkout_findings(got, {}, [])
    want = ladder_texts(FIXTURE.parents[2] / "kernels" / "layer_norm")[("cuda_rows", "staged")]["finding"]
    assert want and got[0]["steps"][0]["finding"] == want

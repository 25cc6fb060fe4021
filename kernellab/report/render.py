"""Writing the pages: report.html, report.md, KERNEL_LOG.md and plots/*.png."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import jinja2
from markupsafe import Markup

from kernellab.io import write_bytes, write_text
from kernellab.report import analysis
from kernellab.report.fmt import Md, md_code_block, md_escape
from kernellab.report.ladder import analyse_all
from kernellab.report.load import load
from kernellab.report.model import annotate
from kernellab.report.tables import md_table
from kernellab.report.timeline import section as timeline_section
from kernellab.report.views import Image

REPORT_DIR = Path(__file__).resolve().parents[2] / "report"
TEMPLATES = REPORT_DIR / "templates"
CSS = REPORT_DIR / "report.css"
KERNEL_LOG = "KERNEL_LOG.md"


def reference_label(name: str) -> str:
    """How the report names a reference set: the user's own H200 set and the H200 reference
    share the slug."""
    return f"{name} reference"


def _loader() -> jinja2.BaseLoader:
    return jinja2.FileSystemLoader(str(TEMPLATES))


def html_env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=_loader(),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def md_env() -> jinja2.Environment:
    """Markdown: every printed value goes through md_escape unless it is an Md."""
    env = jinja2.Environment(
        loader=_loader(),
        autoescape=False,
        finalize=md_escape,
        trim_blocks=False,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["raw"] = lambda s: Md(str(s))
    env.filters["code"] = lambda s, lang="": md_code_block(str(s), lang)
    env.globals["md_table"] = md_table
    return env


def _css() -> Markup:
    css = CSS.read_text(encoding="utf-8") if CSS.is_file() else ""
    if "</" in css:  # our own file, but a stray "</style>" would end the element
        raise ValueError(f"{CSS} must not contain '</'")
    return Markup(css)


def _write(path: Path, content: str | bytes) -> Path:
    """Write a page or a figure atomically (kernellab.io): a reader never sees half of one."""
    if isinstance(content, bytes):
        write_bytes(path, content)
    else:
        write_text(path, content)
    return path


def _add_tidy(out: list[str], line: str) -> None:
    """Append ``line`` without its trailing spaces, unless it makes a second blank line in a row."""
    line = line.rstrip()
    if line or not out or out[-1]:
        out.append(line)


def _tidy(text: str) -> str:
    """No trailing spaces, at most one blank line in a row, one final newline."""
    out: list[str] = []
    for line in text.split("\n"):
        _add_tidy(out, line)
    return "\n".join(out).strip("\n") + "\n"


def _tidy_html(text: str) -> str:
    """_tidy outside <pre> elements; their content stays verbatim."""
    parts = re.split(r"(<pre\b[\s\S]*?</pre>)", text)
    out = "".join(
        p if p.startswith("<pre") else _tidy(p).rstrip("\n") + ("\n" if i < len(parts) - 1 else "")
        for i, p in enumerate(parts)
    )
    return out.strip("\n") + "\n"


def _tidy_md(text: str) -> str:
    """_tidy, but leaves fenced code blocks verbatim (blank lines in them are content)."""
    out: list[str] = []
    fence = ""
    for line in text.split("\n"):
        stripped = line.strip()
        if fence:
            out.append(line)
            if stripped == fence:
                fence = ""
            continue
        if stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            out.append(line.rstrip())
            continue
        _add_tidy(out, line)
    return "\n".join(out).strip("\n") + "\n"


def kernel_log(results_dir: Path) -> str:
    """KERNEL_LOG.md for one hardware's results directory (``results/<hardware>``)."""
    results_dir = Path(results_dir)
    res = load(results_dir.parent, results_dir.name)
    annotate(res)
    ladders = analyse_all(res)
    env = res.environment
    text = (
        md_env()
        .get_template("kernel_log.md.j2")
        .render(
            hardware=res.hardware,
            device_name=str(res.survey.get("device_name") or env.get("gpu_name") or ""),
            run_id=str(env.get("run_id") or "–"),
            is_cpu=res.is_cpu,
            ladders=ladders,
        )
    )
    return _tidy_md(text)


def render(
    results_root: Path,
    hardware: str,
    out_dir: Path,
    others: Sequence[Path] = (),
    references: Sequence[Path] = (),
    workers: int | None = None,
) -> dict[str, Path]:
    """Render ``results_root/hardware`` into ``out_dir`` (which may be that directory).

    Writes report.html (self-contained), report.md (with plots/*.png beside it),
    KERNEL_LOG.md and plots/*.png. ``others`` and ``references``: the directories of the
    sets to compare with, named by their folder (a reference as "<name> reference"); the
    set's own ``compare/*.csv`` is shown too. Nothing else is read: the pages depend on the
    set, the sets named here and the code. Returns {relative name: path} of every file
    written. PNGs in out_dir/plots that this rendering did not produce are removed, so the
    folder always matches the pages. ``workers``: processes drawing the figures (default: the
    cores this process may use); the bytes are the same whatever the number.
    """
    results_root, out_dir = Path(results_root), Path(out_dir)
    res = load(results_root, hardware)
    here = res.path.resolve()
    other_res = [load(p.parent, p.name) for p in map(Path, others) if p.resolve() != here]
    for p in map(Path, references):
        if p.resolve() != here:
            ref = load(p.parent, p.name)
            ref.hardware = reference_label(p.name)
            other_res.append(ref)
    view = analysis.build(res, other_res, workers or len(os.sched_getaffinity(0)))

    images: list[Image] = []
    if view.roofline:
        images.append(view.roofline)
    for k in view.kernels:
        images.extend(k.images)
    for c in view.comparisons:
        images.extend(img for img in (c.image, c.ceilings) if img)
    spent = timeline_section(res.path, res.hardware)  # None for a set without timeline.csv
    if spent and spent.image:
        images.append(spent.image)

    written: dict[str, Path] = {}
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    names = set()
    for img in sorted(images, key=lambda i: i.name):
        if img.name in names:
            raise ValueError(f"two plots named {img.name!r}")
        names.add(img.name)
        written[img.file] = _write(out_dir / img.file, img.data)
    for stale in sorted(plots_dir.glob("*.png")):
        if stale.stem not in names:
            stale.unlink()

    html = html_env().get_template("report.html.j2").render(v=view, t=spent, css=_css(), kernel_log=KERNEL_LOG)
    written["report.html"] = _write(out_dir / "report.html", _tidy_html(html))
    # report.md is a summary page that reads on GitHub; each kernel's detail is a page beside it
    md = md_env().get_template("report.md.j2").render(v=view, t=spent, kernel_log=KERNEL_LOG)
    written["report.md"] = _write(out_dir / "report.md", _tidy_md(md))
    page = md_env().get_template("report_kernel.md.j2")
    for k in view.kernels:
        written[k.md_page] = _write(out_dir / k.md_page, _tidy_md(page.render(v=view, k=k, kernel_log=KERNEL_LOG)))
    for stale in out_dir.glob("report-*.md"):
        if stale.name not in written:
            stale.unlink()
    written[KERNEL_LOG] = _write(out_dir / KERNEL_LOG, kernel_log(results_root / hardware))
    return dict(sorted(written.items()))

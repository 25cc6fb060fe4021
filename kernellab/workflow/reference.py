"""Reference sets: the project's own result set of each GPU model (and of the CPU), in reference/.

A reference is a set the pipeline published, cut to what its report, its KERNEL_LOG and a
comparison read, plus the Markdown pages and figures a reader of the repository sees without
running anything. What a command makes again from what is kept stays out: report.html (rendered
by ``python -m kernellab.report``), the raw samples, the profiler traces and the logs.

    python -m kernellab.workflow.reference results/nvidia-h200        # -> reference/nvidia-h200/
    python -m kernellab.workflow.reference --check reference/*         # pages as today's code renders them?
    python -m kernellab.workflow.reference --render reference/*        # render them again, in place

``--render`` is the maintainers' deliberate step after a change to the report: it rewrites a
reference's committed pages from its kept data. ``python -m kernellab.report`` never writes there.

Every run's report compares its set with the references of its kind (a GPU set with the GPU
references, a CPU set with the CPU one): config ``compare.references``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path("reference")
# the checkout's own references, wherever the command runs from
CHECKOUT_ROOT = Path(__file__).resolve().parents[2] / "reference"
# the data the report reads (kernellab.report.load), as globs under a set
DATA = (
    "summary.csv",
    "timeline.csv",  # the run's own time: the report's "where the time went"
    "ladders.json",
    "environment.json",
    "survey.json",
    "build/resources.csv",
    "check/*.csv",
    "bench/*.csv",
    "autotune/*.csv",
    "profile/*.csv",
    "ncu/*.csv",
    "compare/*.csv",
    "ptx/*/index.json",  # and the PTX and SASS files each index names
)


def is_cpu_set(name: str) -> bool:
    return name.startswith("cpu-")


def sets_in(root: Path) -> list[Path]:
    """The result sets directly under ``root`` (folders holding a summary.csv), by name."""
    root = Path(root)
    return sorted(p for p in root.glob("*") if (p / "summary.csv").is_file()) if root.is_dir() else []


def of_kind(set_name: str, root: Path) -> list[Path]:
    """The references under ``root`` that a set named ``set_name`` is compared with: those of its
    kind (a CPU set against a GPU one would say only SLOWER), its own model's included."""
    return [p for p in sets_in(root) if is_cpu_set(p.name) == is_cpu_set(set_name)]


def is_reference(set_dir: Path, root: Path | None = None) -> bool:
    """Whether ``set_dir`` is one of the checkout's references (or of ``root``'s): a folder whose
    committed pages only ``--render`` rewrites."""
    roots = {CHECKOUT_ROOT.resolve(), *((Path(root).resolve(),) if root else ())}
    return Path(set_dir).resolve().parent in roots


def _index_entries(index: Path) -> list[dict]:
    entries = json.loads(index.read_text(encoding="utf-8"))
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _named(set_dir: Path, index: Path, rel: str) -> Path | None:
    """The file an index entry names: beside the index, or (older sets) under the set; never one
    outside the set."""
    root = set_dir.resolve()
    found = (p for p in (index.parent / rel, set_dir / rel) if p.is_file() and root in p.resolve().parents)
    return next(found, None)


def kept_files(set_dir: Path) -> list[Path]:
    set_dir = Path(set_dir)
    kept = {p for pattern in DATA for p in set_dir.glob(pattern) if p.is_file()}
    for index in set_dir.glob("ptx/*/index.json"):
        for e in _index_entries(index):
            kept |= {p for rel in (e.get("files") or {}).values() if (p := _named(set_dir, index, rel))}
    return sorted(kept)


def _xz_dumps(dest: Path) -> None:
    """PTX and SASS dumps of sets made before they were written as .xz, recompressed (same text,
    a third of gzip's bytes on SASS), with their index naming the new files."""
    from kernellab.io import read_text, write_json, write_text

    for index in sorted(dest.glob("ptx/*/index.json")):
        entries = _index_entries(index)
        for e in entries:
            files = e.get("files") or {}
            for kind, rel in sorted(files.items()):
                old = _named(dest, index, rel)
                if rel.endswith(".gz") and old:
                    write_text(old.with_suffix(".xz"), read_text(old))
                    old.unlink()
                    files[kind] = rel[: -len(".gz")] + ".xz"
        write_json(index, entries)


def make(set_dir: Path, root: Path = ROOT, workers: int | None = None) -> Path:
    """Copy the kept files of the published set ``set_dir`` to ``root/<name>/`` (replaced whole)
    and render its pages there, compared with the other references of its kind."""
    set_dir, root = Path(set_dir), Path(root)
    if not (set_dir / "summary.csv").is_file():
        raise FileNotFoundError(f"{set_dir} holds no summary.csv: not a published result set")
    dest = root / set_dir.name
    new = root / f".{set_dir.name}.new"
    shutil.rmtree(new, ignore_errors=True)
    for f in kept_files(set_dir):
        out = new / f.relative_to(set_dir)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, out)
    _xz_dumps(new)
    old = root / f".{set_dir.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        os.replace(dest, old)
    os.replace(new, dest)
    shutil.rmtree(old, ignore_errors=True)
    render_pages(dest, dest, workers)
    return dest


def render_pages(ref: Path, out: Path, workers: int | None = None) -> dict[str, Path]:
    """Render the reference ``ref``'s pages into ``out`` (``ref`` itself: in place), compared with
    the other references beside it."""
    from kernellab.report.render import render

    ref = Path(ref)
    return render(ref.parent, ref.name, out, references=of_kind(ref.name, ref.parent), workers=workers)


def stale_pages(ref: Path, workers: int | None = None) -> list[str]:
    """The committed pages of the reference ``ref`` that differ from what this checkout's code
    renders from its kept data (missing, changed, or no longer rendered), by name."""
    ref = Path(ref)
    with tempfile.TemporaryDirectory(prefix=f"kernellab-{ref.name}-") as tmp:
        fresh = {k: p.read_bytes() for k, p in render_pages(ref, Path(tmp), workers).items() if k != "report.html"}
    kept = {str(p.relative_to(ref)) for pattern in ("report*.md", "KERNEL_LOG.md", "plots/*.png")
            for p in ref.glob(pattern)}
    changed = [k for k, data in fresh.items() if not (ref / k).is_file() or (ref / k).read_bytes() != data]
    return sorted(changed + [k for k in kept if k not in fresh])


def tracked_bytes(set_dir: Path) -> int:
    """The bytes of a reference's files that the repository keeps (report.html is ignored)."""
    files = (p for p in Path(set_dir).rglob("*") if p.is_file() and p.name != "report.html")
    return sum(p.stat().st_size for p in files)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernellab.workflow.reference", description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="+", type=Path, help="published result sets, e.g. results/nvidia-h200")
    ap.add_argument("--root", type=Path, default=ROOT, help="the folder of the reference sets (reference/)")
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--render", action="store_true",
                      help="the sets are references: render their committed pages again, in place, from their "
                           "kept data (after a change to the report)")
    what.add_argument("--check", action="store_true",
                      help="the sets are references: list the committed pages that today's code renders "
                           "differently (exit status 1 if any)")
    args = ap.parse_args(argv)
    if args.render or args.check:
        missing = [str(s) for s in args.sets if not (s / "summary.csv").is_file()]
        if missing:
            ap.error(f"not a result set (no summary.csv): {', '.join(missing)}")
        stale = 0
        for s in args.sets:
            if args.render:
                print(f"{s}: {len(render_pages(s, s))} pages rendered again in place")
                continue
            names = stale_pages(s)
            stale += bool(names)
            print(f"{s}: " + (f"{len(names)} page(s) differ from today's rendering: {', '.join(names)}"
                              if names else "as today's code renders it"))
        return 1 if stale else 0
    for s in args.sets:
        dest = make(s, args.root)
        print(f"{s} -> {dest}: {tracked_bytes(dest) / 1e6:.1f} MB kept (report.html is not tracked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

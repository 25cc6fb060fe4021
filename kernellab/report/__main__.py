"""Render result sets again with this checkout's report code, no GPU needed:

    python -m kernellab.report results/cpu-x86_64 reference/nvidia-h200

Each set's report.html, report.md, KERNEL_LOG.md and plots/ are rendered from the set's own data
files (summary.csv, ladders.json, survey.json, ncu/, autotune/, ...), compared with the reference
sets of its kind (``--references``) and with the sets ``--with`` names. A set of yours is rendered
in its own folder; a reference of the checkout into results/reference/<set>/, so that reading one
leaves the checkout as it was (``python -m kernellab.workflow.reference --render`` rewrites a
reference's committed pages). ``--out DIR`` puts every set's pages in DIR/<set>/. Nothing measured
changes, and nothing but those sets is read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernellab.report.render import reference_label, render
from kernellab.workflow import reference

SCREENSHOT_HEIGHT = 1600
REFERENCE_PAGES = Path("results") / "reference"  # where a reference's pages go, read not committed


def out_dir(set_dir: Path, out: Path | None, references: Path | None) -> Path:
    """Where the pages of ``set_dir`` go: ``out/<set>``, else a reference's under
    ``REFERENCE_PAGES``, else the set's own folder."""
    if out is not None:
        return out / set_dir.name
    return REFERENCE_PAGES / set_dir.name if reference.is_reference(set_dir, references) else set_dir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernellab.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="+", type=Path, help="result set folders, e.g. results/nvidia-h200")
    ap.add_argument("--references", default=str(reference.ROOT),
                    help="the folder of the reference sets (default: reference); '' for none")
    ap.add_argument("--out", type=Path, metavar="DIR",
                    help=f"write each set's pages to DIR/<set>/ (default: the set's own folder; a reference's: "
                         f"{REFERENCE_PAGES}/<set>/)")
    ap.add_argument("--with", dest="also", nargs="*", type=Path, default=[], help="also compare with these sets")
    ap.add_argument("--screenshot", type=Path, metavar="PNG",
                    help="also write the top of the (last) set's report.html, 1280 px wide, here "
                         "(the README's picture: reference/cpu-x86_64 --screenshot docs/report-screenshot.png)")
    args = ap.parse_args(argv)
    missing = [str(s) for s in [*args.sets, *args.also] if not (s / "summary.csv").is_file()]
    if missing:
        ap.error(f"not a result set (no summary.csv): {', '.join(missing)}")
    root = Path(args.references) if args.references else None
    dests = {s: out_dir(s, args.out, root) for s in args.sets}
    onto = [str(d) for d in dests.values() if reference.is_reference(d, root)]
    if onto:
        ap.error(f"would write into the references ({', '.join(onto)}): to render their committed pages again, "
                 "run python -m kernellab.workflow.reference --render")
    for s, dest in dests.items():
        refs = reference.of_kind(s.name, root) if root else []
        written = render(s.parent, s.name, dest, others=args.also, references=refs)
        names = [reference_label(p.name) for p in refs if p.resolve() != s.resolve()] + [p.name for p in args.also]
        print(f"{s}: {len(written)} files written to {dest}/, compared with {', '.join(names) or 'no other set'}")
    if args.screenshot:
        from kernellab.report.browser import screenshot

        screenshot(written["report.html"], args.screenshot, width=1280, max_height=SCREENSHOT_HEIGHT)
        print(f"{args.screenshot}: the top {SCREENSHOT_HEIGHT} px of {written['report.html']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

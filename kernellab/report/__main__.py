"""Render result sets again with this checkout's report code, no GPU needed:

    python -m kernellab.report reference/nvidia-h200 results/cpu-x86_64

Each set's report.html, report.md, KERNEL_LOG.md and plots/ are rewritten in place from the
set's own data files (summary.csv, ladders.json, survey.json, ncu/, autotune/, ...), compared
with the reference sets of its kind (``--references``) and with the sets ``--with`` names.
Nothing measured changes, and nothing but those sets is read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernellab.report.render import reference_label, render
from kernellab.workflow import reference

SCREENSHOT_HEIGHT = 1600


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernellab.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="+", type=Path, help="result set folders, e.g. results/nvidia-h200")
    ap.add_argument("--references", default=str(reference.ROOT),
                    help="the folder of the reference sets (default: reference); '' for none")
    ap.add_argument("--with", dest="also", nargs="*", type=Path, default=[], help="also compare with these sets")
    ap.add_argument("--screenshot", type=Path, metavar="PNG",
                    help="also write the top of the (last) set's report.html, 1280 px wide, here "
                         "(the README's picture: reference/cpu-x86_64 --screenshot docs/report-screenshot.png)")
    args = ap.parse_args(argv)
    missing = [str(s) for s in [*args.sets, *args.also] if not (s / "summary.csv").is_file()]
    if missing:
        ap.error(f"not a result set (no summary.csv): {', '.join(missing)}")
    for s in args.sets:
        refs = reference.of_kind(s.name, Path(args.references)) if args.references else []
        written = render(s.parent, s.name, s, others=args.also, references=refs)
        names = [reference_label(p.name) for p in refs if p.resolve() != s.resolve()] + [p.name for p in args.also]
        print(f"{s}: {len(written)} files written, compared with {', '.join(names) or 'no other set'}")
    if args.screenshot:
        from kernellab.report.browser import screenshot

        screenshot(written["report.html"], args.screenshot, width=1280, max_height=SCREENSHOT_HEIGHT)
        print(f"{args.screenshot}: the top {SCREENSHOT_HEIGHT} px of {written['report.html']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

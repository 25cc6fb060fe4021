"""Render published result sets again with this checkout's report code, no GPU needed:

    python -m kernellab.report results nvidia-h200 nvidia-h100-80gb-hbm3

Each set's report.html, report.md, KERNEL_LOG.md and plots/ are rewritten in place from the
set's own data files (summary.csv, ladders.json, survey.json, ncu/, autotune/, ...), compared
with the sets beside it as the pipeline's report rule chooses them (GPU with GPU, CPU with
CPU). Nothing measured changes. The pipeline renders a set before it is published, when the
other machine's set may not exist yet: this is how two sets measured apart meet in one report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernellab.compare import chosen_others
from kernellab.report.render import render


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernellab.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="the folder holding the result sets (results/)")
    ap.add_argument("sets", nargs="+", help="result sets to render again, e.g. nvidia-h200")
    ap.add_argument("--with", dest="also", nargs="*", default=[], help="also compare with these sets")
    args = ap.parse_args(argv)
    available = sorted(p.name for p in args.results.glob("*") if (p / "summary.csv").is_file())
    missing = [s for s in args.sets if s not in available]
    if missing:
        ap.error(f"no result set {', '.join(missing)} under {args.results} (found: {', '.join(available) or 'none'})")
    for name in args.sets:
        others = chosen_others(name, available, args.also)
        written = render(args.results, name, args.results / name, others=others)
        print(f"{name}: {len(written)} files written, compared with {', '.join(others) or 'no other set'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

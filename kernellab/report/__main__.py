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

from kernellab import reference
from kernellab.report.render import reference_label, render


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernellab.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="+", type=Path, help="result set folders, e.g. results/nvidia-h200")
    ap.add_argument("--references", default=str(reference.ROOT),
                    help="the folder of the reference sets (default: reference); '' for none")
    ap.add_argument("--with", dest="also", nargs="*", type=Path, default=[], help="also compare with these sets")
    args = ap.parse_args(argv)
    missing = [str(s) for s in [*args.sets, *args.also] if not (s / "summary.csv").is_file()]
    if missing:
        ap.error(f"not a result set (no summary.csv): {', '.join(missing)}")
    for s in args.sets:
        refs = reference.of_kind(s.name, Path(args.references)) if args.references else []
        written = render(s.parent, s.name, s, others=args.also, references=refs)
        names = [reference_label(p.name) for p in refs if p.resolve() != s.resolve()] + [p.name for p in args.also]
        print(f"{s}: {len(written)} files written, compared with {', '.join(names) or 'no other set'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One digest standing for the many source files a job runs.

A job's code (its family's folder, the kernellab modules its script imports) is some 35 files.
Their digest is one of the job's params: a change to any of them changes it, and Snakemake
reruns the job (its params trigger), without the job listing the files or the workflow writing
anything while it is parsed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def digest(files) -> str:
    """sha256 over the files' names and contents, in sorted order."""
    h = hashlib.sha256()
    for f in sorted(map(str, files)):
        h.update(f.encode() + b"\0")
        h.update(Path(f).read_bytes())
        h.update(b"\0")
    return h.hexdigest()

"""One small file standing for many source files in a rule's inputs.

A job that lists its family's folder and the harness as inputs prints some 35 paths in every
job block. A stamp file holds the hash of those files and is rewritten only when it changes,
so a job lists one path, and a change to any of the files still makes it newer than the job's
outputs: the job reruns, exactly as if the files were listed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from kernellab.io import write_text


def digest(files) -> str:
    """sha256 over the files' names and contents, in sorted order."""
    h = hashlib.sha256()
    for f in sorted(map(str, files)):
        h.update(f.encode() + b"\0")
        h.update(Path(f).read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def stamp(path: str | Path, files) -> str:
    """Write ``path`` with the files' digest (and their list) unless it already holds it;
    return the path."""
    path = Path(path)
    files = sorted(map(str, files))
    text = digest(files) + "\n" + "\n".join(files) + "\n"
    if not path.exists() or path.read_text() != text:
        write_text(path, text)
    return str(path)

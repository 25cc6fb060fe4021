"""Atomic result files: everything is written to a temporary name, then renamed.

A run killed half-way leaves either the old file or the new one, never half of one,
so Snakemake's rerun-incomplete and our own readers only ever see whole files.
"""

from __future__ import annotations

import gzip
import json
import lzma
import math
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; rename it over ``path`` on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results are read by others (0644)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# compressed text by suffix: PTX and SASS dumps are .xz (2-3x smaller than gzip on SASS, which
# matters for the reference sets the repository keeps), older sets and traces .gz
_OPENERS = {".gz": gzip.open, ".xz": lzma.open}


def write_text(path, text: str) -> None:
    """Write ``text``; compressed when the name ends in .gz or .xz."""
    with atomic_path(path) as tmp:
        suffix = Path(path).suffix
        if suffix == ".gz":
            tmp.write_bytes(gzip.compress(text.encode(), mtime=0))
        elif suffix == ".xz":
            tmp.write_bytes(lzma.compress(text.encode()))
        else:
            tmp.write_text(text, encoding="utf-8", newline="\n")  # the same bytes on every platform


def read_text(path, max_bytes: int | None = None) -> str:
    """The text of a file written by ``write_text`` (decompressed when .gz or .xz), at most
    ``max_bytes`` bytes of it."""
    path = Path(path)
    opener = _OPENERS.get(path.suffix, open)
    with opener(path, "rb") as fh:
        raw = fh.read() if max_bytes is None else fh.read(max_bytes)
    return raw.decode("utf-8", errors="replace")


def write_bytes(path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def _clean(obj):
    """JSON has no NaN: write null instead."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def write_json(path, obj, gz: bool = False) -> None:
    text = json.dumps(_clean(obj), indent=None if gz else 2, sort_keys=True) + "\n"
    if gz:
        # mtime=0 keeps the bytes reproducible
        write_bytes(path, gzip.compress(text.encode(), compresslevel=6, mtime=0))
    else:
        write_text(path, text)


def read_json(path):
    path = Path(path)
    if path.suffix == ".gz":
        return json.loads(gzip.decompress(path.read_bytes()))
    return json.loads(path.read_text())


def write_csv(path, rows, columns: list[str] | None = None) -> None:
    import pandas as pd

    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows), columns=columns)
    if columns is not None:
        df = df.reindex(columns=columns)
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)

"""One run at a time per staging folder: a lock that belongs to the run's process.

Two runs in one checkout write the same staging files and remove each other's. Snakemake's own
lock is a file that a killed run leaves behind (the next run then refuses to start until
``--unlock``), so the profile turns it off (``nolock``). This lock is an ``flock`` on an open file
instead: the kernel releases it when the process ends, however it ends (SIGKILL included), so
rerunning the same command after a crash still simply resumes.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

NAME = "run.lock"

# the open lock file of this process: kept open (never closed) for the life of the process
_held: dict[str, int] = {}


class RunLocked(RuntimeError):
    """Another process holds the run lock of the staging folder."""


def _holder(fd: int) -> str:
    """The pid the holder wrote into the lock file ('' until it has written it)."""
    for _ in range(20):  # the holder writes its pid just after taking the lock
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode(errors="replace").strip()
        if text:
            return text
        time.sleep(0.05)
    return ""


def acquire(staging: str | os.PathLike) -> Path:
    """Take the run lock of ``staging`` (``<staging>/run.lock``, holding this process's pid)
    for the rest of this process's life; raise RunLocked naming the holder's pid if another
    process has it. Taking it again in the same process does nothing. Returns the lock file."""
    path = Path(staging, NAME).resolve()
    if str(path) in _held:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # not truncated on open: the holder's pid stays readable by the run that is refused
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _holder(fd)
        os.close(fd)
        who = f"pid {pid}" if pid else "another process"
        raise RunLocked(
            f"Another run is using {path.parent} ({who}, lock {path}): wait for it to end or stop it"
            f"{f' (kill {pid})' if pid else ''}, then run the same command again to resume."
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    _held[str(path)] = fd
    return path

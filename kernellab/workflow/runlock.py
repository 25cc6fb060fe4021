"""One run at a time per staging folder: a lock that belongs to the run's process.

Two runs in one checkout write the same staging files and remove each other's. Snakemake's own
lock is a file that a killed run leaves behind (the next run then refuses to start until
``--unlock``), so the profile turns it off (``nolock``). This lock is an ``flock`` on an open file
instead: the kernel releases it when the process ends, however it ends (SIGKILL included), so
rerunning the same command after a crash still simply resumes.

Each job holds a lock of its own (``hold_job``, keyed by its log file) the same way, and its
forked workers inherit it: a job of an earlier run that still runs (an orphan of a killed run
on a system without ``PR_SET_PDEATHSIG``, or one still dying) keeps its rerun from starting a
second job on the same family and files.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
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


def _lock(path: Path) -> tuple[int, str | None]:
    """Open ``path`` and try its flock: (fd, None) when taken (the fd holds it, this pid written
    in), (-1, the holder's pid or '') when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # not truncated on open: the holder's pid stays readable by the process that is refused
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _holder(fd)
        os.close(fd)
        return -1, pid
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd, None


def acquire(staging: str | os.PathLike) -> Path:
    """Take the run lock of ``staging`` (``<staging>/run.lock``, holding this process's pid)
    for the rest of this process's life; raise RunLocked naming the holder's pid if another
    process has it. Taking it again in the same process does nothing. Returns the lock file."""
    path = Path(staging, NAME).resolve()
    if str(path) in _held:
        return path
    fd, pid = _lock(path)
    if fd < 0:
        who = f"pid {pid}" if pid else "another process"
        raise RunLocked(
            f"Another run is using {path.parent} ({who}, lock {path}): wait for it to end or stop it"
            f"{f' (kill {pid})' if pid else ''}, then run the same command again to resume."
        )
    _held[str(path)] = fd
    return path


def job_lock_path(key: str | os.PathLike) -> Path:
    """Where the lock of the job whose log is ``key`` lives: outside the result sets (never
    published), one file per job of this user."""
    digest = hashlib.sha256(str(Path(key).resolve()).encode()).hexdigest()[:24]
    return Path(tempfile.gettempdir(), f"kernellab-{os.getuid()}", "jobs", f"{digest}.lock")


def hold_job(key: str | os.PathLike, wait_s: float = 30.0) -> Path:
    """Take the lock of the job whose log file is ``key`` for the rest of this process's life
    (its forked workers inherit it, so it is free only once they are all gone too). An earlier
    job of the same key still running gets ``wait_s`` seconds to end (a killed run's job is
    being killed with it), then RunLocked names it."""
    path = job_lock_path(key)
    if str(path) in _held:
        return path
    deadline = time.monotonic() + wait_s
    while True:
        fd, pid = _lock(path)
        if fd >= 0:
            _held[str(path)] = fd
            return path
        if time.monotonic() >= deadline:
            who = f"pid {pid}" if pid else "another process"
            raise RunLocked(
                f"A job of an earlier run still runs on {key} ({who}): stop it"
                f"{f' (kill {pid})' if pid else ''}, then run the same command again to resume."
            )
        time.sleep(0.2)

"""Ctrl-C of a run, in Snakemake's process: the running jobs stop at once and the terminal gets
one line.

A Ctrl-C in a terminal reaches every process of the run; ``kill -INT <snakemake's pid>`` reaches
Snakemake only, which then waits for its running jobs to finish (a measure job: minutes). So the
first SIGINT is passed on to every process under Snakemake (each job ends on its first one and
ignores the second, ``pipeline.interrupt_once``; what the finished jobs made is kept, and the
rerun resumes). Snakemake then reports each interrupted job as a failed one (a RuleException
with the CalledProcessError, the path of the job's temporary script, its exit status 130): after
an interruption its terminal handlers drop those records, its log file keeps them.
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

_state = {"interrupted": False}


def interrupted() -> bool:
    """Whether this process got a Ctrl-C (SIGINT) since ``install``."""
    return _state["interrupted"]


def descendants(pid: int, proc: str | os.PathLike = "/proc") -> list[int]:
    """The pids of every process under ``pid`` (children, theirs, ...), read from /proc (Linux;
    [] elsewhere)."""
    children: dict[int, list[int]] = {}
    for stat in Path(proc).glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended meanwhile
            continue
        fields = text.rsplit(")", 1)[-1].split()  # the name, in parentheses, may hold spaces
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _on_sigint(signum, frame):
    first = not _state["interrupted"]
    _state["interrupted"] = True
    if first:
        for pid in descendants(os.getpid()):
            try:
                os.kill(pid, signal.SIGINT)
            except OSError:  # ended meanwhile
                pass
    raise KeyboardInterrupt


class _AfterInterrupt(logging.Filter):
    """Drops, once the run is interrupted, what Snakemake says of the jobs it stopped: the
    interruption is the run's one line (the Snakefile's onerror)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _state["interrupted"]:
            return "non-zero exit status 130" not in _message(record)
        return record.levelno < logging.WARNING and not _message(record).startswith("Terminating processes")


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # noqa: BLE001 - a record whose message cannot be formatted is no interruption
        return ""


def install(logger) -> None:
    """In Snakemake's main process (the Snakefile's onstart): Ctrl-C passed on to the jobs, and
    Snakemake's reports of the stopped jobs kept off the terminal (its log file keeps them)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # an ignored SIGINT stays so
        signal.signal(signal.SIGINT, _on_sigint)
    for handler in logger.handlers:
        if not isinstance(handler, logging.FileHandler):
            handler.addFilter(_AfterInterrupt())

"""Where a job's time goes, phase by phase (tuning, checking, timing, compiling): rows of the run's
timeline (``kernellab.workflow.timeline``), kept in a list of this process.

Recording a phase is two clock reads and an append, made around whole phases, never inside a
timed region, so no measured number changes. A forked worker records into its own copy of the
list; ``unsent`` hands the parent what the worker recorded itself (its records travel the
worker's pipe like every other record) and the parent ``add``\\ s them to its own.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

_recorded: list[dict] = []
_sent = 0  # how many of _recorded ``unsent`` has handed out


def _dynamo_seconds() -> float:
    """Seconds torch.compile has spent compiling in this process (Dynamo's own count; 0 where it
    has not been imported: nothing is imported for this)."""
    utils = sys.modules.get("torch._dynamo.utils")
    metrics = getattr(utils, "compilation_time_metrics", None) or {}
    return float(sum(metrics.get("_compile.compile_inner") or ()))


@contextlib.contextmanager
def phase(name: str, impl: str = ""):
    """Record the wall time of the block as phase ``name`` (of implementation ``impl``), whether
    it ends or raises; torch.compile's compiling inside it as a ``torch.compile`` phase of its
    own, drawn from the block's start (Dynamo counts seconds, not when they were spent)."""
    start, compiled = time.time(), _dynamo_seconds()
    try:
        yield
    finally:
        end, pid = time.time(), os.getpid()
        compiled = _dynamo_seconds() - compiled
        if compiled > 0:
            _recorded.append({"phase": "torch.compile", "impl": impl, "start": start,
                              "end": min(end, start + compiled), "pid": pid})
        _recorded.append({"phase": name, "impl": impl, "start": start, "end": end, "pid": pid})


def timed(name: str, impl: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, recorded as phase ``name``."""
    with phase(name, impl):
        return fn(*args, **kwargs)


def add(rows) -> None:
    """Phases recorded by another process (a worker's ``unsent``), kept with this process's."""
    pid = os.getpid()
    # without isolation the "worker" is this process: its phases are here already
    _recorded.extend(r for r in rows if r.get("pid") != pid)


def unsent() -> list[dict]:
    """The phases this process recorded itself since the last call (not those a fork inherited)."""
    global _sent
    pid = os.getpid()
    new = [r for r in _recorded[_sent:] if r["pid"] == pid]
    _sent = len(_recorded)
    return new


def recorded() -> list[dict]:
    """Every phase of this process so far, in the order they ended."""
    return [{k: v for k, v in r.items() if k != "pid"} for r in _recorded]


def clear() -> None:
    global _sent
    _recorded.clear()
    _sent = 0

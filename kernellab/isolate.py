"""Run one implementation's cases in a forked child, so that nothing it does (a crash,
a hang, an illegal address that poisons the CUDA context, running out of memory)
takes the other implementations' results down.

The parent never initialises CUDA (``runtime.setup`` makes ``torch.cuda.is_available``
use NVML), so each child gets a fresh CUDA context. The child streams one record per
finished case back through a pipe: a child killed at case k still leaves cases 1..k-1.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import time
import traceback
from typing import Callable, Hashable, Iterator

_DONE = "__done__"
log = logging.getLogger("kernellab")


def _child(conn, work: Callable[[], Iterator[dict]]) -> None:
    try:
        for record in work():
            conn.send(record)
        conn.send(_DONE)
    except BaseException as exc:  # noqa: BLE001 - report anything to the parent
        tb = traceback.format_exc(limit=3)
        conn.send({"__crash__": f"{type(exc).__name__}: {exc}", "traceback": tb})
    finally:
        conn.close()


def run(work: Callable[[], Iterator[dict]], timeout_s: float, isolate: bool = True,
        label: str = "", progress: Callable[[object], None] | None = None) -> tuple[list[dict], str]:
    """Collect the records ``work()`` yields. Returns (records, problem) where problem is
    '' when the child finished, else what went wrong (timeout, crash, death). With a
    ``label``, the rule's log gets one line: records, wall time and any problem.
    ``progress`` is called with each record as it arrives, and with None about once a
    second while the worker is busy (for progress lines)."""
    t0 = time.perf_counter()
    records, problem = _run(work, timeout_s, isolate, progress)
    if label:
        log.info("%s: %d records in %.1f s%s", label, len(records), time.perf_counter() - t0,
                 f" ({problem})" if problem else "")
    return records, problem


def _run(work: Callable[[], Iterator[dict]], timeout_s: float, isolate: bool,
         progress: Callable[[object], None] | None = None) -> tuple[list[dict], str]:
    progress = progress or (lambda record: None)
    if not isolate:
        records = []
        try:
            for r in work():
                records.append(r)
                progress(r)
        except Exception as exc:  # noqa: BLE001
            return records, f"error: {type(exc).__name__}: {exc}"
        return records, ""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, work), daemon=True)
    proc.start()
    child.close()
    records: list[dict] = []
    deadline = time.monotonic() + timeout_s
    problem = ""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            problem = f"timeout: no result within {timeout_s:g} s"
            proc.kill()
            break
        if parent.poll(min(left, 1.0)):
            try:
                msg = parent.recv()
            except EOFError:
                proc.join(5)
                problem = f"error: worker process died (exit code {proc.exitcode})"
                break
            if msg == _DONE:
                break
            if isinstance(msg, dict) and "__crash__" in msg:
                problem = f"error: {msg['__crash__']}"
                break
            records.append(msg)
            progress(msg)
        elif not proc.is_alive():
            # drain what it sent before dying
            while parent.poll(0):
                try:
                    msg = parent.recv()
                except EOFError:
                    break
                if isinstance(msg, dict) and msg is not _DONE and "__crash__" not in msg:
                    records.append(msg)
            problem = f"error: worker process died (exit code {proc.exitcode})"
            break
        else:
            progress(None)
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join(5)
    parent.close()
    return records, problem


def run_batch(works: list[tuple[Hashable, Callable[[], Iterator[dict]]]], timeout_s: float, isolate: bool = True,
              label: str = "") -> dict[Hashable, tuple[list[dict], str]]:
    """Run several works in one child, one after the other, to pay a process's start-up
    (CUDA context, profiler) once: ``{name: (records, problem)}`` as ``run`` gives.

    ``timeout_s`` holds for each work. When the child dies or hangs, the work it was
    running gets the problem and the works not started yet run in a new child, so one
    bad work costs only itself."""
    results: dict[Hashable, tuple[list[dict], str]] = {}
    pending = list(works)
    while pending:
        def batch(pending=tuple(pending)):
            for name, work in pending:
                yield {"__begin__": name}
                try:
                    for record in work():
                        yield {"__of__": name, "record": record}
                except Exception as exc:  # noqa: BLE001 - recorded for this work
                    if "CUDA error" in str(exc):
                        raise  # the context may be poisoned: the rest get a fresh child
                    yield {"__end__": name, "problem": f"error: {type(exc).__name__}: {exc}"}
                    continue
                yield {"__end__": name, "problem": ""}

        t0 = time.perf_counter()
        records, problem = _run(batch, timeout_s * len(pending), isolate)
        current, done = None, set()
        for msg in records:
            if "__begin__" in msg:
                current = msg["__begin__"]
                results[current] = ([], "")
            elif "__end__" in msg:
                done.add(msg["__end__"])
                results[msg["__end__"]] = (results[msg["__end__"]][0], msg["problem"])
            else:
                results[msg["__of__"]][0].append(msg["record"])
        if label:
            log.info("%s: %d works in %.1f s%s", label, len(done), time.perf_counter() - t0,
                     f" ({problem})" if problem else "")
        if current is not None and current not in done:
            results[current] = (results[current][0], problem or "error: stopped without finishing")
            done.add(current)
        elif problem and not done:  # died before starting any work: give up on the rest
            for name, _ in pending:
                results[name] = ([], problem)
            break
        pending = [(n, w) for n, w in pending if n not in done]
    return results

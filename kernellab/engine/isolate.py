"""Run one implementation's cases in a forked child, so that nothing it does (a crash,
a hang, an illegal address that poisons the CUDA context, running out of memory)
takes the other implementations' results down.

The parent never initialises CUDA (``runtime.setup`` makes ``torch.cuda.is_available``
use NVML), so each child gets a fresh CUDA context. The child streams one record per
finished case back through a pipe: a child killed at case k still leaves cases 1..k-1.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing as mp
import multiprocessing.connection
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable, Iterator

_DONE = "__done__"
_READY = "__ready__"  # a prepared child waits for its turn
log = logging.getLogger("kernellab")


_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when its parent ``parent`` ends, however it ends
    (SIGKILL included): a killed run's job, or a killed job's worker, must not live on as an
    orphan that still writes the run's files (Linux; elsewhere nothing). ``parent``: the pid
    the parent had when it started this process; a parent gone already ends this one now."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: nothing to ask for
        return
    if os.getppid() != parent:  # it ended before the request above: nothing will signal us
        os._exit(1)


def orphaned(parent: int, init_cmdline: Path = Path("/proc/1/cmdline")) -> bool:
    """Whether a job whose parent pid is ``parent`` lost its run before it started: re-parented to
    pid 1, unless pid 1 is the run itself (Snakemake as a container's first process, where every
    job's parent is pid 1)."""
    if parent != 1:
        return False
    try:
        return b"snakemake" not in init_cmdline.read_bytes()
    except OSError:
        return True


def _child(conn, work: Callable[[], Iterator[dict]], prepare: Callable[[], None] | None = None,
           go=None, cpus: set[int] | None = None, parent: int = 0) -> None:
    try:
        if parent:
            die_with_parent(parent)
        if prepare is not None:
            everywhere = os.sched_getaffinity(0)
            if cpus:
                os.sched_setaffinity(0, cpus)
            try:
                prepare()
            except Exception as exc:  # noqa: BLE001 - the work does the same itself and reports it
                log.debug("preparation failed: %s: %s", type(exc).__name__, exc)
            conn.send(_READY)
            go.wait()
            os.sched_setaffinity(0, everywhere)
        for record in work():
            conn.send(record)
        conn.send(_DONE)
    except BaseException as exc:  # noqa: BLE001 - report anything to the parent
        tb = traceback.format_exc()
        log.error("worker stopped: %s: %s\n%s", type(exc).__name__, exc, tb)  # the whole traceback: the job's log
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
    return _collect(_Child.start(work), timeout_s, progress)


class _Child:
    """A forked worker and the end of its pipe; with a preparation, it prepares at once and
    runs its work when ``go`` is set."""

    def __init__(self, proc, conn, go=None):
        self.proc, self.conn, self.go = proc, conn, go
        self.ready = go is None
        self.since = time.monotonic()
        self.early: list = []  # what it sent instead of ready (a crash while preparing)

    @classmethod
    def start(cls, work, prepare=None, cpus=None) -> _Child:
        ctx = mp.get_context("fork")
        parent, child = ctx.Pipe(duplex=False)
        go = ctx.Event() if prepare is not None else None
        proc = ctx.Process(target=_child, args=(child, work, prepare, go, cpus, os.getpid()), daemon=True)
        proc.start()
        child.close()
        return cls(proc, parent, go)

    def poll_ready(self) -> bool:
        """Whether it has prepared (or died trying: its turn then reports that)."""
        if not self.ready:
            try:
                if self.conn.poll(0):
                    msg = self.conn.recv()
                    if msg != _READY:
                        self.early.append(msg)
                    self.ready = True
            except EOFError:
                self.ready = True
            if not self.proc.is_alive():
                self.ready = True
        return self.ready

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()


def _collect(c: _Child, timeout_s: float, progress: Callable[[object], None]) -> tuple[list[dict], str]:
    try:
        return _collect_from(c, timeout_s, progress)
    except BaseException:
        c.kill()  # Ctrl-C (or any error here): the worker stops now, not when it has finished
        raise


def _collect_from(c: _Child, timeout_s: float, progress: Callable[[object], None]) -> tuple[list[dict], str]:
    if c.go is not None:
        c.go.set()
    proc, parent = c.proc, c.conn
    records: list[dict] = []
    deadline = time.monotonic() + timeout_s
    problem = next((f"error: {m['__crash__']}" for m in c.early if isinstance(m, dict) and "__crash__" in m), "")
    while not problem:
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
            if msg == _READY:
                continue
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
                if isinstance(msg, dict) and "__crash__" not in msg:
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


def _spare_cpus() -> set[int]:
    """The cores a preparation may use: every one this process may, but the first (left to the
    work that has the GPU); the only one where there is one."""
    cpus = sorted(os.sched_getaffinity(0))
    return set(cpus[1:]) or set(cpus)


@dataclass
class Work:
    """One worker's job for ``run_in_turn``: ``run`` yields its records; ``prepare``, if
    any, is work for the CPU only (compiling), which must launch nothing on the GPU."""

    run: Callable[[], Iterator[dict]]
    prepare: Callable[[], None] | None = None
    label: str = ""
    progress: Callable[[object], None] | None = None


def run_in_turn(works: list[Work], timeout_s: float, isolate: bool = True,
                ahead: int = 0) -> Iterator[tuple[int, list[dict], str]]:
    """Run the works one at a time, each in its own child as ``run`` does, yielding
    ``(index, records, problem)`` as each finishes.

    With ``ahead`` > 0, up to that many works with a ``prepare`` start early: each
    prepares on every core but the first (left to the work running) while earlier works
    have the GPU, then waits. The next turn goes to the first work, in list order, that
    needs no preparation or has finished it, so the GPU does not wait on a compiler while
    a work behind it could run. A preparation is only a head start: without ``ahead``
    (or ``isolate``) works skip it and compile as they run."""
    if not isolate or ahead <= 0:
        for i, w in enumerate(works):
            yield (i, *run(w.run, timeout_s, isolate, w.label, w.progress))
        return
    spare = _spare_cpus()
    pending = list(range(len(works)))
    started: dict[int, _Child] = {}
    try:
        while pending:
            preparing = [i for i in started if not started[i].ready]
            for i in pending:
                if len(preparing) >= ahead:
                    break
                if works[i].prepare is not None and i not in started:
                    started[i] = _Child.start(works[i].run, works[i].prepare, spare)
                    preparing.append(i)
            turn = next((i for i in pending if works[i].prepare is None
                         or (i in started and (started[i].poll_ready()
                                               or time.monotonic() - started[i].since > timeout_s))), None)
            if turn is None:  # every work left is still preparing
                multiprocessing.connection.wait([started[i].conn for i in pending if i in started], timeout=1.0)
                continue
            w = works[turn]
            t0 = time.perf_counter()
            child = started.pop(turn, None) or _Child.start(w.run)
            records, problem = _collect(child, timeout_s, w.progress or (lambda record: None))
            if w.label:
                log.info("%s: %d records in %.1f s%s", w.label, len(records), time.perf_counter() - t0,
                         f" ({problem})" if problem else "")
            pending.remove(turn)
            yield turn, records, problem
    finally:
        for c in started.values():
            c.kill()


def run_batch(works: list[tuple[Hashable, Callable[[], Iterator[dict]]]], timeout_s: float, isolate: bool = True,
              label: str = "") -> dict[Hashable, tuple[list[dict], str]]:
    """Run several works in one child, one after the other, to pay a process's start-up
    (CUDA context, profiler) once: ``{name: (records, problem)}`` as ``run`` gives.

    ``timeout_s`` holds for each work. When the child dies or hangs, the work it was
    running gets the problem and the works not started yet run in a new child, so one
    bad work costs only itself."""
    return Batch(works, timeout_s, isolate, label).results()


class Batch:
    """``run_batch``'s works; with a ``prepare`` (CPU work that launches nothing on the GPU, as
    ``Work.prepare``), the child starts at once and prepares on every core but the first while
    the caller goes on, and runs the works when ``results`` is called. A child that crashes gets
    a fresh one, unprepared, for the works after the one it was running."""

    def __init__(self, works: list[tuple[Hashable, Callable[[], Iterator[dict]]]], timeout_s: float,
                 isolate: bool = True, label: str = "", prepare: Callable[[], None] | None = None):
        self.works, self.timeout_s, self.isolate, self.label = list(works), timeout_s, isolate, label
        self._prepared: _Child | None = None
        if prepare is not None and isolate and self.works:
            self._prepared = _Child.start(self._batch(tuple(self.works)), prepare, _spare_cpus())

    @staticmethod
    def _batch(pending: tuple):
        def batch():
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

        return batch

    def _run(self, pending: list) -> tuple[list[dict], str]:
        timeout_s = self.timeout_s * len(pending)
        child, self._prepared = self._prepared, None
        if child is not None:
            return _collect(child, timeout_s, lambda record: None)
        return _run(self._batch(tuple(pending)), timeout_s, self.isolate)

    def close(self) -> None:
        """Stop a prepared child whose works will not run (the caller failed first)."""
        if self._prepared is not None:
            self._prepared.kill()
            self._prepared = None

    def results(self) -> dict[Hashable, tuple[list[dict], str]]:
        results: dict[Hashable, tuple[list[dict], str]] = {}
        pending = list(self.works)
        while pending:
            t0 = time.perf_counter()
            records, problem = self._run(pending)
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
            if self.label:
                log.info("%s: %d works in %.1f s%s", self.label, len(done), time.perf_counter() - t0,
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


def _star(fn: Callable, args: tuple):
    return fn(*args)


def forked_map(fn: Callable, calls: list[tuple], workers: int) -> list:
    """``[fn(*args) for args in calls]``, spread over up to ``workers`` forked processes (CPU
    work: compiling, drawing); in this process when one worker or one call is all there is.
    ``fn`` is a module-level function; the results come back in the order of ``calls``, and
    an exception in a call is raised here."""
    workers = max(1, min(workers, len(calls)))
    if workers == 1:
        return [fn(*args) for args in calls]
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"),
                               initializer=die_with_parent, initargs=(os.getpid(),))
    try:
        return list(pool.map(_star, [fn] * len(calls), calls))
    except BaseException:
        # Ctrl-C (or a call's error): the tasks still running stop now; shutdown alone waits for them
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

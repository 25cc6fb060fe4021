"""Correctness checks and benchmarks of one kernel family, case by case.

Each implementation runs in its own forked worker (``kernellab.engine.isolate``); inside it
each case is guarded, so one failure is recorded with its status and reason and every
other case still runs:

- ``unavailable``: the implementation cannot run here (no GPU for CUDA, no build);
- ``failed``: it ran but its output is wrong (or, in the bench, its check failed);
- ``oom``: the case does not fit in memory (estimated up front, or caught);
- ``error``: it raised, or its worker crashed;
- ``timeout``: its worker did not finish within the configured time.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import time
from typing import Iterator

from kernellab.engine import backward, isolate, phases, runtime
from kernellab.engine.calls import case_call
from kernellab.engine.cases import Case, KernelPlan, shape_str
from kernellab.engine.progress import ImplWork, Progress
from kernellab.engine.registry import Family, Impl
from kernellab.engine.timing import TimingConfig, measure
from kernellab.errors import BuildError, Unavailable

log = logging.getLogger("kernellab")
CHECK_COLUMNS = ["kernel", "impl", "impl_key", "pass", "step", "backend", "shape", "dtype", "params", "seed",
                 "status", "reason", "rel_err", "max_abs", "tol"]


# ------------------------------------------------------------------ helpers
def _float64(x):
    import torch

    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(torch.float64)
    return x


def memory_estimate(family: Family, case: Case, check: bool) -> int:
    """Bytes a case needs: its inputs and output, plus float64 copies when checking, plus the
    implementation's own workspace where it declares one (``Impl.workspace``)."""
    from kernellab.engine.runtime import element_size

    moved = family.case_bytes(_pass_of(family, case), case.shape, case.dtype, **case.param_dict)
    impl = family.impls.get(case.impl_key)
    extra = int(impl.workspace(case.shape, case.dtype, **case.param_dict)) if impl and impl.workspace else 0
    if not check:
        return int(moved * 1.1) + extra
    return int(moved * (1 + 8 / element_size(case.dtype)) * 1.2) + extra


def _pass_of(family: Family, case: Case) -> str:
    impl = family.impls.get(case.impl_key)
    return impl.pass_ if impl is not None else "forward"


def memory_available(device: str) -> int:
    if device == "cuda":
        import torch

        free, _total = torch.cuda.mem_get_info()
        return int(free)
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def _status_of(exc: BaseException, folder=None) -> tuple[str, str]:
    """(status, reason) of an exception a case raised: its type, the first line of its message and
    where it was raised (``where_raised``); for a Triton error, the message it wraps and the kernel's
    line at fault (``triton_errors.triton_site``), not the launch's."""
    import torch

    from kernellab.engine.triton_errors import triton_site

    if isinstance(exc, Unavailable):
        return "unavailable", str(exc)
    if isinstance(exc, BuildError):  # nvcc's file:line is the place, not where the op was looked up
        return "error", str(exc)
    text = str(exc).strip()
    msg = f"{type(exc).__name__}: {text.splitlines()[0][:240] if text else ''}".rstrip(": ")
    site = triton_site(exc)
    if site is not None:
        msg, where = site[0][:240], _site_name(site[1], site[2], folder)
    else:
        where = where_raised(exc, folder)
    msg += f" (at {where})" if where else ""
    if isinstance(exc, torch.OutOfMemoryError) or "out of memory" in text.lower():
        return "oom", msg
    return "error", msg


def where_raised(exc: BaseException, folder=None) -> str:
    """``file:line`` of the deepest traceback frame inside the family's ``folder`` (the user's own
    code), the file named from the folder above it (``mine/__init__.py:12``); with no such frame,
    the deepest frame of all, named from the repository where it lies in it ('' without one)."""
    import traceback
    from pathlib import Path

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    mine = Path(folder).resolve() if folder is not None else None
    own = [f for f in frames if mine is not None and Path(f.filename).resolve().is_relative_to(mine)]
    frame = own[-1] if own else frames[-1]
    return _site_name(frame.filename, frame.lineno, folder)


def _site_name(filename, line: int, folder=None) -> str:
    """``file:line``, the file named from the folder above the family's ``folder`` where it lies in
    it (``mine/__init__.py:12``), else from the repository where it lies in it, else absolute."""
    from pathlib import Path

    from kernellab.engine.registry import ROOT

    path = Path(filename).resolve()
    folder = Path(folder).resolve() if folder is not None else None
    base = folder.parent if folder is not None and path.is_relative_to(folder) else ROOT
    name = path.relative_to(base) if path.is_relative_to(base) else path
    return f"{name}:{line}"


def _log_exception(seen: set, impl: Impl, case: Case, reason: str, exc: BaseException) -> None:
    """The full traceback to the job's log, once per implementation and reason (a case's seeds and
    the benchmark raise the same)."""
    if reason in seen:
        return
    seen.add(reason)
    log.error("%s %s %s %s: %s", case.kernel, impl.key, shape_str(case.shape), case.dtype, reason, exc_info=exc)


def _base(family: Family, impl: Impl, case: Case) -> dict:
    params = case.param_dict
    return {
        **case.labels(),
        "bytes": family.case_bytes(impl.pass_, case.shape, case.dtype, **params),
        "flops": family.case_flops(impl.pass_, case.shape, case.dtype, **params),
        "impl": impl.impl,
        "pass": impl.pass_,
        "step": impl.step,
        "backend": impl.backend,
        "ladder": impl.ladder_name,
    }


def _empty_cache(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()


# ------------------------------------------------------------------ check
def check_against_reference(out, ref, dtype: str, tol: float | None = None, floor: float = 0.0) -> dict:
    """Relative-norm and max-abs error of ``out`` against the float64 ``ref``: the error's
    norm over max(the reference's norm, ``floor``); ``tol`` defaults to the dtype's."""
    import torch

    tol = runtime.TOLERANCE[dtype] if tol is None else tol
    if tuple(out.shape) != tuple(ref.shape):
        return {"status": "failed", "reason": f"output shape {tuple(out.shape)} != expected {tuple(ref.shape)}",
                "rel_err": math.nan, "max_abs": math.nan, "tol": tol}
    out64 = out.to(torch.float64)
    ref64 = ref.to(device=out64.device, dtype=torch.float64)
    bad = ~torch.isfinite(out64) & torch.isfinite(ref64)
    if bool(bad.any()):
        n_bad = int(bad.sum())
        first = int(bad.flatten().nonzero()[0])
        return {"status": "failed",
                "reason": f"{n_bad} non-finite output elements (first at flat index {first}): unwritten or overflow",
                "rel_err": math.inf, "max_abs": math.inf, "tol": tol}
    diff = out64 - ref64
    norm = max(float(torch.linalg.vector_norm(ref64)), floor)
    rel = float(torch.linalg.vector_norm(diff)) / (norm if norm > 0 else 1.0)
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    ok = rel <= tol
    return {"status": "ok" if ok else "failed",
            "reason": "" if ok else f"relative error {rel:.3g} above the {dtype} tolerance {tol:g}",
            "rel_err": rel, "max_abs": max_abs, "tol": tol}


def out_contract(family: Family, impl: Impl, result, out) -> str:
    """'' where ``result`` keeps the out contract (a tensor of ``out``'s shape and dtype: ``out``
    itself, filled and returned, or a new one), else what broke it, naming the implementation and
    where it is defined (a forgotten ``return out`` gives None)."""
    import torch

    if isinstance(result, torch.Tensor):
        if tuple(result.shape) == tuple(out.shape) and result.dtype == out.dtype:
            return ""
        got = f"a tensor of shape {tuple(result.shape)} and dtype {result.dtype}"
    else:
        got = "None" if result is None else f"a {type(result).__name__}"
    where = _defined_at(impl.fn, family.folder)
    return (f"{family.name} {impl.key} returned {got}: an implementation fills `out` and returns it (`return out`), "
            f"or returns a new tensor, of out_like's shape {tuple(out.shape)} and dtype {out.dtype}"
            + (f" (at {where})" if where else ""))


def _defined_at(fn, folder) -> str:
    """``file:line`` where ``fn`` is defined in the family's ``folder``, named from the folder above
    it (``mine/__init__.py:12``); '' for a function defined elsewhere (an adapter, a CUDA op)."""
    from pathlib import Path

    code = getattr(fn, "__code__", None)
    if code is None or folder is None:
        return ""
    path, folder = Path(code.co_filename).resolve(), Path(folder).resolve()
    return f"{path.relative_to(folder.parent)}:{code.co_firstlineno}" if path.is_relative_to(folder) else ""


def run_case_check(family: Family, impl: Impl, case: Case, seed: int, device: str) -> dict:
    import torch

    params = case.param_dict
    made = case_call(family, impl, case, device, seed)
    if impl.backward:  # several outputs, each against autograd's float64 gradient
        return backward.run_check(family, impl, case, made, check_against_reference, _contract_error(case))
    inputs, out = made.inputs, made.out
    if out.is_floating_point():
        out.fill_(math.nan)  # poison: an element the implementation does not write fails
    with runtime.matmul_precision(case.dtype):
        result = made.call()
    runtime.synchronize()
    broken = out_contract(family, impl, result, out)
    if broken:
        return _contract_error(case)(broken)
    if family.validate is not None:
        verdict = family.validate(result, inputs, dtype=case.dtype, **params)
        return {"status": "ok" if verdict["ok"] else "failed", "reason": verdict.get("reason", ""),
                "rel_err": verdict.get("rel_err", math.nan), "max_abs": verdict.get("max_abs", math.nan),
                "tol": verdict.get("tol", runtime.TOLERANCE[case.dtype])}
    with torch.no_grad():
        inputs64 = [_float64(x) for x in inputs]
        ref = family.reference(*inputs64, **params)
        floor = float(family.error_floor(*inputs64, **params)) if family.error_floor is not None else 0.0
    tol = family.tolerance(case.shape, case.dtype) if family.tolerance is not None else None
    return check_against_reference(result, ref, case.dtype, tol, floor)


def _contract_error(case: Case):
    def row(reason: str) -> dict:
        return {"status": "error", "reason": reason, "rel_err": math.nan, "max_abs": math.nan,
                "tol": runtime.TOLERANCE.get(case.dtype, math.nan)}

    return row


def check_impl(family: Family, impl: Impl, cases: list[Case], seeds: list[int], device: str,
               tuned_shapes: frozenset | None = None) -> Iterator[dict]:
    """Check every case with every seed. Autotuned Triton kernels tune only the shapes in
    ``tuned_shapes`` (the benchmarked ones; None: all) and run their first config on the
    others (``launch.untuned``)."""
    from kernellab.engine.launch import untuned

    logged: set = set()
    for case in cases:
        base = _base(family, impl, case)
        need = memory_estimate(family, case, check=True)
        have = memory_available(device)
        if need > have:
            for seed in seeds:
                yield {**base, "seed": seed, "status": "oom", "tol": math.nan,
                       "reason": f"needs about {_gib(need)}, {_gib(have)} free: skipped"}
            continue
        tuning = tuned_shapes is None or case.shape in tuned_shapes
        for seed in seeds:
            try:
                with contextlib.nullcontext() if tuning else untuned():
                    row = run_case_check(family, impl, case, seed, device)
            except Exception as exc:  # noqa: BLE001 - recorded, then the next case runs
                status, reason = _status_of(exc, family.folder)
                if status != "unavailable":
                    _log_exception(logged, impl, case, reason, exc)
                row = {"status": status, "reason": reason, "rel_err": math.nan, "max_abs": math.nan,
                       "tol": runtime.TOLERANCE.get(case.dtype, math.nan)}
                _empty_cache(device)
            yield {**base, "seed": seed, **row}
            if row["status"] == "unavailable":
                break


# ------------------------------------------------------------------ bench
def run_case_bench(family: Family, impl: Impl, case: Case, cfg: TimingConfig, device: str) -> tuple[dict, list]:
    made = case_call(family, impl, case, device)
    call, reset = made.call, made.reset
    with runtime.matmul_precision(case.dtype):
        timing = measure(call, cfg, device, before_sample=reset)
    rec = timing.record()
    rec["reason"] = "; ".join(x for x in (timing.note, timing.graph_note) if x)
    return rec, timing.samples_us


def bench_impl(family: Family, impl: Impl, cases: list[Case], cfg: TimingConfig, device: str) -> Iterator[dict]:
    logged: set = set()
    for case in cases:
        base = {**_base(family, impl, case), "mode": cfg.mode}
        need = memory_estimate(family, case, check=False)
        have = memory_available(device)
        if need > have:
            yield {**base, "status": "oom", "reason": f"needs about {_gib(need)}, {_gib(have)} free: skipped"}
            continue
        t0 = time.perf_counter()
        try:
            rec, samples = run_case_bench(family, impl, case, cfg, device)
            yield {**base, **rec, "status": "ok", "samples_us": samples,
                   "wall_s": time.perf_counter() - t0}
        except Exception as exc:  # noqa: BLE001
            status, reason = _status_of(exc, family.folder)
            if status != "unavailable":
                _log_exception(logged, impl, case, reason, exc)
            yield {**base, "status": status, "reason": reason}
            _empty_cache(device)
            if status == "unavailable":
                # the same reason holds for every other case: record them without trying
                for rest in cases[cases.index(case) + 1:]:
                    yield {**_base(family, impl, rest), "mode": cfg.mode, "status": status, "reason": reason}
                return


# ------------------------------------------------------------------ per family
def measure_impl(family: Family, impl: Impl, check_cases: list[Case], bench_cases: list[Case], seeds: list[int],
                 cfg: TimingConfig | None, device: str, tune: tuple | None = None) -> Iterator[tuple[str, dict]]:
    """Autotuning (``tune``: cases, timing config and compile threads of
    ``autotune.autotune_impl``), the checks, then the benchmark of one implementation in
    one process, so that what it compiles (torch.compile graphs, Triton kernels and their
    autotuning) is compiled once: ``("autotune" | "check" | "bench", row)`` records."""
    if tune is not None:
        from kernellab.engine.autotune import autotune_impl

        yield from _phased("tune", impl.key, "autotune", ({**row, "impl": impl.impl, "step": impl.step} for row in
                                                           autotune_impl(family, impl, *tune[:2], device, tune[2])))
    tuned = frozenset(c.shape for c in bench_cases)
    yield from _phased("check", impl.key, "check", check_impl(family, impl, check_cases, seeds, device, tuned))
    _empty_cache(device)
    if cfg is not None:
        yield from _phased("bench", impl.key, "bench", bench_impl(family, impl, bench_cases, cfg, device))


def _phased(name: str, key: str, kind: str, rows: Iterator[dict]) -> Iterator[tuple[str, dict]]:
    """``(kind, row)`` of each row, timed as phase ``name`` of the run's timeline, then the
    phases this worker recorded (``("phase", row)``: the job keeps them)."""
    with phases.phase(name, key):
        for row in rows:
            yield kind, row
    for p in phases.unsent():
        yield "phase", p


def _fill_missing(records: list[dict], problem: str, family: Family, impl: Impl, cases: list[Case],
                  extra: dict) -> list[dict]:
    """The records, plus one row with the worker's problem (timeout, crash) for every case
    it did not reach."""
    if not problem:
        return records
    status = "timeout" if problem.startswith("timeout") else "error"
    reason = problem.split(": ", 1)[1] if ": " in problem else problem
    done = {(r["shape"], r["dtype"], r["params"]) for r in records}
    missing = [c for c in cases if (c.labels()["shape"], c.dtype, c.labels()["params"]) not in done]
    return records + [{**_base(family, impl, c), **extra, "status": status, "reason": reason} for c in missing]


# backends that need a CUDA GPU: without one their cases are unavailable at once
GPU_ONLY = ("cuda", "liger", "quack", "fa4")


def impl_works(family: Family, plan: KernelPlan, device: str, seeds: list[int] | None, tune: bool = True
               ) -> dict[str, ImplWork]:
    """Each implementation's records in a measure job, for the progress estimate."""
    works = {}
    for key in plan.impl_keys(family):
        impl = family.impls[key]
        bench = plan.cases(family, impl)
        tunes = 0
        if tune and impl.backend == "triton" and impl.triton_kernels:
            configs = sum(len(getattr(k, "configs", None) or [1]) for k in impl.triton_kernels)
            tuned = bench
            if device != "cuda":  # the interpreter tunes on the smallest shape (measure_family)
                smallest = min(plan.shapes, key=lambda s: (math.prod(s), s)) if plan.shapes else None
                tuned = [c for c in bench if c.shape == smallest]
            tunes = configs * len(tuned)
        works[key] = ImplWork(checks=len(plan.cases(family, impl, for_check=True)) * len(seeds or []),
                              benches=len(bench), tunes=tunes, dtypes=len({c.dtype for c in bench}) or 1,
                              backend=impl.backend, runs_here=device == "cuda" or impl.backend not in GPU_ONLY,
                              interpreted=device != "cuda" and impl.backend == "triton")
    return works


def measure_family(family: Family, plan: KernelPlan, device: str, timeout_s: float, isolate_workers: bool = True,
                   seeds: list[int] | None = None, cfg: TimingConfig | None = None,
                   tune_cfg: TimingConfig | None = None, compile_workers: int = 1, ahead: int = 0,
                   run_left=None) -> tuple[list[dict], list[dict], list[dict]]:
    """(check rows, bench rows, autotune rows) of every implementation of the plan, each
    implementation in its own worker (``measure_impl``). No ``seeds``: no checks; no
    ``cfg``: no benchmark; no ``tune_cfg``: no autotuning (else every autotuned Triton
    implementation is tuned on its benchmark shapes first; under the interpreter, which
    runs every program in Python, on the smallest shape per dtype). ``timeout_s`` holds
    for each implementation's worker. ``ahead``: how many workers may compile ahead of
    their turn (``kernellab.engine.prepare``, ``isolate.run_in_turn``); the rows come in the
    plan's order whatever order the workers ran in."""
    from kernellab.engine.prepare import preparation

    keys = plan.impl_keys(family)
    # the cases of each implementation as summary.csv counts them: its benchmark cases
    sizes = {k: len(plan.cases(family, family.impls[k])) for k in keys}
    progress = Progress(family.name, sum(sizes.values()),
                        works=impl_works(family, plan, device, seeds, tune_cfg is not None),
                        run_left=run_left)
    works, plans = [], []
    for key in keys:
        impl = family.impls[key]
        check_cases = plan.cases(family, impl, for_check=True) if seeds else []
        bench_cases = plan.cases(family, impl)
        tune = None
        if tune_cfg is not None and impl.backend == "triton" and impl.triton_kernels:
            tune_cases = bench_cases
            if runtime.triton_interpreted():
                smallest = min(plan.shapes, key=lambda s: (math.prod(s), s))
                tune_cases = [c for c in bench_cases if c.shape == smallest]
            tune = (tune_cases, tune_cfg, compile_workers)
        work = functools.partial(measure_impl, family, impl, check_cases, bench_cases, seeds or [], cfg, device,
                                 tune)
        rows = [0]  # bench rows of this implementation so far

        def running(record, key=key, rows=rows):
            if record is not None and record[0] in ("check", "bench", "autotune"):
                rows[0] += record[0] == "bench"
                progress.case(key, record[1], record[0])
            progress.running(key, rows[0])

        bench_shapes = {b.shape for b in bench_cases}
        untuned = [c for c in check_cases if c.shape not in bench_shapes]
        prepare = preparation(family, impl, bench_cases, untuned, device, compile_workers) if ahead else None
        prepare = prepare and functools.partial(phases.timed, "compile ahead", key, prepare)
        works.append(isolate.Work(work, prepare, label=f"{family.name} {impl.key}", progress=running))
        plans.append((key, impl, check_cases, bench_cases, tune))
    got_all: dict[int, tuple[list, str]] = {}
    for i, records, problem in isolate.run_in_turn(works, timeout_s, isolate_workers, ahead):
        got_all[i] = (records, problem)
        progress.done(plans[i][0], sizes[plans[i][0]], problem)
    checks, benches, tunes = [], [], []
    for i, (key, impl, check_cases, bench_cases, tune) in enumerate(plans):
        records, problem = got_all[i]
        got = {"autotune": [], "check": [], "bench": [], "phase": []}
        for kind, row in records:
            got[kind].append(row)
        phases.add(got["phase"])
        tunes += got["autotune"]
        if problem and tune is not None and not got["check"]:  # it stopped while tuning
            tunes.append({"kernel": family.name, "impl_key": key, "impl": impl.impl, "step": impl.step,
                          "status": "error", "reason": problem})
        checks += _fill_missing(got["check"], problem, family, impl, check_cases, {"seed": seeds[0] if seeds else 0})
        if cfg is not None:
            benches += _fill_missing(got["bench"], problem, family, impl, bench_cases, {"mode": cfg.mode})
    return checks, benches, tunes


__all__ = ["CHECK_COLUMNS", "check_against_reference", "measure_family", "shape_str"]

"""Correctness checks and benchmarks of one kernel family, case by case.

Each implementation runs in its own forked worker (``kernellab.isolate``); inside it
each case is guarded, so one failure is recorded with its status and reason and every
other case still runs:

- ``unavailable``: the implementation cannot run here (no GPU for CUDA, no build);
- ``failed``: it ran but its output is wrong (or, in the bench, its check failed);
- ``oom``: the case does not fit in memory (estimated up front, or caught);
- ``error``: it raised, or its worker crashed;
- ``timeout``: its worker did not finish within the configured time.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Iterator

from kernellab import isolate, runtime
from kernellab.cases import Case, KernelPlan, shape_str
from kernellab.errors import Unavailable
from kernellab.registry import Family, Impl
from kernellab.timing import TimingConfig, measure

CHECK_COLUMNS = ["kernel", "impl", "impl_key", "step", "backend", "shape", "dtype", "params", "seed",
                 "status", "reason", "rel_err", "max_abs", "tol"]


# ------------------------------------------------------------------ helpers
def _float64(x):
    import torch

    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(torch.float64)
    return x


def memory_estimate(family: Family, case: Case, check: bool) -> int:
    """Bytes a case needs: its inputs and output, plus float64 copies when checking."""
    from kernellab.runtime import element_size

    moved = family.bytes_moved(case.shape, case.dtype, **case.param_dict)
    if not check:
        return int(moved * 1.1)
    return int(moved * (1 + 8 / element_size(case.dtype)) * 1.2)


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


def _status_of(exc: BaseException) -> tuple[str, str]:
    import torch

    msg = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
    if isinstance(exc, Unavailable):
        return "unavailable", str(exc)
    if isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower():
        return "oom", msg
    return "error", msg


def _base(family: Family, impl: Impl, case: Case) -> dict:
    params = case.param_dict
    return {
        **case.labels(),
        "bytes": int(family.bytes_moved(case.shape, case.dtype, **params)),
        "flops": int(family.flops(case.shape, case.dtype, **params)),
        "impl": impl.impl,
        "step": impl.step,
        "backend": impl.backend,
        "ladder": impl.ladder_name,
    }


def _empty_cache(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()


# ------------------------------------------------------------------ check
def compare(out, ref, dtype: str, tol: float | None = None) -> dict:
    """Relative-norm and max-abs error of ``out`` against the float64 ``ref``; ``tol``
    defaults to the dtype's tolerance."""
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
    norm = float(torch.linalg.vector_norm(ref64))
    rel = float(torch.linalg.vector_norm(diff)) / (norm if norm > 0 else 1.0)
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    ok = rel <= tol
    return {"status": "ok" if ok else "failed",
            "reason": "" if ok else f"relative error {rel:.3g} above the {dtype} tolerance {tol:g}",
            "rel_err": rel, "max_abs": max_abs, "tol": tol}


def run_case_check(family: Family, impl: Impl, case: Case, seed: int, device: str) -> dict:
    import torch

    params = case.param_dict
    inputs = family.make_inputs(case.shape, case.dtype, device, seed, **params)
    out = family.out_like(*inputs, **params)
    if out.is_floating_point():
        out.fill_(math.nan)  # poison: an element the implementation does not write fails
    with runtime.matmul_precision(case.dtype):
        result = impl.fn(out, *inputs, **params)
    runtime.synchronize()
    if family.validate is not None:
        verdict = family.validate(result, inputs, dtype=case.dtype, **params)
        return {"status": "ok" if verdict["ok"] else "failed", "reason": verdict.get("reason", ""),
                "rel_err": verdict.get("rel_err", math.nan), "max_abs": verdict.get("max_abs", math.nan),
                "tol": verdict.get("tol", runtime.TOLERANCE[case.dtype])}
    with torch.no_grad():
        ref = family.reference(*[_float64(x) for x in inputs], **params)
    tol = family.tolerance(case.shape, case.dtype) if family.tolerance is not None else None
    return compare(result, ref, case.dtype, tol)


def check_impl(family: Family, impl: Impl, cases: list[Case], seeds: list[int], device: str) -> Iterator[dict]:
    for case in cases:
        base = _base(family, impl, case)
        need = memory_estimate(family, case, check=True)
        have = memory_available(device)
        if need > have:
            for seed in seeds:
                yield {**base, "seed": seed, "status": "oom", "tol": math.nan,
                       "reason": f"needs about {_gib(need)}, {_gib(have)} free: skipped"}
            continue
        for seed in seeds:
            try:
                row = run_case_check(family, impl, case, seed, device)
            except Exception as exc:  # noqa: BLE001 - recorded, then the next case runs
                status, reason = _status_of(exc)
                row = {"status": status, "reason": reason, "rel_err": math.nan, "max_abs": math.nan,
                       "tol": runtime.TOLERANCE.get(case.dtype, math.nan)}
                _empty_cache(device)
            yield {**base, "seed": seed, **row}
            if row["status"] == "unavailable":
                break


# ------------------------------------------------------------------ bench
def run_case_bench(family: Family, impl: Impl, case: Case, cfg: TimingConfig, device: str) -> tuple[dict, list]:
    params = case.param_dict
    inputs = family.make_inputs(case.shape, case.dtype, device, 0, **params)
    out = family.out_like(*inputs, **params)

    def call():
        return impl.fn(out, *inputs, **params)

    with runtime.matmul_precision(case.dtype):
        timing = measure(call, cfg, device)
    rec = timing.record()
    rec["reason"] = "; ".join(x for x in (timing.note, timing.graph_note) if x)
    return rec, timing.samples_us


def bench_impl(family: Family, impl: Impl, cases: list[Case], cfg: TimingConfig, device: str) -> Iterator[dict]:
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
            status, reason = _status_of(exc)
            yield {**base, "status": status, "reason": reason}
            _empty_cache(device)
            if status == "unavailable":
                # the same reason holds for every other case: record them without trying
                for rest in cases[cases.index(case) + 1:]:
                    yield {**_base(family, impl, rest), "mode": cfg.mode, "status": status, "reason": reason}
                return


# ------------------------------------------------------------------ per family
def _isolated(work, family: Family, impl: Impl, cases: list[Case], timeout_s: float, isolate_workers: bool,
              extra: dict) -> list[dict]:
    records, problem = isolate.run(work, timeout_s, isolate=isolate_workers, label=f"{family.name} {impl.key}")
    done = {(r["shape"], r["dtype"], r["params"]) for r in records}
    if problem:
        status = "timeout" if problem.startswith("timeout") else "error"
        reason = problem.split(": ", 1)[1] if ": " in problem else problem
        for case in cases:
            labels = case.labels()
            if (labels["shape"], labels["dtype"], labels["params"]) not in done:
                records.append({**_base(family, impl, case), **extra, "status": status, "reason": reason})
    return records


def check_family(family: Family, plan: KernelPlan, seeds: list[int], device: str, timeout_s: float,
                 isolate_workers: bool = True) -> list[dict]:
    rows = []
    for key in plan.impl_keys(family):
        impl = family.impls[key]
        cases = plan.cases(family, impl, for_check=True)
        work = functools.partial(check_impl, family, impl, cases, seeds, device)
        rows += _isolated(work, family, impl, cases, timeout_s, isolate_workers, {"seed": seeds[0] if seeds else 0})
    return rows


def bench_family(family: Family, plan: KernelPlan, cfg: TimingConfig, device: str, timeout_s: float,
                 isolate_workers: bool = True) -> list[dict]:
    rows = []
    for key in plan.impl_keys(family):
        impl = family.impls[key]
        cases = plan.cases(family, impl)
        work = functools.partial(bench_impl, family, impl, cases, cfg, device)
        rows += _isolated(work, family, impl, cases, timeout_s, isolate_workers, {"mode": cfg.mode})
    return rows


__all__ = ["CHECK_COLUMNS", "bench_family", "check_family", "compare", "shape_str"]

"""torch.profiler's top kernels of every implementation of a family at its profile shape, with
a Chrome trace each, in one worker after the family's measure workers (the profiler's start-up,
CUPTI, costs seconds per process; a crash costs only the implementation that crashed:
``isolate.Batch``).

That worker is a fresh process: what the measure workers compiled in memory (torch.compile's
graphs, a peer's kernels) it would compile again, on the GPU's time. With ``ahead`` it starts
with the measure job and compiles its cases on the spare cores while the measure workers are
timed (``kernellab.engine.prepare``: nothing launched on the GPU), and profiles when they are
done. Triton kernels need no head start: the worker loads them, and the autotuner's choices,
from the run's disk caches.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from kernellab.engine import isolate
from kernellab.io import write_csv
from kernellab.workflow.plans import plan_of, registry_of

log = logging.getLogger("kernellab")
COLUMNS = ["kernel", "impl_key", "impl", "step", "shape", "dtype", "params", "status", "reason", "rank", "name",
           "calls", "cpu_time_us", "device_time_us", "pct"]


@dataclass
class Profiling:
    """The profile worker of some families, started (``start``), and where its rows go."""

    batch: isolate.Batch
    works: list
    labels: dict
    kernels: list[str]
    out_csvs: list[str]

    def finish(self) -> None:
        """Profile (after a preparation, once it is done) and write each family's CSV."""
        results = self.batch.results()
        for kernel, out_csv in zip(self.kernels, self.out_csvs, strict=True):
            rows = []
            for name, _ in self.works:
                if name[0] != kernel:
                    continue
                got, problem = results.get(name, ([], "error: not run"))
                if problem:
                    status = "unavailable" if "Unavailable" in problem else "error"
                    rows.append({**self.labels[name], "status": status, "reason": problem.split(": ", 1)[-1]})
                rows += [{**self.labels[name], "status": "ok", "reason": "", **r} for r in got]
            write_csv(out_csv, rows, columns=COLUMNS)

    def close(self) -> None:
        """Stop a worker started ahead whose profiling will not come (its job failed first)."""
        self.batch.close()


def start(config: dict, kernels: list[str], out_csvs: list[str], trace_dirs: list[str], device: str, reg=None,
          ahead: bool = False) -> Profiling:
    """The profile worker of ``kernels`` at their profile shapes (``device`` set up by the caller);
    with ``ahead``, started now, compiling while the caller goes on."""
    from kernellab.engine.cases import Case
    from kernellab.engine.profile import profile_case

    works, labels, cases = [], {}, []
    reg = reg or registry_of(config)
    for kernel, trace_dir in zip(kernels, trace_dirs, strict=True):
        Path(trace_dir).mkdir(parents=True, exist_ok=True)
        if not reg.loaded([kernel]):
            continue
        fam = reg.family(kernel)
        plan = plan_of(config, kernel)
        for key in plan.impl_keys(fam):
            impl = fam.impls[key]
            dtype = next((d for d in plan.dtypes if impl.supports(d)), None)
            if dtype is None or plan.profile_shape is None:
                continue
            params = tuple(sorted(plan.param_grid(fam)[0].items()))
            case = Case(kernel, key, plan.profile_shape, dtype, params)
            trace = Path(trace_dir) / f"{key.replace('@', '.')}.trace.json.gz"

            def work(fam=fam, impl=impl, case=case, trace=trace):
                yield from profile_case(fam, impl, case, device, trace)

            works.append(((kernel, key), work))
            labels[kernel, key] = {**case.labels(), "impl": impl.impl, "step": impl.step}
            cases.append((fam, impl, case))
    prepare = _preparation(cases, device) if ahead else None
    batch = isolate.Batch(works, float(config["check"]["timeout_s"]), bool(config.get("isolate", True)),
                          label=f"profile {', '.join(kernels)}", prepare=prepare)
    return Profiling(batch, works, labels, list(kernels), list(out_csvs))


def _preparation(cases: list, device: str):
    """Each case's compiling ahead (``prepare.preparation``), Triton's left out; None where none
    has any."""
    from kernellab.engine.prepare import preparation

    steps = [(impl.key, prep) for fam, impl, case in cases if impl.backend != "triton"
             for prep in [preparation(fam, impl, [case], [], device, 1)] if prep is not None]
    if not steps:
        return None

    def prepare():
        for key, prep in steps:
            try:
                prep()
            except Exception as exc:  # noqa: BLE001 - its profile compiles it and reports what fails
                log.info("profile %s: not compiled ahead: %s: %s", key, type(exc).__name__, exc)

    return prepare


"""What the measuring rules do (survey, build_cuda, cuda_resources, measure, ptx, ncu),
as plain functions of paths and config, and the job setup every rule's script uses (``logged``,
``job``). A measure job's profiling is in kernellab.workflow.profiling. The rules that make a
result set of the jobs' files are elsewhere: aggregate in kernellab.workflow.aggregate, report,
publish and compare in kernellab.workflow.assemble.

The scripts under workflow/scripts/ only unpack the ``snakemake`` object and call one of
these, so every step can be run and tested without Snakemake.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import time
from pathlib import Path

from kernellab.engine import cuda_ext, phases, runtime
from kernellab.io import write_csv, write_json
from kernellab.workflow.plans import plan_of as _plan
from kernellab.workflow.plans import registry_of, target_of
from kernellab.workflow.timeline import job_record

log = logging.getLogger("kernellab")
ROOT = Path(__file__).resolve().parents[2]


INTERRUPTED = "interrupted: rerun the same command to resume"


def use_bytecode_cache(prefix: str) -> None:
    """Python's bytecode of what this job imports from here on, and of every worker it starts,
    under ``prefix`` (the workflow's: beside the staging sets, never in a source tree; one the
    user set wins): read-only site-packages would make every job and worker compile the modules
    of torch._dynamo and _inductor again. Written even where the environment says to write no
    bytecode, which is about source trees. Set by the job itself, not inherited from the run."""
    if not prefix:
        return
    sys.pycache_prefix = os.environ.setdefault("PYTHONPYCACHEPREFIX", prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


@contextlib.contextmanager
def logged(log_path: str | None, bytecode: str = ""):
    """Send stdout, stderr and logging of a rule to its log file; Ctrl-C ends the job with one
    line instead of a traceback (what it finished is kept, a rerun resumes). ``bytecode``: the
    run's bytecode cache (use_bytecode_cache)."""
    use_bytecode_cache(bytecode)
    try:
        # the job's start, end and device for the run's timeline, outside its log: an
        # interruption is recorded as one
        with job_record(log_path), _to_log(log_path):
            yield
    except BaseException as exc:
        # Ctrl-C inside a C extension's import surfaces as ImportError("initialization failed")
        # raised from the KeyboardInterrupt: an interruption too
        if not _caused_by_interrupt(exc):
            raise
        print(INTERRUPTED, file=sys.__stderr__, flush=True)  # fd 2 is the terminal again here
        raise SystemExit(130) from None


def interrupt_once() -> None:
    """Ctrl-C raises KeyboardInterrupt once; a second SIGINT (the terminal's and the one the run
    passes on to its jobs, ``kernellab.workflow.interrupt``) is ignored, so that it cannot break
    the job's way out into a traceback. Forked workers inherit this."""
    import signal

    def first(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # an ignored SIGINT stays ignored
        signal.signal(signal.SIGINT, first)


def _caused_by_interrupt(exc: BaseException) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


@contextlib.contextmanager
def job(log_path: str | None, cache: str = "", slots: str = "", expect_set: str = "", gpu: int = 0,
        bytecode: str = ""):
    """What a job sets up before its work: its log and bytecode cache (``logged``), the set's
    compile cache, a GPU of its own on a multi-GPU host (``slots``: the lock folder), and, where
    the run names its GPU models, a check that the GPU this job landed on is the one its result
    set is for. The job dies with the run (``isolate.die_with_parent``: a SIGKILLed Snakemake
    leaves no orphan), holds the lock of its log file (``runlock.hold_job``: a rerun's job waits
    for, or refuses, an earlier one still running), and ends on the first Ctrl-C, deaf to more."""
    from kernellab.engine import isolate
    from kernellab.workflow import runlock

    parent = os.getppid()
    if isolate.orphaned(parent):  # the run ended before this job got going
        raise SystemExit(1)
    isolate.die_with_parent(parent)
    interrupt_once()
    if log_path:
        runlock.hold_job(log_path)
    with logged(log_path, bytecode):
        if cache:
            runtime.use_run_cache(cache)
        if gpu and slots:
            from kernellab.workflow import gpu_slots

            device = gpu_slots.pin(slots)
            log.info("GPU slot: %s", f"device {device}" if device is not None else
                     f"none taken (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')!r})")
        if expect_set:
            from kernellab.engine.hardware import check_identity
            from kernellab.engine.survey import hardware_slug

            check_identity(expect_set, hardware_slug())
        yield


@contextlib.contextmanager
def _to_log(log_path: str | None):
    if not log_path:
        yield
        return
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    from kernellab.engine import progress

    with open(log_path, "w") as fh:
        old_out, old_err = sys.stdout, sys.stderr
        # file descriptors 1 and 2 too, for what C code and the workers print (Kineto's
        # "USDT ... profiler_start" lines): the terminal keeps a copy for the progress lines
        sys.stdout.flush(), sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        terminal = os.fdopen(os.dup(2), "w", buffering=1)
        os.dup2(fh.fileno(), 1), os.dup2(fh.fileno(), 2)
        progress.set_terminal(terminal)
        sys.stdout = sys.stderr = fh
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.INFO)
        try:
            yield
        finally:
            logging.getLogger().removeHandler(handler)
            sys.stdout, sys.stderr = old_out, old_err
            fh.flush()
            os.dup2(saved[0], 1), os.dup2(saved[1], 2)
            progress.set_terminal(None)
            for fd in saved:
                os.close(fd)
            terminal.close()


def run_plan_path(set_dir: str | Path) -> Path:
    """Where a run leaves each family's work for the measure jobs' estimate of the run (beside
    the set's staging folder, so that it is never published)."""
    return Path(set_dir).parent / ".run" / f"{Path(set_dir).name}.json"


def write_run_plan(config: dict, reg, staging: str, sets) -> None:
    """Each family's measure work (``kernellab.engine.progress.ImplWork`` units) for every set of the
    run: the measure jobs turn it into an estimate of the run's time left."""
    from kernellab.engine import progress
    from kernellab.engine.harness import impl_works

    device = "cuda" if target_of(config) == "gpu" else "cpu"
    seeds = list((config.get("check") or {}).get("seeds") or [])
    works = {}
    for kernel in config["kernels"]:
        try:
            w = impl_works(reg.family(kernel), _plan(config, kernel), device, seeds)
        except Exception as exc:  # noqa: BLE001 - an estimate: a family it cannot plan is left out
            log.info("no estimate of %s's measure job: %s", kernel, exc)
            continue
        works[kernel] = sum(x.total for x in w.values())
    for name in sets:
        progress.write_plan(run_plan_path(Path(staging) / name), works)


# ------------------------------------------------------------------ rules
def survey(out_json: str) -> dict:
    device = runtime.setup()
    from kernellab.engine.survey import survey as measure

    data = measure(device)
    write_json(out_json, data)
    log.info("survey: %s copy %.0f GB/s, matmul %s", data["hardware"], data["copy_gbps"], data["matmul_tflops"])
    return data


RESOURCE_COLUMNS = ["file", "kernel", "registers", "spill_stores_bytes", "spill_loads_bytes", "stack_frame_bytes",
                    "smem_bytes", "cmem_bytes"]


def build_cuda(out_json: str, resources_csv: str, folder: str) -> dict:
    """Build one family's CUDA (the folder's .cu files and binding.cpp) as a library of its own,
    while each .cu compiles on its own for its registers and spills. Where only step files fail,
    the library is built again without them and each failing step says nvcc's first error
    (``steps_failed``); a family whose other sources fail is named, and its CUDA implementations
    say so (no library is built)."""
    from concurrent.futures import ThreadPoolExecutor

    from kernellab.engine import cuda_build, progress

    out_dir = Path(out_json).parent
    family = Path(folder).name
    files = (cuda_build.folder_sources(folder) or {}).get("cu", [])
    # both are nvcc processes on their own threads: side by side they take about the longer's time
    with ThreadPoolExecutor(1) as pool:
        report = pool.submit(cuda_build.resource_report, out_dir, files=files)
        info = cuda_build.build_extension(out_dir, folder=folder)
        rows = report.result()
    steps = cuda_build.failed_steps(folder, rows.file_failures)
    if steps:  # only step files failed: the library again without them, the other steps in it
        for step, why in steps.items():
            log.error("build_cuda: %s step %s left out: %s", family, step, why)
            print(f"kernellab: CUDA step {family}/{step} left out: {why}", file=progress.terminal())
        info = {**cuda_build.build_extension(out_dir, folder=folder, leave_out=rows.file_failures),
                "steps_failed": steps}
    elif rows.failures:
        for why in rows.failures.values():
            log.error("build_cuda: %s left out: %s", family, why)
            print(f"kernellab: CUDA of family {family!r} left out: {why}", file=progress.terminal())
        info = cuda_build.build_extension(out_dir, folder=folder, skip=rows.failures)
    write_csv(resources_csv, rows, columns=RESOURCE_COLUMNS)
    cuda_build.write_build_json(out_dir, {**info, "family": family})
    log.info("build_cuda %s: %s %s", family, info.get("status"), info.get("reason", ""))
    return info


def _paths(paths: str | list[str] | None) -> list[str]:
    """A rule's input given as one path or as several (a family's build.json, or none)."""
    return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths or [])


def cuda_resources(family_csvs: list[str], out_csv: str) -> None:
    """The set's build/resources.csv: every family's registers, spills and shared memory."""
    import csv

    rows = []
    for path in family_csvs:
        with open(path, newline="") as fh:
            rows += list(csv.DictReader(fh))
    write_csv(out_csv, rows, columns=RESOURCE_COLUMNS)


def measure(config: dict, kernel: str, build_json: str | list[str] | None, check_csv: str, bench_csv: str,
            samples_json: str, autotune_csv: str, profile_csv: str | None = None,
            trace_dir: str | None = None) -> None:
    """Autotuning, correctness checks and benchmarks of one family: each implementation
    is tuned (Triton), checked and benchmarked in one worker, so each compile happens once;
    then (``profile_csv``) torch.profiler on each at the profile shape (``profiling``)."""
    from kernellab.engine import progress
    from kernellab.engine.harness import CHECK_COLUMNS, measure_family
    from kernellab.engine.timing import TimingConfig
    from kernellab.workflow import profiling as profiles

    device = runtime.setup()
    cuda_ext.configure(build_json)
    reg = registry_of(config)
    cfg = TimingConfig.from_config(config.get("timing"))
    at = config.get("autotune") or {}
    # the harness's timer tunes under the interpreter only (on a GPU Triton times the configs)
    tune_cfg = TimingConfig.from_config({**(config.get("timing") or {}), "budget_s": at.get("budget_s", 0.1),
                                         "graph": False, "min_warmup": 1, "warmup_s": 0.0})
    # compiling the configs before tuning is CPU work, spread over the cores this job may use
    workers = int(at.get("compile_workers") or len(os.sched_getaffinity(0)))
    timeout_s = sum(float(config[k]["timeout_s"]) for k in ("autotune", "check", "bench"))
    checks, rows, tunes = [], [], []  # a family that did not load: no rows (loaded says why)
    ahead = int(config.get("compile_ahead", 0))
    # the profile worker compiles its cases beside the measure workers, and profiles after them
    profiling = None if profile_csv is None else profiles.start(config, [kernel], [profile_csv], [trace_dir], device,
                                                                reg, ahead=ahead > 0)
    try:
        if reg.loaded([kernel]):
            checks, rows, tunes = measure_family(
                reg.family(kernel), _plan(config, kernel), device, timeout_s, bool(config.get("isolate", True)),
                seeds=list(config["check"]["seeds"]), cfg=cfg, tune_cfg=tune_cfg, compile_workers=workers,
                ahead=ahead, run_left=progress.run_left(run_plan_path(Path(check_csv).parents[1]),
                                                        Path(check_csv).parents[1], kernel))
    except BaseException:
        if profiling is not None:
            profiling.close()
        raise
    write_csv(autotune_csv, tunes, columns=["kernel", "impl_key", "impl", "step", "triton_kernel", "shape", "dtype",
                                            "params", "config", "median_us", "status", "reason", "is_best"])
    write_csv(check_csv, checks, columns=CHECK_COLUMNS)
    samples = {}
    for r in rows:
        s = r.pop("samples_us", None)
        if s is not None:
            samples["|".join(str(r[k]) for k in ("impl_key", "shape", "dtype", "params"))] = s
    write_json(samples_json, {"kernel": kernel, "unit": "us", "samples": samples}, gz=True)
    write_csv(bench_csv, rows)
    bad = [r for r in checks if r["status"] != "ok"]
    log.info("measure %s: %d autotune rows, %d check rows (%d not ok), %d bench rows", kernel, len(tunes),
             len(checks), len(bad), len(rows))
    if profiling is not None:
        with phases.phase("profile"):
            profiling.finish()


def ptx(config: dict, kernels: list[str], build_json: str | list[str], out_indexes: list[str]) -> None:
    """Cross-compile every Triton kernel of the families, take every CUDA kernel's PTX and cubin
    from build_cuda (beside each family's build.json in ``build_json``), and pick out the evidence.

    Compiling is CPU work (the GPU stays idle: nothing runs), so it is spread over one
    pool of forked processes for all families, one task per Triton implementation and
    dtype and one per group of CUDA implementations sharing .cu files (``ptx.cuda_groups``),
    the CUDA tasks first (the longest where they must compile): ``ptx.workers`` in the config, by
    default the cores this process may use, at most 16. A task that fails leaves an entry
    saying so; the other tasks' entries stand.
    """
    from kernellab.engine import isolate
    from kernellab.engine import ptx as ptxmod

    # cross-compiling never runs a kernel: make sure Triton compiles rather than interprets
    os.environ["TRITON_INTERPRET"] = "0"
    arch = _gpu_arch()
    reg = registry_of(config)
    tasks = []  # (kernel, impl keys, dtypes, out_dir), in the order of the index files
    for kernel, out_index in zip(kernels, out_indexes, strict=True):
        out_dir = Path(out_index).parent
        out_dir.mkdir(parents=True, exist_ok=True)
        if not reg.loaded([kernel]):
            continue
        fam = reg.family(kernel)
        plan = _plan(config, kernel)
        keys = plan.impl_keys(fam)
        # a Triton implementation without compile specs (a ladder step running one of the
        # family's configs) has nothing of its own to dump
        tasks += [(kernel, [k], [d], out_dir) for k in keys
                  if fam.impls[k].backend == "triton" and fam.impls[k].compile_specs is not None
                  for d in plan.dtypes if fam.impls[k].supports(d)]
        tasks += [(kernel, group, list(plan.dtypes), out_dir) for group in ptxmod.cuda_groups(fam, keys)]
    # CUDA tasks (the longest where nvcc must run) go to the pool first
    first = sorted(range(len(tasks)), key=lambda i: reg.families[tasks[i][0]].impls[tasks[i][1][0]].backend != "cuda")
    workers = int((config.get("ptx") or {}).get("workers") or min(16, len(os.sched_getaffinity(0))))
    workers = max(1, min(workers, len(tasks)))
    t0 = time.perf_counter()
    build_dirs = {Path(b).parent.name: Path(b).parent for b in _paths(build_json)}
    dirs = config.get("kernel_dirs")
    got = isolate.forked_map(ptxmod.timed_entries_for,
                             [(*tasks[i], arch, build_dirs.get(tasks[i][0]), dirs) for i in first], workers)
    done: dict[int, tuple[float, list[dict]]] = dict(zip(first, got, strict=True))
    entries = {kernel: [] for kernel in kernels}
    took = []
    for i, (kernel, keys, dtypes, _) in enumerate(tasks):
        seconds, part = done[i]
        entries[kernel] += part
        took.append((seconds, f"{kernel} {'+'.join(keys)} {'+'.join(dtypes)}"))
    slowest = ", ".join(f"{name} {sec:.1f} s" for sec, name in sorted(took, reverse=True)[:3])
    log.info("ptx: %d tasks of %d families on %d workers in %.1f s (slowest: %s)", len(tasks), len(kernels),
             workers, time.perf_counter() - t0, slowest or "none")
    for kernel, out_index in zip(kernels, out_indexes, strict=True):
        write_json(out_index, entries[kernel])


def _gpu_arch() -> int:
    """The GPU's compute capability from NVML (this process must not start CUDA before
    forking); sm_90 when there is no GPU."""
    from kernellab.engine.nvml import Monitor

    return Monitor().compute_capability() or 90


def ncu(config: dict, kernels: list[str], build_json: list[str], out_csvs: list[str],
        keys: dict[str, str] | None = None, kept_dir: str | None = None) -> None:
    """Nsight Compute on every ladder step of the families, each at its ladder's shape and
    dtype, and on each family's ``ncu_cases`` (ladder and step empty), in one ncu session; one
    table per family, each row with the family's byte model beside the bytes DRAM moved.
    ``keys``: each family's key of what its profile depends on; a family whose rows under
    ``kept_dir`` have its key is not profiled again, its rows are copied (``ncu.kept_rows``)."""
    from kernellab.engine.cases import parse_shape
    from kernellab.engine.ncu import COLUMNS, keep_rows, kept_rows, profile_steps

    nc = config.get("ncu") or {}
    bases, ladders, reused = [], [], {}
    reg = registry_of(config)
    stamps, kept = (keys or {}) if kept_dir else {}, Path(kept_dir or ".")
    for kernel in reg.loaded(kernels):
        old = kept_rows(kept / f"{kernel}.json", stamps[kernel]) if kernel in stamps else None
        if old is not None:
            log.info("ncu: %s unchanged since its last profile: %d rows kept", kernel, len(old))
            reused[kernel] = old
            continue
        log.info("ncu: %s to profile", kernel)
        fam = reg.family(kernel)
        plan = _plan(config, kernel)
        keys = set(plan.impl_keys(fam))
        mine = []
        for ladder, steps in fam.ladders().items():
            steps = [s for s in steps if s.key in keys]
            if not steps:
                continue
            shape = "x".join(map(str, plan.ladder_shape(ladder)))
            dtype = plan.ladder_dtype(steps)
            ladders.append(f"{kernel} {ladder} ({len(steps)})")
            mine += [{"kernel": kernel, "ladder": ladder, "impl_key": s.key, "step": s.step, "shape": shape,
                      "dtype": dtype} for s in steps]
        extra = [c for c in plan.ncu_cases if c.impl_key in keys]
        if extra:
            ladders.append(f"{kernel} ncu_cases ({len(extra)})")
            mine += [{"kernel": kernel, "ladder": "", "impl_key": c.impl_key, "step": "",
                      "shape": "x".join(map(str, c.shape)), "dtype": c.dtype} for c in extra]
        params = plan.param_grid(fam)[0]  # the run's first parameters, which its timings include
        for b in mine:  # the family's byte model of the one call profiled
            b["params"], b["model_mb"] = params, fam.bytes_moved(parse_shape(b["shape"]), b["dtype"], **params) / 1e6
        bases += mine
    if not bases:
        got = []
    elif not nc.get("enabled", True):
        got = [{"status": "unavailable", "reason": "ncu disabled in the config"}] * len(bases)
    elif not runtime.has_gpu():
        got = [{"status": "unavailable", "reason": "no CUDA GPU: Nsight Compute needs one"}] * len(bases)
    else:
        t0 = time.perf_counter()
        got = profile_steps([(b["kernel"], b["impl_key"], b["dtype"], b["shape"], b["params"]) for b in bases],
                            [str(Path(b).resolve()) for b in build_json], float(nc.get("timeout_s", 180)),
                            config.get("kernel_dirs"))
        log.info("ncu: %d steps of %s in %.1f s", len(bases), ", ".join(ladders), time.perf_counter() - t0)
    new = [{**b, **g} for b, g in zip(bases, got, strict=True)]
    for r in new:
        moved = r.get("dram_read_mb", math.nan) + r.get("dram_write_mb", math.nan)
        r["dram_vs_model"] = moved / r["model_mb"] if r["model_mb"] > 0 else math.nan
    for kernel, out_csv in zip(kernels, out_csvs, strict=True):
        mine = reused.get(kernel) or [r for r in new if r["kernel"] == kernel]
        write_csv(out_csv, mine, columns=COLUMNS)
        if kernel in stamps and kernel not in reused:
            keep_rows(kept / f"{kernel}.json", stamps[kernel], mine)

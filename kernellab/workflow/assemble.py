"""What the rules that make a result set of the jobs' files do: aggregate, report, publish and
compare, as plain functions of paths and config (the scripts under workflow/scripts/ call them).

They live apart from kernellab.workflow.pipeline, which the measuring jobs import: a job's code stamp
holds the modules it can import (kernellab.workflow.imports), so editing the aggregation or the report
measures nothing again.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

from kernellab.io import read_json, write_csv, write_json
from kernellab.workflow import timeline
from kernellab.workflow.pipeline import ROOT, families, target_of

log = logging.getLogger("kernellab")


def build_summary(build_jsons: list[str]) -> dict:
    """The families' CUDA builds as environment.json's one ``cuda_build`` record: ok when every
    family with CUDA built, else the first other status, with each family's reason (once when
    they all share it, as a CPU-only torch's)."""
    builds = {Path(p).parent.name: read_json(p) for p in build_jsons if Path(p).exists()}
    if not builds:
        return {"status": "none", "reason": "no family with CUDA sources", "nvcc": None, "arch": None}
    bad = {k: b for k, b in builds.items() if b.get("status") != "ok"}
    reasons = {b.get("reason", "") for b in bad.values()}
    reason = (reasons.pop() if len(reasons) == 1 and len(bad) > 1
              else "; ".join(f"{k}: {b.get('reason', '')}" for k, b in sorted(bad.items())))
    first = next(iter(builds.values()))
    return {"status": next((b["status"] for b in bad.values()), "ok"), "reason": reason, "nvcc": first.get("nvcc"),
            "arch": first.get("arch"), "families": {k: b.get("status") for k, b in sorted(builds.items())}}


def aggregate(config: dict, stage: str | None, survey_json: str, bench_csvs: list[str], check_csvs: list[str],
              ptx_indexes: list[str], build_json: list[str], out_summary: str, out_ladders: str, out_env: str,
              command: str) -> None:
    from kernellab.engine.cases import plans
    from kernellab.workflow import aggregate as agg

    prune_stage(Path(out_summary).parent, config["kernels"])
    survey = read_json(survey_json)
    env = agg.environment(survey, config, ROOT, run_id=_run_id(survey, config), command=command)
    env["cuda_build"] = build_summary(build_json)
    fams = families(config)
    bounds = {k: f.bound for k, f in fams.items()}
    bench = agg._read_csvs(bench_csvs)
    check_df = agg._read_csvs(check_csvs)
    meta = {"hardware": survey.get("hardware"), "run_id": env["run_id"], "torch_version": env["torch"],
            "triton_version": env["triton"], "cuda_version": env["cuda"] or "", "timestamp": env["end"]}
    summary = agg.summarize_run(bench, check_df, survey, bounds, meta)
    write_csv(out_summary, summary)
    # ceilings a case beat, raised to what it reached (the report says which)
    env["ceiling_corrected"] = agg.corrected_ceilings(survey, summary, bounds)["ceiling_corrected"]
    entries = []
    for p in ptx_indexes:
        entries += read_json(p)
    write_json(out_ladders, agg.ladders(fams, plans(config, target_of(config)), entries))
    env["cases"] = int(len(summary))
    env["cases_ok"] = int(((summary["status"] == "ok") & (summary["check_status"] == "ok")).sum())
    env["target"] = target_of(config)
    write_json(out_env, env)


# a family's files in a staging set (FAMILY: its name); the report reads these folders whole
FAMILY_FILES = ("bench/FAMILY.csv", "bench/FAMILY.samples.json.gz", "check/FAMILY.csv", "autotune/FAMILY.csv",
                "profile/FAMILY.csv", "profile/FAMILY", "ptx/FAMILY", "ncu/FAMILY.csv", "build/FAMILY",
                "logs/measure/FAMILY.log", "logs/build_cuda/FAMILY.log", "logs/profile/FAMILY.log",
                "logs/ptx/FAMILY.log", "logs/measure/FAMILY.job.json", "logs/build_cuda/FAMILY.job.json",
                "logs/profile/FAMILY.job.json", "logs/ptx/FAMILY.job.json", "report-FAMILY.md")


def prune_stage(stage: str | os.PathLike, kernels) -> list[str]:
    """Remove from a staging set the files of every family that this run does not measure (one
    an earlier run of the set measured, or one that failed to load): its report and the
    published set show this run's families only. Returns the families removed."""
    stage = Path(stage)
    found = set()
    for pattern in FAMILY_FILES:
        folder, name = os.path.split(pattern)
        prefix, suffix = name.split("FAMILY")
        for p in (stage / folder).glob(name.replace("FAMILY", "*")):
            family = p.name.removeprefix(prefix).removesuffix(suffix)
            if family.isidentifier() and (suffix or p.is_dir()):  # build/resources.csv is no family
                found.add(family)
    stale = sorted(found - set(kernels))
    for family in stale:
        for pattern in FAMILY_FILES:
            p = stage / pattern.replace("FAMILY", family)
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    if stale:
        log.info("staging set %s: files of %s removed (not measured by this run)", stage, ", ".join(stale))
    return stale


def _run_id(survey: dict, config: dict) -> str:
    from kernellab.workflow.aggregate import config_hash

    stamp = (survey.get("timestamp") or "").replace(":", "").replace("-", "")
    return f"{survey.get('hardware')}-{stamp}-{config_hash(config)[:8]}"


def publish(stage_dir: str, results_dir: str, keep_suffixes: tuple[str, ...] = ()) -> None:
    """Replace results/<set>/ by the completed staging set in one rename.

    The old set stays in place until the new one is whole; build products (.so) and
    scratch files are left out of what is published.
    """
    stage, dest = Path(stage_dir), Path(results_dir)
    timeline.write(stage)  # the report's job has ended since the report gathered it
    new = dest.with_name(f".{dest.name}.new")
    old = dest.with_name(f".{dest.name}.old")
    for p in (new, old):
        if p.exists():
            shutil.rmtree(p)

    def ignore(directory, names):
        # build products (the ptx/ folder holds each kernel's PTX and SASS, compressed)
        # (and Snakemake's marker in a directory output)
        return [n for n in names if n.endswith((".so", ".o", ".tmp", ".cubin", ".ptx"))
                or n in ("tmp", "temp", "__pycache__", ".snakemake_timestamp")]

    shutil.copytree(stage, new, ignore=ignore)
    if dest.exists():
        os.replace(dest, old)
    os.replace(new, dest)
    if old.exists():
        shutil.rmtree(old)
    # the set's compile cache (Triton kernels, autotune choices, Inductor graphs: 100+ MB) served
    # this run's jobs; a rerun recompiles only what changed, which the cache would not hold anyway
    cache = stage.with_name(f"{stage.name}.cache")
    if cache.is_dir():
        shutil.rmtree(cache, ignore_errors=True)
    log.info("published %s -> %s at %s", stage, dest, time.strftime("%H:%M:%S"))


def report(stage_set_dir: str, others: list[str], references: list[str]) -> None:
    """Render report.html, report.md, KERNEL_LOG.md and plots/ into the staging set, compared
    with the sets at ``others`` and the reference sets at ``references``."""
    # the function itself: once its module is imported, ``kernellab.report.render`` names the module
    from kernellab.report.render import render

    stage = Path(stage_set_dir)
    timeline.write(stage)  # the jobs so far, for the report's timeline
    render(stage.parent, stage.name, stage, others=[Path(p) for p in others], references=[Path(p) for p in references])


def compare(summary_a: str, summary_b: str, name_a: str, name_b: str, out_csv: str, out_png: str,
            threshold: float, min_us: float) -> None:
    from kernellab.workflow import compare as cmp

    df = cmp.compare_sets(Path(summary_a), Path(summary_b), name_a, name_b, threshold, min_us)
    write_csv(out_csv, df)
    cmp.plot(df, Path(out_png), f"{name_b} against {name_a}")
    log.info("compare %s vs %s: %s", name_a, name_b, cmp.verdict_counts(df))

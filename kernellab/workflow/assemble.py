"""What the rules that finish a result set do: report, publish and compare, as plain functions of
paths and config (the scripts under workflow/scripts/ call them), and which files of a staging set
are a family's (``prune_stage``). The aggregate rule's function is kernellab.workflow.aggregate.run.

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

from kernellab.io import write_csv
from kernellab.workflow import timeline

log = logging.getLogger("kernellab")


# a family's files in a staging set (FAMILY: its name); the report reads these folders whole
FAMILY_FILES = ("bench/FAMILY.csv", "bench/FAMILY.samples.json.gz", "check/FAMILY.csv", "autotune/FAMILY.csv",
                "profile/FAMILY.csv", "profile/FAMILY", "ptx/FAMILY", "ncu/FAMILY.csv", "build/FAMILY",
                "logs/measure/FAMILY.log", "logs/build_cuda/FAMILY.log",
                "logs/ptx/FAMILY.log", "logs/measure/FAMILY.job.json", "logs/build_cuda/FAMILY.job.json",
                "logs/ptx/FAMILY.job.json", "report-FAMILY.md")


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

"""All records of a run into ``summary.csv`` (one row per case), ``ladders.json`` and
``environment.json``: the aggregate rule (``run``) and what it computes.

A row is *eligible* (may be the best of its case, may enter a speedup) only when its
benchmark ran (status ok) and its correctness check passed on every seed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd

from kernellab import rows
from kernellab.io import read_json, write_csv, write_json
from kernellab.passes import PASSES, pass_key
from kernellab.workflow.gitref import head_commit

KEY = ["kernel", "impl_key", "shape", "dtype", "params"]

_STATUS_RANK = {"ok": 0, "unavailable": 1, "oom": 2, "timeout": 3, "error": 4, "failed": 5}


def _read_csv(path) -> pd.DataFrame:
    """One job's table; a family without a case wrote a file with no columns at all."""
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=["", "nan", "NaN"])
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def _read_csvs(paths) -> pd.DataFrame:
    frames = [f for f in map(_read_csv, paths) if len(f)]
    if not frames:
        return pd.DataFrame(columns=KEY)
    df = pd.concat(frames, ignore_index=True)
    for col in ("params", "reason", "step", "ladder"):
        if col in df:
            df[col] = df[col].astype(object).fillna("").astype(str)  # all empty: read as float
    df["shape"] = df["shape"].astype(str)
    return df


def check_verdicts(check: pd.DataFrame) -> pd.DataFrame:
    """One verdict per case: the worst status over the seeds, the largest errors."""
    if check.empty:
        return pd.DataFrame(columns=KEY + ["check_status", "check_reason", "max_rel_err", "max_abs_err"])

    def worst(group: pd.DataFrame) -> pd.Series:
        ranks = group["status"].map(lambda s: _STATUS_RANK.get(s, 9))
        row = group.loc[ranks.idxmax()]
        return pd.Series({
            "check_status": row["status"],
            "check_reason": row["reason"] if row["status"] != "ok" else "",
            "max_rel_err": pd.to_numeric(group["rel_err"], errors="coerce").max(),
            "max_abs_err": pd.to_numeric(group["max_abs"], errors="coerce").max(),
        })

    return check.groupby(KEY, sort=True).apply(worst, include_groups=False).reset_index()


def corrected_ceilings(survey: dict, df: pd.DataFrame, bounds: dict[str, str]) -> dict:
    """The survey with each ceiling raised to the best correct case that beat it, and the
    corrections under ``ceiling_corrected`` ({"copy" or dtype: {"survey": x, "observed": y}}).

    A ceiling is what nothing can pass; a case above it means the survey measured less than
    the machine gives (on a CPU its small fp16 matmul ran below the benchmark's large ones), so
    the percentages and the roofline divide by the observed figure, and say so."""
    out = {**survey, "matmul_tflops": dict(survey.get("matmul_tflops") or {}),
           "ceiling_corrected": dict(survey.get("ceiling_corrected") or {})}
    good = df[(df["status"] == "ok") & (df["check_status"] == "ok")]
    # a boolean mask even when no case is good (an empty object mask would select columns)
    compute = good["kernel"].map(lambda k: bounds.get(k, "memory") == "compute").astype(bool)
    best_bw = good.loc[~compute, "gbps"].max()
    if out.get("copy_gbps") and pd.notna(best_bw) and best_bw > out["copy_gbps"]:
        out["ceiling_corrected"]["copy"] = {"survey": out["copy_gbps"], "observed": float(best_bw)}
        out["copy_gbps"] = float(best_bw)
    for dtype, best in good[compute].groupby("dtype")["tflops"].max().items():
        rate = out["matmul_tflops"].get(dtype)
        if rate and pd.notna(best) and best > rate:
            out["ceiling_corrected"][dtype] = {"survey": rate, "observed": float(best)}
            out["matmul_tflops"][dtype] = float(best)
    return out


def summarize_run(bench: pd.DataFrame, check: pd.DataFrame, survey: dict, bounds: dict[str, str],
                  meta: dict) -> pd.DataFrame:
    from kernellab.engine.survey import ceilings

    df = bench.merge(check_verdicts(check), on=KEY, how="left")
    df["check_status"] = df["check_status"].fillna("not checked")
    df["check_reason"] = df["check_reason"].fillna("")
    # a benchmark whose check did not pass is not a result: flag it
    bad_check = (df["status"] == "ok") & (df["check_status"] != "ok")
    df.loc[bad_check, "status"] = np.where(df.loc[bad_check, "check_status"] == "failed", "failed",
                                           df.loc[bad_check, "status"])
    df.loc[bad_check, "reason"] = [
        f"correctness {s}: {r}".strip(": ") for s, r in zip(df.loc[bad_check, "check_status"],
                                                             df.loc[bad_check, "check_reason"], strict=True)
    ]
    for col in ("median_us", "bytes", "flops"):
        df[col] = pd.to_numeric(df.get(col), errors="coerce")
    secs = df["median_us"] * 1e-6
    df["gbps"] = df["bytes"] / secs / 1e9
    df["tflops"] = df["flops"] / secs / 1e12
    df["bound"] = df["kernel"].map(lambda k: bounds.get(k, "memory"))
    survey = corrected_ceilings(survey, df, bounds)
    datasheet = survey.get("datasheet") or {}
    bw_rows, fl_rows, dbw_rows, dfl_rows = [], [], [], []
    for _, row in df.iterrows():
        bw, rate = ceilings(survey, bounds.get(row["kernel"], "memory"), row["dtype"])
        bw_rows.append(100 * row["gbps"] / bw if bw else math.nan)
        fl_rows.append(100 * row["tflops"] / rate if rate else math.nan)
        dbw = datasheet.get("bw_gbps")
        dfl = (datasheet.get("tflops") or {}).get(row["dtype"] if bounds.get(row["kernel"]) == "compute" else "fp32")
        dbw_rows.append(100 * row["gbps"] / dbw if dbw else math.nan)
        dfl_rows.append(100 * row["tflops"] / dfl if dfl else math.nan)
    df["pct_of_peak_bw"], df["pct_of_peak_flops"] = bw_rows, fl_rows
    df["pct_of_datasheet_bw"], df["pct_of_datasheet_flops"] = dbw_rows, dfl_rows

    eligible = (df["status"] == "ok") & (df["check_status"] == "ok") & df["median_us"].gt(0)
    # a case is one pass: a backward row is compared with torch_fused's backward, and is best among backwards
    if "pass" not in df:
        df["pass"] = "forward"
    df["pass"] = df["pass"].astype(object).fillna("").replace("", "forward").astype(str)
    case = ["kernel", "pass", "shape", "dtype", "params"]
    fused_key = df["pass"].map(lambda p: pass_key("torch_fused", p))
    fused = df[eligible & (df["impl_key"] == fused_key)].set_index(case)["median_us"]
    fused_for = df.set_index(case).index.map(lambda k: fused.get(k, math.nan))
    df["speedup_vs_torch_fused"] = np.where(eligible, np.asarray(fused_for, dtype=float) / df["median_us"], math.nan)
    best = df[eligible].groupby(case)["median_us"].transform("min")
    df["is_best"] = False
    df.loc[best.index, "is_best"] = df.loc[best.index, "median_us"] == best
    for key, value in meta.items():
        df[key] = value
    df["_pass"] = df["pass"].map(lambda p: PASSES.index(p) if p in PASSES else len(PASSES))  # forward first
    df = df.sort_values(["kernel", "_pass", "dtype", "params", "impl_key", "numel", "shape"], kind="stable")
    return df.reindex(columns=rows.names())


# ------------------------------------------------------------------ environment
def git_info(root: Path) -> dict:
    """The commit the run's code came from, and whether the tree differed from it.

    ``KERNELLAB_GIT_COMMIT``, when set, wins: whoever shipped a copy of the tree to another
    machine knows its commit, and a ``.git`` that came along can be stale (the device
    machine's copy carried an older ``.git`` than the tree beside it: its HEAD and
    ``git_dirty`` described the wrong commit). Whether that copy was clean is then unknown."""
    told = os.environ.get("KERNELLAB_GIT_COMMIT", "").strip().lower()
    if re.fullmatch(r"[0-9a-f]{7,40}", told):  # full or abbreviated, as ``git log --oneline`` prints it
        return {"git_commit": told, "git_dirty": None}
    if told:
        # a value that names no commit must not let a stale .git speak instead (both GPU sets
        # of one session were recorded against an older commit that way)
        return {"git_commit": None, "git_dirty": None, "git_commit_told": told}

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "--verify", "--quiet", "HEAD")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        # no git program (the container's image), or one that will not answer here: the .git files
        # still name the commit; whether the tree differs from it takes git, so it stays unknown
        return {"git_commit": head_commit(root), "git_dirty": None}
    dirty = git("status", "--porcelain", "--", ".", ":(exclude)results", ":(exclude).staging")
    return {"git_commit": commit, "git_dirty": bool(dirty)}


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def versions() -> dict:
    import torch

    from kernellab.kit import peers

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    try:
        import snakemake

        snakemake_version = snakemake.__version__
    except ImportError:
        snakemake_version = None
    return {
        "torch": torch.__version__,
        "triton": triton_version,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "snakemake": snakemake_version,
        **peers.versions(),  # liger-kernel, quack-kernels: None where not installed
    }


def project_version(project: Path) -> str | None:
    """The project's version: pyproject.toml's ``version`` (None without one), the one place it is
    written; the checkout is what a container runs (its image holds no project code)."""
    import tomllib

    try:
        return tomllib.loads((project / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None


def container(root: Path = Path("/"), project: Path | None = None) -> dict | None:
    """The container this process runs in, or None outside one: ``engine`` from the runtime's mark
    (Apptainer's variables, podman's ``/run/.containerenv``, Docker's ``/.dockerenv``) and ``image``
    from ``KERNELLAB_FLAVOUR``, which the Dockerfile sets: the name its build command gives the image,
    ``kernel-lab:<version>`` or ``kernel-lab:<version>-cpu``, with the version of ``project`` (the
    checkout, by default this one); ``sif``: Apptainer's image file."""
    sif = os.environ.get("APPTAINER_CONTAINER") or os.environ.get("SINGULARITY_CONTAINER")
    engine = ("apptainer" if sif else "podman" if (root / "run" / ".containerenv").exists()
              else "docker" if (root / ".dockerenv").exists() else None)
    flavour = os.environ.get("KERNELLAB_FLAVOUR")
    version = project_version(project or Path(__file__).resolve().parents[2]) if flavour else None
    image = f"kernel-lab:{version}{'' if flavour == 'gpu' else '-' + flavour}" if version else None
    if engine is None and flavour is None:
        return None
    out = {"engine": engine or "unknown", "image": image}
    if sif:
        out["sif"] = sif
    return out


def environment(survey: dict, config: dict, root: Path, run_id: str, command: str) -> dict:
    nv = survey.get("nvml") or {}
    end = time.gmtime()
    return {
        "hardware": survey.get("hardware"),
        "gpu_name": survey.get("device_name") if survey.get("is_gpu") else None,
        "device_name": survey.get("device_name"),
        "is_gpu": survey.get("is_gpu"),
        "sm_count": survey.get("sm_count"),
        "driver": nv.get("driver"),
        **versions(),
        **git_info(root),
        "config_hash": config_hash(config),
        "config": config,
        "command": command,
        "run_id": run_id,
        "mode": (config.get("timing") or {}).get("mode", "cold"),
        "start": survey.get("timestamp"),
        "end": time.strftime("%Y-%m-%dT%H:%M:%SZ", end),
        # from the survey (the run's first GPU job) to this aggregation; timeline.csv has every job
        "wall_s": _seconds_since(survey.get("timestamp"), end),
        "clocks_at_start": survey.get("clocks_before"),
        "platform": platform.platform(),
        "container": container(project=root),
    }


def _seconds_since(stamp, end: time.struct_time) -> float | None:
    """Seconds from an ISO UTC ``stamp`` (the survey's) to ``end``; None without one."""
    import calendar

    try:
        start = calendar.timegm(time.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None
    return float(calendar.timegm(end) - start)


def ladders(families: dict, plans: dict, ptx_index: list[dict]) -> list[dict]:
    """Every ladder of the configured kernels, with its steps' notes and PTX/SASS evidence."""
    evidence: dict = {}
    for entry in ptx_index:
        evidence.setdefault((entry.get("kernel"), entry.get("impl_key")), []).extend(entry.get("evidence") or [])
    out = []
    for name, plan in sorted(plans.items()):
        fam = families[name]
        for ladder, steps in fam.ladders().items():
            keys = set(plan.impl_keys(fam))
            steps = [s for s in steps if s.key in keys]
            if not steps:
                continue
            dtype = plan.ladder_dtype(steps)
            shape = plan.ladder_shape(ladder)
            out.append({
                "kernel": name,
                "ladder": ladder,
                "metric": "tflops" if fam.bound == "compute" else "gbps",
                "shape": "x".join(map(str, shape)) if shape else "",
                "dtype": dtype,
                # PyTorch's fused op of the ladder's pass: a backward ladder beside autograd's backward of it
                "baseline_impl_key": pass_key("torch_fused", steps[0].pass_),
                "steps": [{
                    "impl_key": s.key, "impl": s.impl, "step": s.step, "order": s.order, "idea": s.idea,
                    "prediction": s.prediction, "finding": s.finding,
                    "expect_speedup": list(s.expect_speedup) if s.expect_speedup else None,
                    "expect_pct_of_peak": list(s.expect_pct_of_peak) if s.expect_pct_of_peak else None,
                    "cuda_kernels": list(s.cuda_kernels),
                    "evidence": evidence.get((name, s.key), []),
                } for s in steps],
            })
    return out


# ------------------------------------------------------------------ the aggregate rule
def skipped(config: dict, reg) -> dict[str, str]:
    """``{family: why}`` of the config's families that did not load in ``reg`` (a Registry of the
    run's kernel folders): environment.json's ``skipped_families``, which the report and the run's
    closing summary name."""
    return {k: reg.errors[k] for k in sorted(config["kernels"]) if k in reg.errors}


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


def run(config: dict, stage: str | None, survey_json: str, bench_csvs: list[str], check_csvs: list[str],
        ptx_indexes: list[str], build_json: list[str], out_summary: str, out_ladders: str, out_env: str,
        command: str) -> None:
    """The aggregate rule: the jobs' tables of a staging set into summary.csv, ladders.json and
    environment.json (the families this run does not measure pruned from the set first)."""
    from kernellab.engine.cases import plans
    from kernellab.workflow.assemble import prune_stage
    from kernellab.workflow.pipeline import ROOT, registry_of, target_of

    prune_stage(Path(out_summary).parent, config["kernels"])
    survey = read_json(survey_json)
    env = environment(survey, config, ROOT, run_id=_run_id(survey, config), command=command)
    env["cuda_build"] = build_summary(build_json)
    reg = registry_of(config)
    # a family that did not load: its jobs wrote no row (pipeline.loaded); the set says why
    env["skipped_families"] = skipped(config, reg)
    fams = {k: reg.families[k] for k in config["kernels"] if k in reg.families}
    bounds = {k: f.bound for k, f in fams.items()}
    bench = _read_csvs(bench_csvs)
    check_df = _read_csvs(check_csvs)
    meta = {"hardware": survey.get("hardware"), "run_id": env["run_id"], "torch_version": env["torch"],
            "triton_version": env["triton"], "cuda_version": env["cuda"] or "", "timestamp": env["end"]}
    summary = summarize_run(bench, check_df, survey, bounds, meta)
    write_csv(out_summary, summary)
    # ceilings a case beat, raised to what it reached (the report says which)
    env["ceiling_corrected"] = corrected_ceilings(survey, summary, bounds)["ceiling_corrected"]
    entries = []
    for p in ptx_indexes:
        entries += read_json(p)
    write_json(out_ladders, ladders(fams, plans({**config, "kernels": {k: config["kernels"][k] for k in fams}},
                                               target_of(config)), entries))
    env["cases"] = int(len(summary))
    env["cases_ok"] = int(((summary["status"] == "ok") & (summary["check_status"] == "ok")).sum())
    env["target"] = target_of(config)
    write_json(out_env, env)


def _run_id(survey: dict, config: dict) -> str:
    stamp = (survey.get("timestamp") or "").replace(":", "").replace("-", "")
    return f"{survey.get('hardware')}-{stamp}-{config_hash(config)[:8]}"

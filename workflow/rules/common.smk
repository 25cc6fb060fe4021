# Helpers shared by every rule: config validation, the result set's name, target lists.
import hashlib
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(workflow.basedir).resolve()
# Parsing validates the config and names the jobs: it writes no file and leaves the config and
# the environment as it found them, but for this one variable: each rule's script runs in a
# Python process of its own, which must import the kernellab package (set here, not required
# from the caller: no envvars directive)
os.environ.update(
    PYTHONPATH=os.pathsep.join(
        [str(ROOT)]
        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
)
sys.path.insert(0, str(ROOT))

from kernellab.workflow import config as kl_config  # noqa: E402
from kernellab.engine import cuda_build
from kernellab.workflow import manifest
from kernellab.engine import registry  # noqa: E402
from kernellab.errors import ConfigError  # noqa: E402
from kernellab.engine.hardware import set_names  # noqa: E402
from kernellab.engine.survey import hardware_slug  # noqa: E402

# Parsing reads folder names, ladder.yaml files and source digests; it imports no family (nor
# torch or Triton): the families load when the run starts (check_families) and in its jobs
try:
    kl_config.validate_schema(config)  # defaults filled in; a bad key named in one line
    # what the rules read from here on, never `config`: `only` applied (a run of fewer families
    # than the default config's gets a set of its own), the kernel folders as absolute paths.
    # A cluster job parses the workflow again from the same config files and --config, and so
    # derives the same RUN_CONFIG
    RUN_CONFIG = kl_config.for_run(config, workflow.overwrite_configfiles, os.getcwd())
    kl_config.check_compare(RUN_CONFIG)
    if getattr(workflow.executor_plugin, "name", "") == "slurm":
        from kernellab.workflow.cluster import check_slurm

        check_slurm(RUN_CONFIG["hardware"])
    elif (
        workflow.local_exec
        and not workflow.remote_exec
        and not RUN_CONFIG["hardware"]
        and RUN_CONFIG["target"] == "gpu"
    ):
        from kernellab.engine.runtime import has_gpu

        kl_config.check_target(RUN_CONFIG["target"], has_gpu())
    FOLDERS = registry.family_folders([Path(d) for d in RUN_CONFIG["kernel_dirs"]])
    # the families with an optimization ladder: those whose folder has ladder.yaml steps
    LADDER_KERNELS = [
        k for k in sorted(RUN_CONFIG["kernels"]) if registry.ladder_texts(FOLDERS[k])
    ]
except (ConfigError, registry.FamilyError) as exc:
    raise WorkflowError(f"Invalid configuration: {exc}") from None


def check_families():
    """When a run starts (onstart), before any job: load the run's families and check the config
    against them. A family that does not load is warned of here (its jobs then write no row of
    it, the set is published without it and names it, and the run ends with exit status 1); a
    bad config stops the run.
    """
    reg = registry.load(RUN_CONFIG["kernel_dirs"])
    # said first: when no family of the config loaded, the config error follows
    for name in sorted(RUN_CONFIG["kernels"]):
        if name in reg.errors:
            logger.warning(f"kernel family {name!r} skipped: {reg.errors[name]}")
    try:
        kl_config.check_loaded(RUN_CONFIG, reg)
    except ConfigError as exc:
        raise WorkflowError(f"Invalid configuration: {exc}") from None
    return reg


# The result sets of this run: one per GPU model listed in `hardware` (on a cluster, each
# measured on a node of that model), else this machine's. A set is the {set} wildcard of every
# path, so one command measures every model; its GPU jobs check the model they land on.
SETS = set_names(RUN_CONFIG["hardware"], RUN_CONFIG["label"]) or {
    hardware_slug() + (f"-{RUN_CONFIG['label']}" if RUN_CONFIG["label"] else ""): None
}
KERNELS = sorted(RUN_CONFIG["kernels"])
# the families Nsight Compute profiles: their ladders' steps and their ncu_cases
NCU_KERNELS = [
    k
    for k in KERNELS
    if k in LADDER_KERNELS or RUN_CONFIG["kernels"][k].get("ncu_cases")
]


def compared_sets(wildcards):
    """The sets a set's report compares with: the reference sets of its kind
    (compare.references), and the result sets compare.with names; nothing else."""
    from kernellab.workflow.reference import of_kind

    # the project's folder, wherever the run's working directory is
    refs = (
        RUN_CONFIG["compare"]["references"]
        and ROOT / RUN_CONFIG["compare"]["references"]
    )
    return {
        "references": [str(p) for p in of_kind(wildcards.set, refs)] if refs else [],
        "others": [
            f"{RUN_CONFIG['results']}/{name}"
            for name in RUN_CONFIG["compare"]["with"]
            if name != wildcards.set
        ],
    }


def compared_summaries(wildcards):
    """Their summary.csv files: a report is rendered again when one of them changes."""
    sets = compared_sets(wildcards)
    return [f"{p}/summary.csv" for p in sets["references"] + sets["others"]]


FAMILY_DIRS = {k: FOLDERS[k] for k in KERNELS}
# the families each builds on (kit.builds_on), read from its files
BUILDS_ON = {k: registry.builds_on(FOLDERS[k]) for k in KERNELS}


CUDA_SUFFIXES = (".cu", ".cuh", ".h", ".cpp")


def folder_files(folder):
    """A family folder's files, its tests left out (editing a test reruns nothing)."""
    return sorted(
        str(p)
        for p in Path(folder).rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and not p.name.startswith(("test_", "conftest"))
    )


# the families with CUDA sources, each built as a library of its own (rule build_cuda)
CUDA_KERNELS = [k for k in KERNELS if cuda_build.folder_sources(FAMILY_DIRS[k])]


wildcard_constraints:
    kernel="|".join(KERNELS),
    set="|".join(re.escape(name) for name in SETS),


SCRIPTS = ROOT / "workflow" / "scripts"


def job_code(script, kernels):
    """What a job of ``script`` runs for ``kernels``: their folders, and the kernellab modules
    that the script and those folders import (found by kernellab.workflow.imports, not listed by hand):
    editing the report reruns no measurement, editing the timer every one."""
    from kernellab.workflow.imports import reachable

    # a family's files, and those of the families it builds on (kit.builds_on)
    files = [
        f
        for k in kernels
        for name in [k, *BUILDS_ON[k]]
        for f in folder_files(FOLDERS[name])
    ]
    roots = [SCRIPTS / script] + [f for f in files if f.endswith(".py")]
    return files + reachable(roots)


# the code of each family's jobs of each rule, as one digest each: a job's param, so that a
# change to the code it runs reruns it (Snakemake's params trigger) and parsing writes nothing
KERNEL_CODE = {
    (rule, k): manifest.digest(job_code(f"{rule}.py", [k]))
    for rule in ("measure", "ptx")
    for k in KERNELS
}


def kernel_code(rule):
    """The param function of ``rule``'s code digest: a change to the code its job runs reruns it."""
    return lambda wildcards: KERNEL_CODE[rule, wildcards.kernel]


# what a family's library is built from: its folder's CUDA, the shared headers, setup.py
CUDA_SOURCES = {
    k: manifest.digest(
        [f for f in folder_files(FAMILY_DIRS[k]) if Path(f).suffix in CUDA_SUFFIXES]
        + folder_files(ROOT / "kernels" / "common")
        + [str(ROOT / "kernels" / "setup.py")]
    )
    for k in CUDA_KERNELS
}


def cuda_sources(wildcards):
    """The digest of a family's CUDA sources: a change to them rebuilds its library only."""
    return CUDA_SOURCES[wildcards.kernel]


def family_build(wildcards):
    """A family's build.json ([] for a family without CUDA: nothing to build or wait for)."""
    if wildcards.kernel not in CUDA_SOURCES:
        return []
    return (
        f"{RUN_CONFIG['staging']}/{wildcards.set}/build/{wildcards.kernel}/build.json"
    )


def cuda_builds(kernels):
    """The build.json files of those of ``kernels`` that have CUDA."""
    return per_kernel(
        "build/{kernel}/build.json", [k for k in kernels if k in CUDA_SOURCES]
    )


# the config sections each kind of job reads besides its kernels' own: passed to the job as its
# params (and only these), so a change to any of them reruns it and nothing else can leak in
RUN_KEYS = ("target", "isolate", "timing", "autotune", "check", "bench")


def sorted_keys(value):
    """``value`` with every mapping's keys in order: Snakemake compares params as text, so the
    order of keys in a config file must not look like a change."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def job_config(kernels, extra=()):
    return sorted_keys(
        {
            "kernels": {k: RUN_CONFIG["kernels"][k] for k in kernels},
            # the kernel folders up to the job's families': adding one after them reruns nothing
            "kernel_dirs": kl_config.job_kernel_dirs(
                RUN_CONFIG["kernel_dirs"], [FAMILY_DIRS[k] for k in kernels]
            ),
            **{k: RUN_CONFIG[k] for k in RUN_KEYS + tuple(extra)},
        }
    )


def kernel_job_config(*extra):
    """params of a one-kernel job: its config section and the run's settings."""
    return lambda wildcards: job_config([wildcards.kernel], extra)


# what each family's ncu rows depend on: the code ncu's job runs for it, its CUDA sources and its
# config. The set's one ncu job (one session: its start-up costs seconds of GPU) profiles again
# only the families whose key changed and keeps the others' rows (kernellab.engine.ncu.kept_rows)
NCU_KEYS = {
    k: manifest.digest(job_code("ncu.py", [k]))
    + hashlib.sha256(
        json.dumps(
            [CUDA_SOURCES.get(k, ""), job_config([k], ["ncu"])], sort_keys=True
        ).encode()
    ).hexdigest()
    for k in NCU_KERNELS
}


def ncu_kept(wildcards, output):
    """Where the ncu job keeps each family's rows with its key, beside the set's other caches.
    A function of the output, so Snakemake leaves it out of its params trigger."""
    return str(Path(run_cache(wildcards), "ncu"))


def stage(path):
    return f"{RUN_CONFIG['staging']}/{{set}}/{path}"


def per_kernel(pattern, kernels=None):
    return expand(
        stage(pattern),
        kernel=KERNELS if kernels is None else kernels,
        allow_missing=True,
    )


def run_cache(wildcards):
    """Compiled kernels, autotune choices and Inductor graphs shared by the jobs of one set
    (never between sets: Triton keys its cache by architecture, not by device)."""
    return str(Path(RUN_CONFIG["staging"], f"{wildcards.set}.cache").resolve())


def gpu_model(wildcards):
    """The GPU model a set's jobs ask the cluster for ('' where none is named)."""
    return SETS[wildcards.set] or ""


# a GPU job's resources: one GPU (none on a CPU-only run) of its set's model
GPU = 0 if RUN_CONFIG["target"] == "cpu" else 1
GPU_SLOTS = str(Path(RUN_CONFIG["staging"], ".gpu-slots").resolve())


def job_env(wildcards):
    """What every job sets up before its work (kernellab.workflow.pipeline.job)."""
    return {
        "cache": run_cache(wildcards),
        "slots": GPU_SLOTS,
        "expect_set": wildcards.set if RUN_CONFIG["hardware"] else "",
    }


# the command line of this run, for environment.json (a job's own argv is its script). A job
# that runs on a cluster node parses the workflow again with argv of its own: it takes the
# command from the environment the run's process gave it (run_command_for_cluster_jobs)
RUN_COMMAND = os.environ.get("KERNELLAB_COMMAND") or " ".join(
    ["snakemake"] + sys.argv[1:]
)


def run_command(wildcards, output):
    """The aggregate job's param of RUN_COMMAND. A function of the output, so Snakemake counts it
    as derived and leaves it out of its params trigger: a record of the command, not a reason to
    rerun (the same run with other --cores redoes nothing)."""
    return RUN_COMMAND


def run_command_for_cluster_jobs():
    """The one variable the run's process sets (in onstart, when a real run starts, never while
    parsing): a cluster job is a process of its own that parses the workflow again with argv of
    its own, and the environment its submitter exports is the one way the run's command reaches
    it (its config comes from the same files and --config; its params are its own)."""
    os.environ.setdefault("KERNELLAB_COMMAND", RUN_COMMAND)


# the bytecode of the modules the jobs import (read-only site-packages would make every job and
# worker compile torch._dynamo and _inductor's modules again): beside the staging sets, never in
# a source tree; each job points its interpreter and its workers at it
# (kernellab.workflow.pipeline.logged)
BYTECODE = str(Path(RUN_CONFIG["staging"], ".pycache").resolve())


def bytecode_cache(wildcards, output):
    """Every job's param of BYTECODE. A function of the output, so Snakemake counts it as
    derived and leaves it out of its params trigger: where bytecode lives changes no result.
    """
    return BYTECODE


def take_run_lock():
    """One run at a time per staging folder (kernellab.workflow.runlock), held until this process ends.

    Called first thing in the Snakefile's onstart: Snakemake calls onstart in the main process
    of a run with jobs to do, never in a dry run, --lint or --summary, nor in a job process it
    spawns or a cluster job (both get --no-hooks). Parsing cannot tell these apart: Snakemake
    9.27 sets workflow.dryrun and workflow.executor_plugin after it."""
    from kernellab.workflow.runlock import RunLocked, acquire

    try:
        acquire(RUN_CONFIG["staging"])
    except RunLocked as exc:
        raise WorkflowError(str(exc)) from None

# Helpers shared by every rule: config validation, the result set's name, target lists.
import os
import sys
from pathlib import Path

ROOT = Path(workflow.basedir).resolve()
# each rule's script runs in its own Python process; let it import the kernellab package.
# (it is set here, not required from the caller: no envvars directive)
os.environ.update(
    PYTHONPATH=os.pathsep.join(
        [str(ROOT)]
        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
)
sys.path.insert(0, str(ROOT))

from kernellab import config as kl_config  # noqa: E402
from kernellab import registry  # noqa: E402
from kernellab.errors import ConfigError  # noqa: E402
from kernellab.survey import hardware_slug  # noqa: E402

try:
    kl_config.validate_schema(config)  # defaults filled in; a bad key named in one line
    # the kernel folders as absolute paths, so every job imports the same families
    config["kernel_dirs"] = [
        str(d) for d in registry.kernel_dirs(config["kernel_dirs"], os.getcwd())
    ]
    for _name, _why in registry.load(config["kernel_dirs"]).items():
        logger.warning(f"kernel family {_name!r} skipped: {_why}")
        config["kernels"].pop(_name, None)
    kl_config.check(config)
    if workflow.local_exec and not workflow.remote_exec:
        from kernellab.runtime import has_gpu

        kl_config.check_target(config["target"], has_gpu())
except (ConfigError, registry.FamilyError) as exc:
    raise WorkflowError(f"Invalid configuration: {exc}") from None

SET = hardware_slug() + (f"-{config['label']}" if config["label"] else "")
STAGE = f"{config['staging']}/{SET}"
RESULTS = f"{config['results']}/{SET}"
# the command line of this run, for environment.json (a job's own argv is its script)
os.environ.setdefault("KERNELLAB_COMMAND", " ".join(["snakemake"] + sys.argv[1:]))
# compiled kernels and autotune choices shared by every job of this run (kernellab.runtime)
RUN_CACHE = os.environ.setdefault(
    "KERNELLAB_CACHE", str(Path(f"{STAGE}.cache").resolve())
)
# ... and the bytecode of the modules the jobs import (read-only site-packages would make
# every job and worker compile torch._dynamo and _inductor's modules again); it lands in
# the run's cache, never in a source tree, so it is written even where the environment
# says not to write bytecode
os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(RUN_CACHE, "pycache"))
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
KERNELS = sorted(config["kernels"])
LADDER_KERNELS = [k for k in KERNELS if registry.family(k).ladders()]
OTHER_SETS = sorted(
    p.name
    for p in Path(config["results"]).glob("*")
    if p.is_dir() and p.name != SET and (p / "summary.csv").exists()
)
FAMILY_DIRS = {k: registry.family(k).folder for k in KERNELS}


def folder_files(folder):
    """A family folder's files, its tests left out (editing a test reruns nothing)."""
    return sorted(
        str(p)
        for p in Path(folder).rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and not p.name.startswith(("test_", "conftest"))
    )


# what the extension is built from: every family's folder, the shared headers, setup.py
CUDA_SOURCES = sorted(
    {
        f
        for d in registry.family_folders(
            [Path(d) for d in config["kernel_dirs"]]
        ).values()
        for f in folder_files(d)
        if Path(f).suffix in (".cu", ".cuh", ".h", ".cpp")
    }
    | set(folder_files(ROOT / "kernels" / "common"))
    | {str(ROOT / "kernels" / "setup.py")}
)


wildcard_constraints:
    kernel="|".join(KERNELS),


CORE_CODE = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "kernellab").glob("*.py"))


def kernel_code(wildcards):
    """Everything in the kernel's folder and the harness: a change to either reruns its jobs."""
    return folder_files(FAMILY_DIRS[wildcards.kernel]) + CORE_CODE


# every family's folder and the harness: the inputs of the rules that run all families in one job
ALL_KERNEL_CODE = sorted(
    {f for k in KERNELS for f in folder_files(FAMILY_DIRS[k])} | set(CORE_CODE)
)

# the config sections each kind of job reads besides its kernels' own: passed to the job as its
# params (and only these), so a change to any of them reruns it and nothing else can leak in
RUN_KEYS = ("kernel_dirs", "target", "isolate", "timing", "autotune", "check", "bench")


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
            "kernels": {k: config["kernels"][k] for k in kernels},
            **{k: config[k] for k in RUN_KEYS + tuple(extra)},
        }
    )


def kernel_job_config(*extra):
    """params of a one-kernel job: its config section and the run's settings."""
    return lambda wildcards: job_config([wildcards.kernel], extra)


def stage(path):
    return f"{STAGE}/{path}"


def per_kernel(pattern, kernels=None):
    return expand(stage(pattern), kernel=KERNELS if kernels is None else kernels)

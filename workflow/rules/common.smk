# Helpers shared by every rule: config validation, the result set's name, target lists.
import os
import sys
from pathlib import Path

from snakemake.utils import validate

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

validate(
    config, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"), set_default=True
)

from kernellab import config as kl_config  # noqa: E402
from kernellab import registry  # noqa: E402
from kernellab.errors import ConfigError  # noqa: E402
from kernellab.survey import hardware_slug  # noqa: E402

try:
    kl_config.check(config)
except ConfigError as exc:
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
CUDA_SOURCES = sorted(
    str(p)
    for p in (ROOT / "kernels").rglob("*")
    if p.suffix in (".cu", ".cuh", ".h", ".cpp", ".py")
)


wildcard_constraints:
    kernel="|".join(KERNELS),


CORE_CODE = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "kernellab").glob("*.py"))


def kernel_code(wildcards):
    """The kernel's own module and the harness: a change to either reruns the kernel's jobs."""
    return [
        f"kernellab/ops/{wildcards.kernel}.py",
        "kernellab/ops/_common.py",
    ] + CORE_CODE


# every family's module and the harness: the inputs of the rules that run all families in one job
ALL_KERNEL_CODE = (
    [f"kernellab/ops/{k}.py" for k in KERNELS]
    + ["kernellab/ops/_common.py"]
    + CORE_CODE
)


def kernel_config(wildcards):
    """The kernel's config section: a change reruns its jobs (Snakemake's params trigger)."""
    return config["kernels"][wildcards.kernel]


def stage(path):
    return f"{STAGE}/{path}"


def per_kernel(pattern, kernels=None):
    return expand(stage(pattern), kernel=KERNELS if kernels is None else kernels)

"""A job reruns for the code it runs: a measure job's code stamp holds its family's folder and the
kernellab modules its script and that folder import (kernellab.workflow.imports), not the whole package.
Editing the report reruns no measurement; editing the timer reruns every one."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab.workflow.imports import reachable

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_every_kind_of_kernellab_import_is_followed_and_nothing_else(tmp_path):
    _write(tmp_path, {
        "entry.py": "from kernellab import a\n",
        # a module imports at the top, inside a function, and names an attribute of another
        "kernellab/a.py": "import os\nfrom kernellab.b import helper\n\n\ndef later():\n"
                          "    import kernellab.sub.d\n",
        "kernellab/b.py": "helper = 1\n",
        "kernellab/sub/__init__.py": "",
        "kernellab/sub/d.py": "from .e import y\n",  # relative, inside the package
        "kernellab/sub/e.py": "y = 2\n",
        "kernellab/unused.py": "from kernellab import a\n",
    })
    found = reachable([tmp_path / "entry.py"], tmp_path / "kernellab")
    assert [Path(f).relative_to(tmp_path).as_posix() for f in found] == [
        "kernellab/a.py", "kernellab/b.py", "kernellab/sub/__init__.py", "kernellab/sub/d.py", "kernellab/sub/e.py"]


def test_a_function_brings_the_imports_inside_it_and_its_helpers_not_its_modules_other_functions(tmp_path):
    """``from kernellab.m import f``: f's imports and those of the helpers f names are followed,
    not those of m's other functions; a module imported as a module may run any of them."""
    _write(tmp_path, {
        "entry.py": "from kernellab.m import f\n",
        "kernellab/m.py": "from kernellab.top import T\n\n\ndef f():\n    return helper()\n\n\n"
                      "def helper():\n    from kernellab import used\n\n\ndef other():\n"
                      "    from kernellab import timer\n",
        "kernellab/top.py": "T = 1\n",
        "kernellab/used.py": "",
        "kernellab/timer.py": "",
        "whole.py": "import kernellab.m\n",
    })
    def found(entry):
        return {Path(f).name for f in reachable([tmp_path / entry], tmp_path / "kernellab")}

    assert found("entry.py") == {"m.py", "top.py", "used.py"}
    assert found("whole.py") == {"m.py", "top.py", "used.py", "timer.py"}


def _names(files) -> set[str]:
    return {Path(f).relative_to(ROOT / "kernellab").as_posix() for f in files}


def test_a_measure_job_runs_the_harness_and_the_timer_not_the_report():
    family = sorted(str(p) for p in (ROOT / "kernels" / "gelu").glob("*.py") if not p.name.startswith("test_"))
    code = _names(reachable([SCRIPTS / "measure.py", *family]))
    assert {"workflow/pipeline.py", "engine/harness.py", "engine/timing.py", "engine/registry.py",
            "kit/__init__.py"} <= code
    assert not {n for n in code if n.startswith("report/")}
    assert not code & {"workflow/aggregate.py", "workflow/assemble.py", "workflow/compare.py",
                       "workflow/run_summary.py", "engine/testing.py"}


@pytest.mark.parametrize("script", ["ptx.py", "ncu.py"])
def test_the_other_family_jobs_leave_the_report_and_the_measure_machinery_out(script):
    """Their entries share pipeline.py with ``measure``, whose function imports the timer and
    the harness: a job follows the functions it runs, not the module's others (issue 41 item 10)."""
    code = _names(reachable([SCRIPTS / script]))
    report = ("report/", "workflow/aggregate", "workflow/assemble")
    assert "workflow/pipeline.py" in code and not {n for n in code if n.startswith(report)}
    assert not code & {"engine/timing.py", "engine/harness.py", "engine/autotune.py"}, code


def test_the_aggregate_and_report_jobs_do_reach_their_code():
    assert {"workflow/aggregate.py", "workflow/assemble.py"} <= _names(reachable([SCRIPTS / "aggregate.py"]))
    assert "report/render.py" in _names(reachable([SCRIPTS / "report.py"]))


# ---------------------------------------------------------------- through the workflow itself
TREE = ("Snakefile", "workflow", "kernellab", "kernels", "config", "profiles", "report")


def _copy_tree(tmp_path: Path) -> Path:
    """A copy of the project under ``tmp_path``/tree: edits to it touch no one else."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in TREE:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, tree / name)
    (tree / "reference").symlink_to(ROOT / "reference")
    return tree


def _run(tree: Path, tmp: Path, *args) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "config/test.yaml", *args,
           "--config", f"staging={tmp / 'staging'}", f"results={tmp / 'results'}"]
    return subprocess.run(cmd, cwd=tree, capture_output=True, text=True, timeout=600)


def _jobs(proc) -> list[str]:
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return [line.split()[1].rstrip(":") for line in proc.stdout.splitlines()
            if line.startswith(("rule ", "localrule "))]


@pytest.fixture
def done_tree(tmp_path):
    """A copy of the project whose tiny run (config/test.yaml) has run: its outputs and Snakemake's
    record of each job's params, which holds the job's code digest. Edits to the copy touch no
    one else."""
    tree = _copy_tree(tmp_path)
    run = _run(tree, tmp_path)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    return tree, tmp_path


# a Snakefile that parses the project's and records what the parse did to the environment and
# the config (written after the parse, outside the staging and results folders)
PROBE = """import json, os
_env, _config = dict(os.environ), json.loads(json.dumps(config))
include: "Snakefile"
with open(os.environ["PROBE_OUT"], "w") as _fh:
    json.dump({"env": [_env, dict(os.environ)], "config": [_config, config]}, _fh)
"""


def _files(tree: Path) -> set[str]:
    return {p.relative_to(tree).as_posix() for p in tree.rglob("*")
            if not {".snakemake", "__pycache__"} & set(p.relative_to(tree).parts)}


def test_parsing_the_workflow_writes_nothing_and_leaves_environment_and_config_alone(tmp_path):
    """A dry run validates the config and names the jobs: no staging or results folder appears
    and the tree gains no file (the code digests are params, not stamp files; Snakemake's own
    .snakemake and Python's bytecode aside). The parse leaves os.environ as it found it but for
    PYTHONPATH (and the engine's runtime.setup), and the config but for the schema's defaults
    (the run's narrowed config is a name of its own, RUN_CONFIG)."""
    from kernellab.workflow import config as kl_config

    tree = _copy_tree(tmp_path)
    (tree / "probe.smk").write_text(PROBE)
    before = _files(tree)
    out = tmp_path / "probe.json"
    env = {**os.environ, "PROBE_OUT": str(out), "KERNELLAB_PROBE": "kept"}
    # what this test process set up (conftest's runtime.setup) or a run sets: the parse must not
    for name in ("KERNELLAB_COMMAND", "PYTHONPYCACHEPREFIX", "PYTORCH_NVML_BASED_CUDA_CHECK", "TRITON_INTERPRET",
                 "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_AUTOTUNING"):
        env.pop(name, None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-s", "probe.smk", "--cores", "1",
                           "--configfile", "config/test.yaml", "--config", f"staging={tmp_path / 'staging'}",
                           f"results={tmp_path / 'results'}", "only=[gelu]", "--", "all"],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "measure" in proc.stdout
    assert not (tmp_path / "staging").exists() and not (tmp_path / "results").exists()
    assert _files(tree) == before
    probe = json.loads(out.read_text())
    env_before, env_after = probe["env"]
    changed = {k for k in env_before.keys() | env_after.keys() if env_before.get(k) != env_after.get(k)}
    # besides PYTHONPATH, only what loading the families needs in this process: runtime.setup's
    # Triton mode (before Triton is imported) and has_gpu's NVML check; every job sets the same itself
    assert changed <= {"PYTHONPATH", "TRITON_INTERPRET", "PYTORCH_NVML_BASED_CUDA_CHECK"}, changed
    assert env_after["PYTHONPATH"].split(os.pathsep)[0] == str(tree)
    # `only` narrowed the run, not the config: validation's defaults are all the parse added
    config_before, config_after = probe["config"]
    assert config_after == json.loads(json.dumps(kl_config.validate_schema(config_before)))
    assert set(config_after["kernels"]) == {"gelu", "vector_add"} and config_after["label"] == ""


@pytest.mark.slow
def test_editing_the_report_reruns_no_measurement_and_the_timer_every_one_and_no_ptx_job(done_tree):
    tree, tmp = done_tree
    with open(tree / "kernellab" / "report" / "fmt.py", "a") as fh:
        fh.write("\n# an edit of the report\n")
    jobs = _jobs(_run(tree, tmp, "-n"))
    assert not {"measure", "profile", "ptx", "ncu"} & set(jobs), jobs

    with open(tree / "kernellab" / "engine" / "timing.py", "a") as fh:
        fh.write("\n# an edit of the timer\n")
    proc = _run(tree, tmp, "-n")
    jobs = _jobs(proc)
    assert jobs.count("measure") == 2, jobs  # config/test.yaml's two families, each for its code digest
    assert proc.stdout.count("Params have changed since last execution") >= 2, proc.stdout[-3000:]
    # the ptx jobs cross-compile and time nothing (issue 41 item 10)
    kit = _names(reachable([ROOT / "kernellab" / "kit" / "__init__.py"]))
    if "engine/timing.py" in kit:
        pytest.skip("the kit still imports the engine's timer (autotune's bench_config: issue 46)")
    # no ptx job at all; ncu runs the configs measure tunes (its autotune table is its input), so it
    # follows it, but not for its own code: only the measure jobs' params changed
    assert "ptx" not in jobs, jobs
    assert proc.stdout.count("Params have changed since last execution") == jobs.count("measure"), proc.stdout[-3000:]

"""What a run measures and where it goes: a set holds its own config's families only, a config
of some families gets the default settings, `only=` narrows from the command line, and adding
(or removing) a family reruns only that family's jobs."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kernellab.engine import cuda_ext
from kernellab.errors import BuildError, ConfigError, Unavailable
from kernellab.workflow import aggregate, assemble
from kernellab.workflow import config as kl_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "my-kernels" / "silu"
TINY = {"dtypes": ["fp32"], "shapes": [4099], "check_shapes": [1], "profile_shape": 4099,
        "cpu_shapes": [4099], "cpu_check_shapes": [1], "cpu_profile_shape": 4099}


def _validated(config: dict) -> dict:
    return kl_config.validate_schema(config)


# ---------------------------------------------------------------- settings: one source of truth
def test_a_config_of_one_family_gets_the_default_configs_settings():
    default = _validated(yaml.safe_load(kl_config.DEFAULT_CONFIG.read_text()))
    mine = _validated({"kernels": {"gelu": TINY}})
    for key in set(default) | set(mine):
        if key != "kernels":
            assert mine.get(key) == default.get(key), key
    assert mine["timing"]["budget_s"] == default["timing"]["budget_s"] == 0.06


def test_a_setting_the_config_gives_is_kept():
    mine = _validated({"kernels": {"gelu": TINY}, "timing": {"budget_s": 0.5}})
    assert mine["timing"]["budget_s"] == 0.5 and mine["timing"]["warmup_s"] == 0.02


# ---------------------------------------------------------------- narrowing and the set's name
def _default():
    return _validated(yaml.safe_load(kl_config.DEFAULT_CONFIG.read_text()))


def test_the_default_config_names_the_set_after_the_hardware_alone():
    assert kl_config.narrow(_default())["label"] == ""


def test_only_keeps_the_named_families_in_a_set_of_their_own():
    config = _default()
    config["only"] = ["softmax", "gelu"]
    kl_config.narrow(config)
    assert list(config["kernels"]) == ["gelu", "softmax"] and config["label"] == "gelu-softmax"


def test_only_names_an_unknown_family_and_the_known_ones():
    config = _default()
    config["only"] = ["mine"]
    with pytest.raises(ConfigError, match=r"only: 'mine' not among the config's kernels \(attention, dropout, gelu"):
        kl_config.narrow(config)


def test_a_config_file_of_some_families_names_the_set_after_the_file(tmp_path):
    config = _validated({"kernels": {"gelu": TINY}})
    assert kl_config.narrow(config, [str(tmp_path / "My_Config.yaml")])["label"] == "my-config"
    # the same file with one more family: the same set, so only the new family's jobs run
    config = _validated({"kernels": {"gelu": TINY, "vector_add": TINY}})
    assert kl_config.narrow(config, [str(tmp_path / "My_Config.yaml")])["label"] == "my-config"


def test_yours_with_ours_is_a_set_of_its_own(tmp_path):
    """Issue 41: ours with yours was the plain run's set (results/<hw>/), and each run replaced
    the other's; it is named after your config file (or your families), apart from yours alone."""
    config = _default()
    config["kernels"]["silu"] = TINY
    with_ours = kl_config.narrow(config, [str(kl_config.DEFAULT_CONFIG), str(tmp_path / "mine.yaml")])["label"]
    assert with_ours == "mine-and-ours"
    alone = kl_config.narrow(_validated({"kernels": {"silu": TINY}}), [str(tmp_path / "mine.yaml")])["label"]
    assert alone == "mine" and kl_config.narrow(_default())["label"] == ""
    config = _default()
    config["kernels"]["silu"] = TINY  # one file listing ours and yours
    assert kl_config.narrow(config)["label"] == "silu-and-ours"


def test_an_explicit_label_wins_and_a_long_one_is_shortened():
    config = _validated({"kernels": {"gelu": TINY}, "label": "run2"})
    assert kl_config.narrow(config)["label"] == "run2"
    config = _validated({"kernels": {f"family_number_{i}": TINY for i in range(9)}})
    label = kl_config.narrow(config)["label"]
    assert len(label) <= kl_config.LABEL_MAX and re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{8}", label), label


def test_a_list_of_kernels_is_refused_with_how_to_pick_some():
    with pytest.raises(ConfigError, match=r"--config only=\[silu\]"):
        _validated({"kernels": ["silu"]})


def _dry(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_only_from_the_command_line_publishes_a_set_of_its_own(tmp_path):
    proc = _dry(tmp_path, "--config", "only=[gelu]", f"staging={tmp_path / 's'}", f"results={tmp_path / 'r'}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    published = set(re.findall(rf"{re.escape(str(tmp_path / 'r'))}/([^/\s]+)/summary.csv", proc.stdout))
    assert len(published) == 1 and published.pop().endswith("-gelu")
    assert set(_jobs(proc.stdout)["measure"]) == {"gelu"}
    proc = _dry(tmp_path, "--config", "kernels=[gelu]")
    assert proc.returncode != 0 and "--config only=[gelu]" in proc.stdout + proc.stderr


def test_job_kernel_dirs_end_at_the_jobs_families():
    dirs = ["/a/kernels", "/b/mine", "/c/more"]
    assert kl_config.job_kernel_dirs(dirs, ["/a/kernels/gelu"]) == ["/a/kernels"]
    assert kl_config.job_kernel_dirs(dirs, ["/a/kernels/gelu", "/b/mine/silu"]) == dirs[:2]


# ---------------------------------------------------------------- staging: nothing stale
def test_prune_stage_removes_the_files_of_families_the_run_does_not_measure(tmp_path):
    files = {"bench/{}.csv", "bench/{}.samples.json.gz", "check/{}.csv", "autotune/{}.csv", "profile/{}.csv",
             "profile/{}/x.trace.json.gz", "ptx/{}/index.json", "ncu/{}.csv", "build/{}/build.json",
             "logs/measure/{}.log", "report-{}.md"}
    for family in ("gelu", "silu"):
        for f in files:
            (tmp_path / f.format(family)).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / f.format(family)).write_text("x")
    for f in ("build/resources.csv", "summary.csv", "report.md"):
        (tmp_path / f).write_text("x")
    assert assemble.prune_stage(tmp_path, ["gelu"]) == ["silu"]
    left = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()}
    assert left == {f.format("gelu") for f in files} | {"build/resources.csv", "summary.csv", "report.md"}


# ---------------------------------------------------------------- one CUDA library per family
def _build(tmp: Path, family: str, **info) -> str:
    path = tmp / "build" / family / "build.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"family": family, "library": None, **info}))
    return str(path)


def test_each_family_loads_its_own_build(tmp_path):
    builds = [_build(tmp_path, "gelu", status="unavailable", reason="no nvcc here"),
              _build(tmp_path, "bad", status="unavailable", reason="no family with CUDA sources compiles",
                     families_failed={"bad": "bad/bad.cu does not compile: error"})]
    try:
        cuda_ext.configure(builds)
        with pytest.raises(Unavailable, match="no nvcc here"):
            cuda_ext.ops("gelu")
        with pytest.raises(BuildError, match="bad.cu does not compile"):
            cuda_ext.ops("bad")
        with pytest.raises(Unavailable, match="'softmax' has no CUDA build"):
            cuda_ext.ops("softmax")
    finally:
        cuda_ext.configure(None)
    summary = aggregate.build_summary(builds)
    assert summary["status"] == "unavailable" and summary["families"] == {"bad": "unavailable", "gelu": "unavailable"}
    assert "gelu: no nvcc here" in summary["reason"]


# ---------------------------------------------------------------- adding a family reruns only it
def _jobs(dry_run_output: str) -> dict[str, list[str]]:
    """rule -> the kernel wildcard of each of its jobs ('' for a job without one) in a dry run."""
    jobs: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", dry_run_output):
        m = re.match(r"(?:local)?rule (\w+):", block.strip())
        if m:
            kernel = re.search(r"wildcards:.*\bkernel=(\w+)", block)
            jobs.setdefault(m.group(1), []).append(kernel.group(1) if kernel else "")
    return jobs


@pytest.mark.slow
def test_adding_a_family_runs_its_jobs_only_and_removing_it_reruns_no_measurement(tmp_path):
    mine = tmp_path / "my-kernels"
    shutil.copytree(EXAMPLE, mine / "silu", ignore=shutil.ignore_patterns("__pycache__"))
    config = {"kernel_dirs": [str(ROOT / "kernels")], "kernels": {"vector_add": TINY},
              "timing": {"min_samples": 3, "budget_s": 0.02}, "autotune": {"budget_s": 0.01},
              "staging": str(tmp_path / "staging"), "results": str(tmp_path / "results")}
    path = tmp_path / "mine.yaml"

    def snakemake(cfg: dict, *args: str) -> subprocess.CompletedProcess:
        path.write_text(yaml.safe_dump(cfg))
        return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", str(path), *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=1500)

    def ran(proc):
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        return proc

    ran(snakemake(config))
    with_silu = {**config, "kernel_dirs": [str(ROOT / "kernels"), str(mine)],
                 "kernels": {"vector_add": TINY, "silu": TINY}}
    jobs = _jobs(ran(snakemake(with_silu, "-n")).stdout)
    for rule in ("build_cuda", "measure", "ptx"):
        assert jobs[rule] == ["silu"], jobs
    # the rest: the set's own jobs, and ncu's one session for every family (a no-op without a GPU)
    assert set(jobs) - {"build_cuda", "measure", "ptx"} <= {"cuda_resources", "ncu", "aggregate",
                                                                         "report", "publish", "all"}, jobs

    ran(snakemake(with_silu))
    (out,) = (tmp_path / "results").iterdir()
    assert out.name.endswith("-mine")  # the config file's set, the same with and without silu
    assert set(pd.read_csv(out / "summary.csv")["kernel"]) == {"silu", "vector_add"}

    # silu removed: no measurement and no build again, and nothing of silu left in the set
    jobs = _jobs(ran(snakemake(config, "-n")).stdout)
    assert not {"survey", "build_cuda", "measure", "ptx"} & set(jobs), jobs
    ran(snakemake(config))
    for where in (out, tmp_path / "staging" / out.name):
        stale = [str(p) for p in where.rglob("*silu*")]
        assert not stale, stale
    assert set(pd.read_csv(out / "summary.csv")["kernel"]) == {"vector_add"}

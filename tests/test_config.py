"""Bad configurations are rejected before any job runs, with the key and value named."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kernellab import config as kl_config
from kernellab import registry

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())


def _with(path: str, value):
    """A copy of the test config with ``path`` (dotted) set to ``value`` (None deletes)."""
    cfg = copy.deepcopy(BASE)
    keys = path.split(".")
    node = cfg
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    if value is None:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = value
    return cfg


def _validate(cfg):
    kl_config.validate_schema(cfg)
    kl_config.check(cfg)


BAD = [
    # (id, config, text the message must contain)
    ("unknown-kernel", _with("kernels.gelux", {"dtypes": ["fp32"], "shapes": [1024]}), "gelux"),
    ("unknown-impl", _with("kernels.gelu.impls", ["cuda@nope"]), "cuda@nope"),
    ("unknown-dtype", _with("kernels.gelu.dtypes", ["fp64"]), "fp64"),
    ("dtype-not-supported", _with("kernels.vector_add.dtypes", ["tf32"]), "tf32"),
    ("zero-size", _with("kernels.gelu.shapes", [0]), "0"),
    ("negative-size", _with("kernels.gelu.shapes", [-5]), "-5"),
    ("non-integer-size", _with("kernels.gelu.shapes", [3.5]), "3.5"),
    ("non-numeric-size", _with("kernels.gelu.shapes", ["abc"]), "abc"),
    ("zero-dimension", _with("kernels.gelu.cpu_shapes", ["4096x0"]), "4096x0"),
    ("wrong-rank", _with("kernels.vector_add.shapes", ["64x64"]), "64x64"),
    ("wrong-type-budget", _with("timing.budget_s", "fast"), "fast"),
    ("empty-dtypes", _with("kernels.gelu.dtypes", []), "dtypes"),
    ("empty-shapes", _with("kernels.gelu.shapes", []), "shapes"),
    ("unknown-top-level-key", _with("kernals", {}), "kernals"),
    ("unknown-kernel-key", _with("kernels.gelu.shape", [1024]), "shape"),
    ("duplicate-case", _with("kernels.gelu.shapes", [4099, "4099"]), "duplicate"),
    ("unknown-param", _with("kernels.gelu.params", {"p": [0.1]}), "'p'"),
    ("bad-timing-mode", _with("timing.mode", "hot"), "hot"),
    ("too-few-seeds", _with("check.seeds", [0]), "seeds"),
    ("duplicate-seeds", _with("check.seeds", [0, 0, 1]), "seeds"),
    ("no-kernels", _with("kernels", {}), "kernels"),
    ("min-over-max-samples", _with("timing.min_samples", 5000), "min_samples"),
    ("empty-impls", _with("kernels.gelu.impls", []), "impls"),
    ("bad-label", _with("label", "my run"), "my run"),
    ("isolate-not-bool", _with("isolate", "yes"), "yes"),
    ("negative-threshold", _with("compare.threshold", -1), "-1"),
    ("shape-wrong-type", _with("kernels.gelu.shapes", [[1024]]), "1024"),
    ("missing-dtypes", _with("kernels.gelu.dtypes", None), "dtypes"),
    ("impl-dtype-not-run", _with("kernels.gelu.impl_dtypes", {"triton": ["fp16"]}), "fp16"),
    ("impl-dtypes-unknown-impl", _with("kernels.gelu.impl_dtypes", {"nope": ["fp32"]}), "nope"),
]


def test_impl_dtypes_limit_an_implementation():
    from kernellab.cases import kernel_plan

    fam = registry.family("matmul")
    plan = kernel_plan("matmul", {"dtypes": ["fp16", "bf16", "fp32"], "shapes": ["64x64x64"],
                                  "impl_dtypes": {"compiled_max_autotune": ["bf16"]}}, "gpu")
    assert {c.dtype for c in plan.cases(fam, fam.impls["compiled_max_autotune"])} == {"bf16"}
    assert {c.dtype for c in plan.cases(fam, fam.impls["compiled"])} == {"fp16", "bf16", "fp32"}


@pytest.mark.parametrize("cfg,needle", [(c, n) for _, c, n in BAD], ids=[i for i, _, _ in BAD])
def test_bad_config_is_rejected_with_the_key_or_value_named(cfg, needle):
    with pytest.raises(Exception) as info:
        _validate(cfg)
    assert needle in str(info.value)


def test_at_least_twenty_bad_configs():
    assert len(BAD) >= 20


@pytest.mark.parametrize("p", [1.0, -0.1, 1.5])
def test_dropout_p_outside_unit_interval(p):
    if "dropout" not in registry.families():
        pytest.skip("dropout family not registered")
    cfg = _with("kernels.dropout", {"dtypes": ["fp32"], "shapes": [4096], "params": {"p": [p]}})
    with pytest.raises(Exception, match="p"):
        _validate(cfg)


def test_shipped_configs_are_valid():
    for name in ("config.yaml", "test.yaml"):
        kl_config.load(ROOT / "config" / name)


def test_snakemake_rejects_a_bad_config_before_any_job(tmp_path):
    """The Snakefile validates at parse time: a dry run fails and names the problem."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_with("kernels.gelu.dtypes", ["fp64"])))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(bad),
                           "--directory", str(ROOT)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode != 0
    assert "fp64" in proc.stdout + proc.stderr

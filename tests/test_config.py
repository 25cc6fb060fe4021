"""Bad configurations are rejected before any job runs, with the key and value named."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kernellab.engine import registry
from kernellab.errors import ConfigError
from kernellab.workflow import config as kl_config

REGISTRY = registry.load()  # the families of the default kernel folders

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
    kl_config.check(cfg, REGISTRY.families)


def _example_kernel() -> str:
    """A kernel of the test config to break: vectors, no parameters, a Triton implementation, no
    TF32 (picked from the registry)."""
    for name in BASE["kernels"]:
        fam = REGISTRY.families.get(name)
        if (fam and fam.shape_rank == (1,) and not fam.params and "tf32" not in fam.dtypes
                and "triton" in fam.impls):
            return name
    raise AssertionError("config/test.yaml has no kernel the bad-config tests can break")


K = _example_kernel()
BAD = [
    # (id, config, text the message must contain)
    ("unknown-kernel", _with(f"kernels.{K}x", {"dtypes": ["fp32"], "shapes": [1024]}), f"{K}x"),
    ("unknown-impl", _with(f"kernels.{K}.impls", ["cuda@nope"]), "cuda@nope"),
    ("unknown-dtype", _with(f"kernels.{K}.dtypes", ["fp64"]), "fp64"),
    ("dtype-not-supported", _with(f"kernels.{K}.dtypes", ["tf32"]), "tf32"),
    ("zero-size", _with(f"kernels.{K}.shapes", [0]), "0"),
    ("negative-size", _with(f"kernels.{K}.shapes", [-5]), "-5"),
    ("non-integer-size", _with(f"kernels.{K}.shapes", [3.5]), "3.5"),
    ("non-numeric-size", _with(f"kernels.{K}.shapes", ["abc"]), "abc"),
    ("zero-dimension", _with(f"kernels.{K}.cpu_shapes", ["4096x0"]), "4096x0"),
    ("wrong-rank", _with(f"kernels.{K}.shapes", ["64x64"]), "64x64"),
    ("wrong-type-budget", _with("timing.budget_s", "fast"), "fast"),
    ("empty-dtypes", _with(f"kernels.{K}.dtypes", []), "dtypes"),
    ("empty-shapes", _with(f"kernels.{K}.shapes", []), "shapes"),
    ("unknown-top-level-key", _with("kernals", {}), "kernals"),
    ("unknown-kernel-key", _with(f"kernels.{K}.shape", [1024]), "shape"),
    ("duplicate-case", _with(f"kernels.{K}.shapes", [4099, "4099"]), "duplicate"),
    ("unknown-param", _with(f"kernels.{K}.params", {"p": [0.1]}), "'p'"),
    ("bad-timing-mode", _with("timing.mode", "hot"), "hot"),
    ("too-few-seeds", _with("check.seeds", [0]), "seeds"),
    ("duplicate-seeds", _with("check.seeds", [0, 0, 1]), "seeds"),
    ("no-kernels", _with("kernels", {}), "kernels"),
    ("min-over-max-samples", _with("timing.min_samples", 5000), "min_samples"),
    ("empty-impls", _with(f"kernels.{K}.impls", []), "impls"),
    ("bad-label", _with("label", "my run"), "my run"),
    ("isolate-not-bool", _with("isolate", "maybe"), "maybe"),
    ("negative-threshold", _with("compare.threshold", -1), "-1"),
    ("shape-wrong-type", _with(f"kernels.{K}.shapes", [[1024]]), "1024"),
    ("missing-dtypes", _with(f"kernels.{K}.dtypes", None), "dtypes"),
    ("impl-dtype-not-run", _with(f"kernels.{K}.impl_dtypes", {"triton": ["fp16"]}), "fp16"),
    ("impl-dtypes-unknown-impl", _with(f"kernels.{K}.impl_dtypes", {"nope": ["fp32"]}), "nope"),
    ("ladder-shape-unknown-ladder", _with(f"kernels.{K}.ladder_shapes", {"no_such_ladder": 4096}),
     "no_such_ladder"),
    ("ladder-shape-bad-shape", _with(f"kernels.{K}.ladder_shapes", {"no_such_ladder": "abc"}), "abc"),
    ("ncu-case-unknown-impl", _with(f"kernels.{K}.ncu_cases", [{"impl": "cuda@nope"}]), "cuda@nope"),
    ("ncu-case-wrong-rank", _with(f"kernels.{K}.ncu_cases", [{"impl": "triton", "shape": "64x64"}]), "ncu_cases[0]"),
    ("ncu-case-dtype-not-run", _with(f"kernels.{K}.ncu_cases", [{"impl": "triton", "dtype": "fp16"}]), "fp16"),
    ("ncu-case-duplicate", _with(f"kernels.{K}.ncu_cases", [{"impl": "triton"}, {"impl": "triton"}]), "duplicate"),
    ("ncu-case-no-impl", _with(f"kernels.{K}.ncu_cases", [{"shape": 4099}]), "impl"),
]


def test_ladder_shape_and_dtype():
    """A ladder is read at its own shape when the config gives one, else at the profile shape;
    at fp32 when every step takes it, else at the first dtype all its steps take."""
    from kernellab.engine.cases import kernel_plan

    fam = next(f for _, f in sorted(REGISTRY.families.items()) if len(f.ladders()) >= 2)
    first, second = list(fam.ladders())[:2]
    shape = "x".join(["64"] * fam.shape_rank[0])
    other = "x".join(["32"] * fam.shape_rank[0])
    plan = kernel_plan(fam.name, {"dtypes": list(fam.dtypes), "shapes": [shape, other], "profile_shape": shape,
                                  "ladder_shapes": {second: other}}, "gpu")
    assert plan.ladder_shape(first) == tuple([64] * fam.shape_rank[0])
    assert plan.ladder_shape(second) == tuple([32] * fam.shape_rank[0])
    for steps in fam.ladders().values():
        dtype = plan.ladder_dtype(steps)
        assert all(s.supports(dtype) for s in steps)
        if all(s.supports("fp32") for s in steps) and "fp32" in fam.dtypes:
            assert dtype == "fp32"


def test_ncu_cases_default_to_the_profile_shape_and_fp32():
    from kernellab.engine.cases import NcuCase, kernel_plan

    fam = REGISTRY.family(K)
    plan = kernel_plan(K, {"dtypes": ["bf16", "fp32"], "shapes": [4099, 8192], "profile_shape": 8192,
                           "ncu_cases": [{"impl": "triton"}, {"impl": "triton", "shape": 4099, "dtype": "bf16"}]},
                       "gpu")
    assert "triton" in fam.impls
    assert plan.ncu_cases == [NcuCase("triton", (8192,), "fp32"), NcuCase("triton", (4099,), "bf16")]


def test_ncu_case_without_dtype_is_refused_when_its_impl_does_not_run_the_default():
    """A case without a dtype is read at fp32 (else the kernel's first dtype): an implementation
    that does not run that is refused before the run, named with the dtypes it does run."""
    from kernellab.engine.cases import default_dtype

    fam, key = next((f, k) for _, f in sorted(REGISTRY.families.items()) for k, i in f.impls.items()
                    if i.dtypes and not i.supports(default_dtype(list(f.dtypes))))
    cfg = copy.deepcopy(BASE)
    cfg["kernels"] = {fam.name: {"dtypes": list(fam.dtypes), "shapes": ["x".join(["64"] * fam.shape_rank[0])],
                                 "ncu_cases": [{"impl": key}]}}
    kl_config.validate_schema(cfg)
    with pytest.raises(kl_config.ConfigError, match=rf"ncu_cases\[0\]: {key} does not run"):
        kl_config.check(cfg, REGISTRY.families)
    cfg["kernels"][fam.name]["ncu_cases"] = [{"impl": key, "dtype": fam.impls[key].dtypes[0]}]
    kl_config.check(cfg, REGISTRY.families)


def test_impl_dtypes_limit_an_implementation():
    from kernellab.engine.cases import kernel_plan

    # a family with several dtypes and two implementations that support them all, from the registry
    fam, limited, other = next((f, *keys) for _, f in sorted(REGISTRY.families.items()) if len(f.dtypes) >= 2
                               for keys in [[k for k, i in f.impls.items() if i.dtypes is None][:2]] if len(keys) == 2)
    shape = 64 if fam.shape_rank[0] == 1 else "x".join(["64"] * fam.shape_rank[0])
    plan = kernel_plan(fam.name, {"dtypes": list(fam.dtypes), "shapes": [shape],
                                  "impl_dtypes": {limited: [fam.dtypes[-1]]}}, "gpu")
    assert {c.dtype for c in plan.cases(fam, fam.impls[limited])} == {fam.dtypes[-1]}
    assert {c.dtype for c in plan.cases(fam, fam.impls[other])} == set(fam.dtypes)


@pytest.mark.parametrize("cfg,needle", [(c, n) for _, c, n in BAD], ids=[i for i, _, _ in BAD])
def test_bad_config_is_rejected_with_the_key_or_value_named(cfg, needle):
    with pytest.raises(Exception) as info:
        _validate(cfg)
    assert needle in str(info.value)


def test_at_least_twenty_bad_configs():
    assert len(BAD) >= 20


RANGED = [(name, param, lo, hi) for name, fam in sorted(REGISTRY.families.items())
          for param, (lo, hi) in fam.param_ranges.items()]


@pytest.mark.parametrize("where", ["at_high", "below", "above"])
@pytest.mark.parametrize("name,param,lo,hi", RANGED, ids=[f"{n}-{p}" for n, p, _, _ in RANGED])
def test_param_outside_its_range(name, param, lo, hi, where):
    """A family's parameter outside its [lo, hi) range is rejected, naming the parameter."""
    value = {"at_high": hi, "below": lo - 0.1, "above": hi + 0.5}[where]
    fam = REGISTRY.family(name)
    shape = 4096 if fam.shape_rank[0] == 1 else "x".join(["4096"] * fam.shape_rank[0])
    cfg = _with(f"kernels.{name}", {"dtypes": [fam.dtypes[0]], "shapes": [shape], "params": {param: [value]}})
    with pytest.raises(Exception, match=param):
        _validate(cfg)


def test_shipped_configs_are_valid():
    for name in ("config.yaml", "test.yaml"):
        kl_config.load(ROOT / "config" / name, REGISTRY.families)


def test_snakemake_rejects_a_bad_config_before_any_job(tmp_path):
    """The Snakefile validates at parse time: a dry run fails and names the problem."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_with(f"kernels.{K}.dtypes", ["fp64"])))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(bad),
                           "--directory", str(ROOT)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode != 0
    assert "fp64" in proc.stdout + proc.stderr


@pytest.mark.parametrize("text, named", [
    ("kernels:\n  gelu: {dtypes: [fp32\n  x: 1\n",
     "line 3, column 4: not valid YAML: expected ',' or ']', but got ':' (while parsing a flow sequence at line 2, "
     "column 18)"),
    ("kernels:\n\tgelu: {}\n", "line 2, column 1: not valid YAML: found character '\\t' that cannot start any token"),
    ("- gelu\n", "a config file maps keys to values; this one holds a list"),
])
def test_a_malformed_config_file_is_named_with_the_yaml_errors_line_and_column(tmp_path, text, named):
    """Snakemake reads --configfile before the workflow, with a message that names neither file nor
    line: the check the README gives for it names both."""
    bad = tmp_path / "my-config.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError) as err:
        kl_config.load(bad, REGISTRY.families)
    assert str(err.value) == f"{bad}{',' if 'line' in named else ':'} {named}"
    proc = subprocess.run([sys.executable, "-m", "kernellab.workflow.config", str(bad), "config/test.yaml"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1 and proc.stderr.strip() == str(err.value) and proc.stdout == "config/test.yaml: ok\n"


def test_a_run_whose_only_family_fails_to_load_says_so(tmp_path):
    """Not 'the config lists no kernel to run': the family it lists is named with its load error."""
    from kernellab.engine.testing import in_fresh_interpreter

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "__init__.py").write_text("FAMILY = (\n")
    code = f"""
import json
from kernellab.errors import ConfigError
from kernellab.workflow import config as kl_config
cfg = kl_config.validate_schema({{"kernel_dirs": [{str(tmp_path)!r}],
                                 "kernels": {{"mine": {{"dtypes": ["fp32"], "shapes": [1024]}}}}}})
from kernellab.engine import registry
run = kl_config.for_run(cfg, (), {str(tmp_path)!r})
try:
    kl_config.check_loaded(run, registry.load(run["kernel_dirs"]))
    print(json.dumps(""))
except ConfigError as exc:
    print(json.dumps(str(exc)))
"""
    message = in_fresh_interpreter(code, {"PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout_s=120)
    assert message.startswith("kernels: no family the config lists can run: 'mine' failed to load: "), message
    assert f"{tmp_path / 'mine' / '__init__.py'}:1" in message and "lists no kernel" not in message, message

"""A user's own kernel folder, outside the repository, measured exactly like ours: the README's
"Add your own kernel" walk-through (docs/examples/my-kernels) run through the tiny CPU config,
with two broken families beside it that must not take it down."""

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kernellab.engine import cuda_build, registry
from kernellab.engine.cases import Case
from kernellab.engine.harness import check_impl
from kernellab.engine.testing import in_fresh_interpreter

REGISTRY = registry.load()  # the families of the default kernel folders

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "my-kernels"
TINY = {"dtypes": ["fp32", "bf16"], "shapes": [4099], "check_shapes": [1], "profile_shape": 4099,
        "cpu_shapes": [4099], "cpu_check_shapes": [1], "cpu_profile_shape": 4099}

# a family whose definition is incomplete: Family() without a reference
NO_REFERENCE = '''
from kernellab.kit import Family

FAMILY = Family(title="Broken", bound="memory", dtypes=("fp32",),
                make_inputs=lambda shape, dtype, device, seed: (), bytes_moved=len, flops=len)
'''
# a family whose CUDA source does not compile, with a torch implementation that works
BAD_CUDA = '''
import torch

from kernellab.kit import Family, cuda_op, elementwise_bytes, numel, randn

FAMILY = Family(
    title="A family with a CUDA typo", bound="memory", dtypes=("fp32",),
    make_inputs=lambda shape, dtype, device, seed: (randn(shape, dtype, device, seed),),
    reference=lambda x: x * 2, bytes_moved=elementwise_bytes(1), flops=lambda shape, dtype, **_: numel(shape),
    out_like=lambda x: torch.empty_like(x))
FAMILY.add("torch_fused", lambda out, x: torch.mul(x, 2, out=out))
FAMILY.add("cuda", cuda_op("badcuda", "badcuda", "one"), cuda_kernels=("badcuda_one",))
'''

# a family that loads, with one implementation giving wrong numbers and one raising
FAILING = '''
import torch

from kernellab.kit import Family, elementwise_bytes, numel, randn, returns_new


def squared(x):
    return torch.relu(x) ** 2


def wrong(x):
    return squared(x) + 1


def raises(out, x):
    return squared(x) * undefined_name  # noqa: F821


FAMILY = Family(
    title="Squared ReLU, broken on purpose", bound="memory", dtypes=("fp32",),
    make_inputs=lambda shape, dtype, device, seed: (randn(shape, dtype, device, seed),),
    reference=squared, bytes_moved=elementwise_bytes(1), flops=lambda shape, dtype, **_: 2 * numel(shape),
    out_like=torch.empty_like)
FAMILY.add("torch_fused", returns_new(squared))
FAMILY.add("torch_naive", returns_new(wrong))
FAMILY.add("triton", raises)
'''


def make_user_dir(tmp: Path) -> Path:
    mine = tmp / "my-kernels"
    shutil.copytree(EXAMPLE, mine, ignore=shutil.ignore_patterns("__pycache__"))
    (mine / "broken").mkdir()
    (mine / "broken" / "__init__.py").write_text(NO_REFERENCE)
    (mine / "badcuda").mkdir()
    (mine / "badcuda" / "__init__.py").write_text(BAD_CUDA)
    (mine / "sqrelu").mkdir()
    (mine / "sqrelu" / "__init__.py").write_text(FAILING)
    (mine / "badcuda" / "badcuda.cu").write_text('#include "common.cuh"\n__global__ void badcuda_one(float* x) '
                                                 '{ x[0] = undeclared_name; }\n')
    return mine


def test_the_loader_names_each_broken_folder_and_keeps_the_rest(tmp_path):
    """In a fresh process, as a job would."""
    mine = make_user_dir(tmp_path)
    code = ("import json; from kernellab.engine import registry; "
            f"reg = registry.load(['kernels', {str(mine)!r}]); "
            "print(json.dumps({'errors': reg.errors, 'families': sorted(reg.families)}))")
    got = in_fresh_interpreter(code, cwd=ROOT)
    assert set(got["errors"]) == {"broken"}
    assert str(mine / "broken" / "__init__.py") in got["errors"]["broken"]
    assert "reference" in got["errors"]["broken"]
    assert {"silu", "badcuda", "sqrelu", *REGISTRY.families} <= set(got["families"])  # ours are all still there


def test_a_family_name_twice_is_an_error_naming_both_folders(tmp_path):
    ours = sorted(REGISTRY.families)[0]
    mine = tmp_path / "mine"
    (mine / ours).mkdir(parents=True)
    (mine / ours / "__init__.py").write_text("")
    with pytest.raises(registry.FamilyError, match=rf"{ours}.*already defined by .*kernels/{ours}"):
        registry.family_folders(registry.kernel_dirs(["kernels", str(mine)]))


def test_a_ladder_step_without_its_text_is_an_error(tmp_path):
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "ladder.yaml").write_text("steps:\n  - step: one\n    idea: x\n    prediction: y\n")
    fam = registry.Family(title="d", bound="memory", dtypes=("fp32",)).named("demo", folder)
    fam.add("triton", None, step="one", ladder="steps")
    fam.add("triton", None, step="two", ladder="steps")
    with pytest.raises(registry.FamilyError, match=r"ladder.yaml: no entry for step\(s\) steps/two"):
        registry.attach_ladder_texts(fam, folder)


@pytest.mark.slow
def test_a_cuda_source_that_does_not_compile_is_named_and_left_out(tmp_path):
    if cuda_build.find_nvcc() is None:
        pytest.skip("nvcc not found")
    mine = make_user_dir(tmp_path)
    report = cuda_build.resource_report(tmp_path / "build", dirs=[str(ROOT / "kernels"), str(mine)])
    assert set(report.failures) == {"badcuda"}
    assert "badcuda/badcuda.cu does not compile" in report.failures["badcuda"]
    assert "undeclared_name" in report.failures["badcuda"]
    assert {r["base"] for r in report if r["file"].startswith("silu/")} == {"silu_scalar", "silu_vec4"}


@pytest.fixture(scope="module")
def own_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("own")
    mine = make_user_dir(tmp)
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    one = {**TINY, "dtypes": ["fp32"]}
    rows = {"dtypes": ["fp32"], "passes": ["forward"], "shapes": ["33x100"], "check_shapes": ["3x33"],
            "profile_shape": "33x100", "cpu_shapes": ["33x100"], "cpu_check_shapes": ["3x33"],
            "cpu_profile_shape": "33x100"}
    config.update(kernel_dirs=["kernels", str(mine)], kernels={"silu": TINY, "badcuda": one, "broken": one,
                                                                "sqrelu": one, "my_rms_norm": rows},
                  staging=str(tmp / "staging"), results=str(tmp / "results"))
    (tmp / "config.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", str(tmp / "config.yaml"),
                           "--replace-workflow-config"], cwd=ROOT, capture_output=True, text=True, timeout=1500,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    # a family skipped at load and cases that failed or raised: published, and the exit status says so
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-5000:]
    (out,) = [p for p in (tmp / "results").iterdir() if p.is_dir()]
    return out, proc.stdout + proc.stderr, mine


@pytest.mark.slow
def test_own_kernel_is_measured_reported_and_logged(own_run):
    out, log, mine = own_run
    assert f"kernel family 'broken' skipped: {mine / 'broken' / '__init__.py'}:" in log
    df = pd.read_csv(out / "summary.csv", keep_default_na=False)
    assert set(df["kernel"]) == {"silu", "badcuda", "sqrelu", "my_rms_norm"}
    # the fork (Family.fork): rms_norm's field beside the user's step, none of our steps
    fork = df[df["kernel"] == "my_rms_norm"].set_index("impl_key")
    assert set(fork.index) == {"torch_naive", "torch_fused", "compiled", "liger", "quack", "triton@one_row"}
    assert fork.loc["triton@one_row", "status"] == "ok" and fork.loc["triton@one_row", "check_status"] == "ok"
    assert set(fork.loc[["liger", "quack"], "status"]) == {"unavailable"}  # GPU libraries, on a CPU
    field = (out / "report.md").read_text().split("## Our kernels against the field", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"\| my_rms_norm \| fp32 \| 33x100 \| triton@one_row \|", field), field
    silu = df[df["kernel"] == "silu"]
    ran = silu[silu["backend"] != "cuda"]
    assert set(ran["impl"]) == {"torch_naive", "torch_fused", "triton", "compiled"}
    assert (ran["status"] == "ok").all() and (ran["check_status"] == "ok").all()
    steps = silu[silu["backend"] == "cuda"]
    assert set(steps["impl_key"]) == {"cuda@scalar", "cuda@vec4"} and (steps["status"] == "unavailable").all()
    assert set(steps["ladder"]) == {"cuda_silu"}
    log_md = (out / "KERNEL_LOG.md").read_text()
    assert "cuda_silu" in log_md and "16-byte loads and stores in a grid-stride loop" in log_md
    assert "triton_mine" in log_md and "whole row in registers" in log_md
    assert "<h2>Kernel: silu" in (out / "report.html").read_text()
    index = json.loads((out / "ptx" / "silu" / "index.json").read_text())
    assert {e["impl_key"] for e in index if e["status"] == "ok"} >= {"triton"}, index
    if cuda_build.find_nvcc() is not None:
        resources = pd.read_csv(out / "build" / "resources.csv")
        assert {"silu_scalar", "silu_vec4"} <= set(resources[resources["file"].str.startswith("silu/")]["kernel"]
                                                   .str.extract(r"(silu_\w+)")[0])
        bad = df[(df["kernel"] == "badcuda") & (df["backend"] == "cuda")]
        assert (bad["status"] == "error").all()
        assert bad["reason"].str.contains("badcuda/badcuda.cu does not compile").all()
        assert "badcuda/badcuda.cu does not compile" in log
    good = df[(df["kernel"] == "badcuda") & (df["backend"] == "torch")]
    assert (good["status"] == "ok").all() and (good["check_status"] == "ok").all()


@pytest.mark.slow
def test_what_failed_is_said_at_the_terminal_in_the_set_and_in_the_exit_status(own_run):
    """The run ended with exit status 1 (own_run); each failing case is named as it happens and
    again at the end, with the file:line that raised, beside the family that did not load."""
    out, log, mine = own_run
    line = next(n for n, text in enumerate(FAILING.splitlines(), 1) if "undefined_name" in text)
    raised = f"NameError: name 'undefined_name' is not defined (at sqrelu/__init__.py:{line})"
    assert f"measure sqrelu: triton 4099 fp32 ERROR: {raised}" in log
    assert re.search(r"measure sqrelu: torch_naive \S+ fp32 FAILED: relative error \S+ above the fp32 tolerance", log)
    closing = log[log.index("kernellab: run complete, with failures"):]
    assert f"error: sqrelu triton (fp32 4099): {raised}" in closing
    assert "failed: sqrelu torch_naive (fp32 4099): correctness failed: relative error" in closing
    assert f"family 'broken' skipped: it did not load: {mine / 'broken' / '__init__.py'}:" in closing
    # and the published set says so
    skipped = json.loads((out / "environment.json").read_text())["skipped_families"]
    assert set(skipped) == {"broken"} and skipped["broken"].startswith(f"{mine / 'broken' / '__init__.py'}:")
    for page in ("report.md", "report.html"):
        assert "Families skipped at load" in (out / page).read_text(), page
    df = pd.read_csv(out / "summary.csv", keep_default_na=False)
    mine_rows = df[df["kernel"] == "sqrelu"].set_index("impl_key")
    assert mine_rows.loc["triton", "status"] == "error" and mine_rows.loc["triton", "reason"] == raised
    assert mine_rows.loc["torch_naive", "status"] == "failed" and mine_rows.loc["torch_fused", "status"] == "ok"
    assert raised in html.unescape((out / "report.html").read_text())
    job_log = (out / "logs" / "measure" / "sqrelu.log").read_text()
    assert "Traceback (most recent call last)" in job_log and "undefined_name" in job_log


def _readme_block(lang: str, after: str) -> str:
    """The first ``lang`` code block of README's "Add your own kernel" after the text ``after``."""
    section = (ROOT / "README.md").read_text().split("## Add your own kernel", 1)[1].split("\n## ", 1)[0]
    return section.split(after, 1)[1].split(f"```{lang}\n", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_the_readme_walk_through_copy_rename_run_alone_then_break_it(tmp_path):
    """README's "Add your own kernel" as written: its copy-and-rename lines (run where `docs/` is the
    repository's), its my-config.yaml (only ``kernel_dirs`` made absolute), run alone with its
    command. Then the family broken as a newcomer breaks it, each run alone again: no `out_like`
    and a syntax error (named at load with the fix or the file:line, exit status 1, the earlier set
    left whole), wrong numbers and an exception (named at the terminal with file:line, exit status
    1, the set published again with only this family's rows)."""
    work = tmp_path / "lab"
    work.mkdir()
    (work / "docs").symlink_to(ROOT / "docs")
    copy = _readme_block("bash", "Copy the example")
    subprocess.run(["bash", "-euc", copy], cwd=work, check=True)
    mine = tmp_path / "my-kernels" / "mine"
    config = yaml.safe_load(_readme_block("yaml", "**Run it.**"))
    assert config["kernel_dirs"] == ["kernels", "../my-kernels"] and list(config["kernels"]) == ["mine"]
    config["kernel_dirs"] = ["kernels", str(tmp_path / "my-kernels")]
    (tmp_path / "my-config.yaml").write_text(yaml.safe_dump(config))
    alone = next(ln for ln in _readme_block("bash", "**Run it.**").splitlines() if "yours alone" in ln)
    argv = alone.split("#")[0].split()
    assert argv[:4] == ["snakemake", "--cores", "1", "--configfile"]

    def run():
        return subprocess.run([sys.executable, "-m", *argv[:4], str(tmp_path / "my-config.yaml"), "--config",
                               f"staging={tmp_path / 'staging'}", f"results={tmp_path / 'results'}"],
                              cwd=ROOT, capture_output=True, text=True, timeout=1500)

    proc = run()
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-5000:]
    (out,) = list((tmp_path / "results").iterdir())
    assert out.name.endswith("-my-config")  # its own set: never the full one
    df = pd.read_csv(out / "summary.csv", keep_default_na=False)
    assert set(df["kernel"]) == {"mine"}
    ran = df[df["backend"] != "cuda"]
    assert (ran["status"] == "ok").all() and (ran["check_status"] == "ok").all()
    before = (out / "summary.csv").read_bytes()

    source = (mine / "__init__.py").read_text()
    broken = {
        "out_like": source.replace("    out_like=lambda x: torch.empty_like(x),\n", ""),
        "syntax": source.replace("def reference(x):", "def reference(x)"),
    }
    for what, text in broken.items():
        (mine / "__init__.py").write_text(text)
        proc = run()
        log = proc.stdout + proc.stderr
        assert proc.returncode == 1, log[-3000:]
        assert "kernel family 'mine' skipped" in log
        assert ("out_like is not set: give Family(out_like=...)" if what == "out_like"
                else f"{mine / '__init__.py'}:") in log
        assert "Traceback" not in log
        assert (out / "summary.csv").read_bytes() == before, what  # the earlier set, whole

    wrong = source.replace("def silu_naive(x):\n    return x * torch.sigmoid(x)",
                           "def silu_naive(x):\n    return x * torch.sigmoid(x) + 1")
    wrong = wrong.replace("def silu_triton(out, x):\n", "def silu_triton(out, x):\n    raise_here(x)\n")
    assert wrong.count("+ 1") == 1 and "raise_here" in wrong
    (mine / "__init__.py").write_text(wrong)
    line = next(n for n, text in enumerate(wrong.splitlines(), 1) if "raise_here" in text)
    proc = run()
    log = proc.stdout + proc.stderr
    assert proc.returncode == 1, log[-3000:]
    raised = f"NameError: name 'raise_here' is not defined (at mine/__init__.py:{line})"
    assert re.search(rf"measure mine: triton \S+ \S+ ERROR: {re.escape(raised)}", log)
    assert re.search(r"measure mine: torch_naive \S+ \S+ FAILED: relative error", log)
    assert "kernellab: run complete, with failures" in log
    df = pd.read_csv(out / "summary.csv", keep_default_na=False)
    assert set(df["kernel"]) == {"mine"}
    assert set(df[df["impl_key"] == "triton"]["status"]) == {"error"}
    assert set(df[df["impl_key"] == "torch_naive"]["check_status"]) - {"ok"}
    assert set(df[df["impl_key"] == "torch_fused"]["status"]) == {"ok"}


# ------------------------------------------------------------------ a step is one file and its ladder entry
NEW_CUDA_STEP = '''// SiLU step "vec4_x2": vec4 with two 16-byte vectors per thread per iteration.
#include "silu.cuh"

__global__ void __launch_bounds__(kSiluThreads) silu_vec4_x2(const float* __restrict__ x, float* __restrict__ out,
                                                             int64_t n) {
  const int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 2;
  for (int64_t j = i; j < n && j < i + 2; ++j) out[j] = silu(x[j]);
}

namespace kl {
namespace {

int vec4_x2(const void* x, void* out, int64_t n, DType dtype, cudaStream_t stream) {
  if (dtype != DType::kFloat32) return kErrUnsupportedDtype;
  silu_vec4_x2<<<static_cast<unsigned>(cdiv(n, 2 * kSiluThreads)), kSiluThreads, 0, stream>>>(
      static_cast<const float*>(x), static_cast<float*>(out), n);
  return launch_status();
}

}  // namespace

KL_STEP(silu, vec4_x2);

}  // namespace kl
'''
NEW_TRITON_STEP = '''import triton
import triton.language as tl

from kernellab.kit import launch, step


@triton.jit
def silu_blocked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n).to(tl.float32)
    tl.store(out_ptr + offs, (x * tl.sigmoid(x)).to(out_ptr.dtype.element_ty), mask=offs < n)


@step()
def blocked(out, x):
    launch(silu_blocked_kernel, (triton.cdiv(x.numel(), 1024),), x, out, x.numel(), BLOCK=1024)
    return out
'''
LADDER_ENTRIES = {
    "cuda_silu": "  - step: vec4_x2\n    idea: Two vectors per thread.\n    prediction: Level with vec4.\n",
    "triton_silu": "triton_silu:\n  - step: blocked\n    idea: One block of 1024 per program.\n"
                   "    prediction: 85-95% of copy.\n    expect_pct_of_peak: [85, 95]\n",
}


def test_a_step_is_one_new_file_and_its_ladder_entry(tmp_path):
    """The README's two ways to add a step, to a copy of the example: a CUDA step (a .cu file in
    the ladder's folder, registering its launcher by name) and a Triton step (a marked function
    in a file of its ladder's folder), each with its ladder.yaml entry and nothing else. The
    registry lists both in ladder order, with their texts; the CUDA step compiles; the Triton
    step runs and is right (under the interpreter here)."""
    mine = tmp_path / "my-kernels"
    shutil.copytree(EXAMPLE / "silu", mine / "mine", ignore=shutil.ignore_patterns("__pycache__"))
    (mine / "mine" / "cuda_silu" / "vec4_x2.cu").write_text(NEW_CUDA_STEP)
    (mine / "mine" / "triton_silu").mkdir()
    (mine / "mine" / "triton_silu" / "blocked.py").write_text(NEW_TRITON_STEP)
    ladder = mine / "mine" / "ladder.yaml"
    entries = LADDER_ENTRIES["cuda_silu"] + LADDER_ENTRIES["triton_silu"]  # cuda_silu is the file's last ladder
    ladder.write_text(ladder.read_text().rstrip("\n") + "\n" + entries)
    code = f"""
import json
from kernellab.engine import registry, runtime, testing
reg = registry.load([{str(mine)!r}])
errors = reg.errors
fam = reg.family("mine")
steps = {{name: [[s.key, s.order, s.prediction, list(s.cuda_kernels)] for s in ladder]
          for name, ladder in fam.ladders().items()}}
got, inputs, out = testing.run(fam, fam.impls["triton@blocked"].fn, (4099,), "fp32", device="cpu")
verdict = testing.verdict(fam, got, inputs, (4099,), "fp32")
print(json.dumps({{"errors": errors, "steps": steps, "verdict": verdict["status"],
                   "source": str(fam.impls["cuda@vec4_x2"].source)}}))
"""
    got = in_fresh_interpreter(code, cwd=ROOT)
    assert got["errors"] == {}
    assert got["steps"] == {
        "cuda_silu": [["cuda@scalar", 1, got["steps"]["cuda_silu"][0][2], ["silu_scalar"]],
                      ["cuda@vec4", 2, got["steps"]["cuda_silu"][1][2], ["silu_vec4"]],
                      ["cuda@vec4_x2", 3, "Level with vec4.", ["silu_vec4_x2"]]],
        "triton_silu": [["triton@blocked", 1, "85-95% of copy.", []]],
    }
    assert got["verdict"] == "ok"
    assert got["source"] == str(mine / "mine" / "cuda_silu" / "vec4_x2.cu")
    if cuda_build.find_nvcc() is None:
        pytest.skip("nvcc not found: the new CUDA step was registered, not compiled")
    src = mine / "mine" / "cuda_silu" / "vec4_x2.cu"
    proc = subprocess.run([cuda_build.find_nvcc(), "-ptx", "-o", str(tmp_path / "step.ptx"),
                           *cuda_build.standalone_flags(90, src), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "silu_vec4_x2" in (tmp_path / "step.ptx").read_text()


def test_the_contract_tests_run_on_a_users_folder_as_the_readme_says(tmp_path):
    """README's command for tests/test_families.py on your folder collects the family's tests."""
    shutil.copytree(EXAMPLE / "silu", tmp_path / "my-kernels" / "mine")
    command = _readme_block("bash", "yours beside them").strip()
    argv = command.split()
    assert argv[:4] == ["python", "-m", "pytest", "tests/test_families.py"] and argv[-2:] == [
        "--kernel-dirs", "../my-kernels"]
    proc = subprocess.run([sys.executable, *argv[1:-1], str(tmp_path / "my-kernels"), "--collect-only", "-q",
                           "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    ids = proc.stdout.splitlines()
    assert "tests/test_families.py::test_registration[mine]" in ids, proc.stdout[-3000:]
    assert any(i.startswith("tests/test_families.py::test_matches_reference[mine-") for i in ids)
    assert "tests/test_families.py::test_registration[gelu]" in ids  # ours as well


def test_the_readme_names_every_field_and_file_the_example_uses():
    """What a newcomer copies: every Family field the example sets and every file at the top of its
    folder (the steps' folder has its own item) is in README's "Add your own kernel"."""
    import ast

    section = (ROOT / "README.md").read_text().split("## Add your own kernel", 1)[1].split("\n## ", 1)[0]
    tree = ast.parse((EXAMPLE / "silu" / "__init__.py").read_text())
    call = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "FAMILY")
    for field in [kw.arg for kw in call.keywords] + ["cuda_dtypes", "param_ranges"]:
        assert f"`{field}" in section, field
    for path in (EXAMPLE / "silu").iterdir():
        if path.is_file() and path.name != "__init__.py":
            assert path.name in section, path.name


def test_the_examples_backward_is_checked_and_a_wrong_one_fails_naming_dx(tmp_path):
    """README's backward, as a newcomer writes it: the example's Triton backward and autograd's pass
    against autograd's float64 gradient; a copy whose backward drops the factor dy fails, and its
    reason names the output, dx."""
    mine = tmp_path / "my-kernels"
    shutil.copytree(EXAMPLE / "silu", mine / "mine", ignore=shutil.ignore_patterns("__pycache__"))
    source = (mine / "mine" / "__init__.py").read_text()
    wrong = source.replace("(dy * s * (1 + x * (1 - s)))", "(s * (1 + x * (1 - s)))")
    assert wrong != source
    (mine / "wrong").mkdir()
    shutil.copytree(mine / "mine", mine / "wrong", dirs_exist_ok=True)
    (mine / "wrong" / "__init__.py").write_text(wrong)
    reg = registry.load([str(mine)])
    assert reg.errors == {}

    def check(name, key, dtype):
        fam = reg.family(name)
        return list(check_impl(fam, fam.impls[key], [Case(name, key, (4099,), dtype)], [0, 1], "cpu"))

    assert reg.family("mine").passes() == ("forward", "backward", "forward+backward")
    for key in ("triton.bwd", "torch_naive.bwd", "torch_naive.fwdbwd"):
        for dtype in ("fp32", "bf16"):
            assert [r["status"] for r in check("mine", key, dtype)] == ["ok", "ok"], (key, dtype)
    got = check("wrong", "triton.bwd", "fp32")
    assert [r["status"] for r in got] == ["failed", "failed"]
    assert got[0]["reason"].startswith("dx: relative error") and "fp32 tolerance" in got[0]["reason"]
    assert [r["status"] for r in check("wrong", "torch_naive.bwd", "fp32")] == ["ok", "ok"]  # only its own fails

"""No family takes a run down, and what failed is said: sets where a family's every case failed or
raised, where a family has no rows and where a dtype has none are aggregated and reported like
any other; a family's missing or wrong field is named when it loads, with the fix; a case's
exception carries its type, message and the file:line in the family's own code, to the terminal
as it happens and to the closing summary, whose exit status says whether anything failed."""

from __future__ import annotations

import html
import io
import json
import logging
import shutil
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from kernellab.engine import registry
from kernellab.engine.cases import Case
from kernellab.engine.harness import Progress, check_impl, where_raised
from kernellab.engine.testing import in_fresh_interpreter
from kernellab.report.fmt import md_escape
from kernellab.workflow import aggregate, assemble, pipeline
from kernellab.workflow.config import validate_schema
from kernellab.workflow.run_summary import closing, finish

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "reference" / "cpu-x86_64"  # a real CPU set: its jobs' bench/ and check/ tables
KERNELS = ("gelu", "matmul", "vector_add")
RAISED = "TypeError: 'NoneType' object is not callable (at mine/__init__.py:7)"


def _config() -> dict:
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["kernels"] = {k: config["kernels"][k] for k in KERNELS}
    return {**config, "target": "cpu"}


def _set(tmp: Path, edit, config: dict | None = None) -> Path:
    """A staging set made of the reference CPU set's job tables, each family's tables changed
    by ``edit(kernel, kind, frame)`` (None: the job wrote no row at all), aggregated and
    rendered as the aggregate and report rules do. The other families of ``config`` (default
    ``_config()``) have the tables their measure job writes."""
    config = config or _config()
    stage = tmp / ".staging" / "cpu-x86_64"
    (stage / "bench").mkdir(parents=True)
    (stage / "check").mkdir()
    shutil.copy(REF / "survey.json", stage / "survey.json")
    for kernel in KERNELS:
        for kind in ("bench", "check"):
            df = edit(kernel, kind, pd.read_csv(REF / kind / f"{kernel}.csv", keep_default_na=False))
            path = stage / kind / f"{kernel}.csv"
            if df is None:
                path.write_text("\n")  # what write_csv gives for no rows and no columns
            else:
                df.to_csv(path, index=False)
    for kernel in sorted(set(config["kernels"]) - set(KERNELS)):
        pipeline.measure(config, kernel, None, *(str(stage / kind / f"{kernel}.{ext}") for kind, ext in
                                                 (("check", "csv"), ("bench", "csv"), ("bench", "samples.json.gz"),
                                                  ("bench", "autotune.csv"))))
    aggregate.run(config, None, str(stage / "survey.json"),
                  [str(stage / "bench" / f"{k}.csv") for k in config["kernels"]],
                  [str(stage / "check" / f"{k}.csv") for k in config["kernels"]], [], [],
                  str(stage / "summary.csv"), str(stage / "ladders.json"), str(stage / "environment.json"),
                  command="snakemake --cores 1")
    assemble.report(str(stage), [], [])
    return stage


def _raised(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    df = df.copy()
    df["status"], df["reason"] = "error", RAISED
    if kind == "bench":
        df["median_us"] = float("nan")
    return df


def test_a_set_where_every_case_raised_is_published_with_its_reasons(tmp_path):
    stage = _set(tmp_path, lambda kernel, kind, df: _raised(df, kind))
    summary = pd.read_csv(stage / "summary.csv", keep_default_na=False)
    assert set(summary["kernel"]) == set(KERNELS)
    assert (summary["status"] == "error").all() and (summary["reason"] == RAISED).all()
    html = (stage / "report.html").read_text()
    for kernel in KERNELS:
        assert f"Kernel: {kernel}" in html
    assert "mine/__init__.py:7" in html and "Failures" in html
    text, clean = closing(stage.parent, ["cpu-x86_64"])
    assert not clean and "error: gelu torch_fused (" in text and RAISED in text


def test_a_family_whose_every_case_is_wrong_beside_good_ones(tmp_path):
    def edit(kernel, kind, df):
        if kernel == "matmul" and kind == "check":
            df = df.assign(status="failed", reason="relative error 0.5 above the fp32 tolerance 1e-05")
        return df

    stage = _set(tmp_path, edit)
    summary = pd.read_csv(stage / "summary.csv", keep_default_na=False)
    matmul = summary[(summary["kernel"] == "matmul") & (summary["backend"] != "cuda")]
    assert len(matmul) and (matmul["status"] == "failed").all() and not matmul["is_best"].astype(bool).any()
    assert matmul["reason"].str.contains("relative error 0.5").all()
    gelu = summary[(summary["kernel"] == "gelu") & (summary["status"] == "ok")]
    assert len(gelu) and gelu["is_best"].astype(bool).any()
    assert "relative error 0.5" in (stage / "report.html").read_text()


def test_a_wrong_result_on_a_shape_only_checked_is_a_failure_of_the_run(tmp_path):
    """A shape the benchmark does not time (rows no multiple of a tile) has no summary row: its
    failed check still fails the run, in the closing summary and the report's Failures."""
    wrong = "relative error 0.5 above the fp32 tolerance 1e-05"

    def edit(kernel, kind, df):
        if kernel == "gelu" and kind == "check":
            timed = set(pd.read_csv(REF / "bench" / "gelu.csv", keep_default_na=False)["shape"].astype(str))
            only = (df["impl_key"] == "triton") & ~df["shape"].astype(str).isin(timed)
            assert only.any()
            df.loc[only, ["status", "reason"]] = ["failed", wrong]
        return df

    stage = _set(tmp_path, edit)
    summary = pd.read_csv(stage / "summary.csv", keep_default_na=False)
    triton = summary[(summary["kernel"] == "gelu") & (summary["impl_key"] == "triton")]
    assert len(triton) and (triton["status"] == "ok").all()  # its timed cases are right
    text, clean = closing(stage.parent, ["cpu-x86_64"])
    assert not clean and "failed on a shape only checked: gelu triton (" in text and wrong in text
    page = html.unescape((stage / "report.html").read_text())
    assert "failed (a shape only checked)" in page and wrong in page


def test_a_family_without_rows_and_a_dtype_without_rows(tmp_path):
    def edit(kernel, kind, df):
        if kernel == "vector_add":
            return None
        if kernel == "matmul":
            return df[df["dtype"] != "bf16"]
        return df

    stage = _set(tmp_path, edit)
    summary = pd.read_csv(stage / "summary.csv", keep_default_na=False)
    assert set(summary["kernel"]) == {"gelu", "matmul"}
    assert "bf16" not in set(summary[summary["kernel"] == "matmul"]["dtype"])
    assert "Kernel: matmul" in (stage / "report.html").read_text()
    assert closing(stage.parent, ["cpu-x86_64"])[1]  # nothing failed: no row is not a failure


def test_a_family_that_did_not_load_is_named_in_the_published_set(tmp_path):
    """A family with a syntax error beside good ones (issue 41 item 8): its measure job writes no
    row rather than failing, so the set is published, and the set says the family was skipped, with
    its file:line: environment.json, report.md, report.html and the run's closing summary."""
    mine = tmp_path / "my-kernels" / "mine"
    mine.mkdir(parents=True)
    (mine / "__init__.py").write_text("from kernellab.kit import Family\n\n\ndef reference(x)\n    return x\n")
    config = _config()
    config.update(kernel_dirs=[str(ROOT / "kernels"), str(mine.parent)],
                  kernels={**config["kernels"], "mine": {"dtypes": ["fp32"], "shapes": [4099]}})
    validate_schema(config)  # the defaults a run's config has
    stage = _set(tmp_path, lambda kernel, kind, df: df, config)
    where = f"{mine / '__init__.py'}:4"
    env = json.loads((stage / "environment.json").read_text())
    assert set(env["skipped_families"]) == {"mine"} and where in env["skipped_families"]["mine"], env
    assert "SyntaxError" in env["skipped_families"]["mine"]
    summary = pd.read_csv(stage / "summary.csv", keep_default_na=False)
    assert set(summary["kernel"]) == set(KERNELS)
    md = (stage / "report.md").read_text()
    failures = md.split("## Failures", 1)[1].split("\n## ", 1)[0]
    assert "Families skipped at load" in failures and f"| mine | ⚠ {md_escape(where)}" in failures, failures
    page = html.unescape((stage / "report.html").read_text())
    assert "Families skipped at load" in page and where in page and "Failures (1)" in page
    text, clean = closing(stage.parent, ["cpu-x86_64"])
    assert not clean and f"family 'mine' skipped: it did not load: {where}" in text
    # a set without one says nothing of it
    plain = _set(tmp_path / "plain", lambda kernel, kind, df: df)
    assert json.loads((plain / "environment.json").read_text())["skipped_families"] == {}
    assert "skipped at load" not in (plain / "report.md").read_text()
    assert closing(plain.parent, ["cpu-x86_64"])[1]


# ------------------------------------------------------------------ a family's fields, at load
FAMILY = '''
import torch

from kernellab.kit import Family, elementwise_bytes, numel, randn

FIELDS = dict(
    title="Mine", bound="memory", dtypes=("fp32",),
    make_inputs=lambda shape, dtype, device, seed: (randn(shape, dtype, device, seed),),
    reference=lambda x: torch.relu(x) ** 2, bytes_moved=elementwise_bytes(1),
    flops=lambda shape, dtype, **_: 2 * numel(shape), out_like=torch.empty_like)
FIELDS.update({changes})  # ...: the field left out
FAMILY = Family(**{{k: v for k, v in FIELDS.items() if v is not ...}})
FAMILY.add("torch_fused", {impl})
'''
GOOD_IMPL = "lambda out, x: torch.square(torch.relu(x), out=out)"


def _load(tmp: Path, changes: str = "", impl: str = GOOD_IMPL) -> dict[str, str]:
    from kernellab.engine.testing import in_fresh_interpreter

    (tmp / "mine").mkdir()
    (tmp / "mine" / "__init__.py").write_text(FAMILY.format(changes=changes, impl=impl))
    code = ("import json; from kernellab.engine import registry; "
            f"print(json.dumps(registry.load([{str(tmp)!r}]).errors))")
    return in_fresh_interpreter(code, cwd=ROOT)


@pytest.mark.parametrize("changes,named", [
    ("out_like=...",
     "out_like is not set: give Family(out_like=...), a function (*inputs, **params) -> the empty output"),
    ("out_like=None", "out_like is not set: give Family(out_like=...)"),
    ("reference=..., out_like=...", "reference is not set: give Family(reference=...), a function (*inputs, "),
    ("title=''", "title must be a non-empty string"),
    ("dtypes='fp32'", "dtypes must be a non-empty tuple of"),
    ("dtypes=('float32',)", "dtypes must be a non-empty tuple of bf16, fp16, fp32"),
    ("tolerance=1e-3", "tolerance must be a function or None, got 0.001"),
    ("params={'p': 0.5}", "params must map each parameter to a list of its values"),
    ("flops=lambda shape: 1", "flops(shape) cannot take 2 positional argument(s)"),
])
def test_a_missing_or_wrong_field_is_named_at_load_with_the_fix(tmp_path, changes, named):
    errors = _load(tmp_path, changes)
    assert set(errors) == {"mine"}
    assert f"{tmp_path / 'mine' / '__init__.py'}:" in errors["mine"] and named in errors["mine"], errors


def test_a_family_that_loads_has_no_error(tmp_path):
    assert _load(tmp_path) == {}


def test_an_implementation_of_a_dtype_the_family_lacks_is_named(tmp_path):
    errors = _load(tmp_path, impl=f"{GOOD_IMPL}, dtypes=('bf16',)")
    assert "implementation 'torch_fused' has dtypes ('bf16',); give a tuple of the family's dtypes (fp32)" in \
        errors["mine"]


# ------------------------------------------------------------------ a case's exception
def test_an_exception_names_the_line_of_the_family_that_raised_it(tmp_path, caplog):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "impl.py").write_text(textwrap.dedent("""\
        def helper(x):
            return x.nonexistent()


        def broken(out, x):
            return helper(x)
    """))
    namespace: dict = {}
    exec(compile((folder / "impl.py").read_text(), str(folder / "impl.py"), "exec"), namespace)
    fam = registry.Family(title="Mine", bound="memory", dtypes=("fp32",),
                          make_inputs=lambda shape, dtype, device, seed: (torch.ones(shape),),
                          reference=lambda x: x, bytes_moved=lambda shape, dtype: 8, flops=lambda shape, dtype: 1,
                          out_like=lambda x: x).named("mine", folder)
    impl = fam.add("triton", namespace["broken"])
    case = Case("mine", "triton", (4,), "fp32")
    with caplog.at_level(logging.ERROR, logger="kernellab"):
        rows = list(check_impl(fam, impl, [case], [0, 1], "cpu"))
    expected = "AttributeError: 'Tensor' object has no attribute 'nonexistent' (at mine/impl.py:2)"
    assert [r["status"] for r in rows] == ["error", "error"] and {r["reason"] for r in rows} == {expected}
    # the whole traceback goes to the job's log once, not once per seed
    assert [r.exc_info is not None for r in caplog.records] == [True]
    assert expected in caplog.text and "in broken" in caplog.text


@pytest.mark.parametrize("body, got", [
    ("out.copy_(x)", "returned None"),  # the forgotten `return out`
    ("return x.sum()", "returned a tensor of shape () and dtype torch.float32"),
    ("return x.double()", "returned a tensor of shape (4,) and dtype torch.float64"),
    ("return [x]", "returned a list"),
])
def test_an_implementation_that_breaks_the_out_contract_is_named_with_the_contract(tmp_path, body, got):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "impl.py").write_text(f"def broken(out, x):\n    {body}\n")
    namespace: dict = {}
    exec(compile((folder / "impl.py").read_text(), str(folder / "impl.py"), "exec"), namespace)
    fam = registry.Family(title="Mine", bound="memory", dtypes=("fp32",),
                          make_inputs=lambda shape, dtype, device, seed: (torch.ones(shape),),
                          reference=lambda x: x, bytes_moved=lambda shape, dtype: 8, flops=lambda shape, dtype: 1,
                          out_like=torch.empty_like).named("mine", folder)
    impl = fam.add("triton", namespace["broken"])
    rows = list(check_impl(fam, impl, [Case("mine", "triton", (4,), "fp32")], [0], "cpu"))
    assert [r["status"] for r in rows] == ["error"]
    reason = rows[0]["reason"]
    assert reason.startswith(f"mine triton {got}: an implementation fills `out` and returns it (`return out`), "
                             "or returns a new tensor, of out_like's shape (4,) and dtype torch.float32"), reason
    assert reason.endswith("(at mine/impl.py:1)") and "harness.py" not in reason, reason


TRITON_BROKEN = """\
import triton
import triton.language as tl


@triton.jit
def helper(x):
    return x + tl.nonexistent(x)


@triton.jit
def kern(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = helper(tl.load(x_ptr + offs))
    tl.store(x_ptr + offs, y)


def launched(out, x):
    kern[(1,)](x, BLOCK=4)
    return out


def compiled(out, x):  # what a launch on a GPU compiles, for sm_90 here
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    triton.compile(ASTSource(kern, {"x_ptr": "*fp32"}, {"BLOCK": 4}), target=GPUTarget("cuda", 90, 32))
    return out
"""
TRITON_CHECK = """\
import json, sys, torch
sys.path.insert(0, {tmp!r})
from kernellab.engine import registry
from kernellab.engine.cases import Case
from kernellab.engine.harness import check_impl
from mine import k
fam = registry.Family(title="Mine", bound="memory", dtypes=("fp32",),
                      make_inputs=lambda shape, dtype, device, seed: (torch.ones(shape),),
                      reference=lambda x: x, bytes_moved=lambda shape, dtype: 8, flops=lambda shape, dtype: 1,
                      out_like=torch.empty_like).named("mine", {folder!r})
impl = fam.add("triton", getattr(k, {fn!r}))
print(json.dumps([r["reason"] for r in check_impl(fam, impl, [Case("mine", "triton", (4,), "fp32")], [0], "cpu")]))
"""


@pytest.mark.parametrize("interpret, fn", [("1", "launched"), ("0", "compiled")])
def test_a_triton_error_names_the_kernel_line_not_the_launch(tmp_path, interpret, fn):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "k.py").write_text(TRITON_BROKEN)
    script = TRITON_CHECK.format(tmp=str(tmp_path), folder=str(folder), fn=fn)
    reasons = in_fresh_interpreter(script, {"TRITON_INTERPRET": interpret, "PYTHONPATH": str(ROOT)}, timeout_s=300)
    # line 7, in helper, called by kern at line 14, launched at line 19
    assert reasons == ["AttributeError: module 'triton.language' has no attribute 'nonexistent' (at mine/k.py:7)"]


def test_with_no_frame_in_the_folder_the_deepest_frame_is_named(tmp_path):
    try:
        int("x")
    except ValueError as exc:
        assert where_raised(exc, tmp_path) == f"tests/test_failures.py:{exc.__traceback__.tb_lineno}"


# ------------------------------------------------------------------ the terminal
def test_progress_names_each_failing_case_once_as_it_happens():
    out = io.StringIO()
    progress = Progress("mine", 6, stream=out, clock=lambda: 0.0)
    row = {"shape": "4099", "dtype": "fp32", "params": "", "status": "error", "reason": RAISED}
    progress.case("triton", row)
    progress.case("triton", {**row, "seed": 1})  # the same case, another seed
    progress.case("triton", {**row, "dtype": "bf16", "status": "ok", "reason": ""})
    progress.case("torch_fused", {**row, "status": "failed", "reason": "relative error 0.5 above"})
    progress.case("cuda", {**row, "status": "unavailable", "reason": "no GPU"})
    progress.done("triton", 3)
    assert out.getvalue().splitlines() == [
        f"measure mine: triton 4099 fp32 ERROR: {RAISED}",
        "measure mine: torch_fused 4099 fp32 FAILED: relative error 0.5 above",
        "measure mine: triton done, 3/6 cases, 0 s, about 0 s left, 1 case failed",
    ]


def test_progress_names_at_most_a_few_cases():
    out = io.StringIO()
    progress = Progress("mine", 100, stream=out, clock=lambda: 0.0)
    for n in range(30):
        progress.case("triton", {"shape": str(n), "dtype": "fp32", "status": "error", "reason": "boom"})
    progress.done("triton", 30)
    lines = out.getvalue().splitlines()
    assert len(lines) == Progress.MAX_NAMED + 2 and "30 cases failed" in lines[-1]


def test_the_closing_summary_lists_failures_and_skipped_families_and_sets_the_exit_status(tmp_path):
    (tmp_path / "s").mkdir()
    rows = [{"kernel": "mine", "impl_key": "triton", "shape": "4099", "dtype": dtype, "params": "",
             "status": "error", "check_status": "error", "reason": RAISED} for dtype in ("fp32", "bf16")]
    rows.append({**rows[0], "impl_key": "torch_fused", "status": "ok", "check_status": "ok", "reason": ""})
    pd.DataFrame(rows).to_csv(tmp_path / "s" / "summary.csv", index=False)
    out = io.StringIO()
    assert finish(tmp_path, ["s"], {"other": "/x/other/__init__.py:3: SyntaxError: invalid syntax"}, out) == 1
    text = out.getvalue()
    assert "s: 3 cases: 1 ok, 2 failed, 0 unavailable here" in text
    assert f"error: mine triton (fp32 4099, bf16 4099): {RAISED}" in text
    assert "family 'other' skipped: it did not load: /x/other/__init__.py:3: SyntaxError" in text
    assert text.startswith("kernellab: run complete, with failures")
    pd.DataFrame(rows[2:]).to_csv(tmp_path / "s" / "summary.csv", index=False)
    assert finish(tmp_path, ["s"], {}, io.StringIO()) == 0
    assert finish(tmp_path, ["s"], {"other": "why"}, io.StringIO()) == 1

"""A user's kernel beside the field: ``Family.fork`` gives a folder of theirs one of our families'
problem and its field (PyTorch's implementations, torch.compile, the libraries), without our own
steps; the example docs/examples/my-kernels/my_rms_norm is one."""

from pathlib import Path

import pytest

from kernellab.engine import registry
from kernellab.engine.cases import Case
from kernellab.engine.harness import check_impl
from kernellab.engine.testing import in_fresh_interpreter
from kernellab.errors import FamilyError
from kernellab.kit.family import OWN_BACKENDS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "my-kernels"
REGISTRY = registry.load(["kernels", str(EXAMPLE)])


def test_a_fork_has_the_problem_and_the_field_and_none_of_our_steps():
    base, mine = REGISTRY.family("rms_norm"), REGISTRY.family("my_rms_norm")
    field = {k for k, i in base.impls.items() if i.backend not in OWN_BACKENDS}
    assert {"torch_naive", "torch_fused", "compiled", "liger", "quack", "liger.bwd", "quack.bwd"} <= field
    assert set(mine.impls) == field | {"triton@one_row"}
    assert mine.reference is base.reference and mine.make_inputs is base.make_inputs
    assert mine.grads == base.grads and mine.backward_bytes is base.backward_bytes
    assert mine.title == "RMSNorm: my kernel beside the field"
    # the fork's CUDA steps would run its own extension's op, not the forked folder's
    assert base.cuda_step is not None and mine.cuda_step is None
    matmul = REGISTRY.family("matmul")
    assert matmul.cuda_dtypes and matmul.fork().cuda_dtypes is None
    assert mine.impls["liger"].kernel == "my_rms_norm" and mine.impls["liger"].inherited
    assert mine.impls["triton@one_row"].source == EXAMPLE / "my_rms_norm" / "triton_mine" / "one_row.py"
    # the forked family keeps its own: names, steps, nothing inherited
    assert all(i.kernel == "rms_norm" and not i.inherited for i in base.impls.values())
    assert {"triton", "cuda@block", "triton@wide"} <= set(base.impls)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_a_forked_step_is_checked_against_the_forked_reference(dtype):
    mine = REGISTRY.family("my_rms_norm")
    cases = [Case("my_rms_norm", "triton@one_row", (3, 33), dtype, ()), Case("my_rms_norm", "triton@one_row",
                                                                            (2, 100), dtype, ())]
    rows = list(check_impl(mine, mine.impls["triton@one_row"], cases, [0], "cpu"))
    assert [r["status"] for r in rows] == ["ok", "ok"], rows


WRONG_STEP = '''
import triton
import triton.language as tl

from kernellab.kit import launch, row_shape, step


@triton.jit
def no_weight_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.math.rsqrt(tl.sum(x * x, axis=0) / n_cols + 1e-6)
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@step()
def forgets_w(out, x, w):
    rows, cols = row_shape("wrong_rms", x, out)
    launch(no_weight_kernel, (rows,), x, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
'''


def _fork_folder(tmp_path: Path, name: str, base: str, step: str | None = None) -> Path:
    folder = tmp_path / "mine" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(f"from kernellab.kit import builds_on\n\n"
                                        f"FAMILY = builds_on({base!r}).FAMILY.fork(title='{name}')\n")
    if step is not None:
        (folder / "triton_try").mkdir()
        (folder / "triton_try" / "forgets_w.py").write_text(step)
        (folder / "ladder.yaml").write_text("triton_try:\n  - step: forgets_w\n    idea: x\n    prediction: y\n")
    return folder.parent


def test_a_wrong_step_in_a_fork_fails_its_check(tmp_path):
    """In a fresh process, as a job would: the fork's step against rms_norm's float64 reference."""
    mine = _fork_folder(tmp_path, "wrong_rms", "rms_norm", WRONG_STEP)
    code = ("import json; from kernellab.engine import registry; from kernellab.engine.cases import Case; "
            "from kernellab.engine.harness import check_impl; "
            f"reg = registry.load(['kernels', {str(mine)!r}]); fam = reg.family('wrong_rms'); "
            "rows = list(check_impl(fam, fam.impls['triton@forgets_w'], "
            "[Case('wrong_rms', 'triton@forgets_w', (3, 33), 'fp32', ())], [0], 'cpu')); "
            "print(json.dumps([r['status'] for r in rows]))")
    assert in_fresh_interpreter(code, cwd=ROOT) == ["failed"]


def test_a_fork_keeps_the_texts_of_the_fields_ladders(tmp_path):
    """Attention's SDPA backends are steps of a ladder of PyTorch's: the fork has no ladder.yaml of
    its own for them, and they keep the order and texts of the forked folder's."""
    mine = _fork_folder(tmp_path, "my_attention", "attention")
    code = ("import json; from kernellab.engine import registry; "
            f"reg = registry.load(['kernels', {str(mine)!r}]); "
            "f = reg.family('my_attention'); b = reg.family('attention'); "
            "print(json.dumps({'errors': reg.errors, 'keys': sorted(f.impls), "
            "'texts': [[i.order, i.idea] == [b.impls[k].order, b.impls[k].idea] and bool(i.idea) "
            "for k, i in f.impls.items() if i.step]}))")
    got = in_fresh_interpreter(code, cwd=ROOT)
    assert got["errors"] == {}
    assert "torch_fused@flash" in got["keys"] and "fa4" in got["keys"]
    assert not [k for k in got["keys"] if k.startswith(("triton", "cuda"))]
    assert got["texts"] and all(got["texts"])


def test_a_misspelt_field_of_a_fork_is_named():
    with pytest.raises(FamilyError, match=r"fork\(titel=...\): Family has no field 'titel'; its fields: title, bound"):
        REGISTRY.family("rms_norm").fork(titel="x")


def test_a_fork_of_a_family_not_in_the_kernel_dirs_is_named(tmp_path):
    mine = _fork_folder(tmp_path, "orphan", "rms_norm")
    code = ("import json; from kernellab.engine import registry; "
            f"reg = registry.load([{str(mine)!r}]); print(json.dumps(reg.errors))")
    got = in_fresh_interpreter(code, cwd=ROOT)
    assert "builds on family 'rms_norm', which no kernel directory holds" in got["orphan"]


def test_the_readme_fork_as_written_loads_with_the_field(tmp_path):
    """README's "Your kernel beside the field" block, written where it says, loads as a fork."""
    section = (ROOT / "README.md").read_text().split("**Your kernel beside the field.**", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    where = block.splitlines()[0].removeprefix("# ../my-kernels/")
    (tmp_path / "my-kernels" / where).parent.mkdir(parents=True)
    (tmp_path / "my-kernels" / where).write_text(block)
    code = ("import json; from kernellab.engine import registry; "
            f"reg = registry.load(['kernels', {str(tmp_path / 'my-kernels')!r}]); "
            "print(json.dumps({'errors': reg.errors, 'keys': sorted(reg.family('my_rms_norm').impls)}))")
    got = in_fresh_interpreter(code, cwd=ROOT)
    assert got["errors"] == {} and {"liger", "quack", "torch_fused", "compiled"} <= set(got["keys"])


def test_every_family_of_ours_forks(tmp_path):
    """A fork of each of our families loads beside it with the field's implementations only."""
    ours = sorted(registry.load().families)
    for name in ours:
        _fork_folder(tmp_path, f"my_{name}", name)
    code = ("import json; from kernellab.engine import registry; "
            f"reg = registry.load(['kernels', {str(tmp_path / 'mine')!r}]); "
            f"print(json.dumps({{'errors': reg.errors, 'impls': {{n: sorted(reg.family('my_' + n).impls) "
            f"for n in {ours!r}}}}}))")
    got = in_fresh_interpreter(code, cwd=ROOT)
    assert got["errors"] == {}
    base = registry.load()
    for name in ours:
        field = sorted(k for k, i in base.family(name).impls.items() if i.backend not in OWN_BACKENDS)
        assert got["impls"][name] == field, name

"""Backward and forward+backward cases: a family declares its gradients once, the harness checks
each output against autograd's float64 gradient, poisons each, names the one that fails, and
times a backward with its forward outside the timed call."""

import math

import pytest
import torch

from kernellab import rows
from kernellab.engine import backward
from kernellab.engine.cases import Case, kernel_plan
from kernellab.engine.harness import bench_impl, check_impl
from kernellab.engine.timing import TimingConfig, measure
from kernellab.errors import FamilyError
from kernellab.kit import Family, randn


def _reference(x, w):
    return torch.tanh(x) * w


def _family() -> Family:
    """Two inputs, two gradients: y = tanh(x) * w, rows x cols with w per column."""
    fam = Family(title="scaled tanh", bound="memory", dtypes=("fp32",),
                 make_inputs=lambda shape, dtype, device, seed: (randn(shape, dtype, device, seed),
                                                                 randn(shape[-1:], dtype, device, seed + 1)),
                 reference=_reference, bytes_moved=lambda shape, dtype, **_: 8 * math.prod(shape),
                 flops=lambda shape, dtype, **_: math.prod(shape), out_like=lambda x, w: torch.empty_like(x),
                 shape_rank=(2,), grads=("dx", "dw"),
                 backward_bytes=lambda shape, dtype, **_: 12 * math.prod(shape) + 8 * shape[-1])
    fam.add("torch_fused", lambda out, x, w: torch.tanh(x, out=out).mul_(w))
    fam.named("scaled_tanh")
    return fam


def _grads(x, w, dy):
    t = torch.tanh(x)
    return dy * w * (1 - t * t), (dy * t).sum(0)


def _manual(out, dy, saved, x, w):
    dx, dw = _grads(x, w, dy)
    out[0].copy_(dx)
    out[1].copy_(dw)
    return out


def _wrong_dw(out, dy, saved, x, w):
    dx, dw = _grads(x, w, dy)
    return dx, dw * 1.01


def _unwritten_dx(out, dy, saved, x, w):
    out[1].copy_(_grads(x, w, dy)[1])
    return out  # dx left as the harness poisoned it


CASE = ((16, 40), "fp32")


def _check(fam, key):
    return list(check_impl(fam, fam.impls[key], [Case(fam.name, key, *CASE)], [0, 1, 2], "cpu"))


def test_autograd_and_manual_backwards_pass_against_the_float64_gradients():
    fam = _family()
    fam.add_autograd("torch_naive", lambda x, w: torch.tanh(x) * w)
    fam.add_backward("torch_fused", _manual)
    assert fam.passes() == ("forward", "backward", "forward+backward")
    for key in ("torch_naive.bwd", "torch_naive.fwdbwd", "torch_fused.bwd", "torch_fused.fwdbwd"):
        got = _check(fam, key)
        assert [r["status"] for r in got] == ["ok"] * 3, got
        assert got[0]["pass"] == fam.impls[key].pass_
        assert got[0]["rel_err"] < 1e-6


def test_a_wrong_dw_fails_naming_dw():
    fam = _family()
    fam.add_backward("torch_fused", _wrong_dw, passes=("backward",))
    row = _check(fam, "torch_fused.bwd")[0]
    assert row["status"] == "failed"
    assert row["reason"].startswith("dw: relative error")
    assert "dx" not in row["reason"]


def test_nan_poison_catches_an_unwritten_output_and_names_it():
    fam = _family()
    fam.add_backward("torch_fused", _unwritten_dx, passes=("backward",))
    row = _check(fam, "torch_fused.bwd")[0]
    assert row["status"] == "failed"
    assert row["reason"].startswith("dx: ") and "non-finite" in row["reason"]


def test_a_backward_returning_too_few_outputs_is_an_error_naming_them():
    fam = _family()
    fam.add_backward("torch_fused", lambda out, dy, saved, x, w: out[0], passes=("backward",))
    row = _check(fam, "torch_fused.bwd")[0]
    assert row["status"] == "error"
    assert "(dx, dw)" in row["reason"]


def test_saved_state_is_made_once_outside_the_timed_call_for_a_backward_and_inside_for_forward_backward():
    fam = _family()
    made = []

    def save(x, w):
        made.append(1)
        return torch.tanh(x)

    def bwd(out, dy, t, x, w):
        return dy * w * (1 - t * t), (dy * t).sum(0)

    fam.add_backward("torch_fused", bwd, save=save)
    cfg = TimingConfig(mode="warm", min_samples=3, max_samples=5, budget_s=0.05, warmup_s=0.0, min_warmup=1)
    bench = list(bench_impl(fam, fam.impls["torch_fused.bwd"], [Case(fam.name, "torch_fused.bwd", *CASE)], cfg,
                            "cpu"))
    assert bench[0]["status"] == "ok" and len(made) == 1
    n = len(made)
    list(bench_impl(fam, fam.impls["torch_fused.fwdbwd"], [Case(fam.name, "torch_fused.fwdbwd", *CASE)], cfg, "cpu"))
    assert len(made) - n >= 3  # one per call: warm-up and samples


def test_byte_model_is_the_backwards_own_and_forward_backward_adds_the_forward():
    fam = _family()
    fam.add_backward("torch_fused", _manual)
    shape = (16, 40)
    rows_ = {p: next(iter(check_impl(fam, fam.impls[k], [Case(fam.name, k, shape, "fp32")], [0], "cpu")))
             for p, k in (("forward", "torch_fused"), ("backward", "torch_fused.bwd"),
                          ("forward+backward", "torch_fused.fwdbwd"))}
    assert rows_["forward"]["bytes"] == 8 * 640
    assert rows_["backward"]["bytes"] == 12 * 640 + 8 * 40
    assert rows_["forward+backward"]["bytes"] == 8 * 640 + 12 * 640 + 8 * 40


def test_gradients_that_accumulate_are_reset_before_each_sample():
    x = torch.ones(4, requires_grad=True)
    reset = backward.grad_reset((x,))
    seen = []

    def call():
        seen.append(x.grad is None)
        (x * 2).sum().backward()

    measure(call, TimingConfig(mode="warm", min_samples=3, max_samples=4, budget_s=0.05, warmup_s=0.0,
                               min_warmup=1), "cpu", before_sample=reset)
    assert all(seen[1:][-3:])  # each timed sample starts with no gradient


def test_a_family_without_gradients_has_forward_cases_only_and_refuses_a_backward():
    fam = _family()
    fam.grads = ()
    assert fam.passes() == ("forward",)
    with pytest.raises(FamilyError, match="declares no gradients"):
        fam.add_backward("torch_fused", _manual)


def test_config_passes_and_pass_shapes_pick_the_cases():
    fam = _family()
    fam.add_backward("torch_fused", _manual)
    plan = kernel_plan("scaled_tanh", {"dtypes": ["fp32"], "shapes": ["8x8", "16x16"],
                                        "passes": ["forward", "backward"], "pass_shapes": {"backward": ["4x4"]}}, "gpu")
    assert plan.impl_keys(fam) == ["torch_fused", "torch_fused.bwd"]
    assert [c.shape for c in plan.cases(fam, fam.impls["torch_fused.bwd"])] == [(4, 4)]
    assert [c.shape for c in plan.cases(fam, fam.impls["torch_fused"])] == [(8, 8), (16, 16)]
    everything = kernel_plan("scaled_tanh", {"dtypes": ["fp32"], "shapes": ["8x8"]}, "gpu")
    assert everything.impl_keys(fam) == ["torch_fused", "torch_fused.bwd", "torch_fused.fwdbwd"]


def test_rows_without_a_pass_column_read_as_forward():
    assert rows.typed({"kernel": "gelu"})["pass"] == "forward"
    assert rows.typed({"kernel": "gelu", "pass": "backward"})["pass"] == "backward"
    assert rows.problems({"pass": "sideways"}) and "pass='sideways'" in " ".join(rows.problems({"pass": "sideways"}))


def test_a_backward_is_profiled_by_its_own_call(tmp_path):
    """torch.profiler runs a backward implementation as its case does (dy and saved state made
    outside, gradients returned): the autograd backward's ops are the top events, with a trace."""
    from kernellab.engine import registry
    from kernellab.engine.profile import profile_case

    fam = registry.load().family("rms_norm")
    impl = fam.impls["torch_naive.bwd"]
    trace = tmp_path / "bwd.trace.json.gz"
    rows_ = profile_case(fam, impl, Case(fam.name, impl.key, (16, 64), "fp32"), "cpu", trace)
    assert rows_ and trace.stat().st_size > 0
    assert any("backward" in r["name"].lower() or "Backward" in r["name"] for r in rows_), [r["name"] for r in rows_]


@pytest.mark.gpu
def test_the_ncu_target_runs_a_backward_step_as_its_case_does(tmp_path):
    """The process ncu profiles calls a backward with its upstream gradient and saved state (it
    called fn(out, *inputs) and every backward step's ncu row was an error)."""
    import json

    from kernellab.engine import ncu_target, registry

    status = tmp_path / "status.json"
    dirs = ":".join(str(d) for d in registry.kernel_dirs(None))
    assert ncu_target.main(["", str(status), dirs, "layer_norm:triton@partials.bwd:fp32:64x1024",
                            "rms_norm:torch_naive.bwd:bf16:64x1024"]) == 0
    assert json.loads(status.read_text()) == [{"status": "ok", "reason": ""}] * 2


def test_a_cuda_backward_ladder_needs_gradients_and_is_declared_once():
    """Family.add_cuda_backward: a family without gradients, a ladder declared twice or a save that
    is not a function is refused, naming the ladder."""
    with pytest.raises(FamilyError, match="'cuda_bwd' is a backward, but the family declares no gradients"):
        Family(title="t", dtypes=("fp32",)).add_cuda_backward("cuda_bwd")
    fam = Family(title="t", dtypes=("fp32",), grads=("dx",))
    fam.add_cuda_backward("cuda_bwd", save=lambda x: x)
    with pytest.raises(FamilyError, match="'cuda_bwd' declared twice"):
        fam.add_cuda_backward("cuda_bwd")
    with pytest.raises(FamilyError, match="save must be a function"):
        fam.add_cuda_backward("other", save=3)


def test_a_backward_ladder_is_read_beside_pytorchs_backward():
    """KERNEL_LOG's baseline of a backward ladder is torch_fused.bwd, autograd's backward of
    PyTorch's op, not the forward's torch_fused (the H200 set of issue 42 set them side by side),
    in a set the aggregate writes and in one written before it named the pass."""
    from kernellab.report.load import _ladders

    def ladder(base, keys):
        return {"kernel": "rms_norm", "ladder": "cuda_bwd", "baseline_impl_key": base,
                "steps": [{"impl_key": k, "step": k, "order": i} for i, k in enumerate(keys)]}

    bwd = ["cuda@block_atomic.bwd", "cuda@persistent.bwd"]
    got = _ladders([ladder("torch_fused", bwd), ladder("torch_fused.bwd", bwd),
                    ladder("torch_fused", ["cuda@block", "cuda@staged"])], [])
    assert [ld["baseline_impl_key"] for ld in got] == ["torch_fused.bwd", "torch_fused.bwd", "torch_fused"]


@pytest.mark.gpu
def test_ncu_profiles_an_autograd_backward_launched_from_autograds_own_thread():
    """Autograd runs a CUDA backward on its device thread: the NVTX range the target pushes must be
    the process's (--nvtx-push-pop-scope process), or ncu sees no kernel inside it (every autograd
    backward's ncu row in the H200 set of issue 42 said so)."""
    import shutil

    from kernellab.engine import ncu

    if shutil.which("ncu") is None:
        pytest.skip("ncu is not installed")
    rows_ = ncu.profile_steps([("rms_norm", "torch_fused.bwd", "fp32", "256x1024"),
                               ("rms_norm", "triton@partials.bwd", "fp32", "256x1024")], [], timeout_s=120)
    assert [r["status"] for r in rows_] == ["ok", "ok"], rows_
    assert all(r["n_kernels"] >= 1 for r in rows_)


def test_pytorchs_three_backwards_are_one_call():
    """add_pytorch_backwards: autograd through the naive forward, through PyTorch's op and through
    torch.compile of the naive forward, each for both backward passes, checked against the
    reference's gradients."""
    fam = Family(title="t", dtypes=("fp32",), grads=("dx",), make_inputs=lambda shape, dtype, device, seed: (
        randn(shape, dtype, device, seed),), reference=torch.tanh, out_like=lambda x: torch.empty_like(x))
    fam.add_pytorch_backwards(lambda x: 1 - 2 / (torch.exp(2 * x) + 1), torch.tanh)
    assert sorted(fam.impls) == ["compiled.bwd", "compiled.fwdbwd", "torch_fused.bwd", "torch_fused.fwdbwd",
                                 "torch_naive.bwd", "torch_naive.fwdbwd"]
    from kernellab.engine.harness import run_case_check

    fam.name = "t"
    for key in ("torch_naive.bwd", "torch_fused.fwdbwd"):
        row = run_case_check(fam, fam.impls[key], Case("t", key, (8, 16), "fp32"), 0, "cpu")
        assert row["status"] == "ok", (key, row["reason"])

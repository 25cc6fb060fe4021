"""Layer norm's own tests: a large mean, strided rows, what ``recording`` captures of its
autotuned launch, and (on a GPU) precompiling for the tuner and the CUDA op. The generic tests
are in tests/test_families.py."""

from __future__ import annotations

import math

import pytest
import torch

from kernellab.engine import runtime, testing
from kernellab.engine.testing import check, cuda_rel_err, cuda_tol, empty_like_nan, randn_cuda, rel_error

from . import FAMILY as fam
from . import layer_norm_tuned

DEVICE = runtime.device()


def test_large_mean():
    """mean / std = 15000: the looped kernel's centered second pass keeps the variance
    accurate, where E[x^2] - E[x]^2 in fp32 is off by a factor of about 60. What remains (about 3e-4) is the
    rounding of the mean to fp32 (ulp(300) / 2 against a std of 0.02), as in PyTorch (1e-3)."""
    x, w, b = fam.make_inputs((2, 9000), "fp32", DEVICE, 4)
    x = x * 0.01 + 300.0
    out = fam.out_like(x, w, b).fill_(math.nan)
    got = fam.impls["triton"].fn(out, x, w, b)
    assert rel_error(got, fam.reference(x.double(), w.double(), b.double())) <= 2e-3


def test_row_stride():
    """A view with a row stride larger than its width (the last column cut off)."""
    x, w, b = fam.make_inputs((5, 40), "fp32", DEVICE, 3)
    x, w, b = x[:, :33], w[:33].contiguous(), b[:33].contiguous()
    for key in (k for k, i in fam.impls.items() if i.backend == "triton" and i.pass_ == "forward"):
        out = fam.out_like(x, w, b).fill_(math.nan)
        check(fam, fam.impls[key].fn(out, x, w, b), (x, w, b), out, (5, 33), "fp32")


def test_recording_captures_autotuned_launches_without_running():
    """Inside ``recording()`` an autotuned launch is recorded (its JIT function, the configs
    kept for the call, tensors as their dtype), and nothing runs."""
    from kernellab.engine.launch import recording
    from kernellab.kit.triton import kept_configs

    x, w, b = fam.make_inputs((3, 1000), "fp32", DEVICE, 0)
    out = torch.full_like(x, math.nan)
    with recording() as rec:
        fam.impls["triton"].fn(out, x, w, b)
    assert bool(torch.isnan(out).all()), "a recorded launch must not run"
    ((fn, configs, args, kwargs),) = rec
    assert fn is layer_norm_tuned.fn
    assert args[:4] == (torch.float32,) * 4 and args[4:6] == (3, 1000)
    assert kwargs == {"BLOCK_COLS": 1024, "EVEN": False}
    assert configs == kept_configs(layer_norm_tuned, (x, w, b, out, 3, 1000), kwargs)
    assert len(configs) > 1 and not any(c.kwargs["LOOPED"] for c in configs)


def test_bytes_and_flops():
    assert fam.bytes_moved((8, 100), "bf16") == (2 * 800 + 200) * 2
    assert fam.flops((8, 100), "fp32") >= 800


@pytest.mark.gpu
def test_precompile_leaves_nothing_for_the_tuner_to_compile():
    """After ``autotune.precompile`` the tuning call finds every kept config compiled."""
    from kernellab.engine import autotune
    from kernellab.engine.cases import Case

    fn = layer_norm_tuned.fn
    case = Case(fam.name, "triton", (64, 2000), "bf16")
    autotune.precompile(fam, fam.impls["triton"], [case], DEVICE, workers=4)
    compiled = sum(len(c[0]) for c in fn.device_caches.values())
    x, w, b = fam.make_inputs(case.shape, "bf16", DEVICE, 0)
    out = torch.empty_like(x)
    got = fam.impls["triton"].fn(out, x, w, b)
    assert sum(len(c[0]) for c in fn.device_caches.values()) == compiled
    check(fam, got, (x, w, b), out, case.shape, "bf16")


@testing.row_ladder_cases(fam)
def test_gpu_cuda_op(kl_ops, dtype, shape, step):
    """Every step of the CUDA ladder, on rows that take its own path and rows that fall back."""
    x = randn_cuda(shape, dtype, 5, scale=2.0, offset=1.5)
    w, b = randn_cuda(shape[-1:], dtype, 6, offset=1.0), randn_cuda(shape[-1:], dtype, 7)
    out = empty_like_nan(x)
    kl_ops.layer_norm(x, w, b, out, 1e-5, step)
    ref = torch.nn.functional.layer_norm(x.double(), shape[-1:], w.double(), b.double(), 1e-5)
    assert cuda_rel_err(out, ref) < cuda_tol(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(5, 1001), (64, 4096), (600, 32768)])
@pytest.mark.parametrize("step", [s.step for s in fam.ladders()["cuda_rows"]])
def test_gpu_cuda_op_large_mean(kl_ops, shape, step):
    """Rows with mean / std = 3000: every step's statistics stay centred (two passes, or each
    thread's Moments merged by Chan's update), where E[x^2] - E[x]^2 in fp32 loses the variance."""
    x = randn_cuda(shape, torch.float32, 8, scale=0.1, offset=300.0)
    w, b = randn_cuda(shape[-1:], torch.float32, 6, offset=1.0), randn_cuda(shape[-1:], torch.float32, 7)
    out = empty_like_nan(x)
    kl_ops.layer_norm(x, w, b, out, 1e-5, step)
    ref = torch.nn.functional.layer_norm(x.double(), shape[-1:], w.double(), b.double(), 1e-5)
    assert cuda_rel_err(out, ref) < 2e-3


@pytest.mark.parametrize("large_mean", [False, True])
@pytest.mark.parametrize("even", [True, False])
def test_looped_path_in_chunks(even, large_mean):
    """The looped path over several chunks, mask-free (EVEN: the row a power of two) or masked
    (the last chunk partial). With mean / std = 15000 its one-pass statistics (each chunk
    centered on its own mean, merged by Chan's update) stay as accurate as the
    centered two-pass ones (test_large_mean), where E[x^2] - E[x]^2 in fp32 is off ~60x."""
    from kernellab.kit.triton import launch

    from . import layer_norm_kernel

    cols = 64 if even else 61
    x, w, b = fam.make_inputs((3, cols), "fp32", DEVICE, 5)
    if large_mean:
        x = x * 0.01 + 300.0
    out = fam.out_like(x, w, b).fill_(math.nan)
    launch(layer_norm_kernel, (3,), x, w, b, out, 3, cols, x.stride(0), out.stride(0), 1e-5,
           BLOCK_COLS=64, TILE=16, LOOPED=True, EVEN=even, num_warps=1)
    if large_mean:
        assert rel_error(out, fam.reference(x.double(), w.double(), b.double())) <= 2e-3
    else:
        check(fam, out, (x, w, b), out, (3, cols), "fp32")


@pytest.mark.parametrize("data", ["normal", "large_mean", "outlier_first"])
@pytest.mark.parametrize("even", [True, False])
@pytest.mark.parametrize("rows_per_program", [1, 2, 4])
@pytest.mark.parametrize("kernel_meta", [None, {}, {"ONE_MERGE": True}, {"ONE_MERGE": True, "KNOWN_TRIP": True}],
                         ids=["loop", "group", "group_one_merge", "group_known_trip"])
def test_loop_kernels_rows_and_chunks(kernel_meta, rows_per_program, even, data):
    """The triton_loop kernels over several chunks (the last one partial unless EVEN) and over
    a row count that leaves the last program's tile part empty. With mean / std = 15000 the
    shifted sums keep the variance as accurate as the centered two-pass statistics
    (test_large_mean), and so they do when a row's first value, a shift, lies 500 std out."""
    from kernellab.kit.triton import launch

    from .loop import layer_norm_group_kernel, layer_norm_loop_kernel

    rows, cols = 5, 64 if even else 61
    x, w, b = fam.make_inputs((rows, cols), "fp32", DEVICE, 9)
    if data == "large_mean":
        x = x * 0.01 + 300.0
    elif data == "outlier_first":
        x[:, 0] = 1000.0
    out = fam.out_like(x, w, b).fill_(math.nan)
    kernel, meta = (layer_norm_loop_kernel, {}) if kernel_meta is None else (layer_norm_group_kernel,
                                                                            {"GROUP": 4, **kernel_meta})
    launch(kernel, (math.ceil(rows / rows_per_program),), x, w, b, out, rows, cols, x.stride(0), out.stride(0), 1e-5,
           BLOCK_COLS=64, CHUNK=16, ROWS=rows_per_program, EVEN=even, num_warps=1, **meta)
    if data == "large_mean":
        assert rel_error(out, fam.reference(x.double(), w.double(), b.double())) <= 2e-3
    else:
        check(fam, out, (x, w, b), out, (rows, cols), "fp32")


# ---- the backward --------------------------------------------------------------------------------
BWD_STEPS = [s.key for s in fam.ladders()["triton_bwd"]]


def test_backward_ladder_in_ladder_yaml_order():
    assert [s.step for s in fam.ladders()["triton_bwd"]] == ["atomics", "partials", "persistent"]


@pytest.mark.parametrize("key", BWD_STEPS)
@pytest.mark.parametrize("shape", [(7, 33), (2, 64), (1, 5)])
def test_backward_steps_match_autograd(key, shape):
    """Every Triton backward step's dx, dw and db against autograd's float64 gradients, in both dtypes:
    rows that leave a program several (persistent's handful of programs, partials' blocks) or one,
    rows no power of two wide."""
    from kernellab.engine.testing import check_backward

    for dtype in fam.dtypes:
        row = check_backward(fam, fam.impls[key], shape, dtype)
        assert row["status"] == "ok", (dtype, row["reason"])


@pytest.mark.parametrize("key", BWD_STEPS)
def test_backward_steps_a_wrong_dw_is_named(key):
    """A dw off by 1% fails naming dw alone; a db off by 1% fails naming db."""
    from kernellab.engine.testing import check_backward, wrong_gradient

    impl = fam.impls[key]
    row = check_backward(fam, wrong_gradient(impl, 1), (7, 33), "fp32")
    assert row["status"] == "failed" and row["reason"].startswith("dw: relative error"), row
    assert "dx" not in row["reason"] and "db" not in row["reason"]
    row = check_backward(fam, wrong_gradient(impl, 2), (7, 33), "fp32")
    assert row["status"] == "failed" and row["reason"].startswith("db: "), row


def test_persistent_sums_more_partials_than_a_tree_block(monkeypatch):
    """More programs than the second stage's column block is wide (BLOCK_PARTS > BLOCK_N): the tree
    over the programs' axis still sums every partial row."""
    from kernellab.engine.testing import check_backward

    from .triton_bwd import partials

    monkeypatch.setattr(partials, "sm_count", lambda device: 9)  # the steps' programs_of
    row = check_backward(fam, fam.impls["triton@persistent.bwd"], (20, 1000), "fp32")
    assert row["status"] == "ok", row["reason"]

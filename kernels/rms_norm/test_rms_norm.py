"""RMS norm's own tests: strided rows, the sm_90 code's loads, and (on a GPU) the CUDA op.
The generic tests are in tests/test_families.py."""

from __future__ import annotations

import math

import pytest
import torch

from kernellab.engine import runtime, testing
from kernellab.engine.testing import check, cuda_rel_err, cuda_tol, empty_like_nan, randn_cuda

from . import FAMILY as fam

DEVICE = runtime.device()


def test_row_stride():
    """A view with a row stride larger than its width (the last column cut off)."""
    x, w = fam.make_inputs((5, 40), "fp32", DEVICE, 3)
    x, w = x[:, :33], w[:33].contiguous()
    for key in (k for k, i in fam.impls.items() if i.backend == "triton" and i.pass_ == "forward"):
        out = fam.out_like(x, w).fill_(math.nan)
        check(fam, fam.impls[key].fn(out, x, w), (x, w), out, (5, 33), "fp32")


def test_bytes_and_flops():
    assert fam.bytes_moved((8, 100), "fp32") == (2 * 800 + 100) * 4
    assert fam.flops((8, 100), "fp32") >= 800


def test_sm90_only_16_byte_loads(sm90_ptx):
    testing.assert_sm90_16_byte_loads(sm90_ptx, fam.name)


@testing.row_ladder_cases(fam)
def test_gpu_cuda_op(kl_ops, dtype, shape, step):
    """Every step of the CUDA ladder, on rows that take its own path and rows that fall back."""
    x = randn_cuda(shape, dtype, 8, scale=2.0, offset=0.5)
    w = randn_cuda(shape[-1:], dtype, 9, offset=1.0)
    out = empty_like_nan(x)
    kl_ops.rms_norm(x, w, out, 1e-6, step)
    xd = x.double()
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
    assert cuda_rel_err(out, ref) < cuda_tol(dtype)


@pytest.mark.parametrize("known_trip", [False, True])
@pytest.mark.parametrize("even", [True, False])
def test_looped_path_in_chunks(even, known_trip):
    """The looped path over several chunks, mask-free (EVEN: the row a power of two) or masked;
    KNOWN_TRIP bounds the loops by the padded row where EVEN, and is ignored where not."""
    from kernellab.kit.triton import launch

    from . import rms_norm_kernel

    cols = 64 if even else 61
    x, w = fam.make_inputs((3, cols), "fp32", DEVICE, 5)
    out = fam.out_like(x, w).fill_(math.nan)
    launch(rms_norm_kernel, (3,), x, w, out, 3, cols, x.stride(0), out.stride(0), 1e-6,
           BLOCK_COLS=64, TILE=16, LOOPED=True, EVEN=even, KNOWN_TRIP=known_trip, num_warps=1)
    check(fam, out, (x, w), out, (3, cols), "fp32")


BWD_STEPS = ["block_atomic", "block_partials", "persistent"]


def _fake_rms_norm_bwd(calls):
    """A stand-in for the op rms_norm_bwd(x, w, dy, rstd, dx, dw, step), in PyTorch: what the CUDA
    steps compute, from the arguments in the op's order."""

    def op(x, w, dy, rstd, dx, dw, step):
        calls.append(step)
        x32, w32, dy32, r = x.float(), w.float(), dy.float(), rstd[:, None]
        xhat = x32 * r
        c = (w32 * dy32 * xhat).mean(dim=-1, keepdim=True)
        dx.copy_(r * (w32 * dy32 - xhat * c))
        dw.copy_((dy32 * xhat).sum(0))

    return op


def test_cuda_backward_steps_run_the_backward_op_with_the_saved_rstd(monkeypatch):
    """Each cuda_bwd step is a backward of the family, its saved state the fp32 rstd of each row, and
    it hands x, w, dy, rstd, dx, dw and its name to the op rms_norm_bwd: with the op replaced by its
    PyTorch equivalent, every step's dx and dw pass the harness's check against autograd's float64
    gradients (a swapped argument would fail it)."""
    import types

    from kernellab.engine.cases import Case
    from kernellab.engine.harness import run_case_check
    from kernellab.kit import adapters

    calls = []
    ops = types.SimpleNamespace(rms_norm_bwd=_fake_rms_norm_bwd(calls))
    monkeypatch.setattr(adapters, "cuda_ops", lambda family=None, step=None: ops)
    steps = {i.step: i for i in fam.impls.values() if i.backend == "cuda" and i.backward}
    assert list(steps) == BWD_STEPS and [s.order for s in steps.values()] == [1, 2, 3]
    for name, impl in steps.items():
        assert (impl.key, impl.pass_, impl.ladder_name) == (f"cuda@{name}.bwd", "backward", "cuda_bwd")
        x, w = fam.make_inputs((6, 40), "bf16", DEVICE, 1)
        rstd = impl.save(x, w)
        assert (rstd.dtype, tuple(rstd.shape), rstd.is_contiguous()) == (torch.float32, (6,), True)
        torch.testing.assert_close(rstd, torch.rsqrt(x.double().pow(2).mean(-1) + 1e-6).float())
        for dtype in fam.dtypes:
            row = run_case_check(fam, impl, Case("rms_norm", impl.key, (6, 40), dtype), 1, DEVICE)
            assert row["status"] == "ok", row
    assert calls == [s for s in BWD_STEPS for _ in fam.dtypes]


@pytest.mark.gpu
@pytest.mark.parametrize("step", BWD_STEPS)
@pytest.mark.parametrize("shape", [(64, 1024), (37, 1000), (5, 8191), (300, 4096), (3, 70000)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_cuda_backward_op(kl_ops, dtype, shape, step):
    """Every step of the backward ladder against float64 autograd: rows that take vectors, rows that
    do not (odd widths), a partial last group of rows, and rows too long for a shared-memory dw."""
    x = randn_cuda(shape, dtype, 8, scale=2.0, offset=0.5)
    w = randn_cuda(shape[-1:], dtype, 9, offset=1.0)
    dy = randn_cuda(shape, dtype, 10)
    rstd = fam.impls[f"cuda@{step}.bwd"].save(x, w)
    dx, dw = empty_like_nan(x), empty_like_nan(w)
    kl_ops.rms_norm_bwd(x, w, dy, rstd, dx, dw, step)
    xd, wd = x.double().requires_grad_(), w.double().requires_grad_()
    gx, gw = torch.autograd.grad(fam.reference(xd, wd), (xd, wd), dy.double())
    assert cuda_rel_err(dx, gx) < cuda_tol(dtype)
    assert cuda_rel_err(dw, gw) < cuda_tol(dtype)


PEER_BWD = {"liger": "Liger-Kernel needs a CUDA GPU", "quack": "QuACK needs a CUDA GPU (sm_90+)"}


@pytest.mark.skipif(runtime.has_gpu(), reason="checks the rows of a machine without a GPU")
@pytest.mark.parametrize("kind", sorted(PEER_BWD))
def test_peer_backwards_are_unavailable_without_a_gpu(kind):
    """Liger's and QuACK's backwards are backward and forward+backward implementations whose rows,
    on a machine without a GPU, are unavailable with the reason (their saved state's forward is
    where it shows), and neither library is imported."""
    import sys

    from kernellab.engine.cases import Case
    from kernellab.engine.harness import check_impl

    for key in (f"{kind}.bwd", f"{kind}.fwdbwd"):
        impl = fam.impls[key]
        assert (impl.impl, impl.backward, impl.save is not None) == (kind, True, True)
        cases = [Case("rms_norm", key, (4, 64), dtype) for dtype in fam.dtypes]
        rows = list(check_impl(fam, impl, cases, [0], "cpu"))
        assert [(r["status"], r["reason"]) for r in rows] == [("unavailable", PEER_BWD[kind])] * len(cases)
    assert not [m for m in sys.modules if m.split(".")[0] in ("liger_kernel", "quack")]


def test_peer_backwards_get_their_forwards_state_and_return_dx_and_dw(monkeypatch):
    """With fake libraries on a GPU they run on: each backward is handed what its own forward saved
    (Liger: rstd, block size, warps and casting mode, not in place; QuACK: the rstd it stores on
    request) and returns (dx, dw), dw in w's dtype."""
    import sys
    import types

    from kernellab.engine.backward import call_of, grad_buffers, outputs_contract
    from kernellab.kit import peers

    from . import __name__ as family_module

    mod = sys.modules[family_module]
    monkeypatch.setattr(peers, "gpu_reason", lambda peer, tensor: "")
    seen = {}

    def liger_fwd(x, w, eps, offset, mode, row_mode):
        return torch.empty_like(x), x, torch.ones(x.shape[0]), 1024, 4, mode

    def liger_bwd(*args):
        seen["liger"] = args[3:]
        return torch.zeros_like(args[1]), torch.zeros_like(args[2])

    def quack_fwd(x, w, eps, store_rstd):
        seen["quack_fwd"] = (eps, store_rstd)
        return torch.empty_like(x), None, torch.full((x.shape[0],), 2.0)

    def quack_bwd(x, w, dout, rstd):
        seen["quack"] = rstd
        return torch.zeros_like(x), torch.zeros_like(w, dtype=torch.float32), None, None

    for module, fns in (("liger_kernel.ops.rms_norm", {"rms_norm_forward": liger_fwd, "rms_norm_backward": liger_bwd}),
                        ("quack.rmsnorm", {"rmsnorm_fwd": quack_fwd, "rmsnorm_bwd": quack_bwd})):
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            monkeypatch.setitem(sys.modules, ".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
        for name, fn in fns.items():
            setattr(sys.modules[module], name, fn)
    for attr in ("_liger_rms_norm", "_liger_rms_norm_bwd", "_quack_rms_norm", "_quack_rms_norm_bwd"):
        old = getattr(mod, attr)
        monkeypatch.setattr(mod, attr, peers.entry(old.peer, *old.where))
    x, w = fam.make_inputs((3, 32), "bf16", DEVICE, 2)
    dy = torch.ones_like(x)
    for kind in ("liger", "quack"):
        impl = fam.impls[f"{kind}.bwd"]
        out = grad_buffers(fam, (x, w))
        call, _ = call_of(impl, out, dy, (x, w), {})
        got, broken = outputs_contract(fam, impl, call(), out)
        assert not broken and [t.dtype for t in got] == [torch.bfloat16, torch.bfloat16]
    rstd, offset, mode, block, warps, in_place, row_mode = seen["liger"]
    assert (rstd.tolist(), offset, mode, block, warps, in_place, row_mode) == ([1.0] * 3, 0.0, "llama", 1024, 4, False,
                                                                                None)
    assert seen["quack_fwd"] == (1e-6, True) and seen["quack"].tolist() == [2.0] * 3


# ---- the Triton backward ladder -------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7, 33), (1, 5), (9, 64)])
def test_triton_backward_steps_match_autograd_and_a_wrong_dw_is_named(shape):
    """Every Triton backward step's dx and dw against autograd's float64 gradients in both dtypes; a
    dw off by 1% fails, naming dw alone."""
    from kernellab.engine.testing import check_backward, wrong_gradient

    for impl in fam.ladders()["triton_bwd"]:
        for dtype in fam.dtypes:
            row = check_backward(fam, impl, shape, dtype)
            assert row["status"] == "ok", (impl.key, dtype, row["reason"])
        row = check_backward(fam, wrong_gradient(impl, 1), shape, "fp32")
        assert row["status"] == "failed" and row["reason"].startswith("dw: relative error"), row
        assert "dx" not in row["reason"]

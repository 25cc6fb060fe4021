"""Dropout's own tests: its statistical contract (``validate``) and determinism
(``check_determinism``) on every implementation that runs here, that both reject broken
outputs, the kept fraction and scale, the 16-bit threshold, a mask independent of the Triton
config, the sm_90 code's loads, and (on a GPU) the CUDA op against a bit-for-bit Philox
reference. The generic tests (every implementation validated at awkward shapes, every
autotune config) are in tests/test_families.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kernellab.engine import runtime, testing
from kernellab.engine.launch import force_config
from kernellab.engine.testing import empty_like_nan, in_fresh_interpreter, randn_cuda, run

from . import FAMILY as fam
from . import check_determinism, dropout_kernel, threshold_16bit

DEVICE = runtime.device()
CPU_KEYS = [k for k, i in fam.impls.items() if i.backend != "cuda" and i.pass_ == "forward"]
P = fam.params["p"][0]


def test_params_and_validate_registered():
    assert fam.params == {"p": [0.1, 0.3, 0.5]}
    assert fam.validate is not None


@pytest.mark.parametrize("key", CPU_KEYS)
def test_deterministic_and_seeded(key):
    x, seed = fam.make_inputs((4099,), "fp32", DEVICE, 5, p=P)
    verdict = check_determinism(fam.impls[key].fn, (x, seed), P)
    assert verdict["ok"], verdict["reason"]


_LOWER_THEN_CALL = """
import json, torch
from torch._dynamo.utils import counters
from kernellab.engine import registry
from kernellab.engine.launch import compile_only
from kernellab.engine.testing import empty_like_nan
REGISTRY = registry.load()  # the families of the default kernel folders

fam = REGISTRY.family("dropout")
impl, p = fam.impls["compiled"], fam.params["p"][0]
x, seed = fam.make_inputs((1000,), "fp32", "cpu", 3, p=p)
out = empty_like_nan(x)
compile_only(impl.fn, out, x, seed, p=p)
untouched = bool(out.isnan().all())
torch._dynamo.reset()
counters.clear()
got = impl.fn(out, x, seed, p=p)
print(json.dumps({"untouched": untouched, "hits": counters["inductor"]["fxgraph_cache_hit"],
                  "valid": fam.validate(got, (x, seed), dtype="fp32", p=p)["ok"]}))
"""


@pytest.mark.slow  # torch.compile's Inductor, or Snakemake, end to end: CI's second stage
def test_compiled_lowers_ahead_the_graph_its_seeded_call_reads(tmp_path):
    """Compiling ahead (``launch.compile_only``) lowers the graph of the seeded call without
    running it; the call afterwards (Dynamo reset) finds it in Inductor's cache and its
    output passes the family's contract."""
    got = in_fresh_interpreter(_LOWER_THEN_CALL, {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path),
                                                "TORCHINDUCTOR_FX_GRAPH_CACHE": "1"})
    assert got == {"untouched": True, "hits": 1, "valid": True}


def test_kept_fraction_and_scale():
    """Large enough for tight bounds: kept fraction near 1 - p, kept values x / (1 - p)."""
    n = 1 << 15
    big = max(dropout_kernel.configs, key=lambda c: c.kwargs["BLOCK"])  # few programs: fast
    for p in (0.1, 0.3, 0.5):
        with force_config(dropout_kernel, big):
            got, (x, seed), _ = run(fam, fam.impls["triton"].fn, (n,), "fp32", p=p)
        kept = got != 0
        frac = float(kept.double().mean())
        assert abs(frac - (1 - p)) < 6 * math.sqrt(p * (1 - p) / n)
        assert torch.allclose(got[kept], x[kept] / (1 - p), rtol=1e-6, atol=0)


def test_16bit_threshold_ends_and_uses_every_half_word():
    """p = 0 keeps all, p = 1 drops all; the 16-bit uniforms of one Philox call differ
    (both halves of all four numbers are used: no two of the eight lanes share a mask)."""
    assert threshold_16bit(0.0) == 0 and threshold_16bit(1.0) == 65536
    assert threshold_16bit(0.5) == 32768
    for p, kept in ((0.0, 1.0), (1.0, 0.0)):
        got, _, _ = run(fam, fam.impls["triton"].fn, (1000,), "fp32", p=p)
        assert float((got != 0).double().mean()) == kept
    got, _, _ = run(fam, fam.impls["triton"].fn, (8 * 512,), "fp32", p=0.5)
    lanes = (got != 0).reshape(-1, 8).T  # lane j: element 8g + j of every group g
    for i in range(8):
        for j in range(i + 1, 8):
            assert not torch.equal(lanes[i], lanes[j]), (i, j)


def test_triton_mask_independent_of_config():
    """The mask depends on (seed, element index) only: every BLOCK gives the same output."""
    x, seed = fam.make_inputs((5000,), "bf16", DEVICE, 0, p=0.5)
    outs = []
    for config in dropout_kernel.configs:
        out = fam.out_like(x, seed).fill_(math.nan)
        with force_config(dropout_kernel, config):
            outs.append(fam.impls["triton"].fn(out, x, seed, p=0.5).clone())
    assert all(torch.equal(outs[0], o) for o in outs[1:])


def _good(x, p, seed=0):
    gen = torch.Generator().manual_seed(seed)
    keep = torch.rand(x.shape, generator=gen) >= p
    return (x.double() * keep / (1 - p)).to(x.dtype)


def test_validate_rejects_broken_outputs():
    x, seed = fam.make_inputs((4096,), "fp32", "cpu", 0, p=0.3)
    ok = fam.validate(_good(x, 0.3), (x, seed), dtype="fp32", p=0.3)
    assert ok["ok"], ok["reason"]
    assert ok["rel_err"] < 1e-6

    last_unwritten = _good(x, 0.3)
    last_unwritten[-1] = math.nan
    assert not fam.validate(last_unwritten, (x, seed), dtype="fp32", p=0.3)["ok"]
    unscaled = _good(x, 0.3) * (1 - 0.3)
    assert not fam.validate(unscaled, (x, seed), dtype="fp32", p=0.3)["ok"]
    # right scale, wrong drop probability: only the kept fraction betrays it
    wrong_p = (x * (torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) >= 0.1)) / (1 - 0.3)
    verdict = fam.validate(wrong_p, (x, seed), dtype="fp32", p=0.3)
    assert not verdict["ok"] and "kept" in verdict["reason"]
    assert not fam.validate(x.clone(), (x, seed), dtype="fp32", p=0.3)["ok"]  # nothing dropped
    assert not fam.validate(_good(x, 0.3)[:-1], (x, seed), dtype="fp32", p=0.3)["ok"]  # shape
    # bf16: the rounding of x / (1 - p) to bf16 passes
    xb = x.to(torch.bfloat16)
    assert fam.validate(_good(xb, 0.3), (xb, seed), dtype="bf16", p=0.3)["ok"]


def test_determinism_check_rejects():
    x, seed = fam.make_inputs((1024,), "fp32", "cpu", 0, p=0.5)
    calls = iter(range(1000))

    def fresh_each_call(out, x, seed, p):
        return _good(x, p, seed=next(calls))

    def ignores_seed(out, x, seed, p):
        return _good(x, p, seed=0)

    def honest(out, x, seed, p):
        return _good(x, p, seed=seed)

    assert not check_determinism(fresh_each_call, (x, seed), 0.5)["ok"]
    assert not check_determinism(ignores_seed, (x, seed), 0.5)["ok"]
    assert check_determinism(honest, (x, seed), 0.5)["ok"]


def test_bytes_and_flops():
    assert fam.bytes_moved((1000,), "bf16", p=0.1) == 2 * 1000 * 2
    assert fam.flops((800,), "fp32", p=0.1) >= 800


def test_sm90_only_16_byte_loads(sm90_ptx):
    testing.assert_sm90_16_byte_loads(sm90_ptx, fam.name)


# ---- the CUDA op's Philox reference ---------------------------------------------------------------

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)
# Random123's known-answer vectors for Philox4x32-10 (also checked against the device generator
# of kernels/common/common.cuh in tests/test_cuda_sources.py)
KNOWN = ["6627e8d5 e169c58d bc57ac4c 9b00dbd8", "408f276d 41c83b0e a20bc7c6 6d5451fd",
         "d16cfe09 94fdcceb 5001e420 24126ea1"]


def philox4x32_10(counter, key):
    """Philox4x32-10 over numpy arrays: counter is four uint32 arrays, key two ints."""
    c = [np.asarray(v, dtype=np.uint64) for v in counter]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0 = np.uint64(_M0) * c[0]
        p1 = np.uint64(_M1) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _MASK, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _MASK]
        k0 = (k0 + np.uint64(_W0)) & _MASK
        k1 = (k1 + np.uint64(_W1)) & _MASK
    return [np.atleast_1d(v) for v in c]


def dropout_reference(x: torch.Tensor, seed: int, p: float) -> torch.Tensor:
    """What dropout_philox computes, bit for bit (x on any device; result on x's device)."""
    n = x.numel()
    groups = np.arange((n + 3) // 4, dtype=np.uint64)
    zeros = np.zeros_like(groups)
    words = philox4x32_10([groups & _MASK, groups >> np.uint64(32), zeros, zeros],
                          (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF))
    r = np.stack(words, axis=1).reshape(-1)[:n]
    u = (r >> np.uint64(8)).astype(np.float64) * 2.0**-24
    p32 = float(np.float32(p))
    keep = torch.from_numpy(u >= p32).to(x.device).reshape(x.shape)
    scale = float(np.float32(1.0 / (1.0 - p32))) if p32 < 1.0 else 0.0
    kept = (x.float() * torch.tensor(scale, dtype=torch.float32, device=x.device)).to(x.dtype)
    return torch.where(keep, kept, torch.zeros_like(x))


def test_philox_reference_matches_the_known_answers():
    ref = [philox4x32_10([np.uint32(v) for v in c], k) for c, k in
           [([0, 0, 0, 0], (0, 0)), ([2**32 - 1] * 4, (2**32 - 1, 2**32 - 1)),
            ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], (0xA4093822, 0x299F31D0))]]
    assert [" ".join(f"{int(w[0]):08x}" for w in r) for r in ref] == KNOWN


def test_reference_is_counter_based():
    x = torch.arange(1, 11, dtype=torch.float32)
    a = dropout_reference(x, 7, 0.5)
    assert torch.equal(a, dropout_reference(x, 7, 0.5))
    assert torch.equal(dropout_reference(x[:6], 7, 0.5), a[:6])  # depends on the index, not the size
    assert not torch.equal(a, dropout_reference(x, 8, 0.5))
    assert set(torch.unique(a / x).tolist()) <= {0.0, 2.0}
    assert torch.equal(dropout_reference(x, 7, 0.0), x)
    assert not dropout_reference(x, 7, 1.0).any()


# ---- on a GPU -------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", fam.dtypes)
@pytest.mark.parametrize("backend", ["torch", "triton", "compile", "cuda"])
def test_gpu_valid_and_deterministic(backend, dtype):
    if backend == "cuda":
        from kernellab.engine import cuda_ext
        from kernellab.errors import Unavailable

        try:
            cuda_ext.ops()
        except Unavailable as exc:
            pytest.skip(str(exc))
    # the forwards: the backwards of these backends (below) take the saved state, not x
    forwards = [(k, i) for k, i in fam.impls.items() if i.backend == backend and i.pass_ == "forward"]
    assert forwards, backend
    for key, impl in forwards:
        for p in fam.params["p"]:
            got, inputs, _ = run(fam, impl.fn, ((1 << 20) + 3,), dtype, p=p)
            verdict = fam.validate(got, inputs, dtype=dtype, p=p)
            assert verdict["ok"], f"{key} p={p}: {verdict['reason']}"
            verdict = check_determinism(impl.fn, inputs, p)
            assert verdict["ok"], f"{key} p={p}: {verdict['reason']}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("n,misalign,seed", [(1, False, 0), (1000003, False, 1234), (4099, True, 2**40 + 5)])
def test_gpu_cuda_op_is_philox_bit_for_bit(kl_ops, dtype, p, n, misalign, seed):
    x = randn_cuda((n,), dtype, 10, offset=0.1, misalign=misalign)
    out = empty_like_nan(x, misalign)
    kl_ops.dropout(x, seed, out, p, "philox")
    assert torch.equal(out, dropout_reference(x, seed, p))
    if n > 100000 and 0.0 < p < 1.0:
        kept = (out != 0).double().mean().item()
        assert abs(kept - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)


@pytest.mark.gpu
def test_gpu_errors_name_the_op(kl_ops):
    x = torch.randn(10, device="cuda")
    with pytest.raises(RuntimeError, match=r"dropout: p must be in \[0, 1\]"):
        kl_ops.dropout(x, 0, torch.empty_like(x), 1.5, "philox")


# ---- the backward --------------------------------------------------------------------------------
BACKWARD = [k for k, i in fam.impls.items() if i.pass_ == "backward" and i.backend in ("torch", "compile")]


def test_reference_is_the_naive_draw_and_passes_the_contract():
    """The reference (whose autograd gives the backward's float64 gradients) is torch_naive's
    mask, for every dtype of x, and a valid dropout output."""
    for dtype in fam.dtypes:
        x, seed = fam.make_inputs((4099,), dtype, DEVICE, 3, p=P)
        ref = fam.reference(x.double(), seed, P)
        naive = fam.impls["torch_naive"].fn(None, x, seed, p=P)
        assert torch.equal(ref != 0, naive != 0)
        assert fam.validate(ref.to(x.dtype), (x, seed), dtype=dtype, p=P)["ok"]


@pytest.mark.parametrize("key", BACKWARD)
def test_backward_uses_the_forwards_mask_and_a_wrong_dx_is_named(key):
    """Each backward's dx is dy / (1 - p) exactly where the forward kept x, 0 elsewhere, for each p;
    a dx off by 1% fails, naming dx."""
    from kernellab.engine.testing import check_backward, wrong_gradient

    impl = fam.impls[key]
    for p in fam.params["p"]:
        row = check_backward(fam, impl, (4099,), "fp32", p=p)
        assert row["status"] == "ok", (p, row["reason"])
    if impl.backend == "compile":
        return  # one compile is enough: the wrong-gradient check below is about the harness
    row = check_backward(fam, wrong_gradient(impl, 0), (4099,), "fp32", p=P)
    assert row["status"] == "failed" and row["reason"].startswith("dx: relative error"), row


def test_backward_with_another_mask_fails():
    """A backward using a mask other than the forward's (the next seed's) is caught."""
    from kernellab.engine.testing import check_backward
    from kernellab.kit.family import Impl

    from .backward import dropout_backward_fused, keep_mask

    other = Impl("torch_fused", dropout_backward_fused, pass_="backward",
                 save=lambda x, seed, p: keep_mask(x, seed + 1, p))
    row = check_backward(fam, other, (4099,), "fp32", p=P)
    assert row["status"] == "failed" and row["reason"].startswith("dx: "), row


def test_backward_byte_model_reads_dy_and_the_mask_writes_dx():
    assert fam.case_bytes("backward", (1000,), "bf16", p=0.5) == 1000 * (2 * 2 + 1)

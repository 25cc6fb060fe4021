"""Attention's own tests: the Triton ladders over several tiles, causal and not (forward and backward,
under the interpreter without a GPU), the log-sum-exp the forward saves, wrong kernels caught, the
models, the naive chain skipped by its workspace estimate and SDPA's CUDA backends unavailable on a CPU.
The generic tests are in tests/test_families.py."""

from __future__ import annotations

import math

import pytest
import torch

from kernellab.engine import runtime
from kernellab.engine.cases import Case
from kernellab.engine.harness import check_impl, memory_estimate, run_case_check
from kernellab.engine.testing import check, run
from kernellab.errors import Unavailable
from kernellab.kit.family import Impl

from . import FAMILY as fam
from . import attention_naive, reference, sdpa

DEVICE = runtime.device()
FORWARD = [k for k, i in fam.impls.items() if i.backend == "triton" and not i.backward]
BACKWARD = [k for k, i in fam.impls.items() if i.backend == "triton" and i.backward] + ["torch_naive.bwd"]
# several query and key tiles (128 x 64), the last ragged; head_dims padded (40) and whole (64)
SHAPES = [(1, 2, 200, 64), (2, 1, 131, 40)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("key", FORWARD + ["torch_naive"])
def test_forward_over_several_tiles(key, shape, causal):
    got, inputs, out = run(fam, fam.impls[key].fn, shape, "fp16", causal=causal)
    check(fam, got, inputs, out, shape, "fp16", causal=causal)


@pytest.mark.parametrize("causal", [False, True])
def test_fa2_saves_the_log_sum_exp(causal):
    from .triton_fwd.fa2 import fa2_forward

    q, k, v = fam.make_inputs((1, 2, 150, 32), "fp16", DEVICE, 4)
    _, lse = fa2_forward(torch.empty_like(q), q, k, v, causal)
    s = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(32)
    if causal:
        s = s.masked_fill(torch.ones(150, 150, dtype=torch.bool, device=s.device).triu(1), -math.inf)
    torch.testing.assert_close(lse.double(), torch.logsumexp(s, dim=-1), rtol=0, atol=2e-2)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("key", BACKWARD)
def test_backward_causal_and_not(key, causal):
    """The generic test runs the backward at the default parameters only: here causal too."""
    case = Case(fam.name, key, (1, 2, 150, 64), "fp16", (("causal", causal),))
    row = run_case_check(fam, fam.impls[key], case, 0, DEVICE)
    assert row["status"] == "ok", row["reason"]


def _mask_ignored(out, q, k, v, causal=False):
    return fam.impls["triton@fa2"].fn(out, q, k, v, causal=False)


def _dk_dv_swapped(out, dy, saved, q, k, v, causal=False):
    dq, dk, dv = fam.impls["triton@fa2.bwd"].fn(out, dy, saved, q, k, v, causal=causal)
    return dq, dv, dk


def test_a_kernel_that_ignores_the_mask_fails():
    case = Case(fam.name, "bad", (1, 1, 70, 32), "bf16", (("causal", True),))
    row = run_case_check(fam, Impl("triton", _mask_ignored), case, 0, DEVICE)
    assert row["status"] == "failed" and "relative error" in row["reason"]


def test_a_wrong_dk_fails_naming_it():
    save = fam.impls["triton@fa2.bwd"].save
    impl = Impl("triton", _dk_dv_swapped, pass_="backward", save=save)
    row = run_case_check(fam, impl, Case(fam.name, "bad", (1, 1, 70, 32), "bf16", (("causal", False),)), 0, DEVICE)
    assert row["status"] == "failed" and row["reason"].startswith("dk:"), row["reason"]


def test_models():
    shape = (2, 3, 128, 64)
    dense = 4 * 2 * 3 * 128 * 128 * 64
    assert fam.flops(shape, "bf16", causal=False) == dense
    assert fam.flops(shape, "bf16", causal=True) == dense // 2
    assert fam.case_flops("backward", shape, "bf16", causal=True) == int(2.5 * dense // 2)
    assert fam.bytes_moved(shape, "bf16") == 4 * 2 * 3 * 128 * 64 * 2
    # q, k, v, o, dO read and dq, dk, dv written, and the fp32 log-sum-exp
    assert fam.case_bytes("backward", shape, "fp16") == 8 * 2 * 3 * 128 * 64 * 2 + 4 * 2 * 3 * 128


def test_naive_is_skipped_up_front_when_its_scores_would_not_fit(monkeypatch):
    """The naive chain's B*H*S^2 scores count in its estimate (SDPA's do not), and a case over the
    free memory is skipped with the estimate, before it runs."""
    from kernellab.engine import harness

    big = Case(fam.name, "torch_naive", (1, 32, 16384, 64), "bf16", (("causal", False),))
    naive = memory_estimate(fam, big, check=False)
    fused = memory_estimate(fam, Case(fam.name, "torch_fused@flash", big.shape, "bf16", big.params), check=False)
    assert naive > 3 * 32 * 16384**2 * 2 > fused
    monkeypatch.setattr(harness, "memory_available", lambda device: 4 << 30)
    ran = []
    impl = Impl("torch_naive", lambda out, *a, **p: ran.append(1))
    rows = list(check_impl(fam, impl, [big], [0], DEVICE))
    assert not ran and rows[0]["status"] == "oom" and "needs about" in rows[0]["reason"]


@pytest.mark.skipif(runtime.has_gpu(), reason="the CPU behaviour of SDPA's CUDA backends")
@pytest.mark.parametrize("backend", ["efficient", "cudnn"])
def test_sdpa_cuda_backends_unavailable_on_cpu(backend):
    q, k, v = fam.make_inputs((1, 1, 8, 16), "bf16", DEVICE, 0)
    with pytest.raises(Unavailable, match=backend):
        sdpa(backend)(q, k, v)


def test_reference_in_query_chunks_matches_one_matrix(monkeypatch):
    """The float64 reference, computed QUERY_CHUNK queries at a time, equals the whole matrix's."""
    import sys

    from . import __name__ as package

    q, k, v = (x.double() for x in fam.make_inputs((1, 2, 45, 8), "fp16", DEVICE, 1))
    whole = attention_naive(q, k, v, causal=True)
    monkeypatch.setattr(sys.modules[package], "QUERY_CHUNK", 16)
    torch.testing.assert_close(reference(q, k, v, causal=True), whole)



@pytest.mark.parametrize("causal", [False, True])
def test_a_checks_reference_gives_the_error_floor_from_its_own_pass(monkeypatch, causal):
    """A check's reference (no autograd) sums the floor from its own P, and error_floor on the same
    tensors takes it without computing P again; on other tensors it computes theirs."""
    import math
    import sys

    from . import __name__ as package

    module = sys.modules[package]
    monkeypatch.setattr(module, "QUERY_CHUNK", 16)

    def floor_of(q, k, v):
        mask = torch.ones(45, 45, dtype=torch.bool).triu(1) & causal
        p = torch.softmax(((q @ k.transpose(-2, -1)) / math.sqrt(8)).masked_fill(mask, -math.inf), dim=-1)
        return math.sqrt(float(((p * p) @ (v * v)).sum()))

    q, k, v = (x.double() for x in fam.make_inputs((1, 2, 45, 8), "fp16", DEVICE, 1))
    q2 = 2 * q
    with torch.no_grad():
        reference(q, k, v, causal=causal)
        computed = []
        real = module._probabilities
        monkeypatch.setattr(module, "_probabilities", lambda *a: computed.append(1) or real(*a))
        from_pass = fam.error_floor(q, k, v, causal=causal)
        assert not computed
        other = fam.error_floor(q2, k, v, causal=causal)  # not the last reference's tensors
        assert computed
    assert math.isclose(from_pass, floor_of(q, k, v), rel_tol=1e-12)
    assert math.isclose(other, floor_of(q2, k, v), rel_tol=1e-12) and other != from_pass



def test_the_floor_of_freed_tensors_is_never_taken_for_new_ones(monkeypatch):
    """The remembered floor holds its tensors weakly: once they are freed, tensors made next (which
    Python may give the same ids) get their own floor."""
    import math

    for seed in range(5):
        with torch.no_grad():
            first = fam.make_inputs((1, 2, 45, 8), "fp16", DEVICE, seed)
            later = fam.make_inputs((1, 2, 45, 8), "fp16", DEVICE, seed + 100)
            q, k, v = first[0].double(), first[1].double(), first[2].double()
            reference(q, k, v)
            ids = (id(q), id(k), id(v))
            del v, k, q  # freed in this order, the next three tensors tend to get their ids back
            q, k, v = later[0].double(), later[1].double(), later[2].double()
            reused = ids == (id(q), id(k), id(v))
            p = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(8), dim=-1)
            expected = math.sqrt(float(((p * p) @ (v * v)).sum()))
            assert math.isclose(fam.error_floor(q, k, v), expected, rel_tol=1e-12), f"ids reused: {reused}"

_SMEM_SCRIPT = r"""
import json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernellab.engine import registry
fam = registry.load([sys.argv[1]]).families["attention"]
out = {}
for key, impl in fam.impls.items():
    for spec in (impl.compile_specs or (lambda d: []))("bf16"):
        fn = spec.kernel
        sig = {**spec.signature, **{n: "constexpr" for n in spec.constexprs}}
        attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n, t in spec.signature.items()
                 if t.startswith("*") or (t.startswith("i") and n in spec.divisible)}
        c = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=dict(spec.constexprs), attrs=attrs),
                           target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": spec.num_warps, "num_stages": spec.num_stages})
        out[f"{key}/{spec.label}"] = c.metadata.shared
print("RESULT" + json.dumps(out))
"""


def test_sm90_shared_memory_fits():
    """Every compile spec's shared memory (its pipeline stages of k and v tiles) within sm_90's
    227 KiB a block: a launch past it fails on the H200 only (OutOfResources), never here."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    folder = Path(fam.folder).parent
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(Path(runtime.__file__).parents[2])}
    proc = subprocess.run([sys.executable, "-c", _SMEM_SCRIPT, str(folder)], env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shared = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1][len("RESULT"):])
    assert shared and any(k.startswith("triton@hopper") for k in shared)
    too_big = {k: v for k, v in shared.items() if v > 227 * 1024}
    assert not too_big, too_big


@pytest.mark.gpu
def test_fa4_compiled_ahead_on_fake_tensors_launches_nothing_and_its_turn_finds_it():
    """FlashAttention-4's preparation (``prepare.on_fake_tensors``): no kernel on the GPU while it
    compiles the forward and the backward, and the real calls after it compile nothing more."""
    pytest.importorskip("flash_attn.cute")
    from flash_attn.cute import interface

    from kernellab.engine.calls import case_call
    from kernellab.engine.prepare import on_fake_tensors

    cases = [Case("attention", "", (1, 2, 200, 64), "bf16", (("causal", causal),)) for causal in (False, True)]
    caches = (interface._flash_attn_fwd.compile_cache, interface._flash_attn_bwd.compile_cache)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for key in ("fa4", "fa4.bwd"):
            on_fake_tensors(fam, fam.impls[key], cases, "cuda")
        torch.cuda.synchronize()
    assert not [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    compiled = [set(c.cache) for c in caches]
    assert all(compiled), "nothing compiled on fake tensors"
    for key in ("fa4", "fa4.bwd"):
        for case in cases:
            case_call(fam, fam.impls[key], case, "cuda").run()
    torch.cuda.synchronize()
    assert [set(c.cache) for c in caches] == compiled  # every real call found its kernel

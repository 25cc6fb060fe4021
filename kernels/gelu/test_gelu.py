"""GeLU's own tests: its error floor where the output cancels, the machine code of its CUDA
ladder (16-byte loads and stores, fp32 or fp64 arithmetic, the fast tanh paths), the ILP step's
register budget, and (on a GPU) every step of the op and its error messages. The generic
tests are in tests/test_families.py."""

from __future__ import annotations

import re

import pytest
import torch

from kernellab.engine import cuda_build
from kernellab.engine.harness import check_against_reference
from kernellab.engine.testing import cuda_rel_err, cuda_tol, empty_like_nan, nvcc_or_skip, randn_cuda, sass_functions

from . import FAMILY as fam
from . import error_floor, gelu_naive, reference

STEPS = fam.ladders()["cuda_gelu"]
STEP_NAMES = [s.step for s in STEPS]


def step_source(kernel):
    """The file of the step whose kernels include ``kernel``."""
    return next(s.source for s in STEPS if kernel in s.cuda_kernels)


def test_machine_code(cuda_resources):
    """Each step's cubin (its own file's) holds its kernels, fp32 and bf16; then the code of each."""
    if cuda_build.find_cuobjdump() is None:
        pytest.skip("cuobjdump not found (neither the CUDA toolkit's nor Triton's)")
    fns = {}
    for s in STEPS:
        step_fns = sass_functions(cuda_build.sass(cuda_build.cubin_path(cuda_resources["dir"], s.source, 90)))
        for kernel in s.cuda_kernels:
            for ty in ("f", "13__nv_bfloat16"):
                mangled = rf"_Z{len(kernel)}{kernel}I{ty}E"
                assert any(re.match(mangled, k) for k in step_fns), (s.key, mangled, sorted(step_fns))
        fns.update(step_fns)
    fp64 = re.compile(r"\b(DFMA|DMUL|DADD)\b")

    def one(pattern):
        hits = [v for k, v in fns.items() if re.match(pattern, k)]
        assert len(hits) == 1, (pattern, sorted(fns))
        return hits[0]

    for ty in ("f", "13__nv_bfloat16"):
        vec4 = one(rf"_Z9gelu_vec4I{ty}E")
        assert "LDG.E.128" in vec4 and "STG.E.128" in vec4
        assert not fp64.search(vec4), "gelu_vec4 should compute in fp32"
        ilp = one(rf"_Z13gelu_vec4_ilpI{ty}E")
        assert "LDG.E.128" in ilp and "STG.E.128" in ilp
        course = one(rf"_Z11gelu_courseI{ty}E")
        assert fp64.search(course), "the course kernel's double literals make it fp64"
        assert "LDG.E.128" not in course


def test_ilp_ptx_uses_the_fast_paths():
    nvcc_or_skip()
    text = cuda_build.ptx(step_source("gelu_vec4_ilp"))
    assert ".target sm_90" in text
    entries = dict(re.findall(r"\.entry\s+(\S+?)\s*\((.*?)\n}", text, flags=re.S))
    ilp_bf16 = next(v for k, v in entries.items() if k.startswith("_Z13gelu_vec4_ilpI13__nv_bfloat16"))
    ilp_f32 = next(v for k, v in entries.items() if k.startswith("_Z13gelu_vec4_ilpIfE"))
    assert "tanh.approx.f32" in ilp_bf16
    assert "ex2.approx" in ilp_f32 and "tanh.approx" not in ilp_f32
    assert "ld.global.nc.v4" in ilp_f32


def test_ilp_register_budget(cuda_resources):
    """One full wave of 2048 resident threads per SM needs at most 32 registers per thread."""
    regs = [r["registers"] for r in cuda_resources["rows"] if r["base"] == "gelu_vec4_ilp"]
    assert regs and max(regs) <= 32


def test_error_is_relative_to_the_input_where_the_output_cancels():
    """gelu(-2.6) = -0.0117: the bf16 chain's error (about a bf16 step of x) passes against a
    quarter of |x|; a wrong sign, or a result off by far more than that step, still fails."""
    x = torch.tensor([-2.6], dtype=torch.bfloat16)
    x64 = x.double()
    ref, floor = reference(x64), error_floor(x64)
    naive = gelu_naive(x)
    assert check_against_reference(naive, ref, "bf16")["status"] == "failed"  # relative to |gelu(x)| alone
    assert check_against_reference(naive, ref, "bf16", floor=floor)["status"] == "ok"
    assert check_against_reference(-naive, ref, "bf16", floor=floor)["status"] == "failed"
    assert check_against_reference(naive + 0.1, ref, "bf16", floor=floor)["status"] == "failed"
    big = torch.randn(10_000, dtype=torch.float64)  # random data: the floor is below ||gelu(x)||
    assert error_floor(big) < 0.5 * float(torch.linalg.vector_norm(reference(big)))


def gelu_ref(x):
    x = x.double()
    return 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))


@pytest.mark.gpu
@pytest.mark.parametrize("step", STEP_NAMES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n,misalign", [(1, False), (13, False), (1000003, False), (65541, True),
                                        (4096 * 257, False)])
def test_gpu_cuda_op(kl_ops, step, dtype, n, misalign):
    x = randn_cuda((n,), dtype, 3, scale=3.0, misalign=misalign)
    out = empty_like_nan(x, misalign)
    kl_ops.gelu(x, out, step)
    assert cuda_rel_err(out, gelu_ref(x)) < cuda_tol(dtype)


@pytest.mark.gpu
def test_gpu_errors_name_the_op_and_the_problem(kl_ops):
    x = torch.randn(10, device="cuda")
    out = torch.empty_like(x)
    known = ", ".join(sorted(STEP_NAMES))  # the step table, by name
    with pytest.raises(RuntimeError, match=rf"gelu: unknown step 'fast'; known steps: {known}"):
        kl_ops.gelu(x, out, "fast")
    with pytest.raises(RuntimeError, match="gelu: out must be a CUDA tensor"):
        kl_ops.gelu(x, out.cpu(), "vec4")
    with pytest.raises(RuntimeError, match="gelu: out has dtype BFloat16 but x has Float"):
        kl_ops.gelu(x, out.bfloat16(), "vec4")
    with pytest.raises(RuntimeError, match="must be contiguous"):
        kl_ops.gelu(torch.randn(4, 4, device="cuda").t(), torch.empty(4, 4, device="cuda"), "vec4")


# ---- the backward --------------------------------------------------------------------------------
def test_backward_matches_autograd_and_a_wrong_dx_is_named():
    """Every backward that runs here against autograd's float64 gradient, at a size that is no
    multiple of the Triton block, where gelu' changes sign (x near -0.75); a dx off by 1% fails,
    naming dx."""
    from kernellab.engine.testing import check_backward, wrong_gradient

    keys = [k for k, i in fam.impls.items() if i.pass_ == "backward" and i.backend in ("torch", "triton")]
    assert "triton.bwd" in keys
    for key in keys:
        for dtype in fam.dtypes:
            row = check_backward(fam, fam.impls[key], (4099,), dtype)
            assert row["status"] == "ok", (key, dtype, row["reason"])
        row = check_backward(fam, wrong_gradient(fam.impls[key], 0), (4099,), "fp32")
        assert row["status"] == "failed" and row["reason"].startswith("dx: relative error"), (key, row)


def test_backward_byte_model_reads_x_and_dy_writes_dx():
    assert fam.case_bytes("backward", (1000,), "bf16") == 3 * 1000 * 2

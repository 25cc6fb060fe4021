"""The CUDA Hopper ladder (cuda_hopper/: bf16 and fp16 tensor cores, ``torch.ops.kernellab.hgemm``): its steps'
registration and dtypes, the shapes it refuses (an ``unavailable`` case naming the tile, before any
GPU work), the sm_90a machine code of each step, and (on a GPU, marked ``gpu``) the op against the
float64 reference."""

from __future__ import annotations

import subprocess

import pytest
import torch

from kernellab.engine import runtime
from kernellab.engine.testing import cuda_rel_err, empty_like_nan, randn_cuda
from kernellab.errors import Unavailable

from .. import matmul as mm
from . import FAMILY as MATMUL

HOPPER_STEPS = [s.step for s in MATMUL.ladders()["cuda_hopper"]]


def test_hopper_steps_take_16_bit_types_in_ladder_order():
    """Each step of cuda_hopper/ runs bf16 and fp16 only (the SGEMM ladder keeps fp32), in ladder.yaml's
    order, and is run by the hgemm runner rather than the sgemm one."""
    assert HOPPER_STEPS == ["mma_sync", "wgmma", "warp_specialized", "in_flight"]
    assert set(HOPPER_STEPS) <= mm.HOPPER_STEPS
    for s in MATMUL.ladders()["cuda_hopper"]:
        assert s.dtypes == ("bf16", "fp16") and not s.supports("fp32") and not s.supports("tf32")
        assert s.cuda_kernels == (f"hgemm_{s.step}",) and s.source.name == f"{s.step}.cu"
        assert s.fn.__name__ == f"hgemm_{s.step}"
    assert all(s.dtypes == ("fp32",) for s in MATMUL.ladders()["cuda_sgemm"])


@pytest.mark.parametrize("shape,named", [((127, 129, 65), ["M=127", "N=129", "K=65"]), ((256, 384, 96), ["K=96"]),
                                         ((0, 128, 64), ["M=0"]), ((128, 100, 64), ["N=100"])])
def test_hopper_unsupported_shapes_name_the_constraint(shape, named):
    reason = mm.unsupported_shape("wgmma", shape, (128, 128, 64))
    assert "multiples of 128, 128 and K of 64" in reason and "wgmma" in reason
    assert all(n in reason for n in named)
    assert mm.unsupported_shape("wgmma", (256, 384, 128), (128, 128, 64)) is None


class _FakeHgemmOps:
    """torch.ops.kernellab as far as the hopper runner uses it: the step's tile, and the calls made."""

    def __init__(self, tile):
        self.tile, self.calls = tile, []

    def hgemm_tile(self, step):
        return list(self.tile)

    def hgemm(self, a, b, out, step):
        self.calls.append((a, b, step))


@pytest.mark.parametrize("step", HOPPER_STEPS)
def test_hopper_runner_skips_unsupported_shapes_before_any_gpu_work(monkeypatch, step):
    """The check shape (127x129x65) is an 'unavailable' case whose reason names the tile; a shape the
    tile divides reaches the op, with B handed over K-major."""
    from kernellab.engine import harness

    from . import hopper

    fake = _FakeHgemmOps((128, 128, 32))
    monkeypatch.setattr(hopper, "cuda_ops", lambda family, step=None: fake)
    run_step = MATMUL.impls[f"cuda@{step}"].fn
    a, b = torch.zeros(127, 65, dtype=torch.bfloat16), torch.zeros(65, 129, dtype=torch.bfloat16)
    with pytest.raises(Unavailable, match=r"multiples of 128, 128 and K of 32.*M=127, N=129, K=65") as info:
        run_step(torch.empty(127, 129, dtype=torch.bfloat16), a, b)
    assert fake.calls == []
    assert harness._status_of(info.value, MATMUL.folder)[0] == "unavailable"
    bt = torch.randn(256, 64).to(torch.bfloat16)  # (N, K) rows: b = bt.t() is K-major already
    run_step(torch.empty(128, 256, dtype=torch.bfloat16), torch.zeros(128, 64, dtype=torch.bfloat16), bt.t())
    (_, b_given, step_given), = fake.calls
    assert step_given == step and b_given.t().is_contiguous() and torch.equal(b_given, bt.t())


@pytest.mark.slow
@pytest.mark.parametrize("step", HOPPER_STEPS)
def test_hopper_steps_compile_for_sm90a_to_their_tensor_core_instructions(step, tmp_path):
    """Each step compiles for sm_90a (the extension's default arch) without spills or local memory,
    and its SASS holds the instructions it is about, for bf16 and fp16 alike: HMMA from ldmatrix
    (mma_sync), HGMMA fed by TMA loads on mbarriers (wgmma)."""
    from kernellab.engine import cuda_build

    nvcc = cuda_build.find_nvcc() or pytest.skip("nvcc not found")
    cuobjdump = cuda_build.find_cuobjdump() or pytest.skip("cuobjdump not found")
    src = MATMUL.folder / "cuda_hopper" / f"{step}.cu"
    cubin = tmp_path / f"{step}.cubin"
    proc = subprocess.run([nvcc, *cuda_build.standalone_flags("90a", src), "-cubin", "-o", str(cubin), str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [r for r in cuda_build.parse_ptxas(proc.stderr + proc.stdout) if f"hgemm_{step}" in r["symbol"]]
    assert rows and all(r["arch"] == "sm_90a" for r in rows), rows
    for r in rows:
        assert (r["spill_stores_bytes"], r["spill_loads_bytes"], r["stack_frame_bytes"]) == (0, 0, 0), r
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    wanted = {"mma_sync": ["HMMA.16816.F32", "LDSM.16.M88.4", "LDGSTS"],
              "wgmma": ["HGMMA.64x128x16.F32", "UTMALDG.2D", "SYNCS.PHASECHK"],
              "warp_specialized": ["HGMMA.64x256x16.F32", "UTMALDG.2D", "USETMAXREG.DEALLOC",
                                   "USETMAXREG.TRY_ALLOC"],
              # wgmma.wait_group 1: one group left in flight
              "in_flight": ["HGMMA.64x256x16.F32", "UTMALDG.2D", "USETMAXREG.DEALLOC", "WARPGROUP.DEPBAR.LE gsb0, 0x1"]
              }[step]
    mma = wanted[0]
    for name, part in _functions(sass).items():
        fp16 = "6__half" in name  # the mangled name of the kernel's element type
        assert f" {mma}{'' if fp16 else '.BF16'} " in part, (step, name)  # fp16 is the MMA's unsuffixed type
        for instruction in wanted[1:]:
            assert instruction in part, (step, name, instruction)
    assert {"6__half" in name for name in _functions(sass)} == {True, False}


def _functions(sass: str) -> dict[str, str]:
    """cuobjdump's SASS, function name -> its instructions."""
    parts = sass.split("Function : ")[1:]
    return {part.split()[0]: part for part in parts}


@pytest.mark.gpu
@pytest.mark.parametrize("step", HOPPER_STEPS)
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("m,n,k", [(128, 256, 64), (256, 768, 192), (512, 512, 1024)])
def test_gpu_hgemm(kl_ops, step, dtype, m, n, k):
    ty = runtime.torch_dtype(dtype)
    a = randn_cuda((m, k), ty, 13)
    bt = randn_cuda((n, k), ty, 14)
    c = empty_like_nan(torch.empty((m, n), device="cuda", dtype=ty))
    kl_ops.hgemm(a, bt.t(), c, step)
    assert cuda_rel_err(c, a.double() @ bt.t().double()) < runtime.TOLERANCE[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("step", HOPPER_STEPS)
def test_gpu_hgemm_refuses_what_it_cannot_run(kl_ops, step):
    a, bt = torch.zeros(127, 64, device="cuda", dtype=torch.bfloat16), torch.zeros(256, 64, device="cuda").bfloat16()
    with pytest.raises(RuntimeError, match=r"hgemm \(.*\): M, N, K must be positive multiples.*M=127"):
        kl_ops.hgemm(a, bt.t(), torch.empty(127, 256, device="cuda", dtype=torch.bfloat16), step)
    b_row_major = torch.zeros(64, 256, device="cuda", dtype=torch.bfloat16)  # (K, N) rows: b.t() not contiguous
    with pytest.raises(RuntimeError, match=r"b.t\(\) must be contiguous"):
        kl_ops.hgemm(torch.zeros(128, 64, device="cuda").bfloat16(), b_row_major,
                     torch.empty(128, 256, device="cuda", dtype=torch.bfloat16), step)

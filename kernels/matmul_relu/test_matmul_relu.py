"""Matmul + ReLU's own tests: the ReLU epilogue on every implementation that runs here, the
fused Triton kernel equal to relu(matmul) exactly, its counts, and the ReLU in its sm_90 code.
It shares matmul's Triton kernel (kernels/matmul). The generic tests are in
tests/test_families.py."""

from __future__ import annotations

import re

import pytest
import torch
import triton

from kernellab.engine import runtime
from kernellab.engine.launch import force_config
from kernellab.engine.testing import check, run

from . import FAMILY as fam
from . import matmul as mm  # the family it builds on (kit.builds_on)

DEVICE = runtime.device()
PLAIN = mm.FAMILY
SMALL = triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}, num_warps=4, num_stages=2)
CPU_KEYS = [k for k, i in fam.impls.items() if i.backend != "cuda"]


@pytest.mark.parametrize("key", CPU_KEYS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_relu_epilogue(dtype, key):
    """Entries whose reference is negative are exactly 0; the others are the matmul."""
    shape = (40, 36, 33)
    got, inputs, out = run(fam, fam.impls[key].fn, shape, dtype, seed=11)
    pre = PLAIN.reference(*(x.double() for x in inputs))
    negative = (pre < -1e-3).cpu()  # clearly negative, whatever the rounding of the sum
    assert 0.2 < float(negative.double().mean()) < 0.8, "inputs should give both signs"
    assert bool((got.cpu()[negative] == 0).all())
    assert bool((got >= 0).all())
    check(fam, got, inputs, out, shape, dtype)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_relu_is_only_the_epilogue(dtype):
    """Same kernel, same config: relu(triton matmul) equals triton matmul_relu exactly."""
    shape = (33, 40, 50)
    with force_config(mm.matmul_kernel, SMALL):
        plain, _, _ = run(PLAIN, PLAIN.impls["triton"].fn, shape, dtype, seed=2)
        fused, _, _ = run(fam, fam.impls["triton"].fn, shape, dtype, seed=2)
    assert torch.equal(torch.relu(plain), fused)


@pytest.mark.parametrize("shape", [(64, 48, 40), (33, 70, 17), (100, 20, 50)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_triton_many_tiles(dtype, shape):
    """16x16x16 tiles in groups of 2 tile-rows: several tiles in M and N, a K tail, and a last
    group of one tile-row; every element written once, the ReLU applied to each tile."""
    with force_config(mm.matmul_kernel, SMALL):
        got, inputs, out = run(fam, fam.impls["triton"].fn, shape, dtype, seed=3)
    check(fam, got, inputs, out, shape, dtype)


def test_counts():
    shape = (4096, 2048, 1024)
    M, N, K = shape
    assert fam.flops(shape, "bf16") == 2 * M * N * K + M * N
    assert fam.bytes_moved(shape, "fp32") == (M * K + K * N + M * N) * 4
    assert "cuda" not in {i.backend for i in fam.impls.values()}


def test_sm90_relu_in_epilogue(sm90_ptx):
    texts = [t for label, t in sm90_ptx.items() if label.startswith(f"{fam.name}/triton/bf16/")]
    assert texts
    for ptx in texts:
        assert re.search(r"\bmax\.f32", ptx)
        assert any(".f32.bf16.bf16" in w for w in re.findall(r"wgmma\.mma_async\.\S+", ptx))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_cublaslt_epilogue_is_one_kernel(dtype):
    """On the GPU, torch_fused@cublaslt takes ATen's cuBLASLt path: one kernel writes relu(A @ B)
    (checked against the reference), where torch_fused launches the GEMM and then the ReLU."""
    shape = (256, 384, 128)
    inputs = fam.make_inputs(shape, dtype, DEVICE, 1)

    def launched(key):
        fn, out = fam.impls[key].fn, fam.out_like(*inputs)
        with runtime.matmul_precision(dtype):
            fn(out, *inputs)  # warm: cuBLASLt's heuristic, the zero bias
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                got = fn(out, *inputs)
                torch.cuda.synchronize()
        check(fam, got, inputs, out, shape, dtype)
        return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]

    assert len(launched("torch_fused")) == 2
    assert len(launched("torch_fused@cublaslt")) == 1

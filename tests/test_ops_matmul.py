"""Matmul and matmul + ReLU: every implementation that runs here against the float64
reference, the Triton kernel's tiling and epilogue, its autotune configs, the sm_90
code it compiles to, and the CUDA SGEMM ladder's registration.

On a machine without a GPU the Triton kernel runs in Triton's interpreter, with the
fixes of ``kernellab.triton_compat`` (applied by ``runtime.setup``). Tests marked ``gpu``
run on the H200.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch
import triton

from kernellab import registry, runtime
from kernellab.errors import Unavailable
from kernellab.triton_utils import force_config

mm = registry.module("matmul")

MATMUL = registry.family("matmul")
MATMUL_RELU = registry.family("matmul_relu")
FAMILIES = {"matmul": MATMUL, "matmul_relu": MATMUL_RELU}
DTYPES = ("fp32", "tf32", "bf16", "fp16")
# odd shapes (M, N, K): a single element, sizes that are no multiple of anything,
# K a little over a power of two, and a small one with several tiles per dimension
SHAPES = [(1, 1, 1), (17, 33, 65), (64, 48, 40)]
CPU_IMPLS = ("torch_naive", "torch_fused", "triton", "compiled")
WRITES_OUT = ("torch_fused", "triton")  # the implementations that must return ``out`` itself
# a small config, forced, so that small shapes still span several tiles and groups
SMALL = triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}, num_warps=4, num_stages=2)
DEVICE = runtime.device()


# --------------------------------------------------------------------- helpers
def run(family, key, shape, dtype, seed=0):
    """(result, float64 reference, out) of one call, ``out`` poisoned with NaN first."""
    a, b = family.make_inputs(shape, dtype, DEVICE, seed)
    out = family.out_like(a, b)
    out.fill_(math.nan)
    with runtime.matmul_precision(dtype):
        got = family.impls[key].fn(out, a, b)
    runtime.synchronize()
    ref = family.reference(a.double(), b.double())
    return got, ref, out


def rel_err(got, ref) -> float:
    got = got.double().cpu()
    ref = ref.cpu()
    return float(torch.linalg.vector_norm(got - ref)) / max(float(torch.linalg.vector_norm(ref)), 1e-300)


def check(got, ref, dtype, shape):
    M, N, _ = shape
    assert tuple(got.shape) == (M, N)
    assert got.dtype == runtime.torch_dtype(dtype)
    assert bool(torch.isfinite(got).all()), "unwritten (NaN-poisoned) or overflowed elements"
    err = rel_err(got, ref)
    assert err <= runtime.TOLERANCE[dtype], f"relative error {err:.3g} > {runtime.TOLERANCE[dtype]:g}"


# --------------------------------------------------------------------- correctness
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("key", CPU_IMPLS)
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_matches_reference(name, key, dtype, shape):
    got, ref, out = run(FAMILIES[name], key, shape, dtype)
    check(got, ref, dtype, shape)
    if key in WRITES_OUT:
        assert got.data_ptr() == out.data_ptr(), f"{key} must write into out"


def test_compiled_max_autotune_tiny():
    shape = (17, 33, 65)
    got, ref, _ = run(MATMUL, "compiled_max_autotune", shape, "fp32")
    check(got, ref, "fp32", shape)


@pytest.mark.parametrize("shape", [(64, 48, 40), (33, 70, 17), (100, 20, 50)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_triton_many_tiles(dtype, shape):
    """16x16x16 tiles in groups of 2 tile-rows: several tiles in M and N, a K tail, and
    a last group of one tile-row (33 rows = 3 tile-rows); every element written once."""
    for family in FAMILIES.values():
        with force_config(mm.matmul_kernel, SMALL):
            got, ref, out = run(family, "triton", shape, dtype, seed=3)
        check(got, ref, dtype, shape)


def test_triton_strided_inputs():
    """Strides are honoured: a transposed B and a row-sliced A."""
    a_full, _ = MATMUL.make_inputs((40, 8, 24), "fp32", DEVICE, 5)
    _, bt = MATMUL.make_inputs((24, 24, 30), "fp32", DEVICE, 6)  # bt: (30, 24)
    a = a_full[::2]  # (20, 24), row stride 48
    b = bt.t()  # (24, 30), strides (1, 24)
    out = torch.full((20, 30), math.nan, device=DEVICE)
    with force_config(mm.matmul_kernel, SMALL), runtime.matmul_precision("fp32"):
        got = mm.matmul_triton(out, a, b)
    err = rel_err(got, a.double() @ b.double())
    assert err <= runtime.TOLERANCE["fp32"]


@pytest.mark.parametrize("key", CPU_IMPLS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_relu_epilogue(dtype, key):
    """Entries whose reference is negative are exactly 0; the others are the matmul."""
    shape = (40, 36, 33)
    got, ref, _ = run(MATMUL_RELU, key, shape, dtype, seed=11)
    pre = MATMUL.reference(*(x.double() for x in MATMUL.make_inputs(shape, dtype, DEVICE, 11)))
    negative = (pre < -1e-3).cpu()  # clearly negative, whatever the rounding of the sum
    assert 0.2 < float(negative.double().mean()) < 0.8, "inputs should give both signs"
    got = got.cpu()
    assert bool((got[negative] == 0).all())
    assert bool((got >= 0).all())
    check(got, ref, dtype, shape)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_relu_is_only_the_epilogue(dtype):
    """Same kernel, same config: relu(triton matmul) equals triton matmul_relu exactly."""
    shape = (33, 40, 50)
    with force_config(mm.matmul_kernel, SMALL):
        plain, _, _ = run(MATMUL, "triton", shape, dtype, seed=2)
        fused, _, _ = run(MATMUL_RELU, "triton", shape, dtype, seed=2)
    assert torch.equal(torch.relu(plain), fused)


# --------------------------------------------------------------------- precision, configs
def test_input_precision_follows_tf32_flag():
    a32 = torch.ones(2, 2)
    with runtime.matmul_precision("fp32"):
        assert mm.input_precision(a32) == "ieee"
    with runtime.matmul_precision("tf32"):
        assert mm.input_precision(a32) == "tf32"
    with runtime.matmul_precision("bf16"):
        assert mm.input_precision(a32.bfloat16()) == "tf32"  # Triton's default for 16-bit inputs


SMEM_LIMIT = 227 * 1024  # shared memory per block on sm_90


@pytest.mark.parametrize("dtype", DTYPES)
def test_configs_per_dtype(dtype):
    configs = mm.configs_for(dtype)
    assert configs, "no autotune configs"
    esize = runtime.element_size(dtype)
    for c in configs:
        kw = c.kwargs
        assert kw["BLOCK_K"] >= 16 and kw["GROUP_M"] >= 1  # tl.dot needs K >= 16
        stage_bytes = (kw["BLOCK_M"] * kw["BLOCK_K"] + kw["BLOCK_K"] * kw["BLOCK_N"]) * esize
        assert c.num_stages * stage_bytes <= SMEM_LIMIT, f"{c} cannot fit in shared memory"
    tiles = {mm._tile_of(c) for c in configs}
    assert any(t[0] <= 16 for t in tiles), "a tile for skinny M"
    if dtype in ("bf16", "fp16"):
        assert (128, 256, 64, 3, 8) in tiles  # the Hopper tile
    # the autotuner's own pruning keeps exactly these for a call of this dtype
    a = torch.empty(1, 1, dtype=runtime.torch_dtype(dtype))
    precision = {"fp32": "ieee"}.get(dtype, "tf32")
    kept = mm.prune_configs(mm.matmul_kernel.configs, {"a_ptr": a}, INPUT_PRECISION=precision)
    assert [mm._tile_of(c) for c in kept] == [mm._tile_of(c) for c in configs]


# --------------------------------------------------------------------- family metadata
def test_counts_and_inputs():
    shape = (4096, 2048, 1024)
    M, N, K = shape
    assert MATMUL.flops(shape, "bf16") == 2 * M * N * K
    assert MATMUL_RELU.flops(shape, "bf16") == 2 * M * N * K + M * N
    assert MATMUL.bytes_moved(shape, "bf16") == (M * K + K * N + M * N) * 2
    assert MATMUL_RELU.bytes_moved(shape, "fp32") == (M * K + K * N + M * N) * 4
    a, b = MATMUL.make_inputs((64, 32, 256), "fp32", "cpu", 0)
    assert a.shape == (64, 256) and b.shape == (256, 32)
    c = a @ b
    assert 0.8 < float(c.std()) < 1.25, "a @ b should be O(1) whatever K is"
    a2, _ = MATMUL.make_inputs((64, 32, 256), "fp32", "cpu", 1)
    assert not torch.equal(a, a2), "the seed must matter"
    a16, b16 = MATMUL.make_inputs((8, 16, 4), "bf16", "cpu", 0)
    assert a16.dtype == b16.dtype == torch.bfloat16
    assert MATMUL.out_like(a16, b16).shape == (8, 16) and MATMUL.out_like(a16, b16).dtype == torch.bfloat16


def test_sgemm_ladder_registered():
    steps = MATMUL.ladders()["cuda_sgemm"]
    names = ["naive", "coalesced", "smem_tiling", "blocktile_1d", "blocktile_2d", "vectorized", "warptile",
             "autotuned"]
    assert [s.step for s in steps] == names
    assert [s.order for s in steps] == list(range(1, 9))
    for s in steps:
        assert s.dtypes == ("fp32",) and not s.supports("bf16")
        assert s.cuda_kernels == (f"sgemm_{s.step}",)
        assert s.idea and s.prediction and s.expect_pct_of_peak
    pcts = [s.expect_pct_of_peak for s in steps]
    assert all(lo < hi for lo, hi in pcts)
    # each step predicts a higher share of cuBLAS than the one before
    assert all(p[0] <= q[0] for p, q in zip(pcts, pcts[1:], strict=False))
    assert steps[-1].expect_pct_of_peak[0] >= 80
    assert "cuda" not in {i.impl for i in MATMUL_RELU.impls.values()}


def test_sgemm_autotuned_configs_match_the_launcher(tmp_path):
    """The tile names Python times are the launcher's, in its order: a host program built from
    sgemm.h prints kSgemmAutotunedConfigs."""
    from kernellab import cuda_build

    nvcc = cuda_build.find_nvcc() or pytest.skip("nvcc not found")
    src = tmp_path / "names.cu"
    src.write_text('#include <cstdio>\n#include "sgemm.h"\nint main() { for (const char* n : '
                   'kl::kSgemmAutotunedConfigs) std::printf("%s\\n", n); }\n')
    header = MATMUL.folder / "sgemm" / "sgemm.h"
    exe = tmp_path / "names"
    build = subprocess.run([nvcc, "-std=c++17", *(f"-I{d}" for d in cuda_build.include_dirs(header)), str(src),
                            "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    names = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert tuple(names) == mm.SGEMM_AUTOTUNED_CONFIGS
    assert MATMUL.impls["cuda@autotuned"].fn is mm.sgemm_autotuned


@pytest.mark.skipif(runtime.has_gpu(), reason="checks the CPU behaviour of CUDA steps")
@pytest.mark.parametrize("step", ["naive", "autotuned"])
def test_sgemm_unavailable_without_gpu(step):
    a, b = MATMUL.make_inputs((4, 4, 4), "fp32", "cpu", 0)
    with pytest.raises(Unavailable):
        MATMUL.impls[f"cuda@{step}"].fn(MATMUL.out_like(a, b), a, b)


# --------------------------------------------------------------------- sm_90 code
_PTX_SCRIPT = r"""
import json, re, sys
from kernellab import registry
from kernellab.triton_utils import compile_asm
out = {}
for fam, dtype in [("matmul", "bf16"), ("matmul", "fp16"), ("matmul", "tf32"), ("matmul", "fp32"),
                   ("matmul_relu", "bf16")]:
    for spec in registry.impl(fam, "triton").compile_specs(dtype):
        ptx = compile_asm(spec, 90)["ptx"]
        out[f"{fam}/{dtype}"] = {
            "wgmma": sorted(set(re.findall(r"wgmma\.mma_async\.\S+", ptx))),
            "cp_async_16": len(re.findall(r"cp\.async\.cg\.shared\.global.*, 0x10", ptx)),
            "fma": len(re.findall(r"\bfma\.rn\.f32", ptx)),
            "max": len(re.findall(r"\bmax\.f32", ptx)),
            "local": len(re.findall(r"\b(ld|st)\.local", ptx)),
        }
print("RESULT" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def sm90_code(root):
    """Cross-compile the compile specs for sm_90 in a fresh process: with the
    interpreter on, @triton.jit kernels in this one cannot be compiled."""
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", _PTX_SCRIPT], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


@pytest.mark.parametrize("case", ["matmul/bf16", "matmul/fp16", "matmul_relu/bf16"])
def test_sm90_16bit_uses_wgmma(sm90_code, case):
    got = sm90_code[case]
    ty = {"bf16": "bf16", "fp16": "f16"}[case.split("/")[1]]  # PTX type names
    assert any(f".f32.{ty}.{ty}" in w for w in got["wgmma"]), got  # fp32 accumulator, 16-bit operands
    assert got["cp_async_16"] > 0, "16-byte asynchronous global->shared copies"
    assert got["local"] == 0, "no register spills"


def test_sm90_precisions(sm90_code):
    assert any(".tf32.tf32" in w for w in sm90_code["matmul/tf32"]["wgmma"])
    fp32 = sm90_code["matmul/fp32"]
    assert not fp32["wgmma"] and fp32["fma"] > 0, "fp32 with TF32 off must stay on the FMA units"


def test_sm90_relu_in_epilogue(sm90_code):
    assert sm90_code["matmul_relu/bf16"]["max"] > 0
    assert sm90_code["matmul/bf16"]["max"] == 0


# --------------------------------------------------------------------- GPU (H200)
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_triton_odd_shapes(dtype):
    """Each config list's tiles (forced) on odd and skinny shapes, then the autotuner."""
    shapes = [(127, 129, 65), (1, 1, 1), (16, 4096, 4096), (300, 200, 1000)]
    tiles = [mm._tile_of(c) for c in mm.configs_for(dtype)]
    picks = [c for c in mm.configs_for(dtype) if mm._tile_of(c) in (tiles[0], tiles[-1])]
    for shape in shapes:
        for config in picks:
            with force_config(mm.matmul_kernel, config):
                got, ref, _ = run(MATMUL, "triton", shape, dtype)
            check(got, ref, dtype, shape)
    got, ref, _ = run(MATMUL_RELU, "triton", (512, 384, 256), dtype)
    check(got, ref, dtype, (512, 384, 256))


@pytest.mark.gpu
def test_gpu_fp32_is_ieee():
    """fp32 must not use TF32: its error sits far below TF32's (~3e-4 at K=1024)."""
    shape = (256, 256, 1024)
    for key in ("torch_fused", "triton", "compiled"):
        got, ref, _ = run(MATMUL, key, shape, "fp32")
        assert rel_err(got, ref) < 1e-5, key


@pytest.mark.gpu
@pytest.mark.parametrize("step", [s for s in ("naive", "coalesced", "smem_tiling", "blocktile_1d",
                                              "blocktile_2d", "vectorized", "warptile")])
def test_gpu_sgemm_ladder(step):
    from kernellab import cuda_ext

    try:
        cuda_ext.ops()
    except Unavailable as exc:
        pytest.skip(str(exc))
    for shape in [(256, 256, 256), (1024, 512, 768)]:
        got, ref, _ = run(MATMUL, f"cuda@{step}", shape, "fp32")
        check(got, ref, "fp32", shape)
    # an odd shape: handled, or refused with an error, never silently wrong
    try:
        got, ref, _ = run(MATMUL, f"cuda@{step}", (127, 129, 65), "fp32")
    except (RuntimeError, ValueError):
        return
    check(got, ref, "fp32", (127, 129, 65))

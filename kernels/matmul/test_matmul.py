"""Matmul's own tests: the Triton kernel's tiling, strides and precision, its autotune configs
per dtype, the sm_90 code it compiles to, the CUDA SGEMM ladder's registration and (on a GPU) its
steps. The generic tests (every implementation against the reference at awkward shapes, every
autotune config) are in tests/test_families.py.

On a machine without a GPU the Triton kernel runs in Triton's interpreter, with the
fixes of ``kernellab.engine.triton_compat`` (applied by ``runtime.setup``). Tests marked ``gpu``
run on the H200.
"""

from __future__ import annotations

import math
import re
import subprocess

import pytest
import torch
import triton

from kernellab.engine import runtime
from kernellab.engine.launch import force_config
from kernellab.engine.testing import cuda_rel_err, empty_like_nan, randn_cuda
from kernellab.errors import Unavailable

from .. import matmul as mm
from . import FAMILY as MATMUL

DTYPES = MATMUL.dtypes
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
    with force_config(mm.matmul_kernel, SMALL):
        got, ref, out = run(MATMUL, "triton", shape, dtype, seed=3)
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


def test_torch_fused_writes_into_out():
    got, _, out = run(MATMUL, "torch_fused", (17, 33, 65), "fp32")
    assert got.data_ptr() == out.data_ptr()


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
@pytest.mark.parametrize("m", [16, 128, 4096])
def test_configs_per_dtype(dtype, m):
    configs = mm.configs_for(dtype, m)
    assert configs, "no autotune configs"
    esize = runtime.element_size(dtype)
    for c in configs:
        kw = c.kwargs
        assert kw["BLOCK_K"] >= 16 and kw["GROUP_M"] >= 1  # tl.dot needs K >= 16
        stage_bytes = (kw["BLOCK_M"] * kw["BLOCK_K"] + kw["BLOCK_K"] * kw["BLOCK_N"]) * esize
        assert c.num_stages * stage_bytes <= SMEM_LIMIT, f"{c} cannot fit in shared memory"
    tiles = {mm._tile_of(c) for c in configs}
    if dtype in ("bf16", "fp16"):
        if m <= mm.SKINNY_M:
            assert any(t[0] <= 16 for t in tiles), "a tile for M = 16"
            assert any(c.kwargs.get("SPLIT_K", 1) > 1 for c in configs), "split-K for skinny M"
        else:
            assert (128, 256, 64, 3, 8) in tiles  # the Hopper tile
            assert not any(c.kwargs.get("SPLIT_K", 1) > 1 for c in configs)
    else:
        assert any(t[0] <= 16 for t in tiles), "a tile for skinny M"
    if dtype == "tf32":
        assert any(c.kwargs.get("TMA") for c in configs), "TMA configs for B"
        assert any(c.kwargs.get("SPLIT_K", 1) > 1 for c in configs) == (m <= mm.SKINNY_M), "split-K for skinny M"
    # the autotuner's own pruning keeps exactly these for a call of this dtype and M
    a = torch.empty(1, 1, dtype=runtime.torch_dtype(dtype))
    precision = {"fp32": "ieee"}.get(dtype, "tf32")
    kept = mm.prune_configs(mm.matmul_kernel.configs, {"a_ptr": a, "M": m}, INPUT_PRECISION=precision)
    assert [mm._tile_of(c) for c in kept] == [mm._tile_of(c) for c in configs]


def test_first_config_is_the_first_the_prune_keeps():
    from kernellab.kit.triton import first_config

    a = torch.randn(8, 8)
    ws, locks = torch.empty(1), torch.zeros(1, dtype=torch.int32)
    sizes = (8, 1, 8, 1, 8, 1)
    fp32 = first_config(mm.matmul_kernel, (a, a, a, ws, locks, 8, 8, 8) + sizes,
                        {"INPUT_PRECISION": "ieee", "TMA_OK": False})
    assert fp32 is mm.configs_for("fp32", 8)[0]
    h = a.half()
    skinny = first_config(mm.matmul_kernel, (h, h, h, ws, locks, 8, 8, 8) + sizes,
                          {"INPUT_PRECISION": "tf32", "TMA_OK": True})
    assert skinny is mm.configs_for("fp16", 8)[0] and skinny is not fp32
    big = first_config(mm.matmul_kernel, (h, h, h, ws, locks, 4096, 8, 8) + sizes,
                       {"INPUT_PRECISION": "tf32", "TMA_OK": True})
    assert big is mm.matmul_kernel.configs[0] and big is not skinny


# --------------------------------------------------------------------- split-K and K-major B
# each body's split-K: the TMA body (bf16), and the pointer body (IEEE fp32, which TMA does not take)
SPLIT_BODIES = {"tma": ("bf16", mm.FLAVOURS["tma_split2"]), "pointer": ("fp32", {})}


def _split_config(split_k, flavour):
    return triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, **flavour, "SPLIT_K": split_k},
                         num_warps=4, num_stages=2)


@pytest.mark.parametrize("body", list(SPLIT_BODIES))
@pytest.mark.parametrize("split_k,shape", [(2, (40, 56, 208)), (3, (33, 24, 200)), (4, (16, 16, 32))])
def test_split_k_sums_every_split_and_leaves_the_semaphores_at_zero(split_k, shape, body):
    """K tiles that do not divide evenly, and (16x16x32, 4 splits) splits with no K tile at all,
    on either body: each tile's K pieces in separate programs, the last summing them."""
    dtype, flavour = SPLIT_BODIES[body]
    a, b = MATMUL.make_inputs(shape, dtype, DEVICE, 3)
    config = _split_config(split_k, flavour)
    with runtime.matmul_precision(dtype):
        out = empty_like_nan(MATMUL.out_like(a, b))
        assert mm.uses_tma({**config.kwargs, "TMA_OK": mm.tma_ok(a, b, out, mm.input_precision(a))}) == (body == "tma")
        mm.launch_matmul(out, a, b, config=config)
        runtime.synchronize()
        check(out, MATMUL.reference(a.double(), b.double()), dtype, shape)
        _, locks = mm.split_k_buffers(shape[0], shape[1], a.device, config)
        assert int(locks.count_nonzero()) == 0, "every tile's semaphore is reset by its last split"
        again = empty_like_nan(out)
        mm.launch_matmul(again, a, b, config=config)
        runtime.synchronize()
    assert torch.equal(again, out), "split-K sums in split order: the same bits on every call"


def test_ieee_fp32_at_skinny_m_tunes_over_split_k():
    """At M <= SKINNY_M IEEE fp32 tunes over its skinny list, split-K on the pointer body
    among it, and every config of the list gives the product."""
    shape = (40, 72, 200)
    a, b = MATMUL.make_inputs(shape, "fp32", DEVICE, 7)
    ref = MATMUL.reference(a.double(), b.double())
    configs = mm.configs_for("fp32", shape[0])
    assert {c.kwargs.get("SPLIT_K", 1) for c in configs} >= {1, 2, 4}
    assert not any(c.kwargs.get("SPLIT_K", 1) > 1 for c in mm.configs_for("fp32"))
    # the autotuner times them all: a tile's split-K configs are not pruned as duplicates of it
    kept = mm.prune_configs(mm.matmul_kernel.configs, {"a_ptr": a, "M": shape[0]}, INPUT_PRECISION="ieee",
                            TMA_OK=False)
    assert kept == configs
    with runtime.matmul_precision("fp32"):
        for config in configs:
            out = empty_like_nan(MATMUL.out_like(a, b))
            mm.launch_matmul(out, a, b, config=config)
            runtime.synchronize()
            check(out, ref, "fp32", shape)


@pytest.mark.parametrize("shape", [(40, 72, 200), (16, 136, 96)])
def test_tf32_at_skinny_m_reads_b_as_it_is_through_tma(shape):
    """At M <= SKINNY_M a row-major B is not transposed: every config of the tf32 skinny list
    runs on it (its TMA configs on the TMA body, B's tiles N-major) and gives the product, K
    tails and split-K included."""
    a, b = MATMUL.make_inputs(shape, "tf32", DEVICE, 7)
    ref = MATMUL.reference(a.double(), b.double())
    configs = mm.configs_for("tf32", shape[0])
    assert {mm.flavour_of(c) for c in configs} >= {"tma_nosub", "tma_split2", "ptr"}
    with runtime.matmul_precision("tf32"):
        for config in configs:
            out = empty_like_nan(MATMUL.out_like(a, b))
            assert mm.uses_tma({**config.kwargs, "TMA_OK": mm.tma_ok(a, b, out)}) == bool(config.kwargs.get("TMA"))
            mm.launch_matmul(out, a, b, config=config)
            runtime.synchronize()
            assert not mm.b_kmajor(b)
            check(out, ref, "tf32", shape)


def test_tf32_takes_b_k_major():
    """Row-major B is transposed for the tf32 tensor cores, inside the call or once and kept; a B
    already K-major is used as it is; every way gives the product."""
    shape = (mm.SKINNY_M + 44, 40, 64)  # enough rows of A for the transpose to pay
    a, b = MATMUL.make_inputs(shape, "tf32", DEVICE, 5)
    ref = MATMUL.reference(a.double(), b.double())
    with runtime.matmul_precision("tf32"):
        results = {}
        for layout in mm.B_LAYOUTS:
            out = empty_like_nan(MATMUL.out_like(a, b))
            results[layout] = mm.launch_matmul(out, a, b, b_layout=layout)
        given = empty_like_nan(MATMUL.out_like(a, b))
        mm.launch_matmul(given, a, b.t().contiguous().t())
        runtime.synchronize()
        for got in [*results.values(), given]:
            check(got, ref, "tf32", shape)
        assert mm.b_kmajor(b.t().contiguous().t()) and not mm.b_kmajor(b)
        assert mm.tma_ok(a, b.t().contiguous().t(), given, "tf32") and mm.tma_ok(a, b, given, "tf32")
        assert not mm.tma_ok(a, b.t().contiguous().t(), given, "ieee"), "IEEE fp32 stays on the FMA units"
        assert not mm.tma_ok(a, b, given, "ieee")
        # the kept transpose follows B: an in-place change, or another tensor, is seen on the next call
        b.mul_(-1)
        out = empty_like_nan(MATMUL.out_like(a, b))
        mm.launch_matmul(out, a, b, b_layout="cached")
        runtime.synchronize()
        check(out, -ref, "tf32", shape)
        other = b * 2
        mm.launch_matmul(out, a, other, b_layout="cached")
        runtime.synchronize()
        check(out, -2 * ref, "tf32", shape)


@pytest.mark.parametrize("rows,cols,step", [(65, 130, 1), (64, 64, 1), (33, 70, 2)])
def test_kmajor_copy_is_the_transpose(rows, cols, step):
    """Our transpose kernel at edges that cut its tiles, and a B whose rows are not contiguous
    (every other column: the plain copy path)."""
    b = torch.arange(rows * cols * step, dtype=torch.float32, device=DEVICE).reshape(rows, cols * step)[:, ::step]
    bt = mm.kmajor_copy(b)
    runtime.synchronize()
    assert mm.b_kmajor(bt) and tuple(bt.shape) == (rows, cols)
    assert torch.equal(bt, b)


def test_unknown_b_layout_is_refused():
    a, b = MATMUL.make_inputs((8, 8, 8), "tf32", DEVICE, 0)
    with pytest.raises(ValueError, match="sideways"):
        mm.launch_matmul(MATMUL.out_like(a, b), a, b, b_layout="sideways")


def test_triton_ladders_are_read_where_they_run():
    """Each Triton ladder's steps run in its dtype at the shape the default config reads it at."""
    import yaml

    from kernellab.engine.cases import kernel_plan

    cfg = yaml.safe_load((MATMUL.folder.parents[1] / "config" / "config.yaml").read_text())["kernels"]["matmul"]
    plan = kernel_plan("matmul", cfg, "gpu")
    ladders = {name: steps for name, steps in MATMUL.ladders().items() if name.startswith("triton_")}
    assert ladders
    for name, steps in ladders.items():
        (dtype,) = {d for s in steps for d in s.dtypes}  # one dtype per ladder
        assert plan.ladder_dtype(steps) == dtype
        for s in steps:
            assert {c.shape for c in plan.cases(MATMUL, s)} >= {plan.ladder_shape(name)}, s.key
    assert plan.ladder_shape("triton_skinny")[0] <= mm.SKINNY_M


# --------------------------------------------------------------------- family metadata
def test_counts_and_inputs():
    shape = (4096, 2048, 1024)
    M, N, K = shape
    assert MATMUL.flops(shape, "bf16") == 2 * M * N * K
    assert MATMUL.bytes_moved(shape, "bf16") == (M * K + K * N + M * N) * 2
    a, b = MATMUL.make_inputs((64, 32, 256), "fp32", "cpu", 0)
    assert a.shape == (64, 256) and b.shape == (256, 32)
    c = a @ b
    assert 0.8 < float(c.std()) < 1.25, "a @ b should be O(1) whatever K is"
    a2, _ = MATMUL.make_inputs((64, 32, 256), "fp32", "cpu", 1)
    assert not torch.equal(a, a2), "the seed must matter"
    a16, b16 = MATMUL.make_inputs((8, 16, 4), "bf16", "cpu", 0)
    assert a16.dtype == b16.dtype == torch.bfloat16
    assert MATMUL.out_like(a16, b16).shape == (8, 16) and MATMUL.out_like(a16, b16).dtype == torch.bfloat16


SGEMM_STEPS = [s.step for s in MATMUL.ladders()["cuda_sgemm"]]


def test_sgemm_steps_take_fp32_and_list_their_own_kernel():
    """Each SGEMM step (a file of cuda_sgemm/) runs fp32 only and lists the kernel its file defines."""
    for s in MATMUL.ladders()["cuda_sgemm"]:
        assert s.dtypes == ("fp32",) and not s.supports("bf16")
        assert s.cuda_kernels == (f"sgemm_{s.step}",) and s.source.name == f"{s.step}.cu"


def test_sgemm_autotuned_configs_match_the_launcher(tmp_path):
    """The tile names Python reads from sgemm.h (their one list) are the launcher's, in its order:
    a host program built from sgemm.h prints kSgemmAutotunedConfigs."""
    from kernellab.engine import cuda_build

    nvcc = cuda_build.find_nvcc() or pytest.skip("nvcc not found")
    src = tmp_path / "names.cu"
    src.write_text('#include <cstdio>\n#include "sgemm.h"\nint main() { for (const char* n : '
                   'kl::kSgemmAutotunedConfigs) std::printf("%s\\n", n); }\n')
    header = MATMUL.folder / "cuda_sgemm" / "sgemm.h"
    exe = tmp_path / "names"
    build = subprocess.run([nvcc, "-std=c++17", *(f"-I{d}" for d in cuda_build.include_dirs(header)), str(src),
                            "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    names = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert tuple(names) == mm.SGEMM_AUTOTUNED_CONFIGS
    assert MATMUL.impls["cuda@autotuned"].fn is mm.sgemm_autotuned


def test_sgemm_autotuned_configs_without_their_list_name_the_header(tmp_path):
    header = tmp_path / "sgemm.h"
    header.write_text("inline constexpr const char* kOtherNames[] = {\"a\"};\n")
    with pytest.raises(ValueError, match=f"{header}: no 'kSgemmAutotunedConfigs"):
        mm.sgemm_autotuned_configs(header)


# --------------------------------------------------------------------- sm_90 code
def _ptx(sm90_ptx, dtype, family="matmul"):
    texts = [t for label, t in sm90_ptx.items() if label.startswith(f"{family}/triton/{dtype}/")]
    assert texts, f"no compile spec for {family} {dtype}"
    return texts


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_sm90_16bit_uses_wgmma(sm90_ptx, dtype):
    ty = {"bf16": "bf16", "fp16": "f16"}[dtype]  # PTX type names
    texts = _ptx(sm90_ptx, dtype)
    for ptx in texts:
        wgmma = set(re.findall(r"wgmma\.mma_async\.\S+", ptx))
        assert any(f".f32.{ty}.{ty}" in w for w in wgmma), wgmma  # fp32 accumulator, 16-bit operands
    assert any(re.search(r"cp\.async\.cg\.shared\.global.*, 0x10", ptx) for ptx in texts), \
        "16-byte asynchronous global->shared copies"


def test_sm90_precisions(sm90_ptx):
    for ptx in _ptx(sm90_ptx, "tf32"):
        assert any(".tf32.tf32" in w for w in re.findall(r"wgmma\.mma_async\.\S+", ptx))
    for ptx in _ptx(sm90_ptx, "fp32"):
        assert not re.search(r"wgmma\.mma_async", ptx), "fp32 with TF32 off must stay on the FMA units"
        assert re.search(r"\bfma\.rn\.f32", ptx)


def test_sm90_no_relu_in_the_plain_epilogue(sm90_ptx):
    for ptx in _ptx(sm90_ptx, "bf16"):
        assert not re.search(r"\bmax\.f32", ptx)


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


@pytest.mark.gpu
def test_gpu_fp32_is_ieee():
    """fp32 must not use TF32: its error sits far below TF32's (~3e-4 at K=1024)."""
    shape = (256, 256, 1024)
    for key in ("torch_fused", "triton", "compiled"):
        got, ref, _ = run(MATMUL, key, shape, "fp32")
        assert rel_err(got, ref) < 1e-5, key


@pytest.mark.gpu
@pytest.mark.parametrize("step", SGEMM_STEPS[:-1])
def test_gpu_sgemm_ladder(step):
    from kernellab.engine import cuda_ext

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


# ---- the CUDA op itself (torch.ops.kernellab.sgemm) -------------------------------------------------
# "autotuned:<i>": the tile shapes of the autotuned step (kSgemmAutotunedConfigs)
SGEMM_CONFIGS = [f"autotuned:{i}" for i in range(len(mm.SGEMM_AUTOTUNED_CONFIGS))]
SGEMM_SHAPES = [(127, 129, 65), (128, 128, 128), (1, 1, 1), (33, 7, 5), (256, 260, 64), (64, 96, 4),
                (130, 132, 20), (300, 200, 129)]


def test_sgemm_registers_for_occupancy(cuda_resources):
    """Two blocks of 256 threads per SM: at most 128 registers in the warptile step."""
    regs = [r["registers"] for r in cuda_resources["rows"] if r["base"] == "sgemm_warptile"]
    assert regs and max(regs) <= 128


@pytest.mark.gpu
@pytest.mark.parametrize("step", SGEMM_STEPS + SGEMM_CONFIGS)
@pytest.mark.parametrize("m,n,k", SGEMM_SHAPES)
def test_gpu_sgemm(kl_ops, step, m, n, k):
    a, b = randn_cuda((m, k), torch.float32, 13), randn_cuda((k, n), torch.float32, 14)
    c = empty_like_nan(torch.empty((m, n), device="cuda"))
    kl_ops.sgemm(a, b, c, step)
    assert cuda_rel_err(c, a.double() @ b.double()) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("step", ["vectorized", "warptile", "autotuned"] + SGEMM_CONFIGS)
def test_gpu_sgemm_misaligned_and_empty_k(kl_ops, step):
    a, b = randn_cuda((64, 128), torch.float32, 15, misalign=True), randn_cuda((128, 64), torch.float32, 16)
    c = empty_like_nan(torch.empty((64, 64), device="cuda"), misalign=True)
    kl_ops.sgemm(a, b, c, step)  # not 16-byte aligned: the scalar instantiation
    assert cuda_rel_err(c, a.double() @ b.double()) < 1e-5
    z = torch.full((5, 3), float("nan"), device="cuda")
    kl_ops.sgemm(torch.empty((5, 0), device="cuda"), torch.empty((0, 3), device="cuda"), z, step)
    assert torch.equal(z, torch.zeros_like(z))


@pytest.mark.gpu
def test_gpu_errors_name_the_op_and_the_problem(kl_ops):
    x = torch.randn(10, device="cuda")
    with pytest.raises(RuntimeError, match="sgemm: a has dtype BFloat16"):
        h = x.bfloat16()
        kl_ops.sgemm(h.view(2, 5), h.view(5, 2), torch.empty_like(h[:4]).view(2, 2), "naive")
    with pytest.raises(RuntimeError, match="sgemm: unknown config in 'autotuned:8'"):
        kl_ops.sgemm(x.view(2, 5), x.view(5, 2), torch.empty(2, 2, device="cuda"), "autotuned:8")
    with pytest.raises(RuntimeError, match="only 'autotuned' takes a config"):
        kl_ops.sgemm(x.view(2, 5), x.view(5, 2), torch.empty(2, 2, device="cuda"), "warptile:0")
    with pytest.raises(RuntimeError, match="inner sizes differ"):
        kl_ops.sgemm(x.view(2, 5), x.view(2, 5), torch.empty(2, 5, device="cuda"), "naive")

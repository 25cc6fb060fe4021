"""The CUDA extension: sources compile for sm_90 without spills, the machine code has what the
steps claim, the bindings register every op, the build degrades cleanly without CUDA, and (on a
GPU) every op and variant matches a float64 reference on awkward shapes.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from kernellab import cuda_build

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels"
COMMON_DIR = KERNELS / "common"

# The variants the GPU tests call (each family's Python side names the same ones).
VARIANTS = {
    "vector_add": ["vec4"],
    "gelu": ["course", "vec4", "vec4_ilp"],
    "softmax": ["block"],
    "layer_norm": ["block"],
    "rms_norm": ["block"],
    "dropout": ["philox"],
    "reduce_sum": ["atomic", "smem_tree", "warp_shuffle", "vec4"],
    "row_sum": ["warp"],
    "sgemm": ["naive", "coalesced", "smem_tiling", "blocktile_1d", "blocktile_2d", "vectorized", "warptile",
              "autotuned"],
}
# "autotuned:<i>": the tile shapes of the autotuned variant (kSgemmAutotunedConfigs)
SGEMM_CONFIGS = [f"autotuned:{i}" for i in range(8)]
# Captured from ptxas (CUDA 12.x prints cmem[0]; 13.0 does not); the device function's
# properties must not become a row.
PTXAS_SAMPLE = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z14sgemm_warptileILb1EEviiiPKfS1_Pf' for 'sm_90'
ptxas info    : Function properties for _Z14sgemm_warptileILb1EEviiiPKfS1_Pf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 16640 bytes smem, 400 bytes cmem[0]
ptxas info    : Compile time = 40.123 ms
ptxas info    : Function properties for __internal_trig_reduction_slowpathd
    40 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z11gelu_courseIfEvPKT_PS0_i' for 'sm_90'
ptxas info    : Function properties for _Z11gelu_courseIfEvPKT_PS0_i
    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 20 registers, used 0 barriers
"""


def nvcc_or_skip() -> str:
    nvcc = cuda_build.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found: install the CUDA toolkit (or put nvcc on PATH / set CUDA_HOME)")
    return nvcc


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """Every .cu compiled once to an sm_90 cubin with -Xptxas -v (in parallel)."""
    nvcc_or_skip()
    out = tmp_path_factory.mktemp("cuda_resources")
    report = cuda_build.resource_report(out)
    return {"dir": out, "rows": list(report), "reason": report.reason, "failures": report.failures}


def sass_functions(text: str) -> dict[str, str]:
    """cuobjdump --dump-sass output -> {mangled function name: its SASS}."""
    parts = re.split(r"^\s*Function : (\S+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


# ---- sources -------------------------------------------------------------------------------------


def test_every_file_compiles_for_sm90_without_spills(compiled):
    assert compiled["reason"] == ""
    rows = compiled["rows"]
    # every source of every family folder compiled without torch's headers (plain CUDA); each
    # family's kernels come from its own folder (a dispatch-only file defines none)
    assert not compiled["failures"]
    assert {r["file"] for r in rows} <= {cuda_build.label(f) for f in cuda_build.sources()}
    assert {r["file"].split("/")[0] for r in rows} == set(cuda_build.family_sources())
    for r in rows:
        assert r["arch"] == "sm_90"
        assert r["registers"] is not None and 0 < r["registers"] <= 255, r
        assert (r["spill_stores_bytes"], r["spill_loads_bytes"]) == (0, 0), f"{r['kernel']} spills: {r}"
        assert r["stack_frame_bytes"] == 0, f"{r['kernel']} uses local memory: {r}"
    assert (compiled["dir"] / "ptxas.txt").read_text().count("Compiling entry function") == len(rows)


def test_every_cuda_implementation_has_its_kernels_in_its_folder(compiled):
    """The kernels each registered CUDA implementation names are compiled from its family's folder."""
    from kernellab import registry

    for name, fam in registry.families().items():
        bases = {r["base"] for r in compiled["rows"] if r["file"].startswith(f"{name}/")}
        for impl in fam.impls.values():
            if impl.backend == "cuda":
                assert impl.cuda_kernels and set(impl.cuda_kernels) <= bases, (name, impl.key, sorted(bases))


def test_every_op_variant_has_its_kernel(compiled):
    bases = {r["base"] for r in compiled["rows"]}
    expected = {f"{op}_{v}" for op, variants in VARIANTS.items() for v in variants}
    assert expected <= bases, f"missing kernels: {sorted(expected - bases)}"
    by_base = {}
    for r in compiled["rows"]:
        by_base.setdefault(r["base"], []).append(r)
    # fp32 and bf16 instantiations of the elementwise, norm, softmax, dropout and reduction kernels
    for base in ("vector_add_vec4", "gelu_course", "gelu_vec4", "gelu_vec4_ilp", "softmax_block",
                 "layer_norm_block", "rms_norm_block", "dropout_philox", "reduce_sum_vec4", "row_sum_warp"):
        kinds = " ".join(r["kernel"] for r in by_base[base])
        assert "float" in kinds and "__nv_bfloat16" in kinds, base


def test_register_budgets_for_occupancy(compiled):
    regs = {}
    for r in compiled["rows"]:
        regs[r["base"]] = max(regs.get(r["base"], 0), r["registers"])
    assert regs["sgemm_warptile"] <= 128  # two blocks of 256 threads per SM
    # one full wave of 2048 resident threads per SM needs at most 32 registers per thread
    assert regs["gelu_vec4_ilp"] <= 32
    assert regs["reduce_sum_vec4"] <= 32


def test_parse_ptxas_sample():
    rows = cuda_build.parse_ptxas(PTXAS_SAMPLE)
    assert [r["symbol"] for r in rows] == ["_Z14sgemm_warptileILb1EEviiiPKfS1_Pf",
                                           "_Z11gelu_courseIfEvPKT_PS0_i"]
    wt, course = rows
    assert wt == {"symbol": "_Z14sgemm_warptileILb1EEviiiPKfS1_Pf", "arch": "sm_90", "registers": 128,
                  "spill_stores_bytes": 0, "spill_loads_bytes": 0, "stack_frame_bytes": 0,
                  "smem_bytes": 16640, "cmem_bytes": 400}
    assert (course["registers"], course["spill_stores_bytes"], course["spill_loads_bytes"]) == (20, 12, 16)
    assert (course["stack_frame_bytes"], course["smem_bytes"], course["cmem_bytes"]) == (8, 0, None)
    assert cuda_build.base_name(wt["symbol"]) == "sgemm_warptile"
    names = cuda_build.demangle([wt["symbol"]])
    assert names[wt["symbol"]] in (wt["symbol"], "void sgemm_warptile<true>(int, int, int, float const*, "
                                                 "float const*, float*)")


def test_gelu_machine_code(compiled):
    if cuda_build.find_cuobjdump() is None:
        pytest.skip("cuobjdump not found (neither the CUDA toolkit's nor Triton's)")
    fns = sass_functions(cuda_build.sass(compiled["dir"] / "cubin" / "gelu.gelu.sm_90.cubin"))
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


def test_gelu_ilp_ptx_uses_the_fast_paths():
    nvcc_or_skip()
    text = cuda_build.ptx(KERNELS / "gelu" / "gelu.cu")
    assert ".target sm_90" in text
    entries = dict(re.findall(r"\.entry\s+(\S+?)\s*\((.*?)\n}", text, flags=re.S))
    ilp_bf16 = next(v for k, v in entries.items() if k.startswith("_Z13gelu_vec4_ilpI13__nv_bfloat16"))
    ilp_f32 = next(v for k, v in entries.items() if k.startswith("_Z13gelu_vec4_ilpIfE"))
    assert "tanh.approx.f32" in ilp_bf16
    assert "ex2.approx" in ilp_f32 and "tanh.approx" not in ilp_f32
    assert "ld.global.nc.v4" in ilp_f32


def test_philox_matches_the_random123_known_answers(tmp_path):
    """The device generator (host-compiled from common.cuh) and the test's reference agree with
    Random123's known-answer vectors for Philox4x32-10."""
    nvcc = nvcc_or_skip()
    src = tmp_path / "kat.cu"
    src.write_text("""
#include <cstdio>
#include "common.cuh"
int main() {
  const kl::U32x4 c[3] = {{0u, 0u, 0u, 0u}, {~0u, ~0u, ~0u, ~0u},
                          {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
  const unsigned k[3][2] = {{0u, 0u}, {~0u, ~0u}, {0xa4093822u, 0x299f31d0u}};
  for (int i = 0; i < 3; ++i) {
    const kl::U32x4 r = kl::philox4x32_10(c[i], k[i][0], k[i][1]);
    printf("%08x %08x %08x %08x\\n", r.x, r.y, r.z, r.w);
  }
  printf("%.9g %.9g\\n", kl::uniform24(0xffffffffu), kl::uniform24(0x100u));
}
""")
    exe = tmp_path / "kat"
    build = subprocess.run([nvcc, "-std=c++17", f"-I{COMMON_DIR}", str(src), "-o", str(exe)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    known = ["6627e8d5 e169c58d bc57ac4c 9b00dbd8", "408f276d 41c83b0e a20bc7c6 6d5451fd",
             "d16cfe09 94fdcceb 5001e420 24126ea1"]
    assert lines[:3] == known
    assert lines[3] == f"{(2**24 - 1) / 2**24:.9g} {2**-24:.9g}"
    ref = [philox4x32_10([np.uint32(v) for v in c], k) for c, k in
           [([0, 0, 0, 0], (0, 0)), ([2**32 - 1] * 4, (2**32 - 1, 2**32 - 1)),
            ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], (0xA4093822, 0x299F31D0))]]
    assert [" ".join(f"{int(w[0]):08x}" for w in r) for r in ref] == known


# ---- bindings and build ----------------------------------------------------------------------------


def torch_cuda_includes(tmp: Path) -> list[str]:
    """torch's and the CUDA toolkit's include folders for a host compile of a binding. A CPU build
    of torch ships the c10/cuda headers but not the one CMake generates, a stub of which goes in
    ``tmp``."""
    from torch.utils.cpp_extension import include_paths

    nvcc = nvcc_or_skip()
    stub = tmp / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text("#pragma once\n")
    toolkit = [Path(nvcc).resolve().parents[1] / "include"]
    toolkit += [b.parent / "include" for b in cuda_build._cuda_home_bins()]
    cuda = next((d for d in toolkit if (d / "cuda_runtime.h").exists()), None)
    if cuda is None:
        pytest.skip(f"cuda_runtime.h not found in {', '.join(map(str, toolkit))}")
    return [str(tmp), *include_paths(), str(cuda)]


@pytest.mark.parametrize("family", sorted(cuda_build.family_sources()))
def test_every_binding_compiles_against_torch(family, tmp_path):
    """Each family's binding.cpp (its TORCH_LIBRARY_FRAGMENT, the shared checks of binding.h)
    compiles against torch's headers, without a GPU."""
    gxx = shutil.which("g++") or pytest.skip("no g++")
    includes = torch_cuda_includes(tmp_path)
    for binding in cuda_build.family_sources()[family]["bindings"]:
        dirs = cuda_build.include_dirs(binding)
        proc = subprocess.run([gxx, "-std=c++20", "-fsyntax-only", "-w", *(f"-I{d}" for d in includes + dirs),
                               str(binding)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]


def test_setup_arch_flags():
    setup = cuda_build._setup_module()
    assert setup.gencode_flags("") == ["-gencode=arch=compute_90,code=sm_90"]
    assert setup.gencode_flags("Hopper") == ["-gencode=arch=compute_90,code=sm_90"]
    assert setup.gencode_flags("8.0;9.0a+PTX") == ["-gencode=arch=compute_80,code=sm_80",
                                                  "-gencode=arch=compute_90a,code=sm_90a",
                                                  "-gencode=arch=compute_90a,code=compute_90a"]
    with pytest.raises(ValueError, match="sm_90"):
        setup.gencode_flags("sm_90")
    assert "--use_fast_math" not in setup.NVCC_FLAGS
    assert {"-O3", "-lineinfo", "-Xptxas", "-v"} <= set(setup.NVCC_FLAGS)
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS

    assert set(cuda_build.TORCH_NVCC_FLAGS) <= set(COMMON_NVCC_FLAGS)


@pytest.mark.skipif(torch.version.cuda is not None, reason="torch has CUDA: the GPU tests build it")
def test_build_extension_is_unavailable_on_cpu_torch(tmp_path):
    info = cuda_build.build_extension(tmp_path)
    assert info["status"] == "unavailable"
    assert "CPU-only" in info["reason"] and info["library"] is None
    path = cuda_build.write_build_json(tmp_path, info)
    assert json.loads(path.read_text())["status"] == "unavailable"

    from kernellab import cuda_ext
    from kernellab.errors import Unavailable

    try:
        cuda_ext.configure(path)
        with pytest.raises(Unavailable, match="CPU-only"):
            cuda_ext.ops()
    finally:
        cuda_ext.configure(None)


def test_write_build_json_replaces_atomically(tmp_path):
    cuda_build.write_build_json(tmp_path, {"status": "error", "reason": "first"})
    info = {"status": "ok", "library": "kernellab_cuda.so", "arch": "x"}
    path = cuda_build.write_build_json(tmp_path, info)
    data = json.loads(path.read_text())
    assert data == {"status": "ok", "reason": "", "library": "kernellab_cuda.so", "arch": "x"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build.json"]


def test_resource_report_without_nvcc(tmp_path, monkeypatch):
    monkeypatch.setattr(cuda_build, "find_nvcc", lambda: None)
    report = cuda_build.resource_report(tmp_path)
    assert report == [] and "nvcc not found" in report.reason
    assert "nvcc not found" in (tmp_path / "ptxas.txt").read_text()


# ---- reference pieces shared with the GPU tests ----------------------------------------------------

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)


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


def test_dropout_reference_is_counter_based():
    x = torch.arange(1, 11, dtype=torch.float32)
    a = dropout_reference(x, 7, 0.5)
    assert torch.equal(a, dropout_reference(x, 7, 0.5))
    assert torch.equal(dropout_reference(x[:6], 7, 0.5), a[:6])  # depends on the index, not the size
    assert not torch.equal(a, dropout_reference(x, 8, 0.5))
    assert set(torch.unique(a / x).tolist()) <= {0.0, 2.0}
    assert torch.equal(dropout_reference(x, 7, 0.0), x)
    assert not dropout_reference(x, 7, 1.0).any()


# ---- GPU: every op and variant against a float64 reference ------------------------------------------

TOL = {torch.float32: 1e-5, torch.bfloat16: 8e-3}
DTYPES = [torch.float32, torch.bfloat16]


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double()
    assert torch.isfinite(out).all(), "non-finite values in the output (unwritten elements?)"
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def randn(shape, dtype, seed, scale=1.0, offset=0.0, misalign=False):
    g = torch.Generator().manual_seed(seed)
    n = math.prod(shape)
    flat = (torch.randn(n + 1, generator=g) * scale + offset).to(dtype).cuda()
    return (flat[1:] if misalign else flat[:n]).view(shape)


def empty_like_nan(x, misalign=False):
    buf = torch.full((x.numel() + 1,), float("nan"), dtype=x.dtype, device=x.device)
    return (buf[1:] if misalign else buf[: x.numel()]).view(x.shape)


@pytest.fixture(scope="session")
def kl_ops(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda_build")
    info = cuda_build.build_extension(out)
    cuda_build.write_build_json(out, info)
    assert info["status"] == "ok", info.get("reason")
    torch.ops.load_library(str(out / info["library"]))
    return torch.ops.kernellab


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,misalign", [(1, False), (7, False), (1000003, False), (4099, True)])
def test_gpu_vector_add(kl_ops, dtype, n, misalign):
    a, b = randn((n,), dtype, 1, misalign=misalign), randn((n,), dtype, 2, misalign=misalign)
    out = empty_like_nan(a, misalign)
    kl_ops.vector_add(a, b, out, "vec4")
    assert torch.equal(out, (a.float() + b.float()).to(dtype))


def gelu_ref(x):
    x = x.double()
    return 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))


@pytest.mark.gpu
@pytest.mark.parametrize("variant", VARIANTS["gelu"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,misalign", [(1, False), (13, False), (1000003, False), (65541, True),
                                        (4096 * 257, False)])
def test_gpu_gelu(kl_ops, variant, dtype, n, misalign):
    x = randn((n,), dtype, 3, scale=3.0, misalign=misalign)
    out = empty_like_nan(x, misalign)
    kl_ops.gelu(x, out, variant)
    assert rel_err(out, gelu_ref(x)) < TOL[dtype]


ROW_SHAPES = [(1, 1), (3, 1000), (5, 1001), (64, 4096), (2, 70000), (7, 8), (300, 33)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_gpu_softmax(kl_ops, dtype, shape):
    x = randn(shape, dtype, 4, scale=4.0)
    out = empty_like_nan(x)
    kl_ops.softmax(x, out, "block")
    assert rel_err(out, torch.softmax(x.double(), dim=-1)) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_gpu_layer_norm(kl_ops, dtype, shape):
    x = randn(shape, dtype, 5, scale=2.0, offset=1.5)
    w, b = randn(shape[-1:], dtype, 6, offset=1.0), randn(shape[-1:], dtype, 7)
    out = empty_like_nan(x)
    kl_ops.layer_norm(x, w, b, out, 1e-5, "block")
    ref = torch.nn.functional.layer_norm(x.double(), shape[-1:], w.double(), b.double(), 1e-5)
    assert rel_err(out, ref) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_gpu_rms_norm(kl_ops, dtype, shape):
    x = randn(shape, dtype, 8, scale=2.0, offset=0.5)
    w = randn(shape[-1:], dtype, 9, offset=1.0)
    out = empty_like_nan(x)
    kl_ops.rms_norm(x, w, out, 1e-6, "block")
    xd = x.double()
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
    assert rel_err(out, ref) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("n,misalign,seed", [(1, False, 0), (1000003, False, 1234), (4099, True, 2**40 + 5)])
def test_gpu_dropout_is_philox_bit_for_bit(kl_ops, dtype, p, n, misalign, seed):
    x = randn((n,), dtype, 10, offset=0.1, misalign=misalign)
    out = empty_like_nan(x, misalign)
    kl_ops.dropout(x, seed, out, p, "philox")
    assert torch.equal(out, dropout_reference(x, seed, p))
    if n > 100000 and 0.0 < p < 1.0:
        kept = (out != 0).double().mean().item()
        assert abs(kept - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", VARIANTS["reduce_sum"])
@pytest.mark.parametrize("dtype", DTYPES)
# 2^26: past 2^25 an fp32 running sum of these (mean 0.5) stalls; the atomic step must not
@pytest.mark.parametrize("n,misalign", [(1, False), (1000, False), (1000003, False), (70001, True), (1 << 26, False)])
def test_gpu_reduce_sum(kl_ops, variant, dtype, n, misalign):
    x = randn((n,), dtype, 11, offset=0.5, misalign=misalign)
    out = torch.full((1,), 12345.0, device="cuda")  # the op zeroes it first
    kl_ops.reduce_sum(x, out, variant)
    # fp32 accumulation in a variant-dependent order: sqrt(n) roundings of size 2^-24 at most
    tol = max(1e-5, 4 * math.sqrt(n) * 2.0**-24)
    assert rel_err(out, x.double().sum().reshape(1)) < tol


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 1000), (5, 1001), (1000, 33), (2, 70000), (9, 0)])
def test_gpu_row_sum(kl_ops, dtype, shape):
    x = randn(shape, dtype, 12, offset=0.5)
    out = torch.full((shape[0],), float("nan"), device="cuda")
    kl_ops.row_sum(x, out, "warp")
    ref = x.double().sum(-1)
    if shape[1] == 0:
        assert torch.equal(out, torch.zeros_like(out))
    else:
        assert rel_err(out, ref) < 1e-5


SGEMM_SHAPES = [(127, 129, 65), (128, 128, 128), (1, 1, 1), (33, 7, 5), (256, 260, 64), (64, 96, 4),
                (130, 132, 20), (300, 200, 129)]


@pytest.mark.gpu
@pytest.mark.parametrize("variant", VARIANTS["sgemm"] + SGEMM_CONFIGS)
@pytest.mark.parametrize("m,n,k", SGEMM_SHAPES)
def test_gpu_sgemm(kl_ops, variant, m, n, k):
    a, b = randn((m, k), torch.float32, 13), randn((k, n), torch.float32, 14)
    c = empty_like_nan(torch.empty((m, n), device="cuda"))
    kl_ops.sgemm(a, b, c, variant)
    assert rel_err(c, a.double() @ b.double()) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["vectorized", "warptile", "autotuned"] + SGEMM_CONFIGS)
def test_gpu_sgemm_misaligned_and_empty_k(kl_ops, variant):
    a, b = randn((64, 128), torch.float32, 15, misalign=True), randn((128, 64), torch.float32, 16)
    c = empty_like_nan(torch.empty((64, 64), device="cuda"), misalign=True)
    kl_ops.sgemm(a, b, c, variant)  # not 16-byte aligned: the scalar instantiation
    assert rel_err(c, a.double() @ b.double()) < 1e-5
    z = torch.full((5, 3), float("nan"), device="cuda")
    kl_ops.sgemm(torch.empty((5, 0), device="cuda"), torch.empty((0, 3), device="cuda"), z, variant)
    assert torch.equal(z, torch.zeros_like(z))


@pytest.mark.gpu
def test_gpu_errors_name_the_op_and_the_problem(kl_ops):
    x = torch.randn(10, device="cuda")
    out = torch.empty_like(x)
    known = "course, vec4, vec4_ilp"
    with pytest.raises(RuntimeError, match=rf"gelu: unknown variant 'fast'; known variants: {known}"):
        kl_ops.gelu(x, out, "fast")
    with pytest.raises(RuntimeError, match="gelu: out must be a CUDA tensor"):
        kl_ops.gelu(x, out.cpu(), "vec4")
    with pytest.raises(RuntimeError, match="gelu: out has dtype BFloat16 but x has Float"):
        kl_ops.gelu(x, out.bfloat16(), "vec4")
    with pytest.raises(RuntimeError, match="must be contiguous"):
        kl_ops.gelu(torch.randn(4, 4, device="cuda").t(), torch.empty(4, 4, device="cuda"), "vec4")
    with pytest.raises(RuntimeError, match="vector_add: b has shape"):
        kl_ops.vector_add(x, x[:5], out, "vec4")
    with pytest.raises(RuntimeError, match="sgemm: a has dtype BFloat16"):
        h = x.bfloat16()
        kl_ops.sgemm(h.view(2, 5), h.view(5, 2), torch.empty_like(h[:4]).view(2, 2), "naive")
    with pytest.raises(RuntimeError, match="sgemm: unknown config in 'autotuned:8'"):
        kl_ops.sgemm(x.view(2, 5), x.view(5, 2), torch.empty(2, 2, device="cuda"), "autotuned:8")
    with pytest.raises(RuntimeError, match="only 'autotuned' takes a config"):
        kl_ops.sgemm(x.view(2, 5), x.view(5, 2), torch.empty(2, 2, device="cuda"), "warptile:0")
    with pytest.raises(RuntimeError, match="inner sizes differ"):
        kl_ops.sgemm(x.view(2, 5), x.view(2, 5), torch.empty(2, 5, device="cuda"), "naive")
    with pytest.raises(RuntimeError, match="reduce_sum: out must be one fp32 element"):
        kl_ops.reduce_sum(x, out, "vec4")
    with pytest.raises(RuntimeError, match=r"dropout: p must be in \[0, 1\]"):
        kl_ops.dropout(x, 0, out, 1.5, "philox")

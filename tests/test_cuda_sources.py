"""The CUDA extension, for every family folder with CUDA sources (found by the registry and
``cuda_build``, none named here): sources compile for sm_90 without spills, each CUDA
implementation's kernels come from its folder in the dtypes it supports, the bindings compile,
the shared Philox generator matches its known answers, and the build degrades cleanly without
CUDA. Each family's own CUDA tests (machine code, register budgets, the op on a GPU) live
beside it: kernels/<family>/test_<family>.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from kernellab.engine import cuda_build
from kernellab.engine.testing import nvcc_or_skip
from kernellab.io import read_text

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels"
COMMON_DIR = KERNELS / "common"

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


# ---- sources -------------------------------------------------------------------------------------


def test_every_file_compiles_for_sm90_without_spills(cuda_resources):
    assert cuda_resources["reason"] == ""
    rows = cuda_resources["rows"]
    # every source of every family folder compiled without torch's headers (plain CUDA); each
    # family's kernels come from its own folder (a dispatch-only file defines none)
    assert not cuda_resources["failures"]
    assert {r["file"] for r in rows} <= {cuda_build.label(f) for f in cuda_build.sources()}
    assert {r["file"].split("/")[0] for r in rows} == set(cuda_build.family_sources())
    for r in rows:
        assert r["arch"] == "sm_90"
        assert r["registers"] is not None and 0 < r["registers"] <= 255, r
        assert (r["spill_stores_bytes"], r["spill_loads_bytes"]) == (0, 0), f"{r['kernel']} spills: {r}"
        assert r["stack_frame_bytes"] == 0, f"{r['kernel']} uses local memory: {r}"
    assert (cuda_resources["dir"] / "ptxas.txt").read_text().count("Compiling entry function") == len(rows)


def test_every_cuda_implementation_has_its_kernels_in_its_folder(cuda_resources):
    """The kernels each registered CUDA implementation names are compiled from its family's folder."""
    from kernellab.engine import registry
    REGISTRY = registry.load()

    for name, fam in REGISTRY.families.items():
        bases = {r["base"] for r in cuda_resources["rows"] if r["file"].startswith(f"{name}/")}
        for impl in fam.impls.values():
            if impl.backend == "cuda":
                assert impl.cuda_kernels and set(impl.cuda_kernels) <= bases, (name, impl.key, sorted(bases))


def test_every_cuda_kernel_in_the_dtypes_of_its_implementation(cuda_resources):
    """A CUDA implementation that supports fp32 (bf16) has an fp32 (bf16) instantiation of each
    of its kernels."""
    from kernellab.engine import registry
    REGISTRY = registry.load()

    names = {"fp32": "float", "bf16": "__nv_bfloat16"}
    by_base = {}
    for r in cuda_resources["rows"]:
        by_base.setdefault(r["base"], []).append(r["kernel"])
    for fam in REGISTRY.families.values():
        for impl in (i for i in fam.impls.values() if i.backend == "cuda"):
            for kernel in impl.cuda_kernels:
                kinds = " ".join(by_base.get(kernel, []))
                for dtype in (d for d in fam.dtypes if impl.supports(d) and d in names):
                    assert names[dtype] in kinds, (fam.name, impl.key, kernel, dtype)


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


def test_philox_matches_the_random123_known_answers(tmp_path):
    """The device generator (host-compiled from common.cuh) agrees with Random123's known-answer
    vectors for Philox4x32-10."""
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
@pytest.mark.slow
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


@pytest.mark.parametrize("family", sorted(cuda_build.family_sources()))
@pytest.mark.slow
def test_every_step_file_registers_in_its_family_table(family, tmp_path):
    """A host program linking a family's .cu files (PTX only, no GPU needed) lists the step tables
    that its headers' KL_STEP_TABLEs define (one per op: matmul's sgemm and hgemm, rms_norm's forward and
    backward): one table for every source of the library, together holding each CUDA step of the family's
    ladders."""
    import re

    from kernellab.engine import registry

    nvcc = nvcc_or_skip()
    sources = cuda_build.family_sources()[family]["cu"]
    folder = cuda_build.family_folder(sources[0])
    tables = [(h, m.group(1)) for h in sorted(folder.rglob("*.h"))
              for m in re.finditer(r"^KL_STEP_TABLE\((\w+),", h.read_text(), re.M)]
    assert tables and len({t for _, t in tables}) == len(tables), tables
    main = tmp_path / "main.cu"
    headers = dict.fromkeys(h for h, _ in tables)
    main.write_text("#include <cstdio>\n" + "".join(f'#include "{h.name}"\n' for h in headers)
                    + "int main() {\n" + "".join(f'  for (const auto& e : kl::{t}_steps()) std::printf("{t} %s\\n", '
                                                 f'e.first.c_str());\n' for _, t in tables) + "}\n")
    dirs = dict.fromkeys(d for f in [*headers, *sources] for d in cuda_build.include_dirs(f))
    exe = tmp_path / "steps"
    build = subprocess.run([nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-arch=compute_90",
                            *(f"-I{d}" for d in dirs), str(main), *map(str, sources), "-o", str(exe)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    listed = [line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                      check=True).stdout.splitlines()]
    assert {t for t, _ in listed} == {t for _, t in tables}  # every table holds a step
    fam = registry.load().family(family)
    steps = {i.step for i in fam.impls.values() if i.backend == "cuda" and i.step}
    assert steps <= {s for _, s in listed}, (listed, steps)


def test_setup_arch_flags():
    setup = cuda_build._setup_module()
    # the default: sm_90a, Hopper's arch-specific instructions (wgmma) for the matmul Hopper ladder
    assert setup.gencode_flags("") == ["-gencode=arch=compute_90a,code=sm_90a"]
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

    from kernellab.engine import cuda_ext
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


def _cuda_family_names() -> list[str]:
    from kernellab.engine import registry
    REGISTRY = registry.load()

    return sorted(n for n, f in REGISTRY.families.items() if any(i.backend == "cuda" for i in f.impls.values()))


@pytest.mark.parametrize("name", _cuda_family_names())
def test_ptx_tasks_group_the_cuda_implementations_that_share_a_source(name):
    from kernellab.engine import ptx, registry
    REGISTRY = registry.load()

    fam = REGISTRY.family(name)
    cuda = [k for k, i in fam.impls.items() if i.backend == "cuda"]
    groups = ptx.cuda_groups(fam, list(fam.impls))
    assert sorted(k for g in groups for k in g) == sorted(cuda)  # each CUDA implementation once

    def sources(key):
        return {ptx.cuda_source_of(fam, kn, fam.impls[key]) for kn in fam.impls[key].cuda_kernels}

    files = [set().union(*(sources(k) for k in g)) for g in groups]
    for i, a in enumerate(files):  # a .cu file is compiled by one task only
        assert all(not (a & b) for b in files[i + 1:])
    for g in groups:  # and a group holds only implementations tied to another of it by a file
        if len(g) > 1:
            assert all(any(sources(k) & sources(o) for o in g if o != k) for k in g)


@pytest.mark.parametrize("name", _cuda_family_names())
@pytest.mark.slow
def test_ptx_takes_the_cuda_code_from_the_build(cuda_resources, monkeypatch, tmp_path, name):
    """The ptx rule's CUDA entries come from the PTX and cubins the resource report left in the
    build folder: with nvcc made to fail, every CUDA implementation still has its PTX (and its
    SASS where cuobjdump exists), and each kernel's PTX is the one the report compiled."""
    from kernellab.engine import ptx, registry
    REGISTRY = registry.load()

    def no_second_compile(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(cuda_build, "ptx_and_sass", no_second_compile)
    fam = REGISTRY.family(name)
    for key, impl in fam.impls.items():
        if impl.backend != "cuda":
            continue
        entries = ptx.cuda_entries(fam, impl, tmp_path, 90, {}, cuda_resources["dir"])
        assert [e["status"] for e in entries] == ["ok"] * len(impl.cuda_kernels), (key, entries)
        for entry in entries:
            assert "ptx" in entry["files"]
            assert ("sass" in entry["files"]) == (cuda_build.find_cuobjdump() is not None)
            src = ptx.cuda_source_of(fam, entry["name"], impl)
            built = cuda_build.cubin_path(cuda_resources["dir"], src.resolve(), 90).with_suffix(".ptx").read_text()
            dumped = ptx.split_ptx(read_text(tmp_path / entry["files"]["ptx"]))
            assert dumped and all(body in built for body in dumped.values())



def test_highlights_name_each_instruction_by_its_own_pattern():
    """Each highlight counts the instructions it names: cp.async from global to shared memory is not a
    global atomic ("shared.global" holds "red.global"), red and atom are, in PTX and in SASS."""
    from kernellab.engine.ptx import scan

    ptx = "\n".join(["cp.async.cg.shared.global [ %r135 + 0 ], [ %rd35 + 0 ], 0x10, %r136;",
                     "@%p1 red.global.gpu.relaxed.add.f32 [ %rd7 + 0 ], %r9;",
                     "atom.global.gpu.acq_rel.add.u32 %r1, [%rd2], 1;",
                     "@%p20 ld.global.v4.b32 { %r71, %r72, %r73, %r74 }, [ %rd19 + 0 ];"])
    counts, evidence = scan(ptx, "PTX")
    assert counts["global atomics"] == 2 and counts["16-byte global loads"] == 1
    atomics = next(e for e in evidence if e["label"].startswith("global atomics"))
    assert atomics["line"].startswith("@%p1 red.global")
    sass, _ = scan("/*0100*/  REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R5 ;\n"
                   "/*0200*/  LDGSTS.E.BYPASS.128 [R3], desc[UR4][R4.64] ;", "SASS")
    assert sass["global atomics"] == 1

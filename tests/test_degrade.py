"""Expected absences (no GPU, no ncu, no cuobjdump, no nvcc) become recorded reasons,
never a traceback."""

from pathlib import Path

from kernellab.engine import cuda_build, ncu, registry
from kernellab.engine import ptx as ptxmod
from kernellab.engine.testing import in_fresh_interpreter

REGISTRY = registry.load()  # the families of the default kernel folders

ROOT = Path(__file__).resolve().parents[1]
# a concrete CUDA step and Triton implementation, picked from the registry
CUDA_STEP = next((name, key) for name, fam in sorted(REGISTRY.families.items())
                 for key, impl in fam.impls.items() if impl.backend == "cuda" and impl.supports("fp32"))
TRITON_IMPL = next((name, key) for name, fam in sorted(REGISTRY.families.items())
                   for key, impl in fam.impls.items() if impl.backend == "triton" and impl.compile_specs
                   and impl.supports("fp32"))


def test_ncu_absent_is_recorded_unavailable(monkeypatch):
    monkeypatch.setattr(ncu.shutil, "which", lambda name: None)
    [row] = ncu.profile_steps([(*CUDA_STEP, "fp32", "1024")], "build.json", timeout_s=5)
    assert row["status"] == "unavailable" and "ncu" in row["reason"]


def test_ncu_refusal_is_recorded_with_its_message(monkeypatch):
    class Done:
        returncode = 1
        stdout = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU counters"
        stderr = ""

    monkeypatch.setattr(ncu.shutil, "which", lambda name: "/usr/bin/ncu")
    monkeypatch.setattr(ncu.subprocess, "run", lambda *a, **k: Done())
    [row] = ncu.profile_steps([(*CUDA_STEP, "fp32", "1024")], "build.json", timeout_s=5)
    assert row["status"] == "unavailable" and "ERR_NVGPUCTRPERM" in row["reason"]


def test_ncu_csv_is_parsed_and_kernels_combined():
    stdout = "\n".join([
        "==PROF== Connected to process 1",
        '"ID","Kernel Name","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed",'
        '"launch__registers_per_thread","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",'
        '"dram__bytes_read.sum","dram__bytes_write.sum","lts__t_sectors_srcunit_tex_op_read.sum"',
        '"","","nsecond","%","register/thread","ratio","byte","byte","sector"',
        '"0","k1","1,000","90","32","5.5","2,000,000","1,000,000","100,000"',
        '"1","k2","3,000","50","40","1.5","6,000,000","0","25,000"',
    ])
    row = ncu.combine(ncu.parse(stdout))
    assert row["status"] == "ok" and row["n_kernels"] == 2
    assert row["duration_us"] == 4.0
    assert abs(row["dram_pct"] - 60.0) < 1e-9  # weighted by duration
    # bytes add over the step's kernels; L2 sectors are 32 bytes
    assert (row["dram_read_mb"], row["dram_write_mb"], row["l2_read_mb"]) == (8.0, 1.0, 4.0)
    assert row["registers"] == 40 and row["top_stalls"].startswith("long_scoreboard")


def test_missing_cuobjdump_keeps_ptx_and_says_why(tmp_path):
    # Triton compiles (not interprets) only in a process started with TRITON_INTERPRET=0
    code = f"""
import json
from kernellab.engine import cuda_build, registry, ptx
cuda_build.find_cuobjdump = lambda: None
fam = registry.load().family({TRITON_IMPL[0]!r})
from pathlib import Path
print(json.dumps(ptx.triton_entries(fam, fam.impls[{TRITON_IMPL[1]!r}], ["fp32"], Path({str(tmp_path)!r}), 90)))
"""
    entries = in_fresh_interpreter(code, {"TRITON_INTERPRET": "0", "PYTHONPATH": str(ROOT)}, timeout_s=300)
    assert entries and entries[0]["status"] == "ok"
    assert "ptx" in entries[0]["files"] and "sass" not in entries[0]["files"]
    assert "cuobjdump" in entries[0]["reason"]


def test_missing_nvcc_makes_cuda_ptx_unavailable(monkeypatch, tmp_path):
    def no_nvcc(*args, **kwargs):
        raise cuda_build.ToolNotFound("nvcc not found")

    monkeypatch.setattr(cuda_build, "ptx_and_sass", no_nvcc)
    fam = REGISTRY.family(CUDA_STEP[0])
    entries = ptxmod.cuda_entries(fam, fam.impls[CUDA_STEP[1]], tmp_path, 90, {})
    assert [e["status"] for e in entries] == ["unavailable"]
    assert "nvcc" in entries[0]["reason"]


def test_ncu_session_rows_are_split_at_the_markers():
    stdout = "\n".join([
        '"ID","Kernel Name","gpu__time_duration.sum"',
        '"","","nsecond"',
        '"0","at::cuda::spin_kernel(long)","10"',
        '"1","softmax_a","1,000"',
        '"2","softmax_b","2,000"',
        '"3","at::cuda::spin_kernel(long)","10"',
        '"4","at::cuda::spin_kernel(long)","10"',
        '"5","fused","500"',
    ])
    parts = ncu.split_steps(ncu.parse(stdout), 3)
    assert [list(p["name"]) for p in parts] == [["softmax_a", "softmax_b"], [], ["fused"]]
    assert ncu.combine(parts[0])["duration_us"] == 3.0
    assert ncu.combine(parts[1])["status"] == "error"  # a step that launched nothing inside its range


def test_a_family_whose_sources_fail_is_built_out_of_the_extension(tmp_path, monkeypatch):
    import json

    from kernellab.workflow import pipeline

    builds = []

    def report(out_dir, dirs=None, files=None):
        rows = cuda_build.ResourceReport()
        rows.failures["broken"] = "nvcc exited with 1"
        return rows

    def build(out_dir, timeout=None, dirs=None, skip=None, folder=None):
        builds.append((Path(folder).name, dict(skip or {})))
        return {"status": "error" if not skip else "unavailable", "reason": "", "library": None,
                "families_failed": dict(skip or {})}

    monkeypatch.setattr(cuda_build, "resource_report", report)
    monkeypatch.setattr(cuda_build, "build_extension", build)
    info = pipeline.build_cuda(str(tmp_path / "build.json"), str(tmp_path / "resources.csv"), str(tmp_path / "broken"))
    # the family's library built while its sources were checked, then again without them
    assert builds == [("broken", {}), ("broken", {"broken": "nvcc exited with 1"})]
    assert info["families_failed"] == {"broken": "nvcc exited with 1"}
    assert json.loads((tmp_path / "build.json").read_text())["family"] == "broken"
    assert (tmp_path / "resources.csv").exists()


def test_the_extension_is_built_once_when_every_family_compiles(tmp_path, monkeypatch):
    from kernellab.workflow import pipeline

    builds = []
    monkeypatch.setattr(cuda_build, "resource_report",
                        lambda out_dir, dirs=None, files=None: cuda_build.ResourceReport())
    monkeypatch.setattr(cuda_build, "build_extension", lambda out_dir, timeout=None, dirs=None, skip=None,
                        folder=None: builds.append(skip) or {"status": "ok"})
    pipeline.build_cuda(str(tmp_path / "build.json"), str(tmp_path / "resources.csv"), str(tmp_path / "gelu"))
    assert builds == [None]


def test_ncu_cases_are_profiled_beside_the_ladders_with_their_byte_model(tmp_path, monkeypatch):
    import pandas as pd
    import yaml

    from kernellab.engine import runtime
    from kernellab.engine.cases import parse_shape
    from kernellab.workflow import pipeline

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["target"] = "gpu"
    kernel = next(k for k, c in sorted(config["kernels"].items()) if c.get("ncu_cases"))
    cases = config["kernels"][kernel]["ncu_cases"]

    def fake_profile_steps(steps, build_json, timeout_s, kernel_dirs=None):
        # every step moved 3 MB read and 1 MB written through DRAM
        return [{"status": "ok", "reason": "", "dram_read_mb": 3.0, "dram_write_mb": 1.0}] * len(steps)

    monkeypatch.setattr(runtime, "has_gpu", lambda: True)
    monkeypatch.setattr(ncu, "profile_steps", fake_profile_steps)
    out = tmp_path / f"{kernel}.csv"
    pipeline.ncu(config, [kernel], [str(tmp_path / "build.json")], [str(out)])
    rows = pd.read_csv(out, keep_default_na=False)
    extra = rows[rows["ladder"] == ""]
    assert list(extra["impl_key"]) == [c["impl"] for c in cases]
    fam = REGISTRY.family(kernel)
    plan = pipeline._plan(config, kernel)
    for (_, r), c in zip(extra.iterrows(), cases, strict=True):
        shape = parse_shape(c.get("shape", "x".join(map(str, plan.profile_shape))))
        assert r["shape"] == "x".join(map(str, shape)) and r["dtype"] == c.get("dtype", "fp32")
        model = fam.bytes_moved(shape, r["dtype"]) / 1e6
        assert abs(float(r["model_mb"]) - model) < 1e-6
        assert abs(float(r["dram_vs_model"]) - 4.0 / model) < 1e-9
    assert set(rows[rows["ladder"] != ""]["ladder"]) == set(fam.ladders())  # the ladders' steps still there


BROKEN_STEP_CHECK = """
import json
from kernellab.engine import cuda_ext, registry
from kernellab.engine.cases import Case
from kernellab.engine.harness import check_impl
reg = registry.load([{dirs!r}])
assert reg.errors == {{}}
cuda_ext.configure({build!r})
fam = reg.family("mine")
rows = {{key: [(r["status"], r["reason"]) for r in check_impl(fam, impl, [Case("mine", key, (4099,), "fp32")], [0],
                                                               "cpu")]
        for key, impl in fam.impls.items() if impl.backend == "cuda"}}
print(json.dumps(rows))
"""


def test_a_cuda_step_that_does_not_compile_fails_alone_with_nvccs_file_and_line(tmp_path):
    """A syntax error in the example's cuda_silu/vec4.cu: the library is built without vec4.cu, whose
    step says nvcc's error at the user's file and line; scalar is built (here, without a CUDA torch,
    it is unavailable for that reason, not for vec4's)."""
    import json
    import shutil

    import pytest

    from kernellab.workflow import pipeline

    if cuda_build.find_nvcc() is None:
        pytest.skip("needs nvcc")
    folder = tmp_path / "kernels" / "mine"
    shutil.copytree(ROOT / "docs" / "examples" / "my-kernels" / "silu", folder)
    vec4 = folder / "cuda_silu" / "vec4.cu"
    lines = vec4.read_text().splitlines(keepends=True)
    broken = next(i for i, ln in enumerate(lines) if "const int64_t nvec" in ln)
    lines[broken] = lines[broken].replace("vec ?", "vecc ?", 1)  # a name not declared, at line broken + 1
    vec4.write_text("".join(lines))
    build = tmp_path / "build" / "mine" / "build.json"
    info = pipeline.build_cuda(str(build), str(tmp_path / "resources.csv"), str(folder))
    why = f'mine/cuda_silu/vec4.cu:{broken + 1}: error: identifier "vecc" is undefined'
    assert info["steps_failed"] == {"vec4": why} and info["families_failed"] == {}
    assert json.loads(build.read_text())["steps_failed"] == {"vec4": why}
    # the sources left in the family's library: every one but vec4.cu
    built = json.loads((build.parent / "sources.json").read_text())["sources"] if info["status"] == "ok" else None
    assert built is None or (str(vec4) not in built and any(s.endswith("scalar.cu") for s in built))
    rows = in_fresh_interpreter(BROKEN_STEP_CHECK.format(dirs=str(tmp_path / "kernels"), build=str(build)),
                                {"PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout_s=300)
    assert rows["cuda@vec4"] == [["error", why]]
    assert all(why not in reason and "vec4" not in reason for _, reason in rows["cuda@scalar"]), rows
    assert [status for status, _ in rows["cuda@scalar"]] == (["ok"] if info["status"] == "ok" else ["unavailable"])

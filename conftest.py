"""Test setup shared by ``tests/`` and the family folders' own tests (``kernels/<family>/test_*.py``):
Triton's interpreter where there is no GPU, the ``gpu`` marker, and family tests imported as part
of their family's package (``kernellab.families.<family>.test_<family>``), as the registry loads it."""

import importlib
import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from kernellab.engine import registry, runtime  # noqa: E402

# the session's families: the default kernel folders, and those --kernel-dirs adds (pytest_configure)
REGISTRY = registry.load()

runtime.setup()
# Tests fork workers (kernellab.engine.isolate) from this process after others have run PyTorch ops
# in it: a fork while PyTorch's intra-op thread pool exists can deadlock the child, so that
# pool is never started here (one thread is plenty for the tests' small tensors).
torch.set_num_threads(1)
os.environ.setdefault("PYTHONHASHSEED", "0")


def pytest_addoption(parser):
    parser.addoption("--kernel-dirs", nargs="+", default=None, metavar="DIR",
                     help="kernel directories whose families the tests check beside kernels/ (a user's "
                          "folders: --kernel-dirs ../my-kernels), relative to the current directory")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (runs on the H200, skipped elsewhere)")
    dirs = config.getoption("--kernel-dirs", default=None)
    if dirs:  # before any test module is collected: test_families reads this module's REGISTRY
        global REGISTRY
        REGISTRY = registry.load(["kernels", *(str(Path(d).resolve()) for d in dirs)], ROOT)
        for name, why in REGISTRY.errors.items():
            print(f"kernel family {name!r} skipped: {why}", file=sys.stderr)


def pytest_collection_modifyitems(config, items):
    if runtime.has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; none on this machine")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # the marker, not a parameter id that says gpu
            item.add_marker(skip)


def _family_of(path: Path) -> str | None:
    """The family whose folder holds ``path`` (directly or in a subfolder), if any."""
    path = path.resolve()
    for name, fam in REGISTRY.families.items():
        if fam.folder is not None and path.is_relative_to(Path(fam.folder).resolve()):
            return name
    return None


class FamilyTestModule(pytest.Module):
    """A test module inside a family folder, imported as a submodule of the family's package:
    importing the folder under any other name would run its ``__init__.py`` (and register the
    family) a second time."""

    family: str = ""

    def _getobj(self):
        fam = REGISTRY.family(self.family)
        rel = self.path.resolve().relative_to(Path(fam.folder).resolve()).with_suffix("")
        return importlib.import_module(".".join(["kernellab.families", self.family, *rel.parts]))


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path, parent):
    """A family folder is a plain directory to pytest, not a package: pytest would import its
    ``__init__.py`` under another name."""
    if _family_of(path) is not None:
        return pytest.Dir.from_parent(parent, path=path)
    return None


def pytest_pycollect_makemodule(module_path, parent):
    if module_path.name == "conftest.py":
        return None
    name = _family_of(module_path)
    if name is None:
        return None
    mod = FamilyTestModule.from_parent(parent, path=module_path)
    mod.family = name
    return mod


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


_PTX_SCRIPT = r"""
import json
import sys
from kernellab.engine import registry  # noqa: E402
from kernellab.engine.triton_utils import compile_asm
out = {}
for name, fam in registry.load(json.loads(sys.argv[1])).families.items():
    for key, impl in fam.impls.items():
        if impl.compile_specs is None:
            continue
        for dtype in (d for d in fam.dtypes if impl.supports(d)):
            for spec in impl.compile_specs(dtype):
                out[f"{name}/{key}/{dtype}/{spec.label}"] = compile_asm(spec, 90)["ptx"]
print("RESULT" + json.dumps(out))
"""


@pytest.fixture(scope="session")
def sm90_ptx() -> dict[str, str]:
    """``family/impl key/dtype/spec label`` -> the PTX of every compile spec of every family,
    cross-compiled for sm_90 once, in a fresh process: with the interpreter on, @triton.jit
    kernels in this one cannot be compiled."""
    import json
    import subprocess

    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(ROOT)}
    dirs = json.dumps([str(d) for d in REGISTRY.dirs])  # the session's folders, --kernel-dirs' too
    proc = subprocess.run([sys.executable, "-c", _PTX_SCRIPT, dirs], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


@pytest.fixture(scope="session")
def kl_ops(tmp_path_factory):
    """The CUDA extension, built once, its ops loaded: ``torch.ops.kernellab`` (GPU tests)."""
    import torch

    from kernellab.engine import cuda_build

    out = tmp_path_factory.mktemp("cuda_build")
    info = cuda_build.build_extension(out)
    cuda_build.write_build_json(out, info)
    assert info["status"] == "ok", info.get("reason")
    torch.ops.load_library(str(out / info["library"]))
    return torch.ops.kernellab


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The tiny CPU config run once end to end (config/test.yaml): (result set, seconds)."""
    import subprocess
    import time

    tmp = tmp_path_factory.mktemp("run")
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "config/test.yaml",
                           "--config", f"staging={tmp / 'staging'}", f"results={tmp / 'results'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    (tmp / "terminal.txt").write_text(proc.stdout + proc.stderr)  # what the user saw: tiny_terminal
    sets = [p for p in (tmp / "results").iterdir() if p.is_dir()]
    assert len(sets) == 1
    return sets[0], time.time() - t0


@pytest.fixture(scope="session")
def tiny_terminal(tiny_run) -> str:
    """What the tiny run printed (its stdout and stderr)."""
    return (tiny_run[0].parents[1] / "terminal.txt").read_text()


@pytest.fixture(scope="session")
def cuda_resources(tmp_path_factory):
    """Every .cu of every family folder compiled once to an sm_90 cubin with -Xptxas -v (in
    parallel): ``{"dir", "rows" (one per kernel: registers, spills...), "reason", "failures"}``."""
    from kernellab.engine import cuda_build

    if cuda_build.find_nvcc() is None:
        pytest.skip("nvcc not found: install the CUDA toolkit (or put nvcc on PATH / set CUDA_HOME)")
    out = tmp_path_factory.mktemp("cuda_resources")
    report = cuda_build.resource_report(out)
    return {"dir": out, "rows": list(report), "reason": report.reason, "failures": report.failures}

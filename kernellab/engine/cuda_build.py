"""Build the CUDA extension and inspect its kernels (registers, spills, PTX, SASS).

Importable and unit-testable; the Snakemake rules call these functions.

- ``build_extension(out_dir)`` runs ``kernels/setup.py build_ext`` and reports where the
  library is; a CPU-only torch or a missing nvcc gives status ``unavailable`` (no exception).
- ``write_build_json(out_dir, info)`` records that result atomically for ``kernellab.engine.cuda_ext``.
- ``family_sources(dirs)`` finds each family folder's CUDA sources and binding files.
- ``resource_report(out_dir, dirs)`` compiles each family's ``.cu`` files to cubins with
  ``-Xptxas -v`` (no GPU needed) and parses registers, spills, stack and shared memory; a
  family whose sources do not compile is named in ``.failures`` and left out of the build.
- ``ptx(source)``, ``sass(cubin)`` and ``ptx_and_sass(source)`` give the code itself.

Reading what ptxas prints (``parse_ptxas``) and naming the kernels (``demangle``, ``base_name``)
is ``kernellab.engine.ptxas``'s.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kernellab.engine.ptxas import base_name, demangle, parse_ptxas

ROOT = Path(__file__).resolve().parents[2]
KERNELS_DIR = ROOT / "kernels"
COMMON_DIR = KERNELS_DIR / "common"  # the headers every family's CUDA and binding include
SETUP_PY = KERNELS_DIR / "setup.py"
BINDING = "binding.cpp"
LIBRARY_STEM = "kernellab_cuda"
DEFAULT_ARCH = 90
LOG_TAIL_LINES = 30

# Defines torch's BuildExtension adds to every nvcc call (COMMON_NVCC_FLAGS): the standalone
# compiles here use them too, so they see the code the extension build sees.
TORCH_NVCC_FLAGS = [
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr",
]


NVCC_MISSING = "nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)"
REPORT_KEYS = ("file", "kernel", "base", "symbol", "arch", "registers", "spill_stores_bytes",
               "spill_loads_bytes", "stack_frame_bytes", "smem_bytes", "cmem_bytes")


class ToolNotFound(RuntimeError):
    """A CUDA tool (nvcc, cuobjdump) is not installed here."""


class ResourceReport(list):
    """Rows of ``resource_report``; ``reason`` says why it is empty or partial ('' when complete),
    ``failures`` maps each family whose sources did not compile to nvcc's message, ``file_failures``
    each such file (its label) to nvcc's first error."""

    reason: str = ""
    failures: dict[str, str]
    file_failures: dict[str, str]  # file label -> nvcc's first error, at file:line

    def __init__(self, *args):
        super().__init__(*args)
        self.failures = {}
        self.file_failures = {}


# ---- tools ------------------------------------------------------------------------------------


def _cuda_home_bins() -> list[Path]:
    bins = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            bins.append(Path(os.environ[var]) / "bin")
    bins.append(Path("/usr/local/cuda/bin"))
    return bins


def find_nvcc() -> str | None:
    """Path of nvcc: PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin."""
    found = shutil.which("nvcc")
    if found:
        return found
    for d in _cuda_home_bins():
        if (d / "nvcc").is_file():
            return str(d / "nvcc")
    return None


def find_cuobjdump() -> str | None:
    """Path of cuobjdump: the CUDA toolkit's if there is one, else the copy Triton ships."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    nvcc = find_nvcc()
    dirs = ([Path(nvcc).parent] if nvcc else []) + _cuda_home_bins()
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.origin:
        dirs.append(Path(spec.origin).parent / "backends" / "nvidia" / "bin")
    for d in dirs:
        if (d / "cuobjdump").is_file() and os.access(d / "cuobjdump", os.X_OK):
            return str(d / "cuobjdump")
    return None


def nvcc_version(nvcc: str | None = None) -> str | None:
    """``release 13.0, V13.0.88`` style version of nvcc, or None."""
    nvcc = nvcc or find_nvcc()
    if not nvcc:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release [^\n]+", out)
    return m.group(0).strip() if m else (out.strip().splitlines() or [None])[-1]


def _setup_module():
    """kernels/setup.py as a module (its flags and arch parsing), without running setup()."""
    spec = importlib.util.spec_from_file_location("kernellab_cuda_setup", SETUP_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def family_sources(dirs=None) -> dict[str, dict[str, list[Path]]]:
    """Family -> {"cu": its .cu files, "bindings": its binding.cpp files} for every family folder
    of the kernel directories (``registry.kernel_dirs``) that holds CUDA; its subfolders count."""
    from kernellab.engine import registry

    out = {}
    for name, folder in registry.family_folders(registry.kernel_dirs(dirs)).items():
        if found := folder_sources(folder):
            out[name] = found
    return out


def folder_sources(folder: str | os.PathLike) -> dict[str, list[Path]] | None:
    """{"cu": the .cu files, "bindings": the binding.cpp files} of one family folder and its
    subfolders, or None where it holds no CUDA."""
    folder = Path(folder)
    cu = sorted(folder.rglob("*.cu"))
    return {"cu": cu, "bindings": sorted(folder.rglob(BINDING))} if cu else None


def sources(dirs=None) -> list[Path]:
    """Every .cu file of every family."""
    return [f for fam in family_sources(dirs).values() for f in fam["cu"]]


def family_folder(source: Path) -> Path:
    """The family folder a source lies in (its nearest parent with an __init__.py)."""
    return next((p for p in source.parents if (p / "__init__.py").exists()), source.parent)


def include_dirs(source: Path) -> list[Path]:
    """What a family source may include: the shared headers, its own folder's and its family's."""
    return list(dict.fromkeys([COMMON_DIR, source.parent, family_folder(source)]))


def standalone_flags(arch: int = DEFAULT_ARCH, source: Path | None = None) -> list[str]:
    """nvcc flags of a standalone compile: the extension's flags for one sm_<arch>."""
    dirs = include_dirs(Path(source)) if source is not None else [COMMON_DIR]
    return [*_setup_module().NVCC_FLAGS, *TORCH_NVCC_FLAGS, f"-arch=sm_{arch}", *(f"-I{d}" for d in dirs)]


def label(source: Path) -> str:
    """``matmul/sgemm/sgemm.cu``: a source named from its family folder."""
    family = family_folder(source)
    return f"{family.name}/{source.relative_to(family)}"


# ---- building -----------------------------------------------------------------------------------


def _versions() -> dict:
    info: dict = {"python": sys.version.split()[0]}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_cuda"] = torch.version.cuda
    except ImportError:
        info["torch"] = None
        info["torch_cuda"] = None
    nvcc = find_nvcc()
    info["nvcc"] = nvcc_version(nvcc) if nvcc else None
    info["nvcc_path"] = nvcc
    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    info["torch_cuda_arch_list"] = arch_list
    try:
        info["arch"] = " ".join(_setup_module().gencode_flags(arch_list))
    except ValueError as exc:
        info["arch"] = f"invalid TORCH_CUDA_ARCH_LIST: {exc}"
    return info


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def find_library(build_dir: str | os.PathLike, stem: str = LIBRARY_STEM) -> Path | None:
    """The newest <stem>*.so directly in ``build_dir``."""
    found = sorted(Path(build_dir).glob(f"{stem}*.so"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def library_stem(family: str) -> str:
    """The library of one family's CUDA: a name of its own, so that the libraries of several
    families load side by side in one process."""
    return f"{LIBRARY_STEM}_{family}"


def build_extension(out_dir: str | os.PathLike, timeout: float | None = 3600, dirs=None,
                    skip: dict[str, str] | None = None, folder: str | os.PathLike | None = None,
                    leave_out: dict[str, str] | None = None) -> dict:
    """Build the extension into ``out_dir`` (library, ``build.log``, objects under ``tmp/``).

    Every family folder of ``dirs`` with CUDA sources goes in, except those of ``skip``
    (family -> why: sources that did not compile), which ``families_failed`` records, and the
    sources of ``leave_out`` (file label -> why: a step file that did not compile, whose step then
    is not in the library); with ``folder``, only that family's, as a library of its own
    (``library_stem``).
    Returns ``{"status": "ok", "library": <file name relative to out_dir>, ...}``,
    ``{"status": "unavailable", "reason": ...}`` without a CUDA torch or nvcc, or
    ``{"status": "error", "reason": <last lines of the log>}``; never raises for those.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    info = _versions()
    skip = dict(skip or {})
    info.update(library=None, log=None, families_failed=skip)
    if info.get("torch") is None:
        return {**info, "status": "unavailable", "reason": "torch is not installed"}
    if info.get("torch_cuda") is None:
        return {**info, "status": "unavailable",
                "reason": f"torch {info['torch']} is a CPU-only build (torch.version.cuda is None)"}
    if info.get("nvcc_path") is None:
        return {**info, "status": "unavailable", "reason": NVCC_MISSING}
    if info["arch"].startswith("invalid"):
        return {**info, "status": "error", "reason": info["arch"]}

    if folder is not None:
        own = folder_sources(folder)
        families, stem = ({Path(folder).name: own} if own else {}), library_stem(Path(folder).name)
    else:
        families, stem = family_sources(dirs), LIBRARY_STEM
    families = {k: v for k, v in families.items() if k not in skip}
    if leave_out:
        families = {k: {**v, "cu": [f for f in v["cu"] if label(f) not in leave_out]} for k, v in families.items()}
    if not families:
        return {**info, "status": "unavailable", "reason": "no family with CUDA sources compiles"}
    manifest = out / "sources.json"
    manifest.write_text(json.dumps({
        "name": stem,
        "sources": [str(f) for fam in families.values() for f in fam["cu"] + fam["bindings"]],
        "include_dirs": [str(d) for fam in families.values() for f in fam["cu"] for d in include_dirs(f)],
    }, indent=1))
    log = out / "build.log"
    cmd = [sys.executable, str(SETUP_PY), "--sources", str(manifest.resolve()), "build_ext", "--build-lib",
           str(out.resolve()), "--build-temp", str((out / "tmp").resolve())]
    env = os.environ.copy()
    env.setdefault("CUDA_HOME", str(Path(info["nvcc_path"]).resolve().parent.parent))
    start = time.monotonic()
    with open(log, "w") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                  timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        except OSError as exc:
            fh.write(f"\n{type(exc).__name__}: {exc}\n")
            rc = -1
    info.update(log=log.name, seconds=round(time.monotonic() - start, 1))
    if rc is None:
        return {**info, "status": "error", "reason": f"build timed out after {timeout} s\n{_tail(log)}"}
    if rc != 0:
        return {**info, "status": "error", "reason": f"setup.py exited with {rc}:\n{_tail(log)}"}
    lib = find_library(out, stem)
    if lib is None:
        return {**info, "status": "error", "reason": f"setup.py succeeded but no {stem}*.so in {out}"}
    return {**info, "status": "ok", "reason": "", "library": lib.name}


def write_build_json(out_dir: str | os.PathLike, info: dict) -> Path:
    """Write ``out_dir/build.json`` atomically (temporary file, then os.replace)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = {"status": "error", "reason": "", "library": None, **info}
    path = out / "build.json"
    from kernellab.io import write_text

    write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    return path


# ---- cubins and the resource report ------------------------------------------------------------


def _compile_cubin(nvcc: str, src: Path, cubin: Path, arch: int) -> tuple[int, str]:
    """nvcc -cubin, keeping the PTX that ptxas assembled beside the cubin (``.ptx``): the ptx
    rule reads both instead of compiling the source again."""
    with tempfile.TemporaryDirectory() as keep:
        cmd = [nvcc, *standalone_flags(arch, src), "-cubin", "-keep", "-keep-dir", keep, "-o", str(cubin), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        kept = Path(keep) / f"{src.stem}.ptx"
        if proc.returncode == 0 and kept.is_file():
            shutil.copyfile(kept, cubin.with_suffix(".ptx"))
    return proc.returncode, proc.stdout + proc.stderr


def cubin_path(build_dir: str | os.PathLike, source: Path, arch: int) -> Path:
    """Where ``compile_cubins`` puts the cubin of ``source`` (its PTX: the same path, ``.ptx``)."""
    return Path(build_dir) / "cubin" / f"{label(source).replace('/', '.').removesuffix('.cu')}.sm_{arch}.cubin"


def compile_cubins(out_dir: str | os.PathLike, arch: int = DEFAULT_ARCH, jobs: int | None = None,
                   files: list[Path] | None = None) -> dict[str, tuple[int, str, Path]]:
    """Compile each .cu to ``out_dir/cubin/<stem>.sm_<arch>.cubin`` in parallel.

    Returns {file label (``family/path``): (return code, nvcc + ptxas output, cubin path)}.
    """
    nvcc = find_nvcc()
    if nvcc is None:
        raise ToolNotFound(NVCC_MISSING)
    cubin_dir = Path(out_dir) / "cubin"
    cubin_dir.mkdir(parents=True, exist_ok=True)
    files = files if files is not None else sources()
    workers = max(1, min(len(files), jobs or os.cpu_count() or 1))
    names = {label(f): f for f in files}
    cubins = {n: cubin_path(out_dir, f, arch) for n, f in names.items()}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {n: pool.submit(_compile_cubin, nvcc, f, cubins[n], arch) for n, f in names.items()}
        return {n: (*fut.result(), cubins[n]) for n, fut in futures.items()}


def resource_report(out_dir: str | os.PathLike, arch: int = DEFAULT_ARCH,
                    jobs: int | None = None, dirs=None, files: list[Path] | None = None) -> ResourceReport:
    """Registers, spills, stack frame, shared and constant memory of every kernel.

    Compiles each .cu with ``nvcc -cubin -arch=sm_<arch> -Xptxas -v`` (no GPU needed), writes
    the raw output to ``out_dir/ptxas.txt`` and the cubins under ``out_dir/cubin``. Each row:
    file, kernel (demangled), base (the kernel's name without template arguments), symbol,
    arch, registers, spill_stores_bytes, spill_loads_bytes, stack_frame_bytes, smem_bytes,
    cmem_bytes. Empty, with ``.reason`` set, when nvcc is absent.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = ResourceReport()
    try:
        results = compile_cubins(out, arch, jobs, files=sources(dirs) if files is None else files)
    except ToolNotFound as exc:
        report.reason = str(exc)
        (out / "ptxas.txt").write_text(f"# {report.reason}\n")
        return report
    raw, failures = [], []
    for name in sorted(results):
        rc, text, _ = results[name]
        raw.append(f"## {name} (nvcc exit {rc})\n{text.rstrip()}\n")
        if rc != 0:
            errors = [ln for ln in text.strip().splitlines() if "error" in ln] or text.strip().splitlines()[-1:]
            failures.append(f"{name}: nvcc exited with {rc}: {errors[:1]}")
            family = name.split("/")[0]
            report.failures[family] = (report.failures.get(family, "") + "; " if family in report.failures
                                       else "") + f"{name} does not compile: " + " | ".join(errors[:3])
            report.file_failures[name] = first_error(text)
            continue
        for row in parse_ptxas(text):
            report.append({"file": name, **row})
    (out / "ptxas.txt").write_text("\n".join(raw))
    names = demangle([r["symbol"] for r in report])
    for row in report:
        row["kernel"] = names.get(row["symbol"], row["symbol"])
        row["base"] = base_name(row["symbol"])
    report[:] = [{k: r[k] for k in REPORT_KEYS} for r in report]
    report.reason = "; ".join(failures)
    return report


_NVCC_ERROR = re.compile(r"^(?P<path>[^\s(][^(]*)\((?P<line>\d+)\): (?P<what>(?:catastrophic )?error.*)$", re.M)


def first_error(text: str) -> str:
    """nvcc's first error as ``file:line: error: ...``, the file named from its family folder where
    it lies in one (``mine/cuda_silu/vec4.cu:29: error: expected a ";"``); else its first line
    that says error, else its last."""
    m = _NVCC_ERROR.search(text)
    if m is None:
        lines = text.strip().splitlines()
        return next((ln for ln in lines if "error" in ln), lines[-1] if lines else "nvcc failed").strip()
    path = Path(m["path"])
    name = label(path) if (family_folder(path) / "__init__.py").exists() else m["path"]
    return f"{name}:{m['line']}: {m['what'].strip()}"


def failed_steps(folder: str | os.PathLike, file_failures: dict[str, str]) -> dict[str, str]:
    """step -> why, where every file of ``file_failures`` (label -> nvcc's first error) is a CUDA
    step of the family ``folder`` (``registry.cuda_step_files``); {} where none failed or a shared
    source did (the steps need it: the whole family fails)."""
    from kernellab.engine import registry

    if not file_failures:
        return {}
    folder = Path(folder)
    try:
        steps = {label(path): step for _, step, path in registry.cuda_step_files(folder, registry.ladder_texts(folder))}
    except registry.FamilyError:
        return {}
    if not set(file_failures) <= set(steps):
        return {}
    return {steps[name]: why if why.startswith(f"{name}:") else f"{name} does not compile: {why}"
            for name, why in file_failures.items()}


# ---- PTX and SASS -------------------------------------------------------------------------------


def ptx(source_file: str | os.PathLike, arch: int = DEFAULT_ARCH) -> str:
    """PTX of one .cu file (``nvcc -ptx``), compiled with the extension's flags."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise ToolNotFound(NVCC_MISSING)
    flags = [f for f in standalone_flags(arch, Path(source_file)) if f not in ("-Xptxas", "-v")]
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "out.ptx"
        proc = subprocess.run([nvcc, *flags, "-ptx", "-o", str(target), str(source_file)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc -ptx {Path(source_file).name} failed:\n{proc.stderr.strip()}")
        return target.read_text()


def sass(cubin_path: str | os.PathLike) -> str:
    """SASS of a cubin (``cuobjdump --dump-sass``); ToolNotFound when there is no cuobjdump."""
    tool = find_cuobjdump()
    if tool is None:
        raise ToolNotFound("cuobjdump not found (neither the CUDA toolkit's nor Triton's bundled copy)")
    proc = subprocess.run([tool, "--dump-sass", str(cubin_path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump --dump-sass {Path(cubin_path).name} failed:\n{proc.stderr.strip()}")
    return proc.stdout


def _kept_ptx_and_sass(cubin: Path) -> tuple[str, str | None]:
    """The PTX that ``_compile_cubin`` kept beside ``cubin``, and the cubin's SASS (None when
    cuobjdump is missing)."""
    text = cubin.with_suffix(".ptx").read_text()
    try:
        return text, sass(cubin)
    except ToolNotFound:
        return text, None


def built_ptx_and_sass(build_dir: str | os.PathLike, source_file: str | os.PathLike,
                       arch: int = DEFAULT_ARCH) -> tuple[str, str | None] | None:
    """``ptx_and_sass`` of a source from the cubin and PTX that build_cuda's resource report
    compiled (the same flags), or None where it left none for this source and arch."""
    cubin = cubin_path(build_dir, Path(source_file).resolve(), arch)
    if not (cubin.is_file() and cubin.with_suffix(".ptx").is_file()):
        return None
    return _kept_ptx_and_sass(cubin)


def ptx_and_sass(source_file: str | os.PathLike, arch: int = DEFAULT_ARCH) -> tuple[str, str | None]:
    """PTX of a .cu file and SASS of its cubin (None when cuobjdump is missing), from one nvcc
    call: ``-keep`` leaves the PTX that ptxas assembled (the front end runs once, not twice)."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise ToolNotFound(NVCC_MISSING)
    source = Path(source_file).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "out.cubin"
        rc, output = _compile_cubin(nvcc, source, cubin, arch)
        if rc != 0:
            raise RuntimeError(f"nvcc -cubin {source.name} failed:\n{output.strip()}")
        return _kept_ptx_and_sass(cubin)

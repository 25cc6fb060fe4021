"""Build the kernellab CUDA extension: a shared library, ``kernellab_cuda``.

    python kernels/setup.py [--sources sources.json] build_ext --build-lib <dir> --build-temp <dir>

Sources: every family folder's ``.cu`` files (plain CUDA, no torch headers) and its
``binding.cpp`` (the family's torch ops, a ``TORCH_LIBRARY_FRAGMENT``), found in the folders
of ``kernels/`` (``kernellab.engine.cuda_build.family_sources``), or the list and library name that
the build rule wrote to ``sources.json`` (the workflow builds each family as a library of its
own, ``kernellab_cuda_<family>``, so a change to one family rebuilds only it). Nothing here
lists a family. The library has no Python module in it; load it with
``torch.ops.load_library(path)`` and call ``torch.ops.kernellab.<op>``.

nvcc flags: ``-O3 -lineinfo -Xptxas -v`` (registers, spills and shared memory of every kernel
land in the build log) and ``-std=c++17``; no ``--use_fast_math`` (it changes accuracy; the
kernels use intrinsics explicitly where they want them). The architecture comes from
``TORCH_CUDA_ARCH_LIST`` when set ("9.0", "9.0a", "8.0;9.0+PTX"...), else sm_90a: Hopper with its
arch-specific instructions (wgmma, setmaxnreg: the matmul Hopper ladder), whose code runs on every
sm_90 GPU (H100, H200) as sm_90's does; a kernel needing them compiles to an empty body for other
targets, and its launcher refuses to run it there. The C++
standard of bindings.cpp is left to torch, whose headers may need a newer one.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMON_DIR = HERE / "common"
NAME = "kernellab_cuda"
DEFAULT_ARCH = "9.0a"

NVCC_FLAGS = ["-O3", "-lineinfo", "-Xptxas", "-v", "-std=c++17"]
CXX_FLAGS = ["-O3"]


# Architecture names TORCH_CUDA_ARCH_LIST also accepts.
NAMED_ARCHS = {"Volta": "7.0", "Turing": "7.5", "Ampere": "8.0;8.6", "Ada": "8.9", "Hopper": "9.0",
               "Blackwell": "10.0"}


def gencode_flags(arch_list: str | None = None) -> list[str]:
    """``-gencode`` flags for a TORCH_CUDA_ARCH_LIST-style string ("9.0", "8.0;9.0a+PTX", "Hopper")."""
    text = (arch_list if arch_list is not None else os.environ.get("TORCH_CUDA_ARCH_LIST", "")).strip()
    if not text:
        text = DEFAULT_ARCH
    for name, numbers in NAMED_ARCHS.items():
        text = re.sub(rf"\b{name}\b", numbers, text)
    flags = []
    for item in re.split(r"[;\s,]+", text):
        if not item:
            continue
        ptx = item.endswith("+PTX")
        item = item.removesuffix("+PTX")
        m = re.fullmatch(r"(\d+)\.(\d+)([af]?)", item)
        if not m:
            raise ValueError(f"TORCH_CUDA_ARCH_LIST entry {item!r} is not like '9.0', '9.0a' or '9.0+PTX'")
        num = f"{m.group(1)}{m.group(2)}{m.group(3)}"
        flags.append(f"-gencode=arch=compute_{num},code=sm_{num}")
        if ptx:
            flags.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    return flags


def discover() -> tuple[list[Path], list[Path]]:
    """Sources and include folders of every family under kernels/."""
    sys.path.insert(0, str(HERE.parent))
    from kernellab.engine.cuda_build import family_sources, include_dirs

    fams = family_sources()
    files = [f for fam in fams.values() for f in fam["cu"] + fam["bindings"]]
    return files, [d for fam in fams.values() for f in fam["cu"] for d in include_dirs(f)]


def take_manifest(argv: list[str]) -> tuple[list[Path], list[Path], str] | None:
    """``--sources FILE`` (removed from argv): the sources and include folders listed in FILE, and
    the library's name (one family's library has a name of its own)."""
    if "--sources" not in argv:
        return None
    i = argv.index("--sources")
    data = json.loads(Path(argv[i + 1]).read_text())
    del argv[i:i + 2]
    return [Path(f) for f in data["sources"]], [Path(d) for d in data["include_dirs"]], data.get("name", NAME)


def relative(files: list[Path]) -> list[str]:
    """Paths relative to the working directory when below it (shorter object names)."""
    cwd = Path.cwd().resolve()
    out = []
    for f in files:
        try:
            out.append(str(f.resolve().relative_to(cwd)))
        except ValueError:
            out.append(str(f))
    return out


def main() -> None:
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    files, includes, name = take_manifest(sys.argv) or (*discover(), NAME)
    ext = CUDAExtension(
        name=name,
        sources=relative(files),
        include_dirs=list(dict.fromkeys([str(COMMON_DIR), *map(str, includes)])),
        extra_compile_args={"cxx": CXX_FLAGS, "nvcc": NVCC_FLAGS + gencode_flags()},
    )
    setup(
        name=name,
        version="0.1.0",
        description="kernellab CUDA kernels registered as torch.ops.kernellab",
        ext_modules=[ext],
        cmdclass={"build_ext": BuildExtension},  # ninja when installed (parallel, MAX_JOBS), else serial
    )


if __name__ == "__main__":
    main()

"""Loading the CUDA extension that the ``build_cuda`` rule built with setup.py.

The build rule writes one ``build.json`` per family (status, reason, library path, family).
Rules that run kernels call ``configure(build_jsons)``; CUDA implementations call
``ops(family)``, which loads that family's library and returns ``torch.ops.kernellab``, or
raises ``Unavailable`` with the recorded reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kernellab.errors import BuildError, Unavailable

_state: dict = {}  # the build.json paths and, once read, the builds and what loading each gave


def configure(builds) -> None:
    """The builds a job's CUDA implementations may load: a build.json path, a list of them (the
    workflow builds each family on its own: ``build/<family>/build.json``), or None."""
    _state.clear()
    if isinstance(builds, (str, os.PathLike)):
        builds = [builds]
    _state["paths"] = [str(p) for p in builds or [] if p]


def _builds() -> dict:
    """family -> build.json's content and path; a build of every family (setup.py's own, no
    ``family`` key) under None."""
    if "builds" not in _state:
        _state["builds"] = {}
        for path in _state.get("paths", []):
            if Path(path).exists():
                info = json.loads(Path(path).read_text())
                _state["builds"][info.get("family")] = {**info, "path": path}
    return _state["builds"]


def _load(family: str | None) -> str:
    """Load the library that holds ``family``'s ops (every build's for None); '' when loaded,
    else why not."""
    import torch

    builds = _builds()
    if family is not None and family not in builds and None not in builds and builds:
        return f"family {family!r} has no CUDA build (its folder holds no .cu file)"
    keys = [family if family in builds else None] if family is not None else list(builds)
    keys = [k for k in keys if k in builds]
    if not keys:
        return "CUDA extension not built (run the build_cuda rule)"
    loaded = _state.setdefault("loaded", {})
    for key in keys:
        if key in loaded:
            continue
        info = builds[key]
        if info.get("status") != "ok":
            loaded[key] = f"CUDA extension unavailable: {info.get('reason', 'build failed')}"
        elif not torch.cuda.is_available():
            loaded[key] = "no CUDA device"
        else:
            lib = Path(info["path"]).parent / info["library"]
            try:
                torch.ops.load_library(str(lib))
                loaded[key] = ""
            except OSError as exc:  # a library built elsewhere, or for another torch
                loaded[key] = f"could not load {lib.name}: {exc}"
    return next((loaded[k] for k in keys if loaded[k]), "")


def ops(family: str | None = None, step: str | None = None):
    """``torch.ops.kernellab`` with ``family``'s ops loaded (every build's for None), or
    ``Unavailable`` with the reason; a BuildError naming the file, line and nvcc's message when
    ``family``'s sources, or the file of its CUDA ``step`` (built without it), did not compile."""
    import torch

    for info in _builds().values():
        if family in (info.get("families_failed") or {}):
            raise BuildError(info["families_failed"][family])
        if info.get("family") == family and step in (info.get("steps_failed") or {}):
            raise BuildError(info["steps_failed"][step])
    reason = _load(family)
    if reason:
        raise Unavailable(reason)
    return torch.ops.kernellab

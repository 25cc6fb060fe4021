"""Loading the CUDA extension that the ``build_cuda`` rule built with setup.py.

The build rule writes ``build.json`` (status, reason, library path). Rules that run
kernels call ``configure(build_json)``; CUDA implementations call ``ops()`` which
returns ``torch.ops.kernellab`` or raises ``Unavailable`` with the recorded reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kernellab.errors import Unavailable

_state: dict = {}  # the build.json path and, once loaded, the outcome (inherited by forked workers)


def configure(build_json: str | os.PathLike | None) -> None:
    _state.clear()
    if build_json:
        _state["path"] = str(build_json)


def _load() -> None:
    import torch

    if "loaded" in _state:
        return
    path = _state.get("path")
    if not path or not Path(path).exists():
        _state["loaded"] = False
        _state["reason"] = "CUDA extension not built (run the build_cuda rule)"
        return
    info = json.loads(Path(path).read_text())
    _state["failed"] = info.get("families_failed") or {}
    if info.get("status") != "ok":
        _state["loaded"] = False
        _state["reason"] = f"CUDA extension unavailable: {info.get('reason', 'build failed')}"
        return
    if not torch.cuda.is_available():
        _state["loaded"] = False
        _state["reason"] = "no CUDA device"
        return
    lib = Path(path).parent / info["library"]
    try:
        torch.ops.load_library(str(lib))
    except OSError as exc:  # a library built elsewhere, or for another torch
        _state["loaded"] = False
        _state["reason"] = f"could not load {lib.name}: {exc}"
        return
    _state["loaded"] = True


def ops(family: str | None = None):
    """``torch.ops.kernellab``, or ``Unavailable`` with the reason; a RuntimeError naming the
    file and nvcc's message when ``family``'s sources did not compile (left out of the build)."""
    import torch

    _load()
    if family in _state.get("failed", {}):
        raise RuntimeError(_state["failed"][family])
    if not _state["loaded"]:
        raise Unavailable(_state["reason"])
    return torch.ops.kernellab

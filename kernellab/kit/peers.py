"""Other libraries' kernels as implementations: Liger-Kernel (Triton), QuACK and FlashAttention-4
(CuTe DSL).

A family's folder registers ``Impl(kernel, "liger", "liger", fn)`` or ``("quack", "quack")``
whose ``fn`` calls the library through :func:`entry`. The libraries come from an optional
extra (``pip install -e .[peers]``) and are imported on the first call, never when a family
is imported (Snakemake's scripts import every family). Where one cannot run (no CUDA GPU,
the package not installed) the call raises ``Unavailable`` with the reason, so its rows are
``unavailable``, listed with the report's other absences, as CUDA implementations are on a
CPU machine.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from kernellab.errors import Unavailable

INSTALL = "pip install -e .[peers]"


@dataclass(frozen=True)
class Peer:
    impl: str  # implementation kind and backend in the registry
    title: str  # as the report names it
    package: str  # the distribution pip installs
    module: str  # its top-level import name
    min_capability: tuple[int, int] = (0, 0)  # the least compute capability it runs on
    max_cols: int = 0  # the longest row (last dimension) it takes; 0: any
    row_align: int = 0  # the bytes a row's length must be a multiple of; 0: any
    # compiles its kernels for fake tensors and launches none (kernellab.engine.prepare compiles it ahead)
    compiles_on_fake_tensors: bool = False
    # compiles each kernel on its first launch, and launches on torch's current stream: inside a CUDA
    # graph capture that is never replayed it compiles and runs nothing (kernellab.engine.prepare)
    compiles_when_captured: bool = False


# Liger's row kernels hold a row in one block of next_power_of_2(cols) and refuse longer rows
# (liger_kernel.ops.utils.calculate_settings: MAX_FUSED_SIZE).
LIGER = Peer("liger", "Liger-Kernel", "liger-kernel", "liger_kernel", max_cols=65536, compiles_when_captured=True)
# QuACK's kernels are written for Hopper and Blackwell (clusters, TMA); its README asks for one.
# and loads rows in 16-byte vectors: a row of 1001 bf16 fails its assertion ("not divisible by
# vector size 8") or its compile ("cp_size only supports (32, 64, 128)"), seen on an H200
QUACK = Peer("quack", "QuACK", "quack-kernels", "quack", min_capability=(9, 0), row_align=16,
             compiles_when_captured=True)
# FlashAttention-4's CuTe-DSL kernels (the same CUTLASS DSL as QuACK's), for Hopper and Blackwell; under
# torch's FakeTensorMode it compiles and skips the launch, its documented way to fill its cache
# (flash_attn.cute.testing.maybe_fake_tensor_mode)
FA4 = Peer("fa4", "FlashAttention-4", "flash-attn-4", "flash_attn.cute", min_capability=(9, 0),
           compiles_on_fake_tensors=True)
PEERS = {p.impl: p for p in (LIGER, QUACK, FA4)}


def gpu_reason(peer: Peer, tensor) -> str:
    """Why ``peer`` cannot run on ``tensor``'s device ("" when it can)."""
    import torch

    needs = f"{peer.title} needs a CUDA GPU" + (f" (sm_{peer.min_capability[0]}{peer.min_capability[1]}+)"
                                                 if peer.min_capability > (0, 0) else "")
    if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cuda":
        return needs
    if torch.cuda.get_device_capability(tensor.device) < peer.min_capability:
        return f"{needs}; this one is sm_{''.join(map(str, torch.cuda.get_device_capability(tensor.device)))}"
    return ""


def load(peer: Peer, module: str):
    """``importlib.import_module(module)`` of ``peer``'s package, or ``Unavailable`` naming what is
    missing. (``import quack.rmsnorm as m`` would bind the function the package re-exports under
    that name, not the module.) An import that fails otherwise, an installed but broken package,
    raises: that is an error to see, not an absence."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (exc.name == peer.module or peer.module.startswith(f"{exc.name}.")):
            raise Unavailable(f"{peer.package} is not installed ({INSTALL})") from None
        raise Unavailable(f"{peer.package} does not import: {exc} ({INSTALL})") from None


def entry(peer: Peer, module: str, name: str) -> Callable[..., Any]:
    """``module.name`` of ``peer``'s package as a function, found on its first call: that call
    checks that its first argument (the input) is on a GPU the library runs on, and imports the
    library; each raises ``Unavailable`` with the reason, and nothing is kept until both pass. So
    does every call whose rows are longer than the library takes."""
    found: list[Callable] = []

    def call(*args, **kwargs):
        if not found:
            reason = gpu_reason(peer, args[0] if args else None)
            if reason:
                raise Unavailable(reason)
            found.append(getattr(load(peer, module), name))
        cols = args[0].shape[-1]
        if peer.max_cols and cols > peer.max_cols:
            raise Unavailable(f"{peer.title} takes rows of at most {peer.max_cols} columns, not {cols}")
        if peer.row_align and (cols * args[0].element_size()) % peer.row_align:
            raise Unavailable(f"{peer.title} takes rows of a multiple of {peer.row_align} bytes, not {cols} "
                              f"× {args[0].element_size()} B")
        return found[0](*args, **kwargs)

    call.__name__ = f"{peer.impl}_{name}"
    call.peer, call.where = peer, (module, name)
    return call


class Fp32Copy:
    """The float32 copy of a weight, made when the weight is first seen and again only when it
    changes (another tensor, or written in place): for a library that takes float32 weights
    (QuACK's layer norm), as a model keeps them; so the timed calls do not include the cast,
    which a model pays once, not at every call."""

    def __init__(self):
        self._held: tuple | None = None  # (source, its version, the copy)

    def __call__(self, t):
        import torch

        if t.dtype == torch.float32:
            return t
        held = self._held
        if held is None or held[0] is not t or held[1] != t._version:
            held = self._held = (t, t._version, t.float())
        return held[2]


def versions() -> dict[str, str | None]:
    """Each library's installed version (None: not installed), by distribution name, read from its
    metadata without importing it: for environment.json beside torch's and Triton's."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for peer in PEERS.values():
        try:
            out[peer.package] = metadata.version(peer.package)
        except metadata.PackageNotFoundError:
            out[peer.package] = None
    return out

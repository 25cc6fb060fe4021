"""What the engine plugs into the kit.

The kit depends on nothing of ours above it (issue 46): where a family's code needs the engine
at run time (the CUDA extension's ops, the benchmark's timer for ``autotune``), it calls a hook
that the engine installs: the ops when it loads families (``kernellab.engine.launch.install``),
the timer when it tunes (``launch.time_autotuning``). How
``launch`` runs a kernel is set around a call instead (``kernellab.kit.triton.LAUNCHER``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kernellab.errors import Unavailable


@dataclass
class Hooks:
    # (family, step) -> torch.ops.kernellab with that family's CUDA library loaded, or Unavailable
    cuda_ops: Callable[[str | None, str | None], Any] | None = None
    # (call, quantiles) -> those quantiles of the call's time in ms: how ``autotune`` times a config
    autotune_timer: Callable[[Callable, Any], list[float]] | None = None


HOOKS = Hooks()


def cuda_ops(family: str | None = None, step: str | None = None):
    """``torch.ops.kernellab`` with ``family``'s CUDA library loaded (every built family's for
    None), or ``Unavailable`` saying why not; a ``BuildError`` where ``family``'s sources, or
    the file of its CUDA ``step``, did not compile."""
    if HOOKS.cuda_ops is None:
        raise Unavailable("no CUDA extension loaded: the engine loads it for the families it loads "
                          "(kernellab.engine.registry.load)")
    return HOOKS.cuda_ops(family, step)

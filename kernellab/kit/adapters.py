"""Adapters to the ``(out, *inputs, **params)`` convention: a chain of PyTorch ops, a
``torch.compile``d function, a CUDA op of a family's extension."""

from __future__ import annotations

from typing import Callable

from kernellab.kit.hooks import cuda_ops


def returns_new(fn: Callable) -> Callable:
    """Adapt ``fn(*inputs)`` (a chain of PyTorch ops) to the ``(out, *inputs)`` convention."""

    def run(out, *inputs, **params):
        return fn(*inputs, **params)

    run.__name__ = getattr(fn, "__name__", "run")
    return run


def compiled(fn: Callable, adapt: Callable | None = None, **compile_kwargs) -> Callable:
    """``torch.compile(fn, dynamic=False)``, built on first call so that importing stays cheap.

    ``adapt(*inputs, **params) -> (inputs, params)``, where given, runs before each call, outside
    the graph: what ``fn`` cannot trace (seeding the device's generator, say) and the arguments
    it takes. Lowering ahead (the engine's ``compile_only``) adapts the same way, so it compiles
    the graph the call will ask for.

    Static shapes: each shape is compiled for itself, as in a model whose shapes are fixed.
    With the default (automatic dynamic shapes) the worker's second shape would make Dynamo
    recompile one shape-generic graph for all the rest, and Inductor's generic kernels for
    it loop where a static one holds the row on chip: at 4096 x 32768 its layer norm took
    2.5x (fp32) and 3.9x (bf16) the static kernel's time on the H200, a number about dynamic
    shapes rather than about what torch.compile makes of a fixed model."""
    holder: dict = {}

    def build(key: str, **kwargs):
        if key not in holder:
            import torch

            # one worker sees every shape and dtype of its family: allow the recompiles,
            # and never fall back to eager silently (that would time PyTorch, not Inductor)
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
            torch._dynamo.config.fail_on_recompile_limit_hit = True
            holder[key] = torch.compile(fn, **{"dynamic": False, **kwargs})
        return holder[key]

    def adapted(inputs, params):
        return adapt(*inputs, **params) if adapt is not None else (inputs, params)

    def run(out, *inputs, **params):
        inputs, params = adapted(inputs, params)
        return build("fn", **compile_kwargs)(*inputs, **params)

    def lower(backend, out, *inputs, **params):
        """Trace the call's graph and hand it to the Dynamo ``backend`` (the engine's compile-only
        one, ``kernellab.engine.launch.compile_only``)."""
        inputs, params = adapted(inputs, params)
        build("lower", backend=backend, fullgraph=True)(*inputs, **params)

    if "mode" not in compile_kwargs and "backend" not in compile_kwargs:
        run.lower = lower  # max-autotune times its choices on the GPU while it compiles
    return run


def cuda_op(family: str, name: str, step: str) -> Callable:
    """Call ``torch.ops.kernellab.<name>(*inputs, out, *params, step)``, an op that ``family``'s
    binding.cpp defines (the family's own library, built from its folder)."""

    def run(out, *inputs, **params):
        getattr(cuda_ops(family, step=step), name)(*inputs, out, *params.values(), step)
        return out

    return run


def cuda_backward_op(family: str, name: str, step: str) -> Callable:
    """A backward step ``fn(out, dy, saved, *inputs, **params)`` calling
    ``torch.ops.kernellab.<name>(*inputs, dy, *saved, *out, *params, step)`` (``saved``: a tensor,
    a tuple of them, or None), an op that ``family``'s binding.cpp defines; returns ``out``, the
    gradient buffers it fills."""

    def run(out, dy, saved, *inputs, **params):
        state = () if saved is None else tuple(saved) if isinstance(saved, (tuple, list)) else (saved,)
        getattr(cuda_ops(family, step=step), name)(*inputs, dy, *state, *out, *params.values(), step)
        return tuple(out)

    return run

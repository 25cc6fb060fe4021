"""Adapters to the ``(out, *inputs, **params)`` convention: a chain of PyTorch ops, a
``torch.compile``d function, a CUDA op of a family's extension."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Callable

from kernellab.kit.hooks import cuda_ops


def returns_new(fn: Callable) -> Callable:
    """Adapt ``fn(*inputs)`` (a chain of PyTorch ops) to the ``(out, *inputs)`` convention."""

    def run(out, *inputs, **params):
        return fn(*inputs, **params)

    run.__name__ = getattr(fn, "__name__", "run")
    return run


# set while ``compiled``'s ``lower`` runs: its graphs compile, then return uninitialised outputs
_LOWERING: ContextVar[bool] = ContextVar("lowering", default=False)


def compiled(fn: Callable, adapt: Callable | None = None, **compile_kwargs) -> Callable:
    """``torch.compile(fn, dynamic=False)``, built on first call so that importing stays cheap.

    ``adapt(*inputs, **params) -> (inputs, params)``, where given, runs before each call, outside
    the graph: what ``fn`` cannot trace (seeding the device's generator, say) and the arguments
    it takes.

    With torch.compile's default mode, the returned function has ``lower(out, *inputs, **params)``:
    the same call, compiled by the same torch.compile but not run (``_inductor_or_unrun``), so
    the engine can compile ahead (``kernellab.engine.launch.compile_only``) and the real call
    with inputs like these finds its graph in Dynamo's cache, traced and compiled already.

    Static shapes: each shape is compiled for itself, as in a model whose shapes are fixed.
    With the default (automatic dynamic shapes) the worker's second shape would make Dynamo
    recompile one shape-generic graph for all the rest, and Inductor's generic kernels for
    it loop where a static one holds the row on chip: at 4096 x 32768 its layer norm took
    2.5x (fp32) and 3.9x (bf16) the static kernel's time on the H200, a number about dynamic
    shapes rather than about what torch.compile makes of a fixed model."""
    holder: dict = {}
    # max-autotune times its choices on the GPU while it compiles: not ahead of its turn (nor a
    # backend or options of the caller's)
    lowers = not {"mode", "backend", "options"} & compile_kwargs.keys()

    def build():
        if "fn" not in holder:
            import torch
            import torch._functorch.config

            # one worker sees every shape and dtype of its family: allow the recompiles,
            # and never fall back to eager silently (that would time PyTorch, not Inductor)
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
            torch._dynamo.config.fail_on_recompile_limit_hit = True
            # a backward case keeps its graph (it times the same backward again and again): no
            # donated buffers, which a kept graph refuses. A backward compiled at its first call
            # drops them for a kept graph itself; one compiled ahead (``lower``) would keep them
            torch._functorch.config.donated_buffer = False
            backend = {"backend": _inductor_or_unrun} if lowers else {}
            holder["fn"] = torch.compile(fn, **{"dynamic": False, **backend, **compile_kwargs})
        return holder["fn"]

    def run(out, *inputs, **params):
        if adapt is not None:
            inputs, params = adapt(*inputs, **params)
        return build()(*inputs, **params)

    def lower(out, *inputs, **params):
        """Trace and compile the call's graphs for these inputs without running them (a graph
        break raises rather than run the code between graphs); returns nothing."""
        import torch

        token = _LOWERING.set(True)
        try:
            with torch._dynamo.error_on_graph_break(True):
                run(out, *inputs, **params)
        finally:
            _LOWERING.reset(token)

    if lowers:
        run.lower = lower
    return run


def _inductor_or_unrun(gm, example_inputs):
    """torch.compile's default backend (Inductor's ``compile_fx``, as ``backend="inductor"`` calls
    it with no mode or options), whose compiled graph, called inside ``compiled``'s ``lower``,
    launches nothing and returns uninitialised outputs of the traced shapes."""
    import torch
    from torch._inductor.compile_fx import compile_fx

    compiled_graph = compile_fx(gm, example_inputs)
    (result,) = next(n for n in gm.graph.nodes if n.op == "output").args
    traced = [a.meta.get("example_value", a.meta.get("val")) if isinstance(a, torch.fx.Node) else a
              for a in (result if isinstance(result, (tuple, list)) else (result,))]

    def call(*args):
        if _LOWERING.get():
            return tuple(torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device=v.device)
                         if isinstance(v, torch.Tensor) else v for v in traced)
        return compiled_graph(*args)

    return call


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

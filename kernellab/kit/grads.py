"""Backward implementations made by autograd: through a forward written in PyTorch ops
(``torch_naive``), through PyTorch's own op (``torch_fused``), or through ``torch.compile`` of a
forward (``compiled``: Inductor compiles the forward and, by AOTAutograd, its backward).

``autograd_backward(forward, grads)`` gives the ``(save, fn)`` pair ``Family.add_backward`` takes:
``save`` runs the forward on inputs that require a gradient (the graph is the saved state), and
``fn`` runs autograd's backward of that graph with the upstream gradient. It returns the
gradients (``torch.autograd.grad``) rather than accumulating them into ``.grad``, and keeps the
graph, so a backward case times the same backward sample after sample.
"""

from __future__ import annotations

from typing import Callable


def autograd_backward(forward: Callable, grads: tuple, compile: bool = False,
                      adapt: Callable | None = None) -> tuple[Callable, Callable]:
    """(save, fn) of ``forward(*inputs, **params)``'s backward; ``grads`` is the family's: which
    inputs have a gradient. ``compile``: torch.compile the forward (and so its backward), with
    ``kit.compiled``'s ``adapt``."""
    wrt = [i for i, g in enumerate(grads) if g]
    if compile:
        from kernellab.kit.adapters import compiled

        run_compiled = compiled(forward, adapt=adapt)

        def call(*inputs, **params):
            return run_compiled(None, *inputs, **params)
    else:
        call = forward

    def save(*inputs, **params):
        import torch

        leaves = tuple(x.detach().requires_grad_(i in wrt) if isinstance(x, torch.Tensor) else x
                       for i, x in enumerate(inputs))
        with torch.enable_grad():
            y = call(*leaves, **params)
        return y, tuple(leaves[i] for i in wrt)

    def fn(out, dy, saved, *inputs, **params):
        import torch

        y, leaves = saved
        return torch.autograd.grad(y, leaves, dy, retain_graph=True)

    if compile:
        def lower(out, *inputs, **params):
            """Compile the forward and, with it, its backward (``save`` on inputs that require a
            gradient) without running them (``kit.compiled``'s ``lower``)."""
            import torch

            leaves = tuple(x.detach().requires_grad_(i in wrt) if isinstance(x, torch.Tensor) else x
                           for i, x in enumerate(inputs))
            with torch.enable_grad():
                run_compiled.lower(None, *leaves, **params)

        save.lower = lower
    fn.__name__ = save.__name__ = getattr(forward, "__name__", "forward")
    return save, fn

"""Backward cases: the upstream gradient, the float64 reference gradients, the call a backward or
forward+backward case makes and times, and the check of several outputs, each on its own.

A family declares its backward once (``Family.grads``, the name of each input's gradient): the
reference gradients are autograd's through the family's float64 ``reference``, with a seeded
upstream gradient ``dy``, so the author writes no second reference. A backward implementation,
``fn(out, dy, saved, *inputs, **params)``, is handed the state ``save(*inputs, **params)`` made:
in a backward case that forward runs once, outside the timed region; in a forward+backward case
it is part of the one timed call.
"""

from __future__ import annotations

import math
from typing import Callable

from kernellab.engine import runtime
from kernellab.engine.registry import Family, Impl

DY_SEED = 104729  # added to the case's seed: dy is not the inputs' draw


def upstream(family: Family, inputs: tuple, params: dict, seed: int):
    """The seeded upstream gradient: normal data shaped and typed like the forward's output."""
    import torch

    from kernellab.kit.data import generator

    like = family.out_like(*inputs, **params)
    dy = torch.randn(tuple(like.shape), generator=generator(str(like.device), seed + DY_SEED),
                     dtype=torch.float32, device=like.device)
    return dy.to(like.dtype)


def grad_buffers(family: Family, inputs: tuple) -> tuple:
    """One empty tensor like each input that has a gradient, NaN-filled where floating point
    (poison: an element the implementation does not write fails its check)."""
    import torch

    out = tuple(torch.empty_like(x) for x, g in zip(inputs, _padded(family, inputs), strict=True) if g)
    for t in out:
        if t.is_floating_point():
            t.fill_(math.nan)
    return out


def reference_grads(family: Family, inputs: tuple, dy, params: dict) -> dict:
    """name -> float64 gradient: autograd through the family's float64 reference."""
    import torch

    with torch.enable_grad():
        leaves = [x.detach().to(torch.float64).requires_grad_(bool(g)) if isinstance(x, torch.Tensor)
                  and x.is_floating_point() else x for x, g in zip(inputs, _padded(family, inputs), strict=True)]
        y = family.reference(*leaves, **params)
        wrt = [x for x, g in zip(leaves, _padded(family, inputs), strict=True) if g]
        grads = torch.autograd.grad(y, wrt, dy.to(torch.float64), allow_unused=True)
    return {name: (g if g is not None else torch.zeros_like(x)).detach()
            for name, g, x in zip(family.grad_names(), grads, wrt, strict=True)}


def _padded(family: Family, inputs: tuple) -> tuple:
    return tuple(family.grads) + (None,) * (len(inputs) - len(family.grads))


def call_of(impl: Impl, out: tuple, dy, inputs: tuple, params: dict) -> tuple[Callable[[], object], object]:
    """(the one call a case times, the saved state): a backward with its saved state made here,
    once, outside the call; a forward+backward making it inside (no state outside)."""
    if impl.pass_ == "backward":
        saved = impl.save(*inputs, **params) if impl.save is not None else None
        return (lambda: impl.fn(out, dy, saved, *inputs, **params)), saved
    return (lambda: impl.fn(out, dy, impl.save(*inputs, **params) if impl.save is not None else None,
                            *inputs, **params)), None


def grad_reset(inputs: tuple, saved=None) -> Callable[[], None] | None:
    """What resets accumulated gradients between samples (do_bench's ``grad_to_none``): the
    ``.grad`` of every input and saved tensor that requires one; None when none does."""
    import torch

    def leaves(x):
        if isinstance(x, torch.Tensor):
            yield x
        elif isinstance(x, (tuple, list)):
            for y in x:
                yield from leaves(y)
        elif isinstance(x, dict):
            for y in x.values():
                yield from leaves(y)

    tracked = [t for t in leaves((inputs, saved)) if t.requires_grad]
    if not tracked:
        return None

    def reset():
        for t in tracked:
            t.grad = None

    return reset


def outputs_contract(family: Family, impl: Impl, result, out: tuple) -> tuple[tuple, str]:
    """(the outputs, '') where ``result`` is one tensor per gradient, shaped and typed like its
    buffer in ``out``; else ((), what broke the contract, naming the output)."""
    import torch

    names = family.grad_names()
    got = (result,) if isinstance(result, torch.Tensor) else result
    if not isinstance(got, (tuple, list)) or len(got) != len(names):
        what = "None" if result is None else f"a {type(result).__name__}" + (
            f" of {len(got)}" if isinstance(got, (tuple, list)) else "")
        return (), (f"{family.name} {impl.key} returned {what}: a backward returns its gradients "
                    f"({', '.join(names)}), one tensor each, in that order")
    for name, t, buf in zip(names, got, out, strict=True):
        if not isinstance(t, torch.Tensor):
            return (), f"{family.name} {impl.key}: output {name} is a {type(t).__name__}, not a tensor"
        if tuple(t.shape) != tuple(buf.shape) or t.dtype != buf.dtype:
            return (), (f"{family.name} {impl.key}: output {name} has shape {tuple(t.shape)} and dtype {t.dtype}; "
                        f"expected {tuple(buf.shape)} and {buf.dtype}")
    return tuple(got), ""


def check_outputs(outputs: dict, refs: dict, dtype: str, check: Callable, tol: float | None = None,
                  floors: dict | None = None) -> dict:
    """Each output against its own float64 reference (``check``: harness.check_against_reference),
    its error relative to at least its floor: the worst errors, and a failure's reason naming the
    outputs that failed."""
    floors = floors or {}
    rows = {name: check(outputs[name], refs[name], dtype, tol, float(floors.get(name, 0.0))) for name in outputs}
    bad = [f"{name}: {row['reason']}" for name, row in rows.items() if row["status"] != "ok"]
    return {"status": "failed" if bad else "ok", "reason": "; ".join(bad),
            "rel_err": max((r["rel_err"] for r in rows.values()), default=math.nan),
            "max_abs": max((r["max_abs"] for r in rows.values()), default=math.nan),
            "tol": next(iter(rows.values()))["tol"] if rows else runtime.TOLERANCE.get(dtype, math.nan)}


def run_check(family: Family, impl: Impl, case, made, check: Callable, contract_error: Callable) -> dict:
    """One seed of a backward or forward+backward case (``made``: its ``calls.CaseCall``): every
    gradient against its reference."""
    params = case.param_dict
    with runtime.matmul_precision(case.dtype):
        result = made.call()
    runtime.synchronize()
    got, broken = outputs_contract(family, impl, result, made.out)
    if broken:
        return contract_error(broken)
    inputs, dy = made.inputs, made.dy
    refs = reference_grads(family, inputs, dy, params)
    tol = family.tolerance(case.shape, case.dtype) if family.tolerance is not None else None
    floors = {}
    if family.backward_error_floor is not None:
        import torch

        with torch.no_grad():
            inputs64 = [x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                        for x in inputs]
            floors = family.backward_error_floor(*inputs64, dy.to(torch.float64), **params)
    return check_outputs(dict(zip(family.grad_names(), got, strict=True)), refs, case.dtype, check, tol, floors)

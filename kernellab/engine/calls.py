"""The one call a case makes, whatever its pass: the implementation on the case's seeded inputs,
with its out buffer (forward) or its gradient buffers, upstream gradient and saved state (backward
and forward+backward). Checking, tuning, timing, profiling and compiling ahead all build it here,
so each runs what the others run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kernellab.engine import backward, runtime
from kernellab.engine.cases import Case
from kernellab.engine.registry import Family, Impl


@dataclass
class CaseCall:
    call: Callable[[], Any]  # what a sample times
    reset: Callable[[], None] | None  # what runs between samples (accumulated gradients to None)
    inputs: tuple
    out: Any  # forward: the out tensor; backward: one gradient buffer per gradient, NaN-filled
    dy: Any = None  # backward: the seeded upstream gradient

    def run(self):
        """One call as the untimed callers make it (profiler, ncu, warm-ups): the reset, then the call.
        The timer instead runs the reset before each sample, outside the timed region."""
        if self.reset is not None:
            self.reset()
        return self.call()


def case_call(family: Family, impl: Impl, case: Case, device: str, seed: int = 0) -> CaseCall:
    """The call of ``impl`` for ``case`` on ``device`` (``meta``: shapes only, for compiling ahead).
    A backward's saved state is made here, once, outside the call; a forward+backward's inside it."""
    params = case.param_dict
    inputs = family.make_inputs(case.shape, case.dtype, device, seed, **params)
    if not impl.backward:
        out = family.out_like(*inputs, **params)
        return CaseCall(lambda: impl.fn(out, *inputs, **params), None, inputs, out)
    dy = backward.upstream(family, inputs, params, seed)
    out = backward.grad_buffers(family, inputs)
    with runtime.matmul_precision(case.dtype):
        call, saved = backward.call_of(impl, out, dy, inputs, params)
    if device == "cuda":
        runtime.synchronize()  # the saved state's forward, outside the timed region
    return CaseCall(call, backward.grad_reset(inputs, saved), inputs, out, dy)

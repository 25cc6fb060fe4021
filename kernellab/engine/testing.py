"""Helpers shared by the generic tests (tests/) and the family folders' own tests
(kernels/<family>/test_<family>.py): one call with a NaN-poisoned output, the harness's check,
and the relative error. Nothing here names a family."""

from __future__ import annotations

import math

from kernellab.engine import runtime
from kernellab.engine.harness import check_against_reference


def run(fam, fn, shape, dtype, seed=0, device=None, **params):
    """(result, inputs, out) of one call of ``fn`` on the family's inputs, ``out`` poisoned
    with NaN first (an element the implementation does not write then fails)."""
    device = runtime.device() if device is None else device
    inputs = fam.make_inputs(shape, dtype, device, seed, **params)
    out = fam.out_like(*inputs, **params)
    if out.is_floating_point():
        out.fill_(math.nan)
    with runtime.matmul_precision(dtype):
        got = fn(out, *inputs, **params)
    runtime.synchronize()
    return got, inputs, out


def float64(inputs):
    import torch

    return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def reference(fam, inputs, **params):
    import torch

    with torch.no_grad():
        return fam.reference(*float64(inputs), **params)


def verdict(fam, got, inputs, shape, dtype, **params) -> dict:
    """The harness's check: the family's own ``validate``, else the float64 reference with the
    family's tolerance and error floor. ``{"status": "ok" | "failed", "reason": ...}``."""
    if fam.validate is not None:
        v = fam.validate(got, inputs, dtype=dtype, **params)
        return {"status": "ok" if v["ok"] else "failed", "reason": v.get("reason", "")}
    ref = reference(fam, inputs, **params)
    floor = float(fam.error_floor(*float64(inputs), **params)) if fam.error_floor is not None else 0.0
    tol = fam.tolerance(shape, dtype) if fam.tolerance is not None else None
    return check_against_reference(got, ref, dtype, tol, floor)


def check(fam, got, inputs, out, shape, dtype, **params) -> None:
    """Assert the result has the output's dtype and passes the harness's check."""
    assert got.dtype == out.dtype, f"result dtype {got.dtype}, the family's output is {out.dtype}"
    v = verdict(fam, got, inputs, shape, dtype, **params)
    assert v["status"] == "ok", v["reason"]


def check_backward(fam, impl, shape, dtype, seed=0, device=None, **params) -> dict:
    """The harness's check of one backward case of ``impl``: every gradient against autograd's
    float64 one, NaN-poisoned first. ``{"status": ..., "reason": naming each output that failed}``."""
    from kernellab.engine.cases import Case
    from kernellab.engine.harness import run_case_check

    case = Case(fam.name, impl.key, tuple(shape), dtype, tuple(sorted(params.items())))
    return run_case_check(fam, impl, case, seed, runtime.device() if device is None else device)


def wrong_gradient(impl, index: int, factor: float = 1.01):
    """``impl`` (a backward) with its ``index``-th gradient scaled by ``factor``: one whose check
    must fail naming that output."""
    from kernellab.kit.family import Impl

    def fn(out, dy, saved, *inputs, **params):
        got = list(impl.fn(out, dy, saved, *inputs, **params))
        got[index] = got[index] * factor
        return tuple(got)

    return Impl(impl.impl, fn, pass_=impl.pass_, save=impl.save)


def rel_error(got, ref) -> float:
    """Relative-norm error; inf when an element is not finite (unwritten, NaN-poisoned)."""
    import torch

    assert tuple(got.shape) == tuple(ref.shape), f"shape {tuple(got.shape)} != {tuple(ref.shape)}"
    got = got.detach().double().cpu()
    ref = ref.detach().double().cpu()
    if not bool(torch.isfinite(got).all()):
        return math.inf
    return float(torch.linalg.vector_norm(got - ref)) / max(float(torch.linalg.vector_norm(ref)), 1e-300)


# ---- GPU tests of the CUDA ops themselves (torch.ops.kernellab.*) --------------------------------
def randn_cuda(shape, dtype, seed, scale=1.0, offset=0.0, misalign=False):
    """Normal values on the GPU; ``misalign``: a view one element past a 16-byte boundary."""
    import torch

    g = torch.Generator().manual_seed(seed)
    n = math.prod(shape)
    flat = (torch.randn(n + 1, generator=g) * scale + offset).to(dtype).cuda()
    return (flat[1:] if misalign else flat[:n]).view(shape)


def empty_like_nan(x, misalign=False):
    import torch

    buf = torch.full((x.numel() + 1,), float("nan"), dtype=x.dtype, device=x.device)
    return (buf[1:] if misalign else buf[: x.numel()]).view(x.shape)


def cuda_rel_err(out, ref) -> float:
    import torch

    out, ref = out.double(), ref.double()
    assert torch.isfinite(out).all(), "non-finite values in the output (unwritten elements?)"
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


CUDA_TOL = {"float32": 1e-5, "bfloat16": 8e-3}  # by torch dtype name, for the CUDA op tests


def cuda_tol(dtype) -> float:
    return CUDA_TOL[str(dtype).removeprefix("torch.")]


def sass_functions(text: str) -> dict[str, str]:
    """cuobjdump --dump-sass output -> {mangled function name: its SASS}."""
    import re

    parts = re.split(r"^\s*Function : (\S+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def nvcc_or_skip() -> str:
    import pytest

    from kernellab.engine import cuda_build

    nvcc = cuda_build.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found: install the CUDA toolkit (or put nvcc on PATH / set CUDA_HOME)")
    return nvcc


def in_fresh_interpreter(script: str, env: dict[str, str] | None = None, cwd=None, timeout_s: float = 600):
    """The JSON object ``script`` prints last, run by a new Python (``env`` added to this
    process's environment). For what a test process cannot do itself: load the registry
    afresh, compile Triton rather than interpret it, or use torch.compile (a worker forked from
    a test process that has compiled before, as tests/test_families.py does, can hang in
    Inductor)."""
    import json
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout_s,
                          cwd=cwd, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# The rows a CUDA row ladder's GPU test runs every step on: rows that take the step's own path
# and rows that fall back. (20000, 1024) and (600, 32768): more rows than resident CTAs, so each
# walks several rows and reuses both of its buffers.
ROW_SHAPES = [(1, 1), (3, 1000), (5, 1001), (64, 4096), (2, 70000), (3, 57000), (7, 8), (300, 33), (20000, 1024),
              (600, 32768)]


def row_ladder_cases(fam, shapes=ROW_SHAPES):
    """Marks a GPU test ``(kl_ops, dtype, shape, step)`` to run every step of ``fam``'s
    cuda_rows ladder on ``shapes`` in fp32 and bf16."""
    import pytest
    import torch

    marks = (pytest.mark.parametrize("step", [s.step for s in fam.ladders()["cuda_rows"]]),
             pytest.mark.parametrize("shape", shapes),
             pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16]),
             pytest.mark.gpu)

    def mark(test):
        for m in marks:
            test = m(test)
        return test

    return mark


def sm90_global_loads(sm90_ptx, family: str) -> dict[str, list[str]]:
    """The global-load instructions of each of ``family``'s sm_90 compile specs (there is one at least)."""
    import re

    loads = {label: re.findall(r"\bld\.global[\w.:]*", ptx) for label, ptx in sm90_ptx.items()
             if label.startswith(f"{family}/")}
    assert loads
    return loads


def assert_sm90_16_byte_loads(sm90_ptx, family: str) -> None:
    """Every global load of ``family``'s sm_90 code is a 16-byte (or 8-byte, v2) vector load."""
    for label, loads in sm90_global_loads(sm90_ptx, family).items():
        assert all(".v4." in op or ".v2." in op for op in loads), f"{label}: scalar loads besides the 16-byte ones"


def sigint_as_default() -> None:
    """A ``preexec_fn`` for a child that a test interrupts: SIGINT back to its default. A test runner
    started in the background of a shell ignores SIGINT, and its children would inherit that (the
    child's Python then never installs its KeyboardInterrupt handler)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

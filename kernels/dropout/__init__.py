"""Dropout (training mode): out = x * keep / (1 - p), keep ~ Bernoulli(1 - p), from a seed.

Memory-bound in principle: one read and one write per element (bytes = 2 * n * element
size; the mask is never stored), about one FLOP per element. At 2^28 fp32 elements that
is 2 GiB, about 0.51 ms at 4.2 TB/s. The random numbers are not free, though: Philox
4x32-10 costs about 25-30 integer instructions per element even when one call serves
four elements, which the H200 issues at roughly 5e11 elements/s, the same rate as the
fp32 copy bandwidth (and half the bf16 one): expect the RNG to cap bf16 well below the
copy bandwidth.

Parameters: ``p`` (drop probability), swept over Family.params. Inputs are
``(x, seed)``: ``seed`` is a Python int.

Correctness contract (the implementations draw different masks, so ``Family.validate``
replaces the comparison; ``reference`` is one draw, ``torch_naive``'s mask, whose autograd
gives the backward's float64 gradients: backward.py):

- ``validate(out, inputs, dtype=..., p=...)``: every output element is either exactly 0
  (dropped) or x / (1 - p) (kept) within the dtype's tolerance (runtime.TOLERANCE,
  per element relative, and as a relative norm over the kept elements; compared in
  float64); no element is NaN/inf (the harness poisons ``out`` with NaN first, so an
  unwritten element fails); the kept fraction lies within 6 binomial standard
  deviations of 1 - p. Elements with x == 0 carry no mask information; their output
  must be 0.
- ``check_determinism(impl_fn, inputs, p)``: the same seed gives bit-identical output
  (the random numbers come from the seed and the element index, not from global state
  or the launch configuration), and, for 64 elements or more, seed + 1 gives a
  different mask (the seed is used). The harness cannot know this from one output;
  tests and the lead's check run it.

In the Triton kernel one Philox call (counter e // 8, key ``seed``) serves eight
elements with a 16-bit uniform each, halving the RNG's instructions per element against
four 32-bit uniforms: element e is kept when its uniform is >= round(p * 65536), so p is
rounded to a multiple of 2^-16 (the kept fraction moves by at most 7.6e-6, far inside
the check's bounds; the scale stays 1 / (1 - p)). The mask depends on (seed, e) only, so
every autotuning config gives the same output. The PyTorch and CUDA implementations draw
different (equally valid) masks.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernellab.kit import (
    TOLERANCE,
    CompileSpec,
    Family,
    autotune,
    compiled,
    cuda_op,
    element_size,
    elementwise_configs,
    launch,
    numel,
    randn,
    returns_new,
    triton_type,
)

from . import backward
from .backward import keep_mask
from .backward import scale as _scale


def reference(x, seed, p):
    """One dropout draw, ``torch_naive``'s mask (``keep_mask``). The forward check does not use it
    (``validate`` does: the implementations draw different masks); the backward's reference
    gradients are autograd's through it, dy * keep / (1 - p), so every backward is handed that
    mask (``save``) or draws it as ``torch_naive`` does."""
    return x * keep_mask(x, seed, p) * _scale(p)


def _seed_device_generator(device: torch.device, seed: int) -> None:
    """Seed the default generator of ``device`` only (not every device, not the CPU's too)."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        torch.cuda.default_generators[index].manual_seed(int(seed))
    else:
        torch.default_generator.manual_seed(int(seed))


def dropout_naive(x, seed, p):
    """Separate ops: uniform draw into a tensor, compare, multiply, divide."""
    return x * keep_mask(x, seed, p) / (1.0 - p)


def dropout_body(x, p):
    """The naive chain on the device's default generator, which torch.compile turns into
    in-kernel random numbers (Inductor does not take an explicit generator)."""
    keep = torch.rand_like(x, dtype=torch.float32) >= p
    return x * keep / (1.0 - p)


def _seeded(x, seed, p):
    """Outside the compiled graph: seed the device's generator; the graph takes x and p."""
    _seed_device_generator(x.device, seed)
    return (x,), {"p": p}


dropout_compiled = compiled(dropout_body, adapt=_seeded)


def dropout_fused(out, x, seed, p):
    """PyTorch's fused dropout kernel on the seeded device generator (it also writes a mask)."""
    _seed_device_generator(x.device, seed)
    return torch.nn.functional.dropout(x, p, training=True)


@autotune(configs=elementwise_configs(), key=["n"])
@triton.jit
def dropout_kernel(x_ptr, out_ptr, n, threshold, scale, seed, BLOCK: tl.constexpr):
    """Elements in groups of 8: group g = e // 8 is the Philox counter, and its four 32-bit
    numbers give eight 16-bit uniforms u, one per element (number (e % 8) // 2, low half
    for even e). Element e is kept when u >= threshold = round(p * 65536). The group is
    the tile's second axis, so each thread's elements stay contiguous (vector loads) and
    the mask depends on (seed, e) only, not on BLOCK. BLOCK % 8 == 0."""
    pid = tl.program_id(0).to(tl.int64)
    groups = pid * (BLOCK // 8) + tl.arange(0, BLOCK // 8)
    lane = tl.arange(0, 8)[None, :]
    offs = groups[:, None] * 8 + lane
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    r0, r1, r2, r3 = tl.randint4x(seed, groups)
    word = tl.where(lane < 4, tl.where(lane < 2, r0[:, None], r1[:, None]),
                    tl.where(lane < 6, r2[:, None], r3[:, None]))
    u = tl.where(lane % 2 == 0, word & 0xFFFF, word >> 16)
    y = tl.where(u >= threshold.to(tl.uint32), x.to(tl.float32) * scale, 0.0)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def threshold_16bit(p: float) -> int:
    """round(p * 65536): a 16-bit uniform u keeps its element when u >= this (p = 1 drops all)."""
    return min(round(p * 65536), 65536)


def dropout_triton(out, x, seed, p):
    n = x.numel()
    launch(dropout_kernel, lambda meta: (triton.cdiv(n, meta["BLOCK"]),), x, out, n, threshold_16bit(p),
           _scale(p), int(seed))
    return out


def compile_specs(dtype: str):
    ty = triton_type(dtype)
    sig = {"x_ptr": f"*{ty}", "out_ptr": f"*{ty}", "n": "i32", "threshold": "i32", "scale": "fp32", "seed": "i32"}
    return [CompileSpec(dropout_kernel, sig, {"BLOCK": 4096}, num_warps=8, label="BLOCK=4096, num_warps=8")]


def make_inputs(shape, dtype, device, seed, p=0.5):
    """(x, seed): x without exact zeros (a zero carries no mask information)."""
    x = randn(shape, dtype, device, seed)
    x = torch.where(x == 0, torch.ones_like(x), x)
    return x, (1_000_003 * (int(seed) + 1)) % (2**31 - 1)


def out_like(x, seed, p=0.5):
    return torch.empty_like(x)


_DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def validate(out, inputs, dtype=None, p=0.5, ref_fn=None, **_):
    """Every element 0 or x / (1 - p); no NaN; kept fraction within 6 sigma of 1 - p.

    Returns dict(ok, rel_err, max_abs, reason, tol); rel_err is the relative norm of the
    error over the kept elements.
    """
    x = inputs[0]
    dtype = dtype or _DTYPE_NAMES.get(x.dtype, "fp32")
    tol = TOLERANCE[dtype]

    def verdict(ok, reason="", rel_err=math.nan, max_abs=math.nan):
        return {"ok": bool(ok), "rel_err": float(rel_err), "max_abs": float(max_abs), "reason": reason,
                "tol": tol}

    if tuple(out.shape) != tuple(x.shape):
        return verdict(False, f"output shape {tuple(out.shape)} != input shape {tuple(x.shape)}")
    o = out.detach().to(torch.float64).flatten()
    xv = x.detach().to(device=o.device, dtype=torch.float64).flatten()
    bad = ~torch.isfinite(o)
    if bool(bad.any()):
        first = int(bad.nonzero()[0])
        return verdict(False, f"{int(bad.sum())} non-finite output elements (first at flat index {first}): "
                              "unwritten or overflow", math.inf, math.inf)
    informative = xv != 0
    if bool((o[~informative] != 0).any()):
        return verdict(False, "non-zero output where x == 0")
    kept = informative & (o != 0)
    expected = xv[kept] * _scale(p)
    err = o[kept] - expected
    rel_err = float(torch.linalg.vector_norm(err) / torch.linalg.vector_norm(expected)) if kept.any() else 0.0
    max_abs = float(err.abs().max()) if kept.any() else 0.0
    elem_rel = err.abs() / expected.abs()
    wrong = elem_rel > tol
    if bool(wrong.any()):
        i = int(wrong.nonzero()[0])
        return verdict(False, f"{int(wrong.sum())} non-zero elements differ from x/(1-p) by more than "
                              f"{tol:g} relative (e.g. {float(o[kept][i]):.6g} vs {float(expected[i]):.6g})",
                       rel_err, max_abs)
    if rel_err > tol:
        return verdict(False, f"kept elements: relative error {rel_err:.3g} above the {dtype} "
                              f"tolerance {tol:g}", rel_err, max_abs)
    m = int(informative.sum())
    k = int(kept.sum())
    mean, sigma = (1.0 - p) * m, math.sqrt(m * p * (1.0 - p))
    if abs(k - mean) > 6.0 * sigma + 0.5:
        return verdict(False, f"kept {k} of {m} elements ({k / max(m, 1):.4f}); expected 1-p = {1 - p:g} "
                              f"within 6 sigma ({6 * sigma / max(m, 1):.4f})", rel_err, max_abs)
    return verdict(True, "", rel_err, max_abs)


def check_determinism(impl_fn, inputs, p, **params):
    """Same seed twice: bit-identical outputs; seed + 1: a different mask (64+ elements).

    ``impl_fn`` follows the (out, x, seed, p=...) convention. Returns dict(ok, reason).
    """
    x, seed = inputs[0], inputs[1]

    def run(s):
        out = out_like(x, s).fill_(math.nan)
        return impl_fn(out, x, s, p=p, **params).clone()

    a, b = run(seed), run(seed)
    if a.shape != b.shape or not torch.equal(a, b):
        return {"ok": False, "reason": "same seed, different outputs: not reproducible"}
    if x.numel() >= 64:
        c = run(seed + 1)
        nz = x != 0
        if torch.equal((a != 0)[nz], (c != 0)[nz]):
            return {"ok": False, "reason": "seed + 1 gives the same mask: the seed is not used"}
    return {"ok": True, "reason": ""}


FAMILY = Family(
    title="Dropout (training mode, seeded)",
    bound="memory",
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=lambda shape, dtype, **_: 2 * numel(shape) * element_size(dtype),
    flops=lambda shape, dtype, **_: numel(shape),
    out_like=out_like,
    validate=validate,
    params={"p": [0.1, 0.3, 0.5]},
    param_ranges={"p": (0.0, 1.0)},
    description="Random numbers generated in the kernel from a seed (Philox): nothing stored but "
                "the output.",
    grads=("dx",),
    backward_bytes=backward.backward_bytes,
    backward_flops=lambda shape, dtype, **_: numel(shape),
)

FAMILY.add("torch_naive", returns_new(dropout_naive))
FAMILY.add("torch_fused", dropout_fused)
FAMILY.add("triton", dropout_triton, triton_kernels=(dropout_kernel,), compile_specs=compile_specs)
FAMILY.add("compiled", dropout_compiled)
FAMILY.add("cuda", cuda_op("dropout", "dropout", "philox"), cuda_kernels=("dropout_philox",))
# the backward, dx = dy * keep / (1 - p) with the reference's mask (backward.py): autograd through the
# naive chain, PyTorch's dropout backward op on the saved mask, torch.compile's of the masked scale
FAMILY.add_autograd("torch_naive", dropout_naive)
FAMILY.add_backward("torch_fused", backward.dropout_backward_fused, save=backward.saved_mask)
FAMILY.add_autograd("compiled", backward.masked_scale, compile=True, adapt=backward.with_mask)

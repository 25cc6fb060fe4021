"""The memory-bound families: softmax, layer_norm, rms_norm, dropout, reduction, row_sum.

Every implementation that runs here (all but CUDA) against the float64 reference on odd
shapes, output poisoned with NaN first; every autotuning config of every Triton kernel
(the interpreter otherwise runs only the first); dropout's statistical contract
(validate, check_determinism) and that it rejects broken outputs; the comparators
rejecting an implementation that skips its last element; registration and ladders; and
the sm_90 code of the compile specs (16-byte loads). Tests marked ``gpu`` run on the
H200, CUDA implementations included.

On a machine without a GPU the Triton kernels run in Triton's interpreter, with the
fixes of ``kernellab.triton_compat`` (applied by ``runtime.setup``; the looped kernels
need its loop-bound fix). Its fp32 -> bf16 casts truncate where the GPU rounds to
nearest, so bf16 errors here are about twice those on the H200.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch

from kernellab import registry, runtime
from kernellab.errors import Unavailable
from kernellab.triton_utils import force_config, is_autotuned

dropout_mod = registry.module("dropout")

NAMES = ("softmax", "layer_norm", "rms_norm", "dropout", "reduction", "row_sum")
FAMS = {name: registry.family(name) for name in NAMES}
DTYPES = ("fp32", "bf16")
DEVICE = runtime.device()
# odd widths, a single column, a row just over a power of two (the online / looped
# kernels at their chunk boundary) and one over 8192 columns (where the autotuner may
# pick either path; every config of both is forced in test_every_autotune_config)
ROW_SHAPES = [(3, 1000), (5, 1), (7, 33), (1, 4097), (2, 8193)]
VEC_SHAPES = [(1,), (33,), (1000,), (65539,)]  # the last spans several grid-stride rounds
COMPARED = ("softmax", "layer_norm", "rms_norm", "reduction", "row_sum")  # against the reference
DROPOUT_SHAPES = [(1,), (7, 33), (4099,)]
PS = (0.1, 0.5)


def shapes_of(name):
    return VEC_SHAPES if name == "reduction" else ROW_SHAPES


def cpu_keys(name):
    """Implementations that run without a GPU (all but CUDA)."""
    return [k for k, i in FAMS[name].impls.items() if i.backend != "cuda"]


def ids(shape):
    return "x".join(map(str, shape))


# --------------------------------------------------------------------- helpers
def call(name, fn, shape, dtype, seed=0, **params):
    """(result, inputs, out) of one call with ``out`` poisoned with NaN first."""
    fam = FAMS[name]
    inputs = fam.make_inputs(shape, dtype, DEVICE, seed, **params)
    out = fam.out_like(*inputs, **params)
    out.fill_(math.nan)
    got = fn(out, *inputs, **params)
    runtime.synchronize()
    return got, inputs, out


def reference(name, inputs):
    return FAMS[name].reference(*[t.double() if isinstance(t, torch.Tensor) else t for t in inputs])


def error(got, ref) -> float:
    """Relative-norm error; inf when an element is not finite (unwritten, NaN-poisoned)."""
    assert tuple(got.shape) == tuple(ref.shape), f"shape {tuple(got.shape)} != {tuple(ref.shape)}"
    got = got.detach().double().cpu()
    ref = ref.cpu()
    if not bool(torch.isfinite(got).all()):
        return math.inf
    return float(torch.linalg.vector_norm(got - ref)) / max(float(torch.linalg.vector_norm(ref)), 1e-300)


def out_dtype(name, dtype):
    return torch.float32 if name in ("reduction", "row_sum") else runtime.torch_dtype(dtype)


def check(name, got, inputs, dtype):
    ref = reference(name, inputs)
    assert got.dtype == out_dtype(name, dtype)
    err = error(got, ref)
    assert err <= runtime.TOLERANCE[dtype], f"relative error {err:.3g} > {runtime.TOLERANCE[dtype]:g}"


# --------------------------------------------------------------------- correctness
# torch.compile only on the first shape of each family (compiling is slow)
CASES = [
    (name, key, shape)
    for name in COMPARED
    for key in cpu_keys(name)
    for shape in shapes_of(name)
    if FAMS[name].impls[key].impl != "compiled" or shape == shapes_of(name)[0]
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,key,shape", CASES, ids=[f"{n}-{k}-{ids(s)}" for n, k, s in CASES])
def test_matches_reference(name, key, shape, dtype):
    impl = FAMS[name].impls[key]
    got, inputs, out = call(name, impl.fn, shape, dtype)
    check(name, got, inputs, dtype)
    if impl.impl == "triton":
        assert got.data_ptr() == out.data_ptr(), f"{key} must write into out"


def _autotuned_cases():
    """(family, impl key, kernel) of every autotuned Triton kernel."""
    return [(name, key, kernel) for name in COMPARED for key, impl in FAMS[name].impls.items()
            for kernel in impl.triton_kernels]


AUTOTUNED = _autotuned_cases()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,key,kernel", AUTOTUNED,
                         ids=[f"{n}-{k}-{kern.fn.__name__}" for n, k, kern in AUTOTUNED])
def test_every_autotune_config(name, key, kernel, dtype):
    """Each config the autotuner may pick gives a correct result (several rows per program,
    chunk sizes, grid sizes), forced through the implementation's own launcher, on a short
    row and on a row over the one-pass limit (online / looped path)."""
    assert is_autotuned(kernel) and len(kernel.configs) > 1
    shapes = [(65539,)] if name == "reduction" else [(7, 33), (2, 9000)]
    for shape in shapes:
        for config in kernel.configs:
            with force_config(kernel, config):
                got, inputs, _ = call(name, FAMS[name].impls[key].fn, shape, dtype)
            try:
                check(name, got, inputs, dtype)
            except AssertionError as exc:
                raise AssertionError(f"{shape}, config {config}: {exc}") from exc


@pytest.mark.parametrize("flag", ["LOOPED", "ONLINE"])
def test_row_configs_pruned_by_row_length(flag):
    """Short rows: one pass only, one config per (rows per program, warps); up to 32768
    columns: one row per program in one pass, or the loop; wider: the loop only."""
    from kernellab.kit import prune_row_tile_configs, row_tile_configs

    configs = row_tile_configs(flag)

    def kept(block):
        return prune_row_tile_configs(configs, {}, BLOCK_COLS=block)

    short = kept(1024)
    assert short and not any(c.kwargs[flag] for c in short)
    assert len({(max(c.kwargs["TILE"] // 1024, 1), c.num_warps) for c in short}) == len(short)
    for block in (16384, 32768):
        wide = kept(block)
        assert {c.num_warps for c in wide if not c.kwargs[flag]} == {16, 32}
        assert all(c.kwargs["TILE"] == 1 for c in wide if not c.kwargs[flag])
        assert sum(c.kwargs[flag] for c in wide) == 12
    assert kept(65536) and all(c.kwargs[flag] for c in kept(65536))


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rms_norm", "row_sum"])
def test_row_stride(name):
    """A view with a row stride larger than its width (the last column cut off)."""
    fam = FAMS[name]
    inputs = list(fam.make_inputs((5, 40), "fp32", DEVICE, 3))
    x = inputs[0][:, :33]
    if name in ("layer_norm", "rms_norm"):
        inputs[1:] = [t[:33].contiguous() for t in inputs[1:]]
    inputs[0] = x
    for key in (k for k, i in fam.impls.items() if i.impl == "triton"):
        out = fam.out_like(*inputs).fill_(math.nan)
        got = fam.impls[key].fn(out, *inputs)
        check(name, got, inputs, "fp32")


def test_softmax_rows_sum_to_one():
    x = FAMS["softmax"].make_inputs((6, 8193), "fp32", DEVICE, 1)[0]
    for key in ("triton@fused_row", "triton@online", "triton@autotuned"):
        out = FAMS["softmax"].out_like(x).fill_(math.nan)
        y = FAMS["softmax"].impls[key].fn(out, x).double()
        assert torch.allclose(y.sum(-1), torch.ones(6, dtype=torch.float64), atol=1e-5), key
        assert bool((y >= 0).all()), key


def test_softmax_large_offsets_do_not_overflow():
    """exp(x - max): rows of values near 1000 (exp(1000) overflows fp32) stay finite."""
    x = FAMS["softmax"].make_inputs((3, 1000), "fp32", DEVICE, 2)[0] + 1000.0
    ref = FAMS["softmax"].reference(x.double())
    for key in ("triton@fused_row", "triton@online", "triton@autotuned"):
        out = torch.full_like(x, math.nan)
        assert error(FAMS["softmax"].impls[key].fn(out, x), ref) <= 1e-5, key


def test_layer_norm_large_mean():
    """mean / std = 15000: the looped kernel's shifted sums keep the variance accurate, where
    E[x^2] - E[x]^2 in fp32 is off by a factor of about 60. What remains (about 3e-4) is the
    rounding of the mean to fp32 (ulp(300) / 2 against a std of 0.02), as in PyTorch (1e-3)."""
    fam = FAMS["layer_norm"]
    x, w, b = fam.make_inputs((2, 9000), "fp32", DEVICE, 4)
    x = x * 0.01 + 300.0
    out = fam.out_like(x, w, b).fill_(math.nan)
    got = fam.impls["triton"].fn(out, x, w, b)
    assert error(got, fam.reference(x.double(), w.double(), b.double())) <= 2e-3


# --------------------------------------------------------------------- the checks can fail
def test_skipped_last_row_or_column_fails():
    """An implementation that does not write its last row, or its last column, fails."""
    fam = FAMS["softmax"]
    fn = fam.impls["triton@autotuned"].fn
    (x,) = fam.make_inputs((3, 1000), "fp32", DEVICE, 0)
    ref = fam.reference(x.double())
    out = fam.out_like(x).fill_(math.nan)
    fn(out[:-1], x[:-1])
    assert error(out, ref) == math.inf
    out = fam.out_like(x).fill_(math.nan)
    fn(out[:, :-1], x[:, :-1])
    assert error(out, ref) == math.inf
    fn(out, x)
    assert error(out, ref) <= 1e-5  # the same call on everything passes

    fam = FAMS["row_sum"]
    (x,) = fam.make_inputs((7, 33), "fp32", DEVICE, 0)
    out = fam.out_like(x).fill_(math.nan)
    fam.impls["triton"].fn(out[:-1], x[:-1])
    assert error(out, fam.reference(x.double())) == math.inf


def test_reduction_skipping_last_element_fails():
    """Positive data: one element missing out of 1000 is a 1e-3 relative error."""
    fam = FAMS["reduction"]
    (x,) = fam.make_inputs((1000,), "fp32", DEVICE, 0)
    assert bool((x > 0).all())
    out = fam.out_like(x).fill_(math.nan)
    got = fam.impls["triton"].fn(out, x[:-1])
    assert error(got, fam.reference(x.double())) > runtime.TOLERANCE["fp32"]


def test_reduction_zeroes_out_first():
    """The atomic-add kernel accumulates into out: calling twice must not double."""
    fam = FAMS["reduction"]
    (x,) = fam.make_inputs((4096,), "fp32", DEVICE, 0)
    out = fam.out_like(x).fill_(123.0)
    fam.impls["triton"].fn(out, x)
    fam.impls["triton"].fn(out, x)
    assert error(out, fam.reference(x.double())) <= 1e-5


# --------------------------------------------------------------------- dropout
DROP_KEYS = cpu_keys("dropout")


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", DROPOUT_SHAPES, ids=ids)
@pytest.mark.parametrize("key", DROP_KEYS)
def test_dropout_valid(key, shape, dtype, p):
    if FAMS["dropout"].impls[key].impl == "compiled" and (shape, p) != (DROPOUT_SHAPES[-1], PS[0]):
        pytest.skip("torch.compile: one case per dtype is enough (compiling is slow)")
    got, inputs, _ = call("dropout", FAMS["dropout"].impls[key].fn, shape, dtype, p=p)
    verdict = FAMS["dropout"].validate(got, inputs, dtype=dtype, p=p)
    assert verdict["ok"], verdict["reason"]
    assert got.dtype == runtime.torch_dtype(dtype)


@pytest.mark.parametrize("key", DROP_KEYS)
def test_dropout_deterministic_and_seeded(key):
    fam = FAMS["dropout"]
    x, seed = fam.make_inputs((4099,), "fp32", DEVICE, 5, p=PS[0])  # a case compiled above already
    verdict = dropout_mod.check_determinism(fam.impls[key].fn, (x, seed), PS[0])
    assert verdict["ok"], verdict["reason"]


def test_dropout_kept_fraction_and_scale():
    """Large enough for tight bounds: kept fraction near 1 - p, kept values x / (1 - p)."""
    fam = FAMS["dropout"]
    n = 1 << 15
    big = max(dropout_mod.dropout_kernel.configs, key=lambda c: c.kwargs["BLOCK"])  # few programs: fast
    for p in (0.1, 0.3, 0.5):
        with force_config(dropout_mod.dropout_kernel, big):
            got, (x, seed), _ = call("dropout", fam.impls["triton"].fn, (n,), "fp32", p=p)
        kept = got != 0
        frac = float(kept.double().mean())
        assert abs(frac - (1 - p)) < 6 * math.sqrt(p * (1 - p) / n)
        assert torch.allclose(got[kept], x[kept] / (1 - p), rtol=1e-6, atol=0)


def test_dropout_16bit_threshold_ends_and_uses_every_half_word():
    """p = 0 keeps all, p = 1 drops all; the 16-bit uniforms of one Philox call differ
    (both halves of all four numbers are used: no two of the eight lanes share a mask)."""
    assert dropout_mod.threshold_16bit(0.0) == 0 and dropout_mod.threshold_16bit(1.0) == 65536
    assert dropout_mod.threshold_16bit(0.5) == 32768
    fam = FAMS["dropout"]
    for p, kept in ((0.0, 1.0), (1.0, 0.0)):
        got, _, _ = call("dropout", fam.impls["triton"].fn, (1000,), "fp32", p=p)
        assert float((got != 0).double().mean()) == kept
    got, _, _ = call("dropout", fam.impls["triton"].fn, (8 * 512,), "fp32", p=0.5)
    lanes = (got != 0).reshape(-1, 8).T  # lane j: element 8g + j of every group g
    for i in range(8):
        for j in range(i + 1, 8):
            assert not torch.equal(lanes[i], lanes[j]), (i, j)


def test_dropout_triton_mask_independent_of_config():
    """The mask depends on (seed, element index) only: every BLOCK gives the same output."""
    fam = FAMS["dropout"]
    kernel = dropout_mod.dropout_kernel
    x, seed = fam.make_inputs((5000,), "bf16", DEVICE, 0, p=0.5)
    outs = []
    for config in kernel.configs:
        out = fam.out_like(x, seed).fill_(math.nan)
        with force_config(kernel, config):
            outs.append(fam.impls["triton"].fn(out, x, seed, p=0.5).clone())
    assert all(torch.equal(outs[0], o) for o in outs[1:])


def _good(x, p, seed=0):
    gen = torch.Generator().manual_seed(seed)
    keep = torch.rand(x.shape, generator=gen) >= p
    return (x.double() * keep / (1 - p)).to(x.dtype)


def test_dropout_validate_rejects_broken_outputs():
    fam = FAMS["dropout"]
    x, seed = fam.make_inputs((4096,), "fp32", "cpu", 0, p=0.3)
    ok = fam.validate(_good(x, 0.3), (x, seed), dtype="fp32", p=0.3)
    assert ok["ok"], ok["reason"]
    assert ok["rel_err"] < 1e-6

    last_unwritten = _good(x, 0.3)
    last_unwritten[-1] = math.nan
    assert not fam.validate(last_unwritten, (x, seed), dtype="fp32", p=0.3)["ok"]
    unscaled = _good(x, 0.3) * (1 - 0.3)
    assert not fam.validate(unscaled, (x, seed), dtype="fp32", p=0.3)["ok"]
    # right scale, wrong drop probability: only the kept fraction betrays it
    wrong_p = (x * (torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) >= 0.1)) / (1 - 0.3)
    verdict = fam.validate(wrong_p, (x, seed), dtype="fp32", p=0.3)
    assert not verdict["ok"] and "kept" in verdict["reason"]
    assert not fam.validate(x.clone(), (x, seed), dtype="fp32", p=0.3)["ok"]  # nothing dropped
    assert not fam.validate(_good(x, 0.3)[:-1], (x, seed), dtype="fp32", p=0.3)["ok"]  # shape
    # bf16: the rounding of x / (1 - p) to bf16 passes
    xb = x.to(torch.bfloat16)
    assert fam.validate(_good(xb, 0.3), (xb, seed), dtype="bf16", p=0.3)["ok"]


def test_dropout_determinism_check_rejects():
    fam = FAMS["dropout"]
    x, seed = fam.make_inputs((1024,), "fp32", "cpu", 0, p=0.5)
    calls = iter(range(1000))

    def fresh_each_call(out, x, seed, p):
        return _good(x, p, seed=next(calls))

    def ignores_seed(out, x, seed, p):
        return _good(x, p, seed=0)

    def honest(out, x, seed, p):
        return _good(x, p, seed=seed)

    assert not dropout_mod.check_determinism(fresh_each_call, (x, seed), 0.5)["ok"]
    assert not dropout_mod.check_determinism(ignores_seed, (x, seed), 0.5)["ok"]
    assert dropout_mod.check_determinism(honest, (x, seed), 0.5)["ok"]


# --------------------------------------------------------------------- registration
def test_families_registered():
    fams = registry.families()
    for name in NAMES:
        fam = fams[name]
        assert fam.dtypes == ("fp32", "bf16")
        assert fam.bound == "memory"
        kinds = {i.impl for i in fam.impls.values()}
        assert {"torch_naive", "torch_fused", "triton", "compiled", "cuda"} <= kinds, name
        for impl in fam.impls.values():
            if impl.impl == "triton":
                assert impl.compile_specs is not None, impl.key
                assert all(is_autotuned(k) for k in impl.triton_kernels), impl.key
            if impl.impl == "cuda":
                assert impl.cuda_kernels, impl.key
    assert "gelu" in fams and "vector_add" in fams  # the others still register
    assert FAMS["dropout"].params == {"p": [0.1, 0.3, 0.5]}
    assert FAMS["dropout"].validate is not None


def test_softmax_ladder():
    steps = FAMS["softmax"].ladders()["softmax"]
    assert [s.step for s in steps] == ["naive", "fused_row", "online", "autotuned"]
    assert [s.key for s in steps] == ["torch_naive@naive", "triton@fused_row", "triton@online",
                                      "triton@autotuned"]
    for s in steps:
        assert s.idea and s.prediction and any(c.isdigit() for c in s.prediction), s.key
        lo, hi = s.expect_pct_of_peak
        assert 0 < lo < hi <= 100
    assert steps[-1].triton_kernels  # the autotuned step lists its autotuned kernels


def test_cuda_reduction_ladder():
    steps = FAMS["reduction"].ladders()["cuda_reduction"]
    assert [s.step for s in steps] == ["atomic", "smem_tree", "warp_shuffle", "vec4"]
    assert [s.order for s in steps] == [1, 2, 3, 4]
    assert [s.cuda_kernels for s in steps] == [(f"reduce_sum_{s.step}",) for s in steps]
    for s in steps:
        assert s.idea and any(c.isdigit() for c in s.prediction), s.key
    assert steps[-1].expect_pct_of_peak[0] >= 90
    lows = [s.expect_pct_of_peak[0] for s in steps]
    assert lows == sorted(lows)  # each step predicts a higher share of the copy bandwidth


def test_bytes_and_flops():
    assert FAMS["softmax"].bytes_moved((4096, 1000), "fp32") == 2 * 4096 * 1000 * 4
    assert FAMS["layer_norm"].bytes_moved((8, 100), "bf16") == (2 * 800 + 200) * 2
    assert FAMS["rms_norm"].bytes_moved((8, 100), "fp32") == (2 * 800 + 100) * 4
    assert FAMS["dropout"].bytes_moved((1000,), "bf16", p=0.1) == 2 * 1000 * 2
    assert FAMS["reduction"].bytes_moved((1 << 20,), "bf16") == (1 << 20) * 2 + 4
    assert FAMS["row_sum"].bytes_moved((8, 100), "bf16") == 800 * 2 + 8 * 4
    for name in NAMES:
        assert FAMS[name].flops((8, 100) if name != "reduction" else (800,), "fp32", p=0.1) >= 800


@pytest.mark.skipif(runtime.has_gpu(), reason="checks the CPU behaviour of CUDA implementations")
@pytest.mark.parametrize("name", NAMES)
def test_cuda_unavailable_without_gpu(name):
    fam = FAMS[name]
    params = {"p": 0.1} if name == "dropout" else {}
    inputs = fam.make_inputs((4, 8) if name != "reduction" else (32,), "fp32", "cpu", 0, **params)
    for impl in (i for i in fam.impls.values() if i.impl == "cuda"):
        with pytest.raises(Unavailable):
            impl.fn(fam.out_like(*inputs, **params), *inputs, **params)


# --------------------------------------------------------------------- sm_90 code
_PTX_SCRIPT = r"""
import json, re, sys
from kernellab import registry
from kernellab.triton_utils import compile_asm
out = {}
for name in sys.argv[1:]:
    for key, impl in registry.family(name).impls.items():
        if impl.compile_specs is None:
            continue
        for dtype in ("fp32", "bf16"):
            for spec in impl.compile_specs(dtype):
                ptx = compile_asm(spec, 90)["ptx"]
                loads = re.findall(r"\bld\.global[\w.:]*", ptx)
                out[f"{name}/{key}/{dtype}/{spec.label}"] = {
                    "ld_v4": sum(".v4." in op for op in loads),
                    "ld_scalar": sum(".v4." not in op and ".v2." not in op for op in loads),
                    "local": len(re.findall(r"\b(ld|st)\.local", ptx)),
                    "atom": len(re.findall(r"\batom\.global", ptx)),
                }
print("RESULT" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def sm90_code(root):
    """Cross-compile every compile spec for sm_90 in a fresh process: with the interpreter
    on, @triton.jit kernels in this one cannot be compiled."""
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", _PTX_SCRIPT, *NAMES], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def test_sm90_code(sm90_code):
    """Every spec compiles; power-of-two widths give 16-byte loads (v4.b32: 4 fp32 or 8
    bf16); nothing spills to local memory; the reduction adds with one atomic."""
    expected = {(n, k) for n in NAMES for k, i in FAMS[n].impls.items() if i.compile_specs}
    assert {tuple(label.split("/")[:2]) for label in sm90_code} == expected
    for label, counts in sm90_code.items():
        assert counts["ld_v4"] > 0, f"{label}: no 16-byte global loads"
        assert counts["local"] == 0, f"{label}: local memory (spills)"
    for label, counts in sm90_code.items():
        if label.startswith("reduction/"):
            assert counts["atom"] == 1, label
        if label.startswith(("softmax/", "rms_norm/", "dropout/", "row_sum/")):
            assert counts["ld_scalar"] == 0, f"{label}: scalar loads besides the 16-byte ones"


# --------------------------------------------------------------------- on the H200
GPU_SHAPES = {"reduction": [(1 << 16) + 1, 1 << 24], "other": [(4096, 128), (1000, 1000), (64, 32768)]}


def _cuda_ops_or_skip():
    from kernellab import cuda_ext

    try:
        cuda_ext.ops()
    except Unavailable as exc:
        pytest.skip(str(exc))


def _check_on_gpu(name, keys, dtype):
    shapes = [(n,) for n in GPU_SHAPES["reduction"]] if name == "reduction" else GPU_SHAPES["other"]
    for shape in shapes:
        for key in keys:
            if key == "cuda@atomic" and shape[0] > 1 << 16:
                continue  # one fp32 add per element: its rounding error passes 1e-5 near 2^20 (by design)
            got, inputs, _ = call(name, FAMS[name].impls[key].fn, shape, dtype)
            try:
                check(name, got, inputs, dtype)
            except AssertionError as exc:
                raise AssertionError(f"{key} {shape}: {exc}") from exc


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", COMPARED)
def test_gpu_impls(name, dtype):
    """PyTorch, Triton (autotuning for real) and torch.compile on GPU-sized shapes."""
    _check_on_gpu(name, cpu_keys(name), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", COMPARED)
def test_gpu_cuda_impls(name, dtype):
    _cuda_ops_or_skip()
    _check_on_gpu(name, [k for k, i in FAMS[name].impls.items() if i.impl == "cuda"], dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", ["torch", "triton", "compile", "cuda"])
def test_gpu_dropout(backend, dtype):
    if backend == "cuda":
        _cuda_ops_or_skip()
    fam = FAMS["dropout"]
    for key, impl in ((k, i) for k, i in fam.impls.items() if i.backend == backend):
        for p in fam.params["p"]:
            got, inputs, _ = call("dropout", impl.fn, ((1 << 20) + 3,), dtype, p=p)
            verdict = fam.validate(got, inputs, dtype=dtype, p=p)
            assert verdict["ok"], f"{key} p={p}: {verdict['reason']}"
            verdict = dropout_mod.check_determinism(impl.fn, inputs, p)
            assert verdict["ok"], f"{key} p={p}: {verdict['reason']}"


def test_reduction_tolerance_grows_like_sqrt_n_and_still_catches_a_stuck_accumulator():
    from kernellab.harness import compare

    tol = FAMS["reduction"].tolerance
    assert tol((4099,), "fp32") == 1e-5  # small sums: the dtype's tolerance
    assert tol((2**28,), "fp32") == pytest.approx(2**14 * 2**-24)  # ~1e-3
    assert tol((2**28,), "bf16") == 2e-2
    ref = torch.tensor([2.0**28], dtype=torch.float64)
    pairwise_ish = torch.tensor([2.0**28 * (1 + 3e-5)])  # atomics over block partials
    stuck = torch.tensor([2.0**25])  # one fp32 running sum of 2^28 ones stops at 2^25
    assert compare(pairwise_ish, ref, "fp32", tol((2**28,), "fp32"))["status"] == "ok"
    assert compare(pairwise_ish, ref, "fp32")["status"] == "failed"
    assert compare(stuck, ref, "fp32", tol((2**28,), "fp32"))["status"] == "failed"


# --------------------------------------------------------------------- precompiling autotune configs
def test_recording_captures_autotuned_launches_without_running():
    """Inside ``recording()`` an autotuned launch is recorded (its JIT function, the configs
    kept for the call, tensors as their dtype), and nothing runs."""
    layer_norm = registry.module("layer_norm")
    from kernellab.triton_utils import kept_configs, recording

    fam = FAMS["layer_norm"]
    x, w, b = fam.make_inputs((3, 1000), "fp32", DEVICE, 0)
    out = torch.full_like(x, math.nan)
    with recording() as rec:
        fam.impls["triton"].fn(out, x, w, b)
    assert bool(torch.isnan(out).all()), "a recorded launch must not run"
    ((fn, configs, args, kwargs),) = rec
    assert fn is layer_norm.layer_norm_tuned.fn
    assert args[:4] == (torch.float32,) * 4 and args[4:6] == (3, 1000)
    assert kwargs == {"BLOCK_COLS": 1024}
    assert configs == kept_configs(layer_norm.layer_norm_tuned, (x, w, b, out, 3, 1000), kwargs)
    assert len(configs) > 1 and not any(c.kwargs["LOOPED"] for c in configs)


@pytest.mark.gpu
def test_precompile_leaves_nothing_for_the_tuner_to_compile():
    """After ``autotune.precompile`` the tuning call finds every kept config compiled."""
    from kernellab import autotune
    from kernellab.cases import Case
    layer_norm = registry.module("layer_norm")

    fam = FAMS["layer_norm"]
    fn = layer_norm.layer_norm_tuned.fn
    case = Case("layer_norm", "triton", (64, 2000), "bf16")
    autotune.precompile(fam, fam.impls["triton"], [case], DEVICE, workers=4)
    compiled = sum(len(c[0]) for c in fn.device_caches.values())
    x, w, b = fam.make_inputs(case.shape, "bf16", DEVICE, 0)
    got = fam.impls["triton"].fn(torch.empty_like(x), x, w, b)
    assert sum(len(c[0]) for c in fn.device_caches.values()) == compiled
    check("layer_norm", got, (x, w, b), "bf16")

"""Every family of the registry, ours and a user's alike, with no family named here.

Every implementation that runs without a GPU (backends torch, triton, compile) against the
float64 reference at small awkward shapes of the family's rank, for each of its dtypes and
default parameters, output poisoned with NaN first, with the harness's own tolerance, error
floor and custom ``validate``; every config of every autotuned Triton kernel; the ladder texts
of every step; CUDA implementations unavailable without a GPU; bytes and FLOPs; the sm_90 code
of every compile spec. Family-specific tests live beside their family (kernels/<family>/).

On a machine without a GPU the Triton kernels run in Triton's interpreter (with the fixes of
``kernellab.engine.triton_compat``): its fp32 -> bf16 casts truncate where the GPU rounds to nearest,
so bf16 errors here are about twice those on the H200.
"""

from __future__ import annotations

import itertools

import pytest
from triton.runtime.errors import OutOfResources

import conftest
from kernellab.engine import runtime
from kernellab.engine.launch import force_config, recording
from kernellab.engine.testing import check, run, verdict
from kernellab.errors import Unavailable
from kernellab.kit.triton import is_autotuned

REGISTRY = conftest.REGISTRY  # the default kernel folders, and any that --kernel-dirs names

FAMILIES = REGISTRY.families
DEVICE = runtime.device()
CPU_BACKENDS = ("torch", "triton", "compile")
# Awkward shapes by number of dimensions: one element, sizes that are no multiple of anything,
# a single column, rows just over a power of two (chunk boundaries of looped kernels) and a
# vector spanning several grid-stride rounds.
AWKWARD = {
    1: [(1,), (33,), (4099,), (65539,)],
    2: [(3, 1000), (5, 1), (7, 33), (1, 4097), (2, 8193)],
    3: [(1, 1, 1), (17, 33, 65), (64, 48, 40)],
}
# every autotune config (forced): a short case and one past the one-pass limit of row kernels (a
# single row: the interpreter's cost grows with the elements, the masks are the same)
AUTOTUNE_SHAPES = {1: [(65539,)], 2: [(7, 33), (1, 9000)], 3: [(17, 33, 65)]}
SMALL = {1: (32,), 2: (4, 8), 3: (4, 4, 4)}  # for calls that must fail before computing
COUNT_SHAPES = {1: (4096,), 2: (64, 1000), 3: (64, 48, 40)}


def shape_id(shape) -> str:
    return "x".join(map(str, shape))


def param_sets(fam) -> list[dict]:
    """Every combination of the family's default parameter values ([{}] without parameters)."""
    names = sorted(fam.params)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(fam.params[n] for n in names))]


def params_id(params: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in params.items())


def _generic(rank: int) -> list[tuple[int, ...]]:
    """Awkward shapes of a rank none of the tables lists (a user's 4-d family, say)."""
    return [(1,) * rank, (3, 5, 7, 9, 11, 13, 17, 19)[:rank], (2,) * (rank - 1) + (33,)]


def awkward_shapes(fam) -> list[tuple[int, ...]]:
    return [s for rank in fam.shape_rank for s in AWKWARD.get(rank, _generic(rank))]


def autotune_shapes(fam) -> list[tuple[int, ...]]:
    return [s for rank in fam.shape_rank for s in AUTOTUNE_SHAPES.get(rank, _generic(rank)[1:])]


def dtypes_of(fam, impl) -> list[str]:
    return [d for d in fam.dtypes if impl.supports(d)]


def cpu_impls(fam, backward: bool = False):
    """The implementations that run here, of the forward (or of the backward passes)."""
    return [(key, impl) for key, impl in fam.impls.items()
            if impl.backend in CPU_BACKENDS and impl.backward == backward]


# --------------------------------------------------------------------- correctness
def _reference_cases():
    """torch.compile only on the first shape and parameters of each family (compiling is slow)."""
    cases = []
    for name, fam in FAMILIES.items():
        shapes, psets = awkward_shapes(fam), param_sets(fam)
        for key, impl in cpu_impls(fam):
            for dtype in dtypes_of(fam, impl):
                for i, shape in enumerate(shapes):
                    for j, params in enumerate(psets):
                        if impl.backend == "compile" and (i, j) != (0, 0):
                            continue
                        ident = "-".join(filter(None, [name, key, shape_id(shape), dtype, params_id(params)]))
                        cases.append(pytest.param(name, key, shape, dtype, params, id=ident))
    return cases


@pytest.mark.parametrize("name,key,shape,dtype,params", _reference_cases())
def test_matches_reference(name, key, shape, dtype, params):
    fam = FAMILIES[name]
    impl = fam.impls[key]
    try:
        got, inputs, out = run(fam, impl.fn, shape, dtype, **params)
    except Unavailable as exc:  # a backend that says it does not run here (an SDPA backend on CPU)
        pytest.skip(str(exc))
    check(fam, got, inputs, out, shape, dtype, **params)
    if impl.backend == "triton":
        assert got.data_ptr() == out.data_ptr(), f"{key} must write into out"


def _backward_cases():
    """Every backward implementation that runs here, against autograd's float64 gradients through
    the family's reference: each output (dx, dw, ...) checked on its own, at the family's first
    parameters. torch.compile on the first shape only."""
    cases = []
    for name, fam in FAMILIES.items():
        for key, impl in cpu_impls(fam, backward=True):
            for dtype in dtypes_of(fam, impl):
                for i, shape in enumerate(awkward_shapes(fam)):
                    if impl.backend == "compile" and i:
                        continue
                    cases.append(pytest.param(name, key, shape, dtype, id=f"{name}-{key}-{shape_id(shape)}-{dtype}"))
    return cases


def _first_params(fam) -> tuple:
    return tuple(sorted(param_sets(fam)[0].items()))


@pytest.mark.parametrize("name,key,shape,dtype", _backward_cases())
def test_backward_matches_autograd_reference(name, key, shape, dtype):
    from kernellab.engine.cases import Case
    from kernellab.engine.harness import run_case_check

    fam = FAMILIES[name]
    try:
        row = run_case_check(fam, fam.impls[key], Case(name, key, shape, dtype, _first_params(fam)), 0, DEVICE)
    except Unavailable as exc:
        pytest.skip(str(exc))
    assert row["status"] == "ok", row["reason"]


def _autotuned_cases():
    cases = []
    for name, fam in FAMILIES.items():
        for key, impl in cpu_impls(fam):
            for kernel in impl.triton_kernels:
                for dtype in dtypes_of(fam, impl):
                    ident = f"{name}-{key}-{kernel.fn.__name__}-{dtype}"
                    cases.append(pytest.param(name, key, kernel, dtype, id=ident))
    return cases


def _kept_configs(fam, impl, kernel, shape, dtype, params):
    """The configs the autotuner keeps for this call (recorded, nothing runs)."""
    inputs = fam.make_inputs(shape, dtype, DEVICE, 0, **params)
    with recording() as calls, runtime.matmul_precision(dtype):
        impl.fn(fam.out_like(*inputs, **params), *inputs, **params)
    return [c for fn, configs, _, _ in calls if fn is kernel.fn for c in configs]


@pytest.mark.parametrize("name,key,kernel,dtype", _autotuned_cases())
def test_every_autotune_config(name, key, kernel, dtype):
    """Each config gives a correct result, forced through the implementation's own launcher
    (the interpreter otherwise runs only the first). The interpreter ignores num_warps and
    num_stages, so configs that differ only in those are one program there: run once."""
    fam = FAMILIES[name]
    assert is_autotuned(kernel) and kernel.configs
    params = param_sets(fam)[0]
    gpu = runtime.has_gpu()
    for shape in autotune_shapes(fam):
        kept = _kept_configs(fam, fam.impls[key], kernel, shape, dtype, params) if gpu else None
        interpreted = set()
        for config in kernel.configs:
            meta = tuple(sorted(config.kwargs.items()))
            if not gpu and meta in interpreted:
                continue
            interpreted.add(meta)
            try:
                with force_config(kernel, config):
                    got, inputs, out = run(fam, fam.impls[key].fn, shape, dtype, **params)
            except OutOfResources:
                # on a GPU, a config the autotuner prunes for this call (another dtype's tile, say)
                # may not fit in shared memory: it is never picked
                if kept is not None and not any(config is k for k in kept):
                    continue
                raise
            try:
                check(fam, got, inputs, out, shape, dtype, **params)
            except AssertionError as exc:
                raise AssertionError(f"{shape}, config {config}: {exc}") from exc


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_checks_catch_an_unwritten_output(name):
    """The poisoned output fails the family's check when nothing is written."""
    fam = FAMILIES[name]
    shape = awkward_shapes(fam)[2]
    dtype = fam.dtypes[0]
    params = param_sets(fam)[0]
    got, inputs, out = run(fam, lambda out, *args, **kw: out, shape, dtype, **params)
    if not out.is_floating_point():
        pytest.skip("an integer output cannot be poisoned")
    assert verdict(fam, got, inputs, shape, dtype, **params)["status"] == "failed"


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_autotune_configs_name_only_the_kernels_arguments(name):
    """Every meta-parameter an autotuned kernel's configs set is one of the kernel's constexpr
    arguments. The interpreter ignores one it does not take; the GPU's launcher refuses it
    (KeyError: 'Keyword argument ... was specified but unrecognised'), so only a GPU run would tell."""
    from kernellab.kit.triton import constexpr_args

    for key, impl in FAMILIES[name].impls.items():
        for kernel in impl.triton_kernels:
            takes = set(constexpr_args(kernel.fn))
            for cfg in kernel.configs:
                assert set(cfg.kwargs) <= takes, f"{key}: {sorted(set(cfg.kwargs) - takes)} not arguments"


# --------------------------------------------------------------------- registration
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_registration(name):
    fam = FAMILIES[name]
    assert fam.folder is not None and (fam.folder / "__init__.py").exists()
    assert fam.bound in ("memory", "compute")
    assert fam.dtypes and set(fam.dtypes) <= set(runtime.TOLERANCE)
    assert callable(fam.make_inputs) and callable(fam.reference) and callable(fam.out_like)
    assert any(i.backend in CPU_BACKENDS for i in fam.impls.values()), "nothing to check without a GPU"
    for key, impl in fam.impls.items():
        assert impl.kernel == name and impl.key == key
        assert dtypes_of(fam, impl), f"{key} supports none of the family's dtypes"
        assert all(is_autotuned(k) for k in impl.triton_kernels), key
        if impl.backend == "triton" and impl.triton_kernels:
            assert impl.compile_specs is not None, f"{key}: autotuned Triton kernels without compile specs"
        if impl.backend == "cuda":
            assert impl.cuda_kernels, f"{key} names no CUDA kernel"


LADDERS = [(name, ladder) for name, fam in FAMILIES.items() for ladder in fam.ladders()]


@pytest.mark.parametrize("name,ladder", LADDERS, ids=[f"{n}-{lad}" for n, lad in LADDERS])
def test_ladder_texts(name, ladder):
    """Every step has its idea and prediction (from the folder's ladder.yaml), in order;
    numeric predictions are [low, high] ranges."""
    steps = FAMILIES[name].ladders()[ladder]
    assert [s.order for s in steps] == list(range(1, len(steps) + 1))
    for s in steps:
        assert s.idea.strip() and s.prediction.strip(), s.key
        for rng in (s.expect_speedup, s.expect_pct_of_peak):
            if rng is not None:
                lo, hi = rng
                assert 0 <= lo <= hi, (s.key, rng)
        if s.expect_pct_of_peak is not None:
            assert s.expect_pct_of_peak[1] <= 100, s.key


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_bytes_and_flops_positive(name):
    fam = FAMILIES[name]
    for rank in fam.shape_rank:
        shape = COUNT_SHAPES.get(rank, _generic(rank)[1])
        for dtype in fam.dtypes:
            for params in param_sets(fam):
                assert fam.bytes_moved(shape, dtype, **params) > 0, (shape, dtype, params)
                assert fam.flops(shape, dtype, **params) > 0, (shape, dtype, params)


CUDA_IMPLS = [(name, key) for name, fam in FAMILIES.items() for key, i in fam.impls.items() if i.backend == "cuda"]


@pytest.mark.skipif(runtime.has_gpu(), reason="checks the CPU behaviour of CUDA implementations")
@pytest.mark.parametrize("name,key", CUDA_IMPLS, ids=[f"{n}-{k}" for n, k in CUDA_IMPLS])
def test_cuda_unavailable_without_gpu(name, key):
    fam = FAMILIES[name]
    impl = fam.impls[key]
    params = param_sets(fam)[0]
    rank = fam.shape_rank[0]
    inputs = fam.make_inputs(SMALL.get(rank, (2,) * rank), dtypes_of(fam, impl)[0], "cpu", 0, **params)
    with pytest.raises(Unavailable):
        impl.fn(fam.out_like(*inputs, **params), *inputs, **params)


# --------------------------------------------------------------------- sm_90 code
COMPILED = [(name, key) for name, fam in FAMILIES.items() for key, i in fam.impls.items() if i.compile_specs]


@pytest.mark.parametrize("name,key", COMPILED, ids=[f"{n}-{k}" for n, k in COMPILED])
def test_sm90_code(sm90_ptx, name, key):
    """Every compile spec compiles for sm_90 in every dtype of its implementation, nothing
    spills to local memory, and memory-bound kernels load 16 bytes at a time."""
    import re

    fam = FAMILIES[name]
    labels = [label for label in sm90_ptx if label.startswith(f"{name}/{key}/")]
    assert {label.split("/")[2] for label in labels} == set(dtypes_of(fam, fam.impls[key]))
    for label in labels:
        ptx = sm90_ptx[label]
        assert not re.search(r"\b(ld|st)\.local", ptx), f"{label}: local memory (spills)"
        if fam.bound == "memory":
            assert re.search(r"\bld\.global[\w.:]*\.v4\.", ptx), f"{label}: no 16-byte global loads"


# --------------------------------------------------------------------- GPU
# rank 1: one over a power of two (larger vectors: the families' own tests, with their own limits)
GPU_SHAPES = {1: [((1 << 16) + 1,)], 2: [(4096, 128), (1000, 1000), (64, 32768)],
              3: [(127, 129, 65), (512, 384, 256)], 4: [(2, 4, 1024, 64), (1, 3, 333, 128)]}


def _cuda_ops_or_skip():
    from kernellab.engine import cuda_ext

    try:
        cuda_ext.ops()
    except Unavailable as exc:
        pytest.skip(str(exc))


def _check_on_gpu(fam, keys, dtype):
    for rank in fam.shape_rank:
        for i, shape in enumerate(GPU_SHAPES.get(rank, _generic(rank)[1:])):
            for params in param_sets(fam):
                for key in keys:
                    impl = fam.impls[key]
                    if not impl.supports(dtype) or (impl.backend == "compile" and i > 0):
                        continue  # torch.compile (max-autotune too) on the first shape only
                    try:
                        got, inputs, out = run(fam, fam.impls[key].fn, shape, dtype, **params)
                    except Unavailable:  # a backend that does not take the case (an SDPA backend's head_dim)
                        continue
                    try:
                        check(fam, got, inputs, out, shape, dtype, **params)
                    except AssertionError as exc:
                        raise AssertionError(f"{key} {shape} {params}: {exc}") from exc


GPU_CASES = [(name, dtype) for name, fam in FAMILIES.items() for dtype in fam.dtypes]


@pytest.mark.gpu
@pytest.mark.parametrize("name,dtype", GPU_CASES, ids=[f"{n}-{d}" for n, d in GPU_CASES])
def test_gpu_impls(name, dtype):
    """PyTorch, Triton (autotuning for real) and torch.compile on GPU-sized shapes."""
    fam = FAMILIES[name]
    _check_on_gpu(fam, [k for k, _ in cpu_impls(fam)], dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("name,dtype", GPU_CASES, ids=[f"{n}-{d}" for n, d in GPU_CASES])
def test_gpu_cuda_impls(name, dtype):
    fam = FAMILIES[name]
    keys = [k for k, i in fam.impls.items() if i.backend == "cuda" and i.supports(dtype)]
    if not keys:
        pytest.skip(f"{name} has no CUDA implementation for {dtype}")
    _cuda_ops_or_skip()
    _check_on_gpu(fam, keys, dtype)


BACKWARD_GPU = [(name, dtype) for name, fam in FAMILIES.items() if cpu_impls(fam, backward=True)
                for dtype in fam.dtypes]


@pytest.mark.gpu
@pytest.mark.parametrize("name,dtype", BACKWARD_GPU, ids=[f"{n}-{d}" for n, d in BACKWARD_GPU])
def test_gpu_backward_impls(name, dtype):
    """Every backward (autograd's, torch.compile's, Triton's) on the GPU at a GPU-sized shape and an
    odd one, each output against autograd's float64 gradient."""
    from kernellab.engine.cases import Case
    from kernellab.engine.harness import run_case_check

    fam = FAMILIES[name]
    rank = max(fam.shape_rank)
    shapes = ((4096, 2048), (37, 1001)) if rank <= 2 else GPU_SHAPES.get(rank, _generic(rank)[1:])
    for key, impl in cpu_impls(fam, backward=True):
        for shape in shapes:
            try:
                row = run_case_check(fam, impl, Case(name, key, shape, dtype, _first_params(fam)), 0, "cuda")
            except Unavailable:  # a backend that does not take the case (an SDPA backend's head_dim)
                continue
            assert row["status"] == "ok", f"{key} {shape}: {row['reason']}"

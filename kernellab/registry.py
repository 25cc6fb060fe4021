"""The one registry of kernel families and their implementations.

Tests, Snakemake rules and the report all read this registry, so an implementation
exists in exactly one place. A *family* (``gelu``, ``softmax``...) declares its inputs,
its float64 reference and the bytes and FLOPs it must move and do; an *implementation*
is one way to compute it (``torch_naive``, ``torch_fused``, ``cuda``, ``triton``,
``compiled``), optionally one named *step* of an optimization ladder.

Implementation functions all take ``(out, *inputs, **params)`` and return the result
tensor. Those that can write into ``out`` do so (the harness fills it with NaN first,
so an element they forget shows up); those that cannot (a chain of PyTorch ops)
return a fresh tensor.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

BACKENDS = ("torch", "cuda", "triton", "compile")
IMPL_KINDS = ("torch_naive", "torch_fused", "cuda", "triton", "compiled", "compiled_max_autotune")


@dataclass(frozen=True)
class Impl:
    """One implementation (or one ladder step of one) of a family."""

    kernel: str
    impl: str  # one of IMPL_KINDS
    backend: str  # one of BACKENDS
    fn: Callable[..., Any]
    step: str = ""  # ladder step name, '' when the impl is not a ladder
    order: int = 0  # position on the ladder (0 for non-ladder impls)
    ladder: str = ""  # ladder this step belongs to; defaults to the impl kind
    idea: str = ""  # what the step changes
    prediction: str = ""  # what should move, and by how much
    # The prediction in numbers, so KERNEL_LOG can say whether it held: the expected
    # speedup over the previous step, and the expected share of the ceiling (percent)
    # at the ladder's representative shape. None: no numeric prediction.
    expect_speedup: tuple[float, float] | None = None
    expect_pct_of_peak: tuple[float, float] | None = None
    dtypes: tuple[str, ...] | None = None  # None: every dtype of the family
    triton_kernels: tuple[Any, ...] = ()  # autotuned Triton kernels it launches (tuned by the measure rule)
    compile_specs: Callable[[str], list] | None = None  # dtype -> [CompileSpec] (ptx rule)
    cuda_kernels: tuple[str, ...] = ()  # CUDA kernel (symbol) names it launches

    @property
    def key(self) -> str:
        """Unique id inside the family: ``impl`` or ``impl@step``."""
        return f"{self.impl}@{self.step}" if self.step else self.impl

    @property
    def ladder_name(self) -> str:
        return (self.ladder or self.impl) if self.step else ""

    def supports(self, dtype: str) -> bool:
        return self.dtypes is None or dtype in self.dtypes


@dataclass
class Family:
    """A kernel family: inputs, float64 reference, roofline counts, validation."""

    name: str
    title: str
    bound: str  # "memory" or "compute": which ceiling % of peak refers to
    dtypes: tuple[str, ...]
    make_inputs: Callable[..., tuple]  # (shape, dtype, device, seed, **params) -> inputs
    reference: Callable[..., Any]  # (*inputs64, **params) -> float64 tensor
    bytes_moved: Callable[..., int]  # (shape, dtype, **params) -> bytes
    flops: Callable[..., int]  # (shape, dtype, **params) -> flops
    out_like: Callable[..., Any] | None = None  # (*inputs, **params) -> empty output
    validate: Callable[..., Any] | None = None  # custom check (dropout): see correctness
    tolerance: Callable[..., float] | None = None  # (shape, dtype) -> tolerance; None: by dtype
    # (*inputs64, **params) -> the least norm the error is relative to (None: the reference's
    # norm alone): for ops whose output cancels to near zero where the inputs are not (GeLU)
    error_floor: Callable[..., float] | None = None
    params: dict[str, list] = field(default_factory=dict)  # name -> default values
    param_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> [lo, hi)
    shape_rank: tuple[int, ...] = (1,)  # accepted numbers of dimensions
    description: str = ""
    impls: dict[str, Impl] = field(default_factory=dict)

    def add(self, impl: Impl) -> Impl:
        if impl.kernel != self.name:
            raise ValueError(f"impl {impl.key!r} names kernel {impl.kernel!r}, not {self.name!r}")
        if impl.impl not in IMPL_KINDS:
            raise ValueError(f"unknown implementation kind {impl.impl!r}; known: {IMPL_KINDS}")
        if impl.backend not in BACKENDS:
            raise ValueError(f"unknown backend {impl.backend!r}; known: {BACKENDS}")
        if impl.key in self.impls:
            raise ValueError(f"{self.name}: implementation {impl.key!r} registered twice")
        self.impls[impl.key] = impl
        return impl

    def remove(self, key: str) -> None:
        """Used by tests that register deliberately broken implementations."""
        self.impls.pop(key, None)

    def ladders(self) -> dict[str, list[Impl]]:
        """Optimization ladders of this family: name -> steps in order."""
        out: dict[str, list[Impl]] = {}
        for i in self.impls.values():
            if i.step:
                out.setdefault(i.ladder_name, []).append(i)
        return {k: sorted(v, key=lambda i: i.order) for k, v in sorted(out.items())}


_FAMILIES: dict[str, Family] = {}
_LOADED = False


def register_family(family: Family) -> Family:
    if family.name in _FAMILIES:
        raise ValueError(f"kernel family {family.name!r} registered twice")
    _FAMILIES[family.name] = family
    return family


def _load() -> None:
    """Import every module of kernellab.ops once; each registers its family."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from kernellab import runtime

    runtime.setup()  # before Triton is imported: interpreter on machines without a GPU
    from kernellab import ops

    for mod in sorted(m.name for m in pkgutil.iter_modules(ops.__path__)):
        if not mod.startswith("_"):
            importlib.import_module(f"kernellab.ops.{mod}")


def families() -> dict[str, Family]:
    _load()
    return dict(_FAMILIES)


def family(name: str) -> Family:
    fams = families()
    if name not in fams:
        raise KeyError(f"unknown kernel {name!r}; known kernels: {', '.join(sorted(fams))}")
    return fams[name]


def impl(kernel: str, key: str) -> Impl:
    fam = family(kernel)
    if key not in fam.impls:
        raise KeyError(
            f"unknown implementation {key!r} of kernel {kernel!r}; known: {', '.join(fam.impls)}"
        )
    return fam.impls[key]

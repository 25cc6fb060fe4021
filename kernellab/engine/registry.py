"""The one registry of kernel families and their implementations.

Tests, Snakemake rules and the report all read this registry, so an implementation
exists in exactly one place. A *family* (``gelu``, ``softmax``...) declares its inputs,
its float64 reference and the bytes and FLOPs it must move and do; an *implementation*
is one way to compute it (``torch_naive``, ``torch_fused``, ``cuda``, ``triton``,
``compiled``; ``liger`` and ``quack``, other libraries' kernels), optionally one named *step*
of an optimization ladder.

Implementation functions all take ``(out, *inputs, **params)`` and return the result
tensor. Those that can write into ``out`` do so (the harness fills it with NaN first,
so an element they forget shows up); those that cannot (a chain of PyTorch ops)
return a fresh tensor.
"""

from __future__ import annotations

import importlib
import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

# liger and quack: other libraries' kernels beside ours (kernellab.kit.peers), each its own kind and backend
BACKENDS = ("torch", "cuda", "triton", "compile", "liger", "quack")
IMPL_KINDS = ("torch_naive", "torch_fused", "cuda", "triton", "compiled", "compiled_max_autotune", "liger", "quack")


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
    finding: str = ""  # written after measuring: what the evidence says, why a miss missed
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

    # Every field but the name has a default, so that a family left incomplete reaches
    # register_family, which names each missing field with its fix (not Python's TypeError).
    name: str
    title: str = ""
    bound: str = ""  # "memory" or "compute": which ceiling % of peak refers to
    dtypes: tuple[str, ...] = ()
    make_inputs: Callable[..., tuple] | None = None  # (shape, dtype, device, seed, **params) -> inputs
    reference: Callable[..., Any] | None = None  # (*inputs64, **params) -> float64 tensor
    bytes_moved: Callable[..., int] | None = None  # (shape, dtype, **params) -> bytes
    flops: Callable[..., int] | None = None  # (shape, dtype, **params) -> flops
    out_like: Callable[..., Any] | None = None  # (*inputs, **params) -> empty output (required)
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
    folder: Path | None = None  # the family's folder (set by ``load``)

    def first_params(self) -> dict:
        """Each parameter at its first default value: the one call Nsight Compute profiles."""
        return {k: v[0] for k, v in self.params.items()}

    def add(self, impl: Impl) -> Impl:
        if impl.kernel != self.name:
            raise ValueError(f"impl {impl.key!r} names kernel {impl.kernel!r}, not {self.name!r}")
        if impl.impl not in IMPL_KINDS:
            raise ValueError(f"unknown implementation kind {impl.impl!r}; known: {IMPL_KINDS}")
        if impl.backend not in BACKENDS:
            raise ValueError(f"unknown backend {impl.backend!r}; known: {BACKENDS}")
        if impl.key in self.impls:
            raise ValueError(f"{self.name}: implementation {impl.key!r} registered twice")
        if impl.dtypes is not None and (isinstance(impl.dtypes, str) or set(impl.dtypes) - set(self.dtypes)):
            raise FamilyError(f"family {self.name!r}: implementation {impl.key!r} has dtypes {impl.dtypes!r}; "
                              f"give a tuple of the family's dtypes ({', '.join(self.dtypes)}), or None for all")
        if impl.compile_specs is not None and not callable(impl.compile_specs):
            raise FamilyError(f"family {self.name!r}: implementation {impl.key!r}: compile_specs must be a "
                              f"function (dtype -> [CompileSpec]) or None, got {impl.compile_specs!r}")
        if impl.fn is not None:  # (out, *inputs, **params); None only in tests of the registry itself
            if not callable(impl.fn):
                raise FamilyError(f"family {self.name!r}: implementation {impl.key!r} is not a function")
            _check_positional(self.name, f"implementation {impl.key!r}", impl.fn, 2)
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
_ERRORS: dict[str, str] = {}  # family folder -> why it could not be loaded
_DIRS: list[Path] = []
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIRS = ("kernels",)
NOT_FAMILIES = ("common",)  # shared CUDA and binding helpers, not a family


class FamilyError(Exception):
    """A family folder that cannot be loaded; the message names the file and the reason."""


def register_family(family: Family) -> Family:
    if family.name in _FAMILIES:
        raise FamilyError(f"kernel family {family.name!r} registered twice")
    _check_family(family)
    _FAMILIES[family.name] = family
    return family


# What each function of a family is, and an example: the fix a load error names.
FAMILY_FUNCTIONS = {
    "make_inputs": "(shape, dtype, device, seed, **params) -> the input tensors, e.g. "
                   "lambda shape, dtype, device, seed: (randn(shape, dtype, device, seed),)",
    "reference": "(*inputs, **params) -> the expected output, computed from float64 inputs, e.g. "
                 "lambda x: x * torch.sigmoid(x)",
    "bytes_moved": "(shape, dtype, **params) -> the bytes it must read and write, e.g. elementwise_bytes(1)",
    "flops": "(shape, dtype, **params) -> its floating-point operations, e.g. lambda shape, dtype, **_: numel(shape)",
    "out_like": "(*inputs, **params) -> the empty output an implementation writes into, e.g. "
                "lambda x: torch.empty_like(x)",
}
OPTIONAL_FUNCTIONS = ("validate", "tolerance", "error_floor")


def _check_family(family: Family) -> None:
    """Every field of a family a run calls or reads, checked when its folder loads: a missing or
    wrong one is named with the fix, rather than failing every case of the run."""
    name = family.name
    if not isinstance(name, str) or not name.isidentifier():
        raise FamilyError(f"family name {name!r} must be a Python identifier: the name of its folder")
    problems = []
    for attr, what in FAMILY_FUNCTIONS.items():
        value = getattr(family, attr, None)
        if not callable(value):
            got = "is not set" if value is None else f"must be a function, got {value!r}"
            problems.append(f"{attr} {got}: give Family({attr}=...), a function {what}")
    for attr in OPTIONAL_FUNCTIONS:
        value = getattr(family, attr, None)
        if value is not None and not callable(value):
            problems.append(f"{attr} must be a function or None, got {value!r}")
    if not isinstance(family.title, str) or not family.title.strip():
        problems.append(f"title must be a non-empty string (the report's heading), got {family.title!r}")
    if family.bound not in ("memory", "compute"):
        problems.append(f"bound must be 'memory' or 'compute' (the ceiling its % of peak is read against), "
                        f"got {family.bound!r}")
    known = sorted(_dtypes())
    if (isinstance(family.dtypes, str) or not isinstance(family.dtypes, (tuple, list)) or not family.dtypes
            or any(d not in known for d in family.dtypes)):
        problems.append(f"dtypes must be a non-empty tuple of {', '.join(known)}, got {family.dtypes!r}")
    if not isinstance(family.params, dict) or any(not isinstance(v, (list, tuple)) or not v
                                                  for v in family.params.values()):
        problems.append(f"params must map each parameter to a list of its values, got {family.params!r}")
    if (not isinstance(family.shape_rank, (tuple, list)) or not family.shape_rank
            or any(not isinstance(r, int) or r < 1 for r in family.shape_rank)):
        problems.append(f"shape_rank must be a tuple of accepted numbers of dimensions, e.g. (2,), "
                        f"got {family.shape_rank!r}")
    if problems:
        raise FamilyError(f"family {name!r}: " + "; ".join(problems))
    _check_arity(name, "make_inputs", family.make_inputs, 4)  # (shape, dtype, device, seed)
    for attr in ("bytes_moved", "flops"):
        _check_arity(name, attr, getattr(family, attr), 2)  # (shape, dtype)


def _dtypes() -> tuple[str, ...]:
    from kernellab.engine.runtime import TOLERANCE

    return tuple(TOLERANCE)


def _check_arity(owner: str, what: str, fn: Callable, positional: int) -> None:
    """``fn`` must accept ``positional`` positional arguments (more with defaults or *args)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # builtins and C functions: nothing to check
    try:
        sig.bind(*range(positional))
    except TypeError as exc:
        raise FamilyError(f"family {owner!r}: {what}{sig} cannot take {positional} positional "
                          f"argument(s): {exc}") from None


def _check_positional(owner: str, what: str, fn: Callable, least: int) -> None:
    """``fn`` must take at least ``least`` positional arguments (``out`` and the inputs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return
    kinds = [p.kind for p in params]
    positional = sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in kinds)
    if inspect.Parameter.VAR_POSITIONAL not in kinds and positional < least:
        raise FamilyError(f"family {owner!r}: {what} takes {positional} positional argument(s); it must take "
                          f"(out, *inputs, **params)")


def kernel_dirs(dirs=None, base: str | os.PathLike | None = None) -> list[Path]:
    """The kernel directories as absolute paths; relative ones are taken from ``base``
    (the workflow's directory, default the repository)."""
    base = Path(base) if base is not None else ROOT
    return [(base / d).resolve() for d in (dirs or DEFAULT_DIRS)]


def family_folders(dirs: list[Path]) -> dict[str, Path]:
    """Family name -> folder, over every kernel directory; a name found twice is an error."""
    found: dict[str, Path] = {}
    for d in dirs:
        if not d.is_dir():
            raise FamilyError(f"kernel directory {d} does not exist (config key kernel_dirs)")
        for sub in sorted(p for p in d.iterdir() if p.is_dir()):
            if sub.name in NOT_FAMILIES or sub.name.startswith((".", "_")) or not (sub / "__init__.py").exists():
                continue
            if not sub.name.isidentifier():
                raise FamilyError(f"{sub}: a family folder's name must be a Python identifier")
            if sub.name in found:
                raise FamilyError(f"{sub}: family {sub.name!r} already defined by {found[sub.name]}")
            found[sub.name] = sub
    return found


def load(dirs=None, base: str | os.PathLike | None = None) -> dict[str, str]:
    """Import every family folder of the kernel directories once (later calls with the same
    directories do nothing). A folder that fails is left out and its error kept
    (``load_errors``), so one broken family never stops the others. Returns those errors."""
    from kernellab import families as package
    from kernellab.engine import runtime

    wanted = kernel_dirs(dirs, base)
    if _DIRS == wanted:
        return dict(_ERRORS)
    if _DIRS:
        raise FamilyError(f"families already loaded from {', '.join(map(str, _DIRS))}; cannot also load "
                          f"{', '.join(map(str, wanted))} in one process")
    _DIRS[:] = wanted
    runtime.setup()  # before Triton is imported: interpreter on machines without a GPU
    package.__path__[:] = [str(d) for d in wanted]
    for name, folder in family_folders(wanted).items():
        before = set(_FAMILIES)
        try:
            importlib.import_module(f"{package.__name__}.{name}")
            added = set(_FAMILIES) - before
            if added != {name}:
                raise FamilyError(f"registers {sorted(added) or 'no family'}; it must register exactly one "
                                  f"family named after its folder, {name!r}")
            if not _FAMILIES[name].impls:
                raise FamilyError(f"family {name!r} has no implementation: add one with "
                                  f"FAMILY.add(Impl({name!r}, 'torch_fused', 'torch', fn))")
            attach_ladder_texts(_FAMILIES[name], folder)
        except Exception as exc:  # a user's folder may fail in any way: keep the others
            for extra in set(_FAMILIES) - before:
                _FAMILIES.pop(extra)
            _ERRORS[name] = _describe(exc, folder)
            continue
        _FAMILIES[name].folder = folder
    return dict(_ERRORS)


LADDER_FILE = "ladder.yaml"
STEP_TEXTS = ("idea", "prediction", "finding", "expect_speedup", "expect_pct_of_peak")


def ladder_texts(folder: Path) -> dict[tuple[str, str], dict]:
    """(ladder, step) -> {order, idea, prediction, finding, expect_speedup, expect_pct_of_peak} from the
    folder's ladder.yaml: ``{ladder: [{step, idea, prediction, expect_speedup: [lo, hi], ...}]}``,
    steps in ladder order."""
    import yaml

    path = folder / LADDER_FILE
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise FamilyError(f"{path}: expected a mapping of ladder name -> list of steps")
    out = {}
    for ladder, steps in data.items():
        if not isinstance(steps, list):
            raise FamilyError(f"{path}: ladder {ladder!r} must be a list of steps")
        for order, entry in enumerate(steps, start=1):
            unknown = set(entry) - {"step", *STEP_TEXTS}
            if "step" not in entry or unknown:
                raise FamilyError(f"{path}: ladder {ladder!r}, entry {order}: needs 'step'"
                                  + (f"; unknown keys {sorted(unknown)}" if unknown else ""))
            texts = {k: entry.get(k, "") for k in ("idea", "prediction", "finding")}
            for k in ("expect_speedup", "expect_pct_of_peak"):
                v = entry.get(k)
                if v is not None and (not isinstance(v, list) or len(v) != 2):
                    raise FamilyError(f"{path}: {ladder}/{entry['step']}: {k} must be [low, high]")
                texts[k] = tuple(float(x) for x in v) if v is not None else None
            out[(str(ladder), str(entry["step"]))] = {"order": order, **texts}
    return out


def attach_ladder_texts(fam: Family, folder: Path) -> None:
    """Give each ladder step its order and texts from the folder's ladder.yaml; a step without an
    entry, or an entry without a step, is an error naming the file."""
    import dataclasses

    texts = ladder_texts(folder)
    steps = {(i.ladder_name, i.step): key for key, i in fam.impls.items() if i.step}
    path = folder / LADDER_FILE
    missing = sorted(set(steps) - set(texts))
    if missing:
        raise FamilyError(f"{path}: no entry for step(s) {', '.join(f'{lad}/{st}' for lad, st in missing)}")
    orphans = sorted(set(texts) - set(steps))
    if orphans:
        raise FamilyError(f"{path}: step(s) {', '.join(f'{lad}/{st}' for lad, st in orphans)} are not "
                          f"registered by the family")
    for ident, key in steps.items():
        fam.impls[key] = dataclasses.replace(fam.impls[key], **texts[ident])


def _describe(exc: Exception, folder: Path) -> str:
    """The error of a family folder that failed to load, naming the file (and line) at fault:
    the innermost frame of the traceback inside the folder, else its __init__.py."""
    import traceback

    if isinstance(exc, FamilyError) and str(folder) in str(exc):
        return str(exc)
    where = f"{folder / '__init__.py'}"
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve().is_relative_to(folder):
            where = f"{frame.filename}:{frame.lineno}"
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{exc.filename}:{exc.lineno}"
    text = str(exc) if isinstance(exc, FamilyError) else f"{type(exc).__name__}: {exc}"
    return f"{where}: {text}"


def load_errors() -> dict[str, str]:
    """Family folder name -> why it could not be loaded."""
    return dict(_ERRORS)


def families() -> dict[str, Family]:
    if not _DIRS:
        load()
    return dict(_FAMILIES)


def family(name: str) -> Family:
    fams = families()
    if name not in fams:
        if name in _ERRORS:
            raise KeyError(f"kernel {name!r} could not be loaded: {_ERRORS[name]}")
        raise KeyError(f"unknown kernel {name!r}; known kernels: {', '.join(sorted(fams))}")
    return fams[name]


def module(name: str):
    """The family's package (its Triton kernels, launchers and helpers)."""
    family(name)
    return importlib.import_module(f"kernellab.families.{name}")


def impl(kernel: str, key: str) -> Impl:
    fam = family(kernel)
    if key not in fam.impls:
        raise KeyError(
            f"unknown implementation {key!r} of kernel {kernel!r}; known: {', '.join(fam.impls)}"
        )
    return fam.impls[key]

"""A kernel family and its implementations, as a family author declares them.

A *family* (``gelu``, ``softmax``...) declares its inputs, its float64 reference and the bytes
and FLOPs it must move and do; an *implementation* is one way to compute it, of one *kind*
(``torch_naive``, ``torch_fused``, ``cuda``, ``triton``, ``compiled``; ``liger`` and ``quack``,
other libraries' kernels), optionally one named *step* of an optimization ladder.

Implementation functions all take ``(out, *inputs, **params)`` and return the result tensor.
Those that can write into ``out`` do so (the harness fills it with NaN first, so an element
they forget shows up); those that cannot (a chain of PyTorch ops) return a fresh tensor.

What the author sets is a field; what follows from the folder (the family's name), the kind
(the backend) or ladder.yaml (a step's order and texts) is derived by the loader
(``kernellab.engine.registry``) and read through properties.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kernellab.errors import FamilyError
from kernellab.passes import BACKWARD_PASSES, PASSES, pass_key

# kind -> backend: liger, quack and fa4 are other libraries' kernels beside ours (kernellab.kit.peers)
BACKEND_OF = {"torch_naive": "torch", "torch_fused": "torch", "cuda": "cuda", "triton": "triton",
              "compiled": "compile", "compiled_max_autotune": "compile", "liger": "liger", "quack": "quack",
              "fa4": "fa4"}
IMPL_KINDS = tuple(BACKEND_OF)
BACKENDS = tuple(dict.fromkeys(BACKEND_OF.values()))
OWN_BACKENDS = ("triton", "cuda")  # a family's own kernels; the rest is PyTorch's and the field's
STEP_MARK = "__kernellab_step__"

# set by the loader (kernellab.engine.registry.load) while it imports family folders: family
# name -> that family's package, loaded first
LOADING: contextvars.ContextVar[Callable[[str], Any] | None] = contextvars.ContextVar("kernellab_loading",
                                                                                     default=None)


def builds_on(name: str):
    """The package of family ``name`` (its kernels, launchers and functions), for a family that
    builds on it: ``matmul = builds_on("matmul")`` in the folder's ``__init__.py``. The loader loads
    ``name`` first and hands it over; a family that failed to load fails this one with its error."""
    get = LOADING.get()
    if get is None:
        raise FamilyError(f"builds_on({name!r}) is for a family folder's modules, which the loader imports "
                          f"(kernellab.engine.registry.load)")
    return get(name)


@dataclass(frozen=True)
class Impl:
    """One implementation (or one ladder step of one) of a family: what the author sets."""

    impl: str  # its kind, one of IMPL_KINDS
    fn: Callable[..., Any] | None  # (out, *inputs, **params) -> result
    step: str = ""  # ladder step name, '' when the implementation is not a ladder step
    ladder: str = ""  # the ladder the step belongs to (a step file's folder; else the kind)
    dtypes: tuple[str, ...] | None = None  # None: every dtype of the family
    triton_kernels: tuple[Any, ...] = ()  # autotuned Triton kernels it launches (tuned by the measure rule)
    compile_specs: Callable[[str], list] | None = None  # dtype -> [CompileSpec] (ptx rule)
    cuda_kernels: tuple[str, ...] = ()  # CUDA kernel (symbol) names it launches
    pass_: str = "forward"  # one of PASSES
    # backward passes: (*inputs, **params) -> the saved state fn is handed (x's statistics, an
    # autograd graph), made by a forward outside the timed region of a backward case; None: no state
    save: Callable[..., Any] | None = None
    # (shape, dtype, **params) -> bytes it allocates beyond the family's byte model (a naive
    # attention's score matrices), added to the estimate the harness skips a case that would not fit by
    workspace: Callable[..., int] | None = None

    # derived: the family's name, the step's ladder.yaml texts and order, the step's source file
    def __post_init__(self):
        object.__setattr__(self, "_derived", {})

    def derive(self, **values) -> Impl:
        """Set derived values (the loader's and Family.add's business, not the author's)."""
        self._derived.update(values)
        return self

    @property
    def kernel(self) -> str:
        return self._derived.get("kernel", "")

    @property
    def backend(self) -> str:
        return BACKEND_OF.get(self.impl, "")

    @property
    def order(self) -> int:
        return self._derived.get("order", 0)

    @property
    def idea(self) -> str:
        return self._derived.get("idea", "")

    @property
    def prediction(self) -> str:
        return self._derived.get("prediction", "")

    @property
    def finding(self) -> str:
        return self._derived.get("finding", "")

    @property
    def expect_speedup(self) -> tuple[float, float] | None:
        return self._derived.get("expect_speedup")

    @property
    def expect_pct_of_peak(self) -> tuple[float, float] | None:
        return self._derived.get("expect_pct_of_peak")

    @property
    def source(self) -> Path | None:
        """The step's own file (a CUDA step's .cu, a Triton step's .py), where it has one."""
        return self._derived.get("source")

    @property
    def key(self) -> str:
        """Unique id inside the family: ``impl`` or ``impl@step``, and for a backward pass
        ``.bwd`` (``.fwdbwd`` for forward+backward) after it."""
        return pass_key(f"{self.impl}@{self.step}" if self.step else self.impl, self.pass_)

    @property
    def backward(self) -> bool:
        return self.pass_ != "forward"

    @property
    def inherited(self) -> bool:
        """Whether it came with ``Family.fork`` from the family forked (its texts with it)."""
        return bool(self._derived.get("inherited"))

    @property
    def ladder_name(self) -> str:
        return (self.ladder or self.impl) if self.step else ""

    def supports(self, dtype: str) -> bool:
        return self.dtypes is None or dtype in self.dtypes


def step(ladder: str = "", *, impl: str = "triton", name: str = "", dtypes: tuple[str, ...] | None = None,
         triton_kernels: tuple[Any, ...] = (), compile_specs: Callable[[str], list] | None = None,
         cuda_kernels: tuple[str, ...] = (), pass_: str = "forward", save: Callable[..., Any] | None = None):
    """Declare the decorated function a ladder step of the family whose folder holds it: its name
    is the step's (or ``name``), its ladder the folder the file is in (or ``ladder``), its texts and
    place on the ladder its ladder.yaml entry. The loader finds the mark; the function is unchanged.

        @step(triton_kernels=(wide_tuned,), compile_specs=wide_specs)
        def wide(out, x, w): ...

    A backward step (``pass_="backward"``) is ``fn(out, dy, saved, *inputs, **params)``, as
    ``Family.add_backward`` describes; ``save`` makes its saved state.
    """

    def mark(fn: Callable) -> Callable:
        setattr(fn, STEP_MARK, Impl(impl, fn, step=name or fn.__name__, ladder=ladder, dtypes=dtypes,
                                    triton_kernels=tuple(triton_kernels), compile_specs=compile_specs,
                                    cuda_kernels=tuple(cuda_kernels), pass_=pass_, save=save))
        return fn

    return mark


@dataclass
class Family:
    """A kernel family: inputs, float64 reference, roofline counts, validation.

    Every field has a default, so that a family left incomplete reaches the loader, which names
    each missing field with its fix (not Python's TypeError). Its name is its folder's."""

    title: str = ""
    bound: str = ""  # "memory" or "compute": which ceiling % of peak refers to
    dtypes: tuple[str, ...] = ("fp32", "bf16")  # what every family but matmul takes
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
    # (family name, step name) -> fn(out, *inputs, **params) running that CUDA step (a
    # <ladder>/<step>.cu file), e.g. lambda family, step: cuda_op(family, "silu", step); None:
    # cuda_op(family, family, step), the op named after the family, taking (*inputs, out, *params, step)
    cuda_step: Callable[[str, str], Callable] | None = None
    # the dtypes its CUDA steps take (a tuple, or {ladder: tuple} where ladders differ); None: the family's
    cuda_dtypes: tuple[str, ...] | dict[str, tuple[str, ...]] | None = None
    # the backward, declared once: the name of each input's gradient, in the inputs' order (None for
    # an input with none), e.g. ("dx", "dw", "db"). The float64 reference gradients are autograd's
    # through ``reference``, with a seeded upstream gradient; () : forward cases only
    grads: tuple[str | None, ...] = ()
    # (shape, dtype, **params) -> bytes and FLOPs of the backward alone (forward+backward adds the
    # forward's); None: the bytes and FLOPs of the forward again
    backward_bytes: Callable[..., int] | None = None
    backward_flops: Callable[..., int] | None = None
    # (*inputs64, dy64, **params) -> {gradient name: the least norm its error is relative to}: for
    # gradients whose terms cancel to near zero where the terms are not (a normalization's dx)
    backward_error_floor: Callable[..., dict] | None = None

    def __post_init__(self):
        # derived, not fields: the name is the folder's (set by the loader), the implementations
        # are added by add() and the loader's discovery of steps
        self.name = ""
        self.folder: Path | None = None
        self.impls: dict[str, Impl] = {}
        # ladder -> (runner factory, save): the CUDA ladders declared backward (add_cuda_backward)
        self.cuda_backward: dict[str, tuple[Callable[[str, str], Callable], Callable | None]] = {}

    def named(self, name: str, folder: Path | None = None) -> Family:
        """Give the family its name (its folder's) and folder: the loader's business; tests that
        build a family outside a folder call it themselves."""
        self.name, self.folder = name, folder
        for impl in self.impls.values():
            impl.derive(kernel=name)
        return self

    def fork(self, **changes) -> Family:
        """A family of your own on this one's problem, for your folder's ``FAMILY``: its fields
        (``changes`` replace any, e.g. ``title``) and the implementations that are not its own
        kernels: PyTorch's (eager, its fused op, torch.compile) and the field's (Liger, QuACK,
        FlashAttention-4), forward and backward, with their ladder texts. Its Triton and CUDA
        steps stay behind; yours join the rest, and the report sets them beside the field.
        Its ``cuda_step`` and ``cuda_dtypes`` stay behind too: they are its own CUDA's."""
        names = [f.name for f in dataclasses.fields(self)]
        for key in changes:
            if key not in names:
                raise FamilyError(f"fork({key}=...): Family has no field {key!r}; its fields: {', '.join(names)}")
        new = dataclasses.replace(self, **{"cuda_step": None, "cuda_dtypes": None, **changes})
        for key, impl in self.impls.items():
            if impl.backend not in OWN_BACKENDS:
                new.impls[key] = dataclasses.replace(impl).derive(**impl._derived, inherited=True)
        return new

    def first_params(self) -> dict:
        """Each parameter at its first default value: the one call Nsight Compute profiles."""
        return {k: v[0] for k, v in self.params.items()}

    def add(self, impl: str | Impl, fn: Callable | None = None, **options) -> Impl:
        """Add an implementation: ``add("triton", fn, triton_kernels=(k,))``, or an ``Impl``."""
        if not isinstance(impl, Impl):
            impl = Impl(impl, fn, **options)
        elif fn is not None or options:
            raise TypeError("add(Impl(...)) takes no other arguments")
        where = f"family {self.name or '(unnamed)'!r}: implementation {impl.key!r}"
        if impl.impl not in IMPL_KINDS:
            raise FamilyError(f"{where}: unknown implementation kind {impl.impl!r}; known: {', '.join(IMPL_KINDS)}")
        if impl.key in self.impls:
            raise FamilyError(f"{where} registered twice")
        if impl.dtypes is not None and (isinstance(impl.dtypes, str) or set(impl.dtypes) - set(self.dtypes)):
            raise FamilyError(f"{where} has dtypes {impl.dtypes!r}; give a tuple of the family's dtypes "
                              f"({', '.join(self.dtypes)}), or None for all")
        if impl.compile_specs is not None and not callable(impl.compile_specs):
            raise FamilyError(f"{where}: compile_specs must be a function (dtype -> [CompileSpec]) or None, "
                              f"got {impl.compile_specs!r}")
        if impl.pass_ not in PASSES:
            raise FamilyError(f"{where}: unknown pass {impl.pass_!r}; known: {', '.join(PASSES)}")
        if impl.backward and not self.grad_names():
            raise FamilyError(f"{where} is a backward, but the family declares no gradients: give "
                              f"Family(grads=(...)), the name of each input's gradient, e.g. ('dx', 'dw')")
        if impl.save is not None and not callable(impl.save):
            raise FamilyError(f"{where}: save must be a function (*inputs, **params) -> saved state, got {impl.save!r}")
        if impl.fn is not None:  # (out, *inputs, **params); None only in tests of the registry itself
            if not callable(impl.fn):
                raise FamilyError(f"{where} is not a function")
            check_positional(self.name, f"implementation {impl.key!r}", impl.fn, 3 if impl.backward else 2,
                             "(out, dy, saved, *inputs, **params)" if impl.backward else "(out, *inputs, **params)")
        self.impls[impl.key] = impl.derive(kernel=self.name)
        return impl

    def add_backward(self, impl: str, fn: Callable, save: Callable | None = None,
                     passes: tuple[str, ...] = BACKWARD_PASSES, **options) -> list[Impl]:
        """Add a backward implementation of kind ``impl``: ``fn(out, dy, saved, *inputs, **params)``
        returns the gradients named by ``Family.grads`` (a tuple, in that order), filling the tensors
        of ``out`` (one empty tensor like each input that has a gradient, NaN-filled by the harness)
        where it can. ``dy`` is the upstream gradient; ``saved`` is what ``save(*inputs, **params)``
        returned (a forward's statistics, an autograd graph), made outside the timed region of a
        backward case and inside the one call a forward+backward case times. ``passes``: which of
        backward and forward+backward it runs (one implementation each)."""
        if not isinstance(passes, (tuple, list)) or not passes or set(passes) - set(BACKWARD_PASSES):
            raise FamilyError(f"family {self.name or '(unnamed)'!r}: backward implementation {impl!r}: passes must be "
                              f"a tuple of {', '.join(BACKWARD_PASSES)}, got {passes!r}")
        return [self.add(Impl(impl, fn, pass_=p, save=save, **options)) for p in passes]

    def add_cuda_backward(self, ladder: str, save: Callable | None = None,
                          step: Callable[[str, str], Callable] | None = None) -> None:
        """Declare the CUDA ladder ``ladder`` (its ``<ladder>/<step>.cu`` files, each with its
        ladder.yaml entry) a backward: the loader adds each of its steps as a backward-pass
        implementation, run by ``step(family, step name)`` -> ``fn(out, dy, saved, *inputs,
        **params)`` (as ``add_backward``'s), with ``save`` making its saved state. ``step`` None:
        ``cuda_backward_op(family, f"{family}_bwd", step)``, the op
        ``<family>_bwd(*inputs, dy, *saved, *out, *params, step)``."""
        where = f"family {self.name or '(unnamed)'!r}: CUDA backward ladder {ladder!r}"
        if not isinstance(ladder, str) or not ladder.isidentifier():
            raise FamilyError(f"{where}: the ladder is its folder's name, an identifier")
        if ladder in self.cuda_backward:
            raise FamilyError(f"{where} declared twice")
        if not self.grad_names():
            raise FamilyError(f"{where} is a backward, but the family declares no gradients: give "
                              f"Family(grads=(...)), the name of each input's gradient, e.g. ('dx', 'dw')")
        for what, fn in (("save", save), ("step", step)):
            if fn is not None and not callable(fn):
                raise FamilyError(f"{where}: {what} must be a function or None, got {fn!r}")
        if step is None:
            from kernellab.kit.adapters import cuda_backward_op

            def step(family: str, name: str) -> Callable:
                return cuda_backward_op(family, f"{family}_bwd", name)

        self.cuda_backward[ladder] = (step, save)

    def add_autograd(self, impl: str, forward: Callable, compile: bool = False, adapt: Callable | None = None,
                     **options) -> list[Impl]:
        """Add the backward autograd makes of ``forward(*inputs, **params)`` (PyTorch ops, or
        PyTorch's own op), of kind ``impl``; ``compile``: of ``torch.compile(forward)``, with
        ``adapt`` as ``kit.compiled`` takes it (what runs outside the graph)."""
        from kernellab.kit.grads import autograd_backward

        save, fn = autograd_backward(forward, tuple(self.grads), compile=compile, adapt=adapt)
        return self.add_backward(impl, fn, save=save, **options)

    def add_pytorch_backwards(self, naive: Callable, fused: Callable, **options) -> list[Impl]:
        """The three backwards PyTorch gives, by autograd: through the naive forward in PyTorch ops
        (``torch_naive``), through PyTorch's own op (``torch_fused``), and through torch.compile of
        the naive forward (``compiled``: Inductor compiles the backward with it)."""
        return [*self.add_autograd("torch_naive", naive, **options),
                *self.add_autograd("torch_fused", fused, **options),
                *self.add_autograd("compiled", naive, compile=True, **options)]

    def passes(self) -> tuple[str, ...]:
        """The passes this family defines: forward, and those of its backward implementations."""
        have = {i.pass_ for i in self.impls.values()} | {"forward"}
        return tuple(p for p in PASSES if p in have)

    def grad_names(self) -> tuple[str, ...]:
        return tuple(g for g in self.grads if g)

    def case_bytes(self, pass_: str, shape, dtype: str, **params) -> int:
        """The byte model of one pass: the forward's, the backward's own, or both together."""
        return _per_pass(pass_, self.bytes_moved, self.backward_bytes, shape, dtype, params)

    def case_flops(self, pass_: str, shape, dtype: str, **params) -> int:
        """The FLOP model of one pass, as ``case_bytes``."""
        return _per_pass(pass_, self.flops, self.backward_flops, shape, dtype, params)

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
OPTIONAL_FUNCTIONS = ("validate", "tolerance", "error_floor", "cuda_step", "backward_bytes", "backward_flops",
                      "backward_error_floor")


def check_family(family: Family, dtypes: tuple[str, ...]) -> None:
    """Every field of a family a run calls or reads, checked when its folder loads: a missing or
    wrong one is named with the fix, rather than failing every case of the run."""
    name = family.name
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
    known = sorted(dtypes)
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
    if (not isinstance(family.grads, (tuple, list))
            or any(g is not None and (not isinstance(g, str) or not g.isidentifier()) for g in family.grads)
            or len(family.grad_names()) != len(set(family.grad_names()))):
        problems.append(f"grads must be a tuple naming each input's gradient (None for an input without one), "
                        f"e.g. ('dx', 'dw'), got {family.grads!r}")
    if problems:
        raise FamilyError(f"family {name!r}: " + "; ".join(problems))
    check_arity(name, "make_inputs", family.make_inputs, 4)  # (shape, dtype, device, seed)
    for attr in ("bytes_moved", "flops"):
        check_arity(name, attr, getattr(family, attr), 2)  # (shape, dtype)


def check_arity(owner: str, what: str, fn: Callable, positional: int) -> None:
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


def check_positional(owner: str, what: str, fn: Callable, least: int,
                     form: str = "(out, *inputs, **params)") -> None:
    """``fn`` must take at least ``least`` positional arguments (``out`` and the inputs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return
    kinds = [p.kind for p in params]
    positional = sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in kinds)
    if inspect.Parameter.VAR_POSITIONAL not in kinds and positional < least:
        raise FamilyError(f"family {owner!r}: {what} takes {positional} positional argument(s); it must take "
                          f"{form}")


def _per_pass(pass_: str, forward, backward, shape, dtype: str, params: dict) -> int:
    """A model of one pass from the forward's and the backward's (the forward's where the family
    gives none): forward, backward, or their sum for forward+backward."""
    fwd = int(forward(shape, dtype, **params))
    if pass_ == "forward":
        return fwd
    bwd = int((backward or forward)(shape, dtype, **params))
    return bwd if pass_ == "backward" else fwd + bwd

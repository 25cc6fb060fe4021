"""From the validated config to the list of cases each rule runs.

A case is (kernel, implementation, shape, dtype, parameters). The config lists shapes
per kernel for a GPU and for a CPU run (the CPU set is small: Triton is interpreted
there); ``target`` picks one.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from kernellab.engine.registry import Family, Impl


def parse_shape(value) -> tuple[int, ...]:
    """``65536`` -> (65536,); ``"4096x1000"`` -> (4096, 1000)."""
    if isinstance(value, bool):
        raise ValueError(f"shape {value!r} is not a size")
    if isinstance(value, int):
        dims = (value,)
    elif isinstance(value, str):
        try:
            dims = tuple(int(p) for p in value.lower().split("x"))
        except ValueError:
            raise ValueError(f"shape {value!r} is not of the form N or AxB (positive integers)") from None
    else:
        raise ValueError(f"shape {value!r} must be an integer or a string like '4096x1000'")
    if any(d <= 0 for d in dims):
        raise ValueError(f"shape {value!r} has a dimension that is not positive")
    return dims


def shape_str(shape) -> str:
    return "x".join(str(int(d)) for d in shape)


def params_str(params: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(params.items()))


@dataclass(frozen=True)
class Case:
    kernel: str
    impl_key: str
    shape: tuple[int, ...]
    dtype: str
    params: tuple = ()  # sorted (name, value) pairs

    @property
    def param_dict(self) -> dict:
        return dict(self.params)

    def labels(self) -> dict:
        return {
            "kernel": self.kernel,
            "impl_key": self.impl_key,
            "shape": shape_str(self.shape),
            "numel": math.prod(self.shape),
            "dtype": self.dtype,
            "params": params_str(self.param_dict),
        }


@dataclass(frozen=True)
class NcuCase:
    """One implementation profiled under Nsight Compute beside the ladders' steps."""

    impl_key: str
    shape: tuple[int, ...]
    dtype: str


def default_dtype(dtypes: list[str]) -> str:
    """The dtype a ladder step or an ``ncu_cases`` entry without one is read in."""
    return "fp32" if "fp32" in dtypes else dtypes[0]


@dataclass
class KernelPlan:
    kernel: str
    dtypes: list[str]
    shapes: list[tuple[int, ...]]
    check_shapes: list[tuple[int, ...]]
    impl_shapes: dict[str, list[tuple[int, ...]]]  # impl kind or key -> its only shapes
    impls: list[str] | None  # None: every registered implementation
    params: dict[str, list] = field(default_factory=dict)
    profile_shape: tuple[int, ...] | None = None
    impl_dtypes: dict[str, list[str]] = field(default_factory=dict)  # impl kind or key -> its only dtypes
    ladder_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # ladder -> its shape
    ncu_cases: list[NcuCase] = field(default_factory=list)
    passes: list[str] | None = None  # None: every pass the family defines
    pass_shapes: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)  # pass -> its shapes

    def ladder_shape(self, ladder: str) -> tuple[int, ...] | None:
        """The shape a ladder is read at (KERNEL_LOG, ncu): its own, else the profile shape."""
        return self.ladder_shapes.get(ladder, self.profile_shape)

    def ladder_dtype(self, steps: list[Impl]) -> str:
        """The dtype a ladder is read at: fp32 when every step takes it, else the first
        configured dtype every step takes (else the first configured)."""
        return default_dtype([d for d in self.dtypes if all(s.supports(d) for s in steps)] or self.dtypes)

    def impl_keys(self, family: Family) -> list[str]:
        """The implementations to run: the configured ones (every one by default), of the
        configured passes (every pass the family defines by default)."""
        keys = list(family.impls) if self.impls is None else list(self.impls)
        if self.passes is None:
            return keys
        return [k for k in keys if k not in family.impls or family.impls[k].pass_ in self.passes]

    def param_grid(self, family: Family) -> list[dict]:
        grid = {**family.params, **self.params}
        if not grid:
            return [{}]
        names = sorted(grid)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(grid[n] for n in names))]

    def cases(self, family: Family, impl: Impl, for_check: bool = False) -> list[Case]:
        own = self.impl_shapes.get(impl.key, self.impl_shapes.get(impl.impl) if not impl.backward else None)
        if own is None:
            own = self.pass_shapes.get(impl.pass_)
        shapes = list(own) if own is not None else list(self.shapes)
        if for_check:
            shapes += [s for s in self.check_shapes if s not in shapes]
        dtypes = self.impl_dtypes.get(impl.key, self.impl_dtypes.get(impl.impl, self.dtypes))
        out = []
        for dtype in dtypes:
            if not impl.supports(dtype):
                continue
            for shape in shapes:
                for params in self.param_grid(family):
                    out.append(Case(family.name, impl.key, shape, dtype, tuple(sorted(params.items()))))
        return out


def kernel_plan(name: str, kcfg: dict, target: str) -> KernelPlan:
    cpu = target == "cpu"

    def shapes(key):
        vals = kcfg.get(f"cpu_{key}" if cpu else key)
        if vals is None and cpu:
            vals = kcfg.get(key)
        return [parse_shape(v) for v in (vals or [])]

    impl_shapes = kcfg.get("cpu_impl_shapes" if cpu else "impl_shapes") or {}
    prof = kcfg.get("cpu_profile_shape" if cpu else "profile_shape")
    main = shapes("shapes")
    profile_shape = parse_shape(prof) if prof is not None else (main[len(main) // 2] if main else None)
    dtypes = list(kcfg["dtypes"])
    ncu_cases = [NcuCase(c["impl"], parse_shape(c["shape"]) if "shape" in c else profile_shape,
                         c.get("dtype", default_dtype(dtypes))) for c in kcfg.get("ncu_cases") or []]
    return KernelPlan(
        kernel=name,
        dtypes=dtypes,
        shapes=main,
        check_shapes=shapes("check_shapes"),
        impl_shapes={k: [parse_shape(v) for v in vals] for k, vals in impl_shapes.items()},
        impls=kcfg.get("impls"),
        params=dict(kcfg.get("params") or {}),
        profile_shape=profile_shape,
        impl_dtypes={k: list(v) for k, v in (kcfg.get("impl_dtypes") or {}).items()},
        ladder_shapes={k: parse_shape(v) for k, v in
                       (kcfg.get("cpu_ladder_shapes" if cpu else "ladder_shapes") or {}).items()},
        ncu_cases=ncu_cases,
        passes=list(kcfg["passes"]) if kcfg.get("passes") is not None else None,
        pass_shapes={k: [parse_shape(v) for v in vals] for k, vals in
                     (kcfg.get("cpu_pass_shapes" if cpu else "pass_shapes") or {}).items()},
    )


def plans(config: dict, target: str) -> dict[str, KernelPlan]:
    return {name: kernel_plan(name, kcfg, target) for name, kcfg in sorted(config["kernels"].items())}

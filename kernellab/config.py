"""Configuration checks beyond the JSON schema: names and values against the registry.

``workflow/schemas/config.schema.yaml`` (applied with ``snakemake.utils.validate``)
catches types, unknown keys, empty lists and non-positive sizes. What needs the
registry is checked here: unknown kernels, implementations and dtypes, shapes of the
wrong rank, duplicate cases, parameter ranges. Every message names the key and value.
All of it runs when the Snakefile is parsed, before any job.
"""

from __future__ import annotations

from pathlib import Path

from kernellab.cases import parse_shape, shape_str
from kernellab.errors import ConfigError

SCHEMA = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml"


def validate_schema(config: dict) -> dict:
    """Schema validation with defaults filled in, the way the Snakefile does it."""
    from snakemake.utils import validate

    validate(config, str(SCHEMA), set_default=True)
    return config


def check(config: dict, families: dict | None = None) -> None:
    """Raise ConfigError naming the first problem found."""
    if families is None:
        from kernellab import registry

        families = registry.families()
    kernels = config.get("kernels") or {}
    if not kernels:
        raise ConfigError("kernels: the config lists no kernel to run")
    for name, kcfg in kernels.items():
        where = f"kernels.{name}"
        if name not in families:
            raise ConfigError(f"{where}: unknown kernel {name!r}; known kernels: {', '.join(sorted(families))}")
        fam = families[name]
        for dtype in kcfg.get("dtypes", []):
            if dtype not in fam.dtypes:
                raise ConfigError(f"{where}.dtypes: {name} does not support dtype {dtype!r}; "
                                  f"supported: {', '.join(fam.dtypes)}")
        for key, dtypes in (kcfg.get("impl_dtypes") or {}).items():
            if key not in fam.impls and key not in {i.impl for i in fam.impls.values()}:
                raise ConfigError(f"{where}.impl_dtypes: {name} has no implementation {key!r}")
            extra = [d for d in dtypes if d not in kcfg.get("dtypes", [])]
            if extra:
                raise ConfigError(f"{where}.impl_dtypes.{key}: {', '.join(map(repr, extra))} not among the "
                                  f"kernel's dtypes ({', '.join(kcfg.get('dtypes', []))})")
        for key in kcfg.get("impls") or []:
            if key not in fam.impls:
                raise ConfigError(f"{where}.impls: unknown implementation {key!r} of {name}; "
                                  f"known: {', '.join(fam.impls)}")
        lists = {f: kcfg.get(f) or [] for f in ("shapes", "cpu_shapes", "check_shapes", "cpu_check_shapes")}
        for field in ("impl_shapes", "cpu_impl_shapes"):
            for key, vals in (kcfg.get(field) or {}).items():
                if key not in fam.impls and key not in {i.impl for i in fam.impls.values()}:
                    raise ConfigError(f"{where}.{field}: {name} has no implementation {key!r}")
                lists[f"{field}.{key}"] = vals
        for field, values in lists.items():
            seen: dict = {}
            for value in values:
                try:
                    shape = parse_shape(value)
                except ValueError as exc:
                    raise ConfigError(f"{where}.{field}: {exc}") from None
                if len(shape) not in fam.shape_rank:
                    raise ConfigError(f"{where}.{field}: shape {value!r} has {len(shape)} dimension(s); "
                                      f"{name} takes {' or '.join(map(str, fam.shape_rank))}")
                if shape in seen:
                    raise ConfigError(f"{where}.{field}: duplicate case: {value!r} and {seen[shape]!r} are "
                                      f"the same shape {shape_str(shape)}")
                seen[shape] = value
        for field in ("profile_shape", "cpu_profile_shape"):
            if field in kcfg:
                try:
                    shape = parse_shape(kcfg[field])
                except ValueError as exc:
                    raise ConfigError(f"{where}.{field}: {exc}") from None
                if len(shape) not in fam.shape_rank:
                    raise ConfigError(f"{where}.{field}: shape {kcfg[field]!r} has the wrong number of dimensions")
        for pname, values in (kcfg.get("params") or {}).items():
            if pname not in fam.params:
                raise ConfigError(f"{where}.params: {name} has no parameter {pname!r}; "
                                  f"known: {', '.join(fam.params) or 'none'}")
            lo, hi = fam.param_ranges.get(pname, (float("-inf"), float("inf")))
            for v in values:
                if not (lo <= v < hi):
                    raise ConfigError(f"{where}.params.{pname}: value {v!r} outside [{lo:g}, {hi:g})")
            if len(set(values)) != len(values):
                raise ConfigError(f"{where}.params.{pname}: duplicate values {values!r}")
    timing = config.get("timing") or {}
    if timing.get("min_samples", 10) > timing.get("max_samples", 2000):
        raise ConfigError(f"timing.min_samples ({timing.get('min_samples')}) exceeds timing.max_samples "
                          f"({timing.get('max_samples')})")


def load(path: str | Path) -> dict:
    """Read, schema-validate and check a config file (what tests and tools use)."""
    import yaml

    config = yaml.safe_load(Path(path).read_text()) or {}
    validate_schema(config)
    check(config)
    return config

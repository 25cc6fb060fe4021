"""Configuration checks beyond the JSON schema: names and values against the registry.

``workflow/schemas/config.schema.yaml`` (applied with ``snakemake.utils.validate``)
catches types, unknown keys, empty lists and non-positive sizes. What needs the
registry is checked here: unknown kernels, implementations and dtypes, shapes of the
wrong rank, duplicate cases, parameter ranges. Every message names the key and value.
Parsing the Snakefile checks the schema and the kernels' folders (``for_run``) and imports no
family; a run checks the rest when it starts, before any job (``check_loaded``).
"""

from __future__ import annotations

from pathlib import Path

from kernellab.engine.cases import default_dtype, parse_shape, shape_str
from kernellab.errors import ConfigError

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


def _schema() -> dict:
    import yaml

    return yaml.safe_load(SCHEMA.read_text())


def _where(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


_BOOLEANS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
_SCALARS = {"integer": int, "number": float, "boolean": lambda v: _BOOLEANS[v.lower()]}


def coerce_scalars(config: dict) -> dict:
    """Numbers and booleans given as text where the schema wants them (``--config
    'check={seeds: [5, 6, 7]}'`` arrives as strings) become numbers and booleans."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    for _ in range(1000):  # each pass fixes every scalar it can; stop when none is left
        fixed = 0
        for error in validator.iter_errors(config):
            for err in [error, *(error.context or [])]:
                wanted = err.validator_value if err.validator == "type" else None
                if not isinstance(err.instance, str) or wanted not in _SCALARS:
                    continue
                try:
                    value = _SCALARS[wanted](err.instance)
                except (KeyError, ValueError):
                    continue
                *parents, last = err.absolute_path
                target = config
                for key in parents:
                    target = target[key]
                if target[last] == err.instance:
                    target[last] = value
                    fixed += 1
                break
        if not fixed:
            return config
    return config


def schema_error(config: dict) -> str | None:
    """The first schema violation as one line: the key, the bad value and what is allowed."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(_schema()).iter_errors(config))
    if error is None:
        return None
    where = _where(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        return (f"{where}: unknown key {', '.join(map(repr, extra)) or error.message}"
                + (f"; allowed: {', '.join(allowed)}" if allowed else ""))
    about = error.schema.get("description", "")
    return f"{where}: {error.message}" + (f" (expected {about})" if about else "")


def validate_schema(config: dict) -> dict:
    """Schema validation with defaults filled in, the way the Snakefile does it; a violation is
    a ConfigError of one line naming the key, not the schema dump of jsonschema."""
    from snakemake.utils import validate

    coerce_scalars(config)
    kernels = config.get("kernels")
    if kernels is not None and not isinstance(kernels, dict):
        # `--config kernels=[silu]` replaces the cases of every family: say how to pick some
        names = ", ".join(map(str, kernels)) if isinstance(kernels, list) else str(kernels)
        raise ConfigError(f"kernels: {kernels!r} would replace the config's families and their cases; to "
                          f"measure some of them, name them with only: --config only=[{names}]")
    message = schema_error(config)
    if message:
        raise ConfigError(message)
    validate(config, str(SCHEMA), set_default=True)
    return config


DEFAULT_CONFIG = SCHEMA.parents[2] / "config" / "config.yaml"
LABEL_MAX = 40  # characters of a set's label made of family names, beyond which a hash stands for the rest


def default_families() -> set[str]:
    """The families of the default config (config/config.yaml): what a full set holds."""
    import yaml

    return set((yaml.safe_load(DEFAULT_CONFIG.read_text()) or {}).get("kernels") or {})


def narrow(config: dict, configfiles=()) -> dict:
    """Apply ``only`` (the families of the config this run measures) and name the run's set.

    A set named after the hardware alone holds the default config's families, no fewer and no
    more. A run of fewer families is given, unless ``label`` names it, the label of what narrowed
    it: the families of ``only``, else the config files' names (``--configfile my-config.yaml``:
    ``my-config``), else its families. A run of ours with yours (``--configfile config/config.yaml
    my-config.yaml``) is ``my-config-and-ours``. So neither a partial run nor yours with ours
    replaces the plain run's set, and a config file keeps its set when a family is added to it."""
    kernels = config["kernels"]
    only = list(config.get("only") or [])
    unknown = [k for k in only if k not in kernels]
    if unknown:
        raise ConfigError(f"only: {', '.join(map(repr, unknown))} not among the config's kernels "
                          f"({', '.join(sorted(kernels))}); a family of yours also needs its cases under kernels")
    if only:
        config["kernels"] = {k: v for k, v in kernels.items() if k in only}
    ours, run = default_families(), set(config["kernels"])
    if not config.get("label") and run != ours:
        files = [Path(f) for f in configfiles if Path(f).resolve() != DEFAULT_CONFIG]
        if ours < run:  # every family of ours, and some of yours
            config["label"] = _label("-".join([f.stem for f in files] or sorted(run - ours)) + "-and-ours")
        else:
            names = sorted(only) or [f.stem for f in files] or sorted(run)
            config["label"] = _label("-".join(names))
    return config


def for_run(config: dict, configfiles=(), cwd: str | Path = ".") -> dict:
    """The config this run works from, derived from ``config`` (validated) and leaving it as it
    is: ``only`` applied and the set named (``narrow``), the kernel folders as absolute paths
    (every job imports the same families wherever it runs). No family is imported: each kernel
    is checked to be a family folder of the kernel directories; what needs the families
    themselves is checked when a run starts (``check_loaded``) and in its jobs."""
    import copy

    from kernellab.engine import registry

    run = narrow(copy.deepcopy(config), configfiles)
    run["kernel_dirs"] = [str(d) for d in registry.kernel_dirs(run["kernel_dirs"], cwd)]
    folders = registry.family_folders([Path(d) for d in run["kernel_dirs"]])
    for name in run["kernels"]:
        if name not in folders:
            raise ConfigError(f"kernels.{name}: unknown kernel {name!r}; known kernels: {', '.join(sorted(folders))}")
    return run


def check_loaded(config: dict, reg) -> dict[str, str]:
    """``config`` checked against the families of ``reg`` (a Registry: what loading the run's
    kernel folders gave) that loaded; returns ``{family: why}`` of the config's families that did
    not (their jobs fail with that error; the others run)."""
    failed = {k: reg.errors[k] for k in config["kernels"] if k in reg.errors}
    if failed and len(failed) == len(config["kernels"]):  # else check() would say the config lists none
        raise ConfigError("kernels: no family the config lists can run: "
                          + "; ".join(f"{name!r} failed to load: {why}" for name, why in failed.items()))
    check({**config, "kernels": {k: v for k, v in config["kernels"].items() if k not in failed}}, reg.families)
    return failed


def _label(text: str) -> str:
    """``text`` as a set label ([a-z0-9-]), at most LABEL_MAX characters (a hash ends a longer one)."""
    import hashlib
    import re

    label = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(label) > LABEL_MAX:
        label = label[:LABEL_MAX - 9].rstrip("-") + "-" + hashlib.sha256(label.encode()).hexdigest()[:8]
    return label


def job_kernel_dirs(kernel_dirs: list[str], folders) -> list[str]:
    """The kernel directories a job loads for the families in ``folders``: ``kernel_dirs`` up to
    the last one holding one of them (a family may import from an earlier directory's). Adding a
    directory after them does not change what such a job loads, so it does not rerun it."""
    parents = {str(Path(f).parent) for f in folders}
    last = max((i for i, d in enumerate(kernel_dirs) if str(d) in parents), default=len(kernel_dirs) - 1)
    return list(kernel_dirs[:last + 1])


def _check_one_shape(fam, key: str, value) -> None:
    """A single representative shape (profile or ladder) parses and has the family's rank;
    ``key`` names it in the error."""
    try:
        shape = parse_shape(value)
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    if len(shape) not in fam.shape_rank:
        raise ConfigError(f"{key}: shape {value!r} has the wrong number of dimensions")


def check(config: dict, families: dict) -> None:
    """Raise ConfigError naming the first problem found; ``families``: name -> Family."""
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
        for p in kcfg.get("passes") or []:
            if p not in fam.passes():
                raise ConfigError(f"{where}.passes: {name} has no {p} pass (no implementation of it); "
                                  f"its passes: {', '.join(fam.passes())}")
        for key in kcfg.get("impls") or []:
            if key not in fam.impls:
                raise ConfigError(f"{where}.impls: unknown implementation {key!r} of {name}; "
                                  f"known: {', '.join(fam.impls)}")
        _check_shapes(where, name, fam, kcfg)
        _check_ncu_cases(where, name, fam, kcfg)
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


def _check_shapes(where: str, name: str, fam, kcfg: dict) -> None:
    """A kernel's shape lists, per-implementation shapes, profile and ladder shapes: parsable, of the
    family's rank, no case twice."""
    lists = {f: kcfg.get(f) or [] for f in ("shapes", "cpu_shapes", "check_shapes", "cpu_check_shapes")}
    for field in ("impl_shapes", "cpu_impl_shapes"):
        for key, vals in (kcfg.get(field) or {}).items():
            if key not in fam.impls and key not in {i.impl for i in fam.impls.values()}:
                raise ConfigError(f"{where}.{field}: {name} has no implementation {key!r}")
            lists[f"{field}.{key}"] = vals
    for field in ("pass_shapes", "cpu_pass_shapes"):
        for key, vals in (kcfg.get(field) or {}).items():
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
            _check_one_shape(fam, f"{where}.{field}", kcfg[field])
    for field in ("ladder_shapes", "cpu_ladder_shapes"):
        for ladder, value in (kcfg.get(field) or {}).items():
            if ladder not in fam.ladders():
                raise ConfigError(f"{where}.{field}: {name} has no ladder {ladder!r}; "
                                  f"its ladders: {', '.join(fam.ladders()) or 'none'}")
            _check_one_shape(fam, f"{where}.{field}.{ladder}", value)


def _check_ncu_cases(where: str, name: str, fam, kcfg: dict) -> None:
    """A kernel's ncu cases: known implementations, shapes and dtypes they run, no case twice."""
    seen_ncu: set = set()
    for i, case in enumerate(kcfg.get("ncu_cases") or []):
        at = f"{where}.ncu_cases[{i}]"
        impl = fam.impls.get(case["impl"])
        if impl is None:
            raise ConfigError(f"{at}: unknown implementation {case['impl']!r} of {name}; "
                              f"known: {', '.join(fam.impls)}")
        if "shape" in case:
            _check_one_shape(fam, f"{at}.shape", case["shape"])
        dtypes = kcfg.get("dtypes") or []
        dtype = case.get("dtype")
        if dtype is not None and (dtype not in dtypes or not impl.supports(dtype)):
            raise ConfigError(f"{at}.dtype: {case['impl']} does not run {dtype!r} here; the kernel's "
                              f"dtypes: {', '.join(dtypes)}")
        if dtype is None and dtypes and not impl.supports(default_dtype(dtypes)):
            raise ConfigError(f"{at}: {case['impl']} does not run {default_dtype(dtypes)!r}, the dtype a case "
                              f"without one takes; give the case a dtype it runs ({', '.join(impl.dtypes)})")
        ident = (case["impl"], str(case.get("shape", "")), dtype)
        if ident in seen_ncu:
            raise ConfigError(f"{at}: duplicate of an earlier case ({case['impl']}, "
                              f"{case.get('shape', 'profile shape')}, {dtype or 'default dtype'})")
        seen_ncu.add(ident)


def check_compare(config: dict) -> None:
    """Every set compare.with names is a published set under ``results``."""
    results = Path(config.get("results") or "results")
    for name in (config.get("compare") or {}).get("with") or []:
        if not (results / name / "summary.csv").is_file():
            raise ConfigError(f"compare.with: {name!r} is not a result set: {results / name / 'summary.csv'} "
                              "does not exist (name a folder of results/ that a run published)")


def check_target(target: str, has_gpu: bool) -> None:
    """``target: gpu`` needs a GPU this process can see: without one the GPU shapes would run on
    the CPU for hours. (Only where the jobs run here: a cluster's submit host has no GPU.)"""
    if target == "gpu" and not has_gpu:
        raise ConfigError("target: 'gpu', but this machine has no visible CUDA GPU (torch.cuda.is_available() "
                          "is False). Run with --config target=auto (the GPU shapes where there is a GPU, the "
                          "small CPU set here) or target=cpu; on a cluster use the slurm profile, whose jobs run "
                          "on GPU nodes.")


def read_yaml(path: str | Path) -> dict:
    """A config file's mapping; a file that is not YAML is named with the error's line and column
    (Snakemake's own message names neither, and hints at tabs)."""
    import yaml

    try:
        config = yaml.safe_load(Path(path).read_text())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(path)
        context = ""
        if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            context = f" ({exc.context} at line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1})"
        raise ConfigError(f"{where}: not valid YAML: {exc.problem or exc.context}{context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if config is not None and not isinstance(config, dict):
        raise ConfigError(f"{path}: a config file maps keys to values; this one holds a {type(config).__name__}")
    return config or {}


def load(path: str | Path, families: dict) -> dict:
    """Read, schema-validate and check a config file against ``families`` (what tests and tools use)."""
    config = read_yaml(path)
    validate_schema(config)
    check(config, families)
    return config


def main(argv: list[str] | None = None) -> int:
    """``python -m kernellab.workflow.config FILE...``: each config file read and checked as a run
    would check it, the problem named (a file Snakemake cannot read stops it before the workflow,
    with a message naming neither file nor line)."""
    import sys

    from kernellab.engine import registry
    from kernellab.engine.registry import FamilyError

    status = 0
    for path in (sys.argv[1:] if argv is None else argv):
        try:
            config = read_yaml(path)
            validate_schema(config)
            failed = check_loaded(config, registry.load(config["kernel_dirs"], Path.cwd()))
            if failed:
                raise ConfigError("; ".join(f"{name!r} failed to load: {why}" for name, why in failed.items()))
            print(f"{path}: ok")
        except (ConfigError, FamilyError, OSError) as exc:
            print(f"{path}: {exc}" if str(path) not in str(exc) else str(exc), file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())

"""The one registry of kernel families and their implementations: the loader of family folders.

Tests, Snakemake rules and the report all read this registry, so an implementation exists in
exactly one place. What a family author writes (``Family``, ``Impl``, ``step``) is in
``kernellab.kit``; this module finds the folders, imports each as ``kernellab.families.<name>``,
names its ``FAMILY`` after the folder, discovers its ladder steps (functions marked with
``kit.step`` in its modules, and ``<ladder>/<step>.cu`` files of its CUDA ladders), and gives
each step its order and texts from the folder's ladder.yaml.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kernellab.errors import FamilyError
from kernellab.kit.family import (
    BACKENDS,
    IMPL_KINDS,
    LOADING,
    STEP_MARK,
    Family,
    Impl,
    check_family,
)
from kernellab.ladder_file import LADDER_FILE, STEP_TEXTS, ladder_texts

__all__ = ["BACKENDS", "IMPL_KINDS", "Family", "FamilyError", "Impl", "Registry", "load"]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIRS = ("kernels",)
NOT_FAMILIES = ("common",)  # shared CUDA and binding helpers, not a family


def _dtypes() -> tuple[str, ...]:
    from kernellab.kit.dtypes import DTYPES

    return DTYPES


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


@dataclass
class Registry:
    """The families loaded from some kernel directories: what loading them gave, passed to
    whoever reads families (the jobs, the tests), never a global of this module."""

    dirs: tuple[Path, ...] = ()
    families: dict[str, Family] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # family folder -> why it could not be loaded

    def family(self, name: str) -> Family:
        if name not in self.families:
            if name in self.errors:
                raise KeyError(f"kernel {name!r} could not be loaded: {self.errors[name]}")
            raise KeyError(f"unknown kernel {name!r}; known kernels: {', '.join(sorted(self.families))}")
        return self.families[name]

    def module(self, name: str):
        """The family's package (its Triton kernels, launchers and helpers)."""
        self.family(name)
        return sys.modules[f"{PACKAGE}.{name}"]

    def loaded(self, kernels: list[str]) -> list[str]:
        """Those of ``kernels`` that loaded; each other one warned of with why (a job leaves its
        tables empty: the set is published without it, and says so, aggregate.skipped)."""
        for kernel in kernels:
            if kernel in self.errors:
                logging.getLogger("kernellab").warning("kernel family %r skipped: %s", kernel, self.errors[kernel])
        return [k for k in kernels if k not in self.errors]

    def impl(self, kernel: str, key: str) -> Impl:
        fam = self.family(kernel)
        if key not in fam.impls:
            raise KeyError(f"unknown implementation {key!r} of kernel {kernel!r}; known: {', '.join(fam.impls)}")
        return fam.impls[key]


def load(dirs=None, base: str | os.PathLike | None = None) -> Registry:
    """Import every family folder of the kernel directories and return them as a Registry.

    A folder that fails is left out and its error kept (``Registry.errors``), so one broken
    family never stops the others. A family builds on another through ``kit.builds_on``: that
    one loads first. A folder this process imported already is Python's module of it, not
    imported again, so loading the same directories twice gives the same families; a family
    of the same name from another folder is an error (one ``kernellab.families.<name>``)."""
    from kernellab.engine import runtime
    from kernellab.engine.launch import install

    wanted = kernel_dirs(dirs, base)
    runtime.setup()  # before Triton is imported: interpreter on machines without a GPU
    install()  # the engine's CUDA ops, for the families' kit calls
    folders = family_folders(wanted)
    reg = Registry(tuple(wanted))
    loading: list[str] = []

    def get(name: str):
        if name in reg.families:
            return sys.modules[f"{PACKAGE}.{name}"]
        if name in reg.errors:
            raise FamilyError(f"builds on family {name!r}, which did not load: {reg.errors[name]}")
        if name not in folders:
            raise FamilyError(f"builds on family {name!r}, which no kernel directory holds")
        if name in loading:
            raise FamilyError(f"families build on each other in a circle: {' -> '.join([*loading, name])}")
        loading.append(name)
        try:
            reg.families[name] = load_family(name, folders[name])
        except Exception as exc:  # a user's folder may fail in any way: keep the others
            for mod in [m for m in sys.modules if m == f"{PACKAGE}.{name}" or m.startswith(f"{PACKAGE}.{name}.")]:
                sys.modules.pop(mod)
            reg.errors[name] = _describe(exc, folders[name])
            raise FamilyError(f"builds on family {name!r}, which did not load: {reg.errors[name]}") from None
        finally:
            loading.pop()
        return sys.modules[f"{PACKAGE}.{name}"]

    token = LOADING.set(get)
    try:
        for name in folders:
            with contextlib.suppress(FamilyError):  # kept in reg.errors
                get(name)
    finally:
        LOADING.reset(token)
    reg.families = {n: reg.families[n] for n in folders if n in reg.families}
    reg.errors = {n: reg.errors[n] for n in folders if n in reg.errors}
    return reg


PACKAGE = "kernellab.families"  # a folder <name> imports as kernellab.families.<name>
SKIPPED_MODULES = ("test_", "conftest")


def load_family(name: str, folder: Path) -> Family:
    """Import one family folder: its package, then every module of it (a Triton step is a marked
    function in any of them); its FAMILY named after the folder, its steps found and ordered."""
    full = f"{PACKAGE}.{name}"
    known = sys.modules.get(full)
    if known is not None and getattr(known, LOADED, False):
        if Path(known.__file__).resolve() != (folder / "__init__.py").resolve():
            raise FamilyError(f"{folder}: family {name!r} is loaded from {Path(known.__file__).parent} in this "
                              f"process already; cannot load another folder of that name beside it")
        return known.FAMILY
    module = _import_folder(name, folder)
    fam = getattr(module, "FAMILY", None)
    if not isinstance(fam, Family):
        raise FamilyError(f"{folder / '__init__.py'}: defines no FAMILY = Family(...) (got {fam!r}); a family "
                          f"folder's __init__.py sets FAMILY, named after its folder")
    fam.named(name, folder)
    check_family(fam, _dtypes())
    modules = [module] + [importlib.import_module(m) for m in _submodules(name, folder)]
    texts = ladder_texts(folder)
    for mod in modules:
        for value in list(vars(mod).values()):
            impl = getattr(value, STEP_MARK, None)
            if isinstance(impl, Impl) and getattr(value, "__module__", None) == mod.__name__:
                fam.add(_placed(impl, Path(mod.__file__), folder))
    cuda_files = cuda_step_files(folder, texts)
    for ladder, step, source in cuda_files:
        backward = fam.cuda_backward.get(ladder)  # (runner factory, save) of a backward ladder
        fam.add(Impl("cuda", backward[0](fam.name, step) if backward else _cuda_runner(fam, step), step=step,
                     ladder=ladder, dtypes=_cuda_dtypes(fam, ladder),
                     cuda_kernels=tuple(texts[(ladder, step)].get("kernels") or global_kernels(source)),
                     pass_="backward" if backward else "forward", save=backward[1] if backward else None
                     ).derive(source=source))
    if stray := sorted(set(fam.cuda_backward) - {ladder for ladder, _, _ in cuda_files}):
        raise FamilyError(f"{folder / '__init__.py'}: CUDA backward ladder(s) {', '.join(stray)} have no step: a "
                          f"step is a file {folder}/<ladder>/<step>.cu with its entry in {folder / LADDER_FILE}")
    if not fam.impls:
        raise FamilyError(f"family {name!r} has no implementation: add one with "
                          f"FAMILY.add('torch_fused', fn)")
    attach_ladder_texts(fam, folder, texts)
    setattr(module, LOADED, True)
    return fam


LOADED = "__kernellab_loaded__"  # set on a family's package once it has loaded completely


def _import_folder(name: str, folder: Path):
    """The folder as the package kernellab.families.<name> (its own modules import relatively)."""
    import kernellab.families  # noqa: F401 - the parent package must be imported first

    full = f"{PACKAGE}.{name}"
    spec = importlib.util.spec_from_file_location(full, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module


def _submodules(name: str, folder: Path) -> list[str]:
    """Dotted names of the folder's other modules, tests left out: where steps may be declared."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder)
        if (path.name == "__init__.py" and rel.parent == Path(".")) or path.name.startswith(SKIPPED_MODULES):
            continue
        if any(part.startswith((".", "_")) for part in rel.parts[:-1]) or "__pycache__" in rel.parts:
            continue
        parts = rel.with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if all(p.isidentifier() for p in parts):
            out.append(".".join((PACKAGE, name, *parts)))
    return out


def _placed(impl: Impl, path: Path, folder: Path) -> Impl:
    """A marked step with its ladder taken from its file's folder where the mark names none."""
    if not impl.ladder and path.parent != folder:
        import dataclasses

        impl = dataclasses.replace(impl, ladder=path.parent.name)
    return impl.derive(source=path)


def builds_on(folder: Path) -> list[str]:
    """The families a family folder builds on (its ``builds_on("name")`` calls), read without
    importing it: what the workflow adds to a family's job code beside its own folder."""
    import ast

    names = []
    for path in sorted(Path(folder).rglob("*.py")):
        text = path.read_bytes()
        if path.name.startswith(SKIPPED_MODULES) or "__pycache__" in path.parts or b"builds_on" not in text:
            continue
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "builds_on"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                names.append(node.args[0].value)
    return sorted(set(names))


def cuda_step_files(folder: Path, texts: dict) -> list[tuple[str, str, Path]]:
    """(ladder, step, file) of each CUDA step: a ``<ladder>/<step>.cu`` file whose ladder.yaml
    entry exists (a .cu file without an entry is a shared source, not a step)."""
    out = []
    for (ladder, step_name) in texts:
        path = folder / ladder / f"{step_name}.cu"
        if path.is_file():
            out.append((ladder, step_name, path))
    return out


_GLOBAL = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(")


def global_kernels(source: Path) -> list[str]:
    """The kernels a step's file defines (``__global__`` functions), the names its SASS is listed
    by; a step that instantiates a kernel of a shared header names it in ladder.yaml (``kernels``)."""
    return sorted(set(_GLOBAL.findall(source.read_text())))


def _cuda_dtypes(fam: Family, ladder: str) -> tuple[str, ...] | None:
    """The dtypes a CUDA ladder's steps take: ``Family.cuda_dtypes``, or its entry for the ladder
    where it is a mapping (ladders of one family in different dtypes: fp32 SIMT, bf16 tensor cores)."""
    if isinstance(fam.cuda_dtypes, dict):
        return fam.cuda_dtypes.get(ladder)
    return fam.cuda_dtypes


def _cuda_runner(fam: Family, step_name: str):
    if fam.cuda_step is not None:
        return fam.cuda_step(fam.name, step_name)
    from kernellab.kit.adapters import cuda_op

    return cuda_op(fam.name, fam.name, step_name)


def attach_ladder_texts(fam: Family, folder: Path, texts: dict | None = None) -> None:
    """Give each ladder step its order and texts from the folder's ladder.yaml; a step without an
    entry, or an entry without a step, is an error naming the file."""
    texts = ladder_texts(folder) if texts is None else texts
    steps = {(i.ladder_name, i.step): key for key, i in fam.impls.items() if i.step and not i.inherited}
    path = folder / LADDER_FILE
    missing = sorted(set(steps) - set(texts))
    if missing:
        raise FamilyError(f"{path}: no entry for step(s) {', '.join(f'{lad}/{st}' for lad, st in missing)}")
    orphans = sorted(set(texts) - set(steps))
    if orphans:
        raise FamilyError(f"{path}: step(s) {', '.join(f'{lad}/{st}' for lad, st in orphans)} are declared by no "
                          f"file: a CUDA step is <ladder>/<step>.cu, a Triton step a function marked @step")
    for ident, key in steps.items():
        entry = texts[ident]
        fam.impls[key].derive(order=entry["order"], **{k: entry[k] for k in STEP_TEXTS})


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

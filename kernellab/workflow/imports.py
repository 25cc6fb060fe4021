"""The kernellab modules a job's code can import, found by reading it (no import is run).

A job's code stamp (kernellab.workflow.manifest) lists the files whose change reruns it. Listing every
module of the package would rerun every measure job for an edit to the report; listing them by
hand would miss one sooner or later. This module follows every ``import kernellab...`` and
``from kernellab... import ...`` from a job's entry files, so the stamp holds each module the job
can run and no other.

An import at a module's top level runs whenever the module is imported; one inside a function
runs only when that function does. So the imports inside a function are followed only where the
job can call the function: the entry files are run whole, a module imported as a module
(``import kernellab.x``, ``from kernellab import x``) may have any of its functions called, and a
name imported from a module (``from kernellab.x import f``) brings ``f`` and what ``f`` names in
its module (its helpers, transitively), not the module's other functions. A ptx job that imports
the pipeline's job setup and ``ptx`` thus does not depend on the timer that ``measure`` imports.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "kernellab"
ROOT = Path(__file__).resolve().parents[1]
WHOLE = "*"  # every function of a module may run
TOP = ""  # the module's top level only (a package imported on the way to its submodule)


def _module_file(name: str, root: Path) -> Path | None:
    """The file of the dotted module ``name`` (``kernellab.report.render``), or None when it
    is no module of the package (an attribute such as ``kernellab.io.read_json``)."""
    parts = name.split(".")[1:]
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


# an import, as read: (dotted module, imported name or None for the module itself)
Ref = tuple[str, "str | None"]


def _refs(node: ast.AST, module: str | None, is_package: bool) -> list[Ref]:
    """The kernellab modules and names an import statement imports (none for another one)."""
    if isinstance(node, ast.Import):
        return [(a.name, None) for a in node.names if a.name.split(".")[0] == PACKAGE]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:  # relative: only inside the package
        if not module:
            return []
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        base = parts[: len(parts) - (node.level - 1)]
        stem = ".".join(base + ([node.module] if node.module else []))
    elif node.module and node.module.split(".")[0] == PACKAGE:
        stem = node.module
    else:
        return []
    # ``from kernellab import pipeline``: the name may be a submodule (resolved by _Graph)
    return [(stem, a.name) if a.name != "*" else (stem, None) for a in node.names]


def _bound(node: ast.AST, refs: list[Ref]) -> dict[str, Ref]:
    """The names an import statement binds in its scope, each with what it imports."""
    if isinstance(node, ast.ImportFrom) and refs:  # one ref per name of a kernellab import
        return {(a.asname or a.name): r for a, r in zip(node.names, refs, strict=True) if a.name != "*"}
    return {}


def _names_in(nodes) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


@dataclass(frozen=True)
class _Module:
    """What one file imports and names: at its top level, and in each top-level def or class."""

    top_refs: list[Ref] = field(default_factory=list)
    top_names: set[str] = field(default_factory=set)
    bound: dict[str, Ref] = field(default_factory=dict)  # top-level ``from ... import name``
    defs: dict[str, tuple[list[Ref], set[str]]] = field(default_factory=dict)


def _read(tree: ast.Module, module: str | None, is_package: bool) -> _Module:
    mod = _Module()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # decorators, defaults and bases run when the module does; the body when it is called
            head = [*stmt.decorator_list]
            if isinstance(stmt, ast.ClassDef):
                head += [*stmt.bases, *stmt.keywords]
                body = stmt.body
            else:
                head += [*stmt.args.defaults, *(d for d in stmt.args.kw_defaults if d)]
                body = stmt.body
            mod.top_names.update(_names_in(head))
            refs = [r for node in body for n in ast.walk(node) for r in _refs(n, module, is_package)]
            mod.defs[stmt.name] = (refs, _names_in(body))
            continue
        for n in ast.walk(stmt):  # imports under a top-level if/try run with the module too
            refs = _refs(n, module, is_package)
            mod.top_refs.extend(refs)
            mod.bound.update(_bound(n, refs))
        mod.top_names.update(_names_in([stmt]))
    return mod


@functools.lru_cache(maxsize=4096)
def _parsed(path: Path, module: str | None, mtime_ns: int) -> _Module:
    """One file's imports, read once per version of it (the workflow asks for each family and
    rule: the package's modules are shared by all of them)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError:  # a family's typo: the run names it when it starts (check_families), not here
        tree = ast.Module(body=[], type_ignores=[])
    return _read(tree, module, path.name == "__init__.py")


def _with_parents(name: str) -> list[str]:
    """``kernellab.report.render`` -> itself and the packages importing it runs first."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def reachable(entries, root: str | Path = ROOT) -> list[str]:
    """The package's module files whose code can run from the Python files ``entries`` (run
    whole) through kernellab imports (transitively, every package ``__init__.py`` on the way
    included), sorted. ``root`` is the package folder."""
    root = Path(root).resolve()
    files: dict[str, Path | None] = {}  # the module files looked up so far: the files stay as they are

    def module_file(dotted: str) -> Path | None:
        if dotted not in files:
            files[dotted] = _module_file(dotted, root)
        return files[dotted]

    found: set[Path] = set()
    done: set[tuple[Path, str]] = set()
    modules: dict[Path, str | None] = {}
    todo: list[tuple[Path, str]] = []
    for e in entries:
        modules[Path(e)] = None
        todo += [(Path(e), TOP), (Path(e), WHOLE)]

    def use(ref: Ref, run: bool = True) -> None:
        """Import ``ref``; ``run``: the name it imports is used too (not only bound, as a
        top-level import's name is until the module's code names it)."""
        name, attr = ref
        for dotted in _with_parents(name)[:-1]:
            want(dotted, TOP)
        if attr is not None and module_file(f"{name}.{attr}") is not None:
            want(name, TOP)
            want(f"{name}.{attr}", WHOLE)  # ``from kernellab import pipeline``: a module
        else:
            want(name, WHOLE if attr is None else attr if run else TOP)

    def want(dotted: str, what: str) -> None:
        file = module_file(dotted)
        if file is None:
            return
        found.add(file)
        modules[file] = dotted
        if (file, TOP) not in done:
            todo.append((file, TOP))
        todo.append((file, what))

    while todo:
        path, what = todo.pop()
        if (path, what) in done:
            continue
        done.add((path, what))
        mod = _parsed(path, modules[path], path.stat().st_mtime_ns)
        if what == TOP:
            for ref in mod.top_refs:
                use(ref, run=False)
            todo += [(path, n) for n in mod.top_names if n in mod.defs or n in mod.bound]
        elif what == WHOLE:
            todo += [(path, n) for n in mod.defs]
            for name in mod.bound:  # what a module imports, a caller may reach through it
                todo.append((path, name))
        elif what in mod.defs:
            refs, names = mod.defs[what]
            for ref in refs:
                use(ref)
            todo += [(path, n) for n in names if n in mod.defs or n in mod.bound]
        elif what in mod.bound:  # a name the module imported from another (a re-export)
            use(mod.bound[what])
    return sorted(str(p) for p in found)

"""The kernellab modules a job's code can import, found by reading it (no import is run).

A job's code stamp (kernellab.workflow.manifest) lists the files whose change reruns it. Listing every
module of the package would rerun every measure job for an edit to the report; listing them by
hand would miss one sooner or later. This module follows every ``import kernellab...`` and
``from kernellab... import ...`` from a job's entry files, the ones inside functions included,
so the stamp holds each module the job can run and no other.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = "kernellab"
ROOT = Path(__file__).resolve().parents[1]


def _module_file(name: str, root: Path) -> Path | None:
    """The file of the dotted module ``name`` (``kernellab.report.render``), or None when it
    is no module of the package (an attribute such as ``kernellab.io.read_json``)."""
    parts = name.split(".")[1:]
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported(tree: ast.AST) -> set[str]:
    """The dotted names of kernellab modules (or their attributes) an AST imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.split(".")[0] == PACKAGE}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == PACKAGE:
                names.add(node.module)
                # ``from kernellab import pipeline``: the names may be submodules
                names |= {f"{node.module}.{a.name}" for a in node.names if a.name != "*"}
    return names


def _with_parents(name: str) -> list[str]:
    """``kernellab.report.render`` -> itself and the packages importing it runs first."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _relative(node: ast.ImportFrom, module: str, is_package: bool) -> set[str]:
    """The absolute names a relative import inside the package (``from .x import y``) means."""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    base = parts[: len(parts) - (node.level - 1)]
    stem = ".".join(base + ([node.module] if node.module else []))
    return {stem} | {f"{stem}.{a.name}" for a in node.names if a.name != "*"}


def reachable(entries, root: str | Path = ROOT) -> list[str]:
    """The package's module files reachable from the Python files ``entries`` through
    kernellab imports (transitively, every package ``__init__.py`` on the way included),
    sorted. ``root`` is the package folder."""
    root = Path(root).resolve()
    found: set[Path] = set()
    todo: list[tuple[Path, str | None]] = [(Path(e), None) for e in entries]
    while todo:
        path, module = todo.pop()
        for name in _names(path, module, path.stat().st_mtime_ns):
            for dotted in _with_parents(name):
                file = _module_file(dotted, root)
                if file is not None and file not in found:
                    found.add(file)
                    todo.append((file, dotted))
    return sorted(str(p) for p in found)


@functools.lru_cache(maxsize=4096)
def _names(path: Path, module: str | None, mtime_ns: int) -> frozenset[str]:
    """The kernellab names the file imports, read once per version of it (the workflow asks
    for each family and rule: the package's modules are shared by all of them)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError:  # a family's typo: the run names it when it starts (check_families), not here
        return frozenset()
    names = _imported(tree)
    if module:  # a module of the package may import its siblings relatively
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                names |= _relative(node, module, is_package)
    return frozenset(names)


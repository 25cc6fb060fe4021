"""No function of the package, the kernel families, the tests or the workflow's scripts is over 80
lines (issue 46's done-criterion): a structural check of the code's shape, read from each module's
syntax tree."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 80


def long_functions(*folders: Path) -> list[str]:
    """``path:line name (n lines)`` of each function (or method, nested or not) over LIMIT lines."""
    out = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1
                    if n > LIMIT:
                        out.append(f"{path.relative_to(folder.parent)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_the_scan_finds_a_long_function_nested_or_not(tmp_path):
    body = "\n".join(f"        x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "m.py").write_text(
        f"def short():\n    pass\n\n\nclass C:\n    def long(self):\n{body}\n\n\ndef ok():\n"
        + "\n".join(f"    y{i} = {i}" for i in range(LIMIT - 1)) + "\n"
    )
    assert long_functions(tmp_path) == [f"{tmp_path.name}/m.py:6 long ({LIMIT + 1} lines)"]


def test_no_function_is_over_80_lines():
    assert long_functions(*(ROOT / folder for folder in ("kernellab", "kernels", "tests", "workflow"))) == []

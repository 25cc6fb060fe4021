"""The layers point one way (issue 46): read from every module's imports (ast, imports inside
functions included), and parsing the workflow imports no family, torch or Triton."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    """Every absolute module name a file imports, anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def _offending(folder: Path, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    out = {}
    for path in sorted(folder.rglob("*.py")):
        bad = sorted(n for n in _imports(path) if n.startswith(forbidden))
        if bad:
            out[str(path.relative_to(ROOT))] = bad
    return out


def test_the_import_reader_sees_imports_inside_functions(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    from kernellab.engine import registry\n")
    assert "kernellab.engine.registry" in _imports(tmp_path / "m.py")


def test_no_report_module_imports_a_family_or_the_registry():
    assert _offending(ROOT / "kernellab" / "report", ("kernellab.families", "kernellab.engine.registry")) == {}


def test_parsing_the_workflow_imports_no_family_torch_or_triton(tmp_path):
    """A dry run of the default config, in a process that reports what it imported."""
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print('MODULES' + json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'triton') or m.startswith('kernellab.families.')))))\n"
        f"sys.argv = ['snakemake', '-n', '--cores', '1', '-q', '--config', 'staging={tmp_path / 's'}', "
        f"'results={tmp_path / 'r'}']\n"
        "from snakemake.cli import main\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("MODULES"))
    assert line == "MODULES[]"

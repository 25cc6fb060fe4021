"""The layers point one way (issue 46): read from every module's imports (ast, imports inside
functions included): kit imports nothing of ours above it, report no family and not the registry,
a family nothing of ours but kit; and parsing the workflow imports no family, torch or Triton."""

import ast
import subprocess
import sys
from pathlib import Path

from kernellab.engine import registry

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    """Every absolute module name a file imports, anywhere in it (``from a.b import c``: ``a.b.c``,
    which may be a module or a name of ``a.b``; relative imports stay inside their folder)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _kit(root: Path) -> list[Path]:
    return sorted((root / "kernellab" / "kit").rglob("*.py"))


def _report(root: Path) -> list[Path]:
    return sorted((root / "kernellab" / "report").rglob("*.py"))


def _families(root: Path) -> list[Path]:
    """A family's own modules, in every family folder of the default and the example kernel
    directories: what the loader imports (its tests are the engine's to run, not the family)."""
    dirs = [d for d in (root / "kernels", root / "docs" / "examples" / "my-kernels") if d.is_dir()]
    return sorted(path for folder in registry.family_folders(dirs).values() for path in folder.rglob("*.py")
                  if not path.name.startswith(registry.SKIPPED_MODULES))


# rule -> (the files it covers, whether a module name is one they may not import)
RULES = {
    "kit imports nothing of ours above it": (
        _kit, lambda n: _within(n, ("kernellab.engine", "kernellab.workflow", "kernellab.report",
                                    "kernellab.families"))),
    "report imports no family and not the registry": (
        _report, lambda n: _within(n, ("kernellab.families", "kernellab.engine.registry"))),
    "a family imports nothing of ours but the kit": (
        _families, lambda n: _within(n, ("kernellab",)) and not _within(n, ("kernellab.kit",))),
}


def _broken(root: Path) -> dict[str, dict[str, list[str]]]:
    """rule -> {file: the imports that break it}, over the tree at ``root``."""
    out = {}
    for rule, (files, forbidden) in RULES.items():
        out[rule] = {}
        for path in files(root):
            bad = sorted(n for n in _imports(path) if forbidden(n))
            if bad:
                out[rule][str(path.relative_to(root))] = bad
    return out


def test_the_import_reader_sees_imports_inside_functions(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    from kernellab.engine import registry\n")
    assert "kernellab.engine.registry" in _imports(tmp_path / "m.py")


def test_the_layers_point_one_way():
    """Issue 46's rules, read from this repository's import graph."""
    assert _broken(ROOT) == {rule: {} for rule in RULES}


def test_each_rule_catches_an_import_that_breaks_it(tmp_path):
    """The same scan over a tree where each rule is broken once, beside imports that keep it."""
    files = {
        "kernellab/kit/ok.py": "from kernellab.kit.dtypes import DTYPES\nfrom kernellab.errors import Unavailable\n",
        "kernellab/kit/bad.py": "def timer():\n    from kernellab.engine import timing\n",
        "kernellab/report/ok.py": "from kernellab.engine.runtime import TOLERANCE\n",
        "kernellab/report/bad.py": "import kernellab.families.gelu\n",
        "kernels/fam/__init__.py": "from kernellab.kit import Family\nfrom . import steps\nimport torch\n",
        "kernels/fam/steps.py": "from kernellab.engine.runtime import element_size\nfrom kernellab import errors\n",
        "kernels/fam/test_fam.py": "from kernellab.engine import registry\n",  # the engine runs a family's tests
        "docs/examples/my-kernels/mine/__init__.py": "import kernellab\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert _broken(tmp_path) == {
        "kit imports nothing of ours above it": {"kernellab/kit/bad.py": ["kernellab.engine.timing"]},
        "report imports no family and not the registry": {"kernellab/report/bad.py": ["kernellab.families.gelu"]},
        "a family imports nothing of ours but the kit": {
            "docs/examples/my-kernels/mine/__init__.py": ["kernellab"],
            "kernels/fam/steps.py": ["kernellab.engine.runtime.element_size", "kernellab.errors"]},
    }


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

"""The README is the contract users read: it must match what the code does."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_docs_document_every_summary_column():
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "summary.schema.yaml").read_text())
    doc = (ROOT / "docs" / "measuring.md").read_text()
    documented = set(re.findall(r"`([a-z_0-9]+)`", doc.split("## summary.csv columns", 1)[1]))
    missing = [c for c in schema["properties"] if c not in documented]
    assert not missing, f"docs/measuring.md lacks summary.csv columns: {missing}"


def test_readme_lists_every_status():
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "summary.schema.yaml").read_text())
    section = README.split("| status | meaning |", 1)[1].split("\n\n", 1)[0]
    for status in schema["properties"]["status"]["enum"]:
        assert f"`{status}`" in section, status

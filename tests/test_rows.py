"""The one definition of a summary row (kernellab.rows, read from summary.schema.yaml): the columns
aggregation writes, the types the report reads, the check that a row keeps to the schema."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from kernellab import rows
from kernellab.report.load import load
from kernellab.workflow import aggregate as agg

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "reference" / "cpu-x86_64"  # a real CPU set, with its jobs' bench/ and check/ tables


def _reference_rows() -> list[dict]:
    with (REF / "summary.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def _summarize(set_dir: Path) -> pd.DataFrame:
    """summary.csv's rows as the aggregate rule makes them from a set's job tables."""
    env = json.loads((set_dir / "environment.json").read_text())
    bench = agg._read_csvs(sorted((set_dir / "bench").glob("*.csv")))
    check = agg._read_csvs(sorted((set_dir / "check").glob("*.csv")))
    bounds = {r["kernel"]: r["bound"] for r in _reference_rows()}
    meta = {"hardware": env["hardware"], "run_id": env["run_id"], "torch_version": env["torch"],
            "triton_version": env["triton"], "cuda_version": env["cuda"] or "", "timestamp": env["end"]}
    return agg.summarize_run(bench, check, json.loads((set_dir / "survey.json").read_text()), bounds, meta)


def test_aggregation_writes_the_schemas_columns_in_its_order_and_values_it_allows(tmp_path):
    summary = _summarize(REF)
    assert list(summary.columns) == rows.names()
    summary.to_csv(tmp_path / "summary.csv", index=False)
    with (tmp_path / "summary.csv").open(newline="") as f:
        written = list(csv.DictReader(f))
    assert len(written) == len(_reference_rows())
    assert [p for r in written for p in rows.problems(r)] == []


def test_the_report_reads_every_column_with_the_schemas_type():
    res = load(REF.parent, REF.name)
    kinds = {c.name: c.type for c in rows.columns()}
    for r in res.summary:
        for name, kind in kinds.items():
            want = {"string": str, "number": float, "integer": float, "boolean": (bool, type(None))}[kind]
            assert isinstance(r[name], want), (name, r[name])
    # an integer column arrives as a float the pages can format (NaN where empty)
    assert all(math.isfinite(r["numel"]) and r["numel"] == int(r["numel"]) for r in res.summary)


def test_a_missing_cell_reads_as_its_columns_default():
    row = rows.typed({"kernel": "gelu", "median_us": "", "is_best": "True", "extra": "kept"})
    assert row["kernel"] == "gelu" and row["step"] == "" and row["extra"] == "kept"
    assert math.isnan(row["median_us"]) and math.isnan(row["numel"])
    assert row["is_best"] is True and row["converged"] is None


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"status": "fine"}, "status='fine' is none of ok, failed"),
        ({"numel": "4096.5"}, "numel=4096.5 is not an integer"),
        ({"is_best": "maybe"}, "is_best='maybe' is not a boolean"),
        ({"median_us": None}, "median_us is missing"),
    ],
)
def test_a_row_that_breaks_the_schema_is_named(change, named):
    good = _reference_rows()[0]
    assert rows.problems(good) == []
    bad = {k: v for k, v in {**good, **change}.items() if v is not None}
    assert any(p.startswith(named) for p in rows.problems(bad)), rows.problems(bad)

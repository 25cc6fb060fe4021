"""The summary row, defined once: the columns of ``results/<set>/summary.csv`` as
``workflow/schemas/summary.schema.yaml`` declares them (order, type, allowed values, required).

Aggregation writes these columns in this order, the report types each cell it reads by them, and
``problems`` checks a row against them. A column added to the schema is thereby written, read and
checked; nothing else lists the columns.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

SCHEMA = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "summary.schema.yaml"

# what an empty or missing cell reads as, by the schema's type (numbers are floats: NaN for none)
DEFAULTS = {"string": "", "number": math.nan, "integer": math.nan, "boolean": None}


def to_float(x) -> float:
    """float(x), or NaN for anything empty or unparsable."""
    if isinstance(x, bool):
        return math.nan
    if isinstance(x, (int, float)):
        return float(x)
    try:
        s = str(x).strip()
        return float(s) if s else math.nan
    except (TypeError, ValueError):
        return math.nan


def to_bool(x) -> bool | None:
    if isinstance(x, bool):
        return x
    s = str(x).strip().lower() if x is not None else ""
    if s in ("true", "1", "yes", "y", "t"):
        return True
    if s in ("false", "0", "no", "n", "f"):
        return False
    return None


@dataclass(frozen=True)
class Column:
    """One column of summary.csv, as the schema declares it."""

    name: str
    type: str  # the schema's: string, number, integer or boolean
    required: bool
    enum: tuple[str, ...] = ()
    description: str = ""
    given: object = None  # the schema's default, where it names one

    @property
    def default(self):
        return DEFAULTS[self.type] if self.given is None else self.given

    def parse(self, cell):
        """A cell as its typed value: str, float (NaN when empty) or bool (None when empty)."""
        if self.given is not None and (cell is None or (isinstance(cell, float) and math.isnan(cell))
                                       or str(cell).strip() == ""):
            return self.given  # an older set without the column
        if self.type == "string":
            return str(cell or "")
        if self.type == "boolean":
            return to_bool(cell)
        return to_float(cell)

    def problem(self, value) -> str | None:
        """What is wrong with a typed value of this column, or None."""
        if self.enum and value and value not in self.enum:
            return f"{self.name}={value!r} is none of {', '.join(self.enum)}"
        if self.type == "integer" and math.isfinite(value) and value != int(value):
            return f"{self.name}={value!r} is not an integer"
        return None


@functools.cache
def columns() -> tuple[Column, ...]:
    """The columns in the order summary.csv holds them."""
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    required = set(schema.get("required") or ())
    return tuple(
        Column(name, spec["type"], name in required, tuple(spec.get("enum") or ()), spec.get("description", ""),
               spec.get("default"))
        for name, spec in schema["properties"].items()
    )


def names() -> list[str]:
    return [c.name for c in columns()]


def typed(raw: dict) -> dict:
    """A row read from summary.csv (cells as text, any missing) with every column typed;
    columns the schema does not know are kept as they are."""
    out = dict(raw)
    for c in columns():
        out[c.name] = c.parse(raw.get(c.name, ""))
    return out


def problems(raw: dict) -> list[str]:
    """Where a row read from summary.csv breaks the schema: a required column missing, a value
    outside its column's allowed values, an integer column holding a fraction."""
    out = [f"{c.name} is missing" for c in columns() if c.required and c.name not in raw]
    for c in columns():
        if c.name in raw:
            cell = raw[c.name]
            if c.type == "boolean" and str(cell).strip() and to_bool(cell) is None:
                out.append(f"{c.name}={cell!r} is not a boolean")
            elif (p := c.problem(c.parse(cell))) is not None:
                out.append(p)
    return out

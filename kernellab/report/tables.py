"""A table as plain display text: the HTML and Markdown templates render the same object."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Row:
    cells: list[str]
    flag: str = ""  # "" | "bad" | "warn" | "best" | "good": CSS class; the text itself carries a mark too


@dataclass
class Table:
    columns: list[str]
    numeric: list[bool] = field(default_factory=list)  # right-aligned columns
    rows: list[Row] = field(default_factory=list)

    def __post_init__(self):
        if len(self.numeric) < len(self.columns):
            self.numeric = list(self.numeric) + [False] * (len(self.columns) - len(self.numeric))

    def add(self, cells, flag: str = "") -> None:
        cells = ["" if c is None else str(c) for c in cells]
        if len(cells) != len(self.columns):
            raise ValueError(f"row has {len(cells)} cells, table has {len(self.columns)} columns")
        self.rows.append(Row(cells, flag))

    def __bool__(self) -> bool:
        return bool(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


@dataclass(frozen=True)
class Column:
    """A table's column, declared once: its header, its kind (``text``, or ``num``: right-aligned)
    and the getter that makes its cell from one record."""

    name: str
    kind: str
    get: Callable[[Any], object]

    def __post_init__(self):
        if self.kind not in ("text", "num"):
            raise ValueError(f"column {self.name!r}: kind {self.kind!r} is neither text nor num")


def field_column(name: str, key: str | None = None) -> Column:
    """A text column that shows a record's ``key`` (its ``name`` by default) as it is."""
    return Column(name, "text", lambda r: r[key or name])


def table_of(columns: Sequence[Column], records: Iterable = (), flag: Callable[[Any], str] | None = None) -> Table:
    """A table with a row per record, each cell made by its column's getter; ``flag`` gives a row's
    CSS class."""
    t = Table([c.name for c in columns], [c.kind == "num" for c in columns])
    for r in records:
        t.add([c.get(r) for c in columns], flag(r) if flag else "")
    return t


def kv_table(pairs, key: str = "", value: str = "") -> Table:
    t = Table([key or "item", value or "value"])
    for k, v in pairs:
        t.add([k, v])
    return t


def md_table(t: Table):
    """A GitHub Markdown table; every cell escaped (pipes, HTML, backticks, newlines)."""
    from kernellab.report.fmt import Md, md_escape

    if not t:
        return Md("(none)")
    cell = lambda s: md_escape(s) or " "  # noqa: E731
    lines = [
        "| " + " | ".join(cell(c) for c in t.columns) + " |",
        "|" + "|".join(" ---: " if n else " --- " for n in t.numeric) + "|",
    ]
    for r in t.rows:
        lines.append("| " + " | ".join(cell(c) for c in r.cells) + " |")
    return Md("\n".join(lines))

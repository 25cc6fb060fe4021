"""A table as plain display text: the HTML and Markdown templates render the same object."""

from __future__ import annotations

from dataclasses import dataclass, field


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

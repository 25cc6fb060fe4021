"""The report's view objects: what the templates render (no logic)."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from kernellab.report import plots
from kernellab.report.fmt import gh_anchor, html_id
from kernellab.report.ladder import LadderView
from kernellab.report.tables import Table


@dataclass
class Image:
    name: str  # file stem in plots/
    alt: str
    caption: str
    data: bytes

    @property
    def file(self) -> str:
        return f"plots/{self.name}.png"

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.data).decode("ascii")

    @property
    def width(self) -> int:
        return plots.png_size(self.data)[0]

    @property
    def height(self) -> int:
        return plots.png_size(self.data)[1]


@dataclass
class Excerpt:
    kind: str  # ptx | sass | ...
    path: str
    lines: list[dict]  # {"no": int|None, "text": str, "hl": bool, "gap": bool}
    counts: str
    note: str = ""

    @property
    def plain(self) -> str:
        out = []
        for ln in self.lines:
            if ln["gap"]:
                out.append(f"{'':>6}   {ln['text']}")
            else:
                out.append(f"{ln['no']:>6} {'»' if ln['hl'] else ' '} {ln['text']}")
        return "\n".join(out)


@dataclass
class PtxView:
    title: str
    facts: str
    excerpts: list[Excerpt]
    missing: list[str]


@dataclass
class KernelView:
    name: str
    id: str
    metric: str
    metric_label: str
    images: list[Image] = field(default_factory=list)
    plot_note: str = ""
    cases: Table | None = None
    correctness: Table | None = None
    correctness_source: str = ""
    correctness_failed: Table | None = None
    profile: Table | None = None
    autotune_winners: Table | None = None
    autotune_all: Table | None = None
    ptx: list[PtxView] = field(default_factory=list)
    resources: Table | None = None
    ncu: Table | None = None
    ladders: list[LadderView] = field(default_factory=list)

    title: str = ""

    def __post_init__(self):
        self.title = self.title or f"Kernel: {self.name}"

    @property
    def md_anchor(self) -> str:
        return gh_anchor(self.title)

    @property
    def md_page(self) -> str:
        """The kernel's own Markdown page, beside report.md."""
        return f"report-{html_id(self.name)}.md"


@dataclass
class ComparisonView:
    other: str
    found: bool
    table: Table | None = None
    by_kernel: Table | None = None
    image: Image | None = None
    note: str = ""
    ceilings: Image | None = None  # time ratios against the ceilings' ratio, per family
    ceiling_lines: list[str] = field(default_factory=list)  # one sentence per family
    slower_clocks: Table | None = None  # compute-bound SLOWER cases with their clocks
    clocks_note: str = ""


@dataclass
class View:
    hardware: str
    device_name: str
    is_cpu: bool
    warnings: list[str]
    hardware_table: Table
    environment_table: Table
    method: list[str]
    failures: Table
    absences: Table
    skipped: Table  # the families that did not load
    summary: Table
    geomean: Table
    ours: Table  # per kernel and case: the shapes where one of the field beat our fastest kernel
    ours_shapes: Table  # per kernel, case and shape: our fastest beside PyTorch's, QuACK's and Liger's
    roofline: Image | None
    roofline_note: str
    kernels: list[KernelView]
    comparisons: list[ComparisonView]
    compare_verdicts: Table
    command: str
    versions: Table
    config_yaml: str
    config_hash: str
    git: str
    n_rows: int
    n_valid: int
    run_id: str
    ceiling_notes: list[str] = field(default_factory=list)

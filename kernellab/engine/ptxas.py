"""What ptxas says about each kernel, and the kernels' names: ``parse_ptxas`` reads the
registers, spills, stack frame, shared and constant memory from ``ptxas -v`` output;
``demangle`` and ``base_name`` name a kernel from its mangled symbol. Text in, rows out: the
compiles that produce the text are ``kernellab.engine.cuda_build``'s."""

from __future__ import annotations

import re
import shutil
import subprocess

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


def parse_ptxas(text: str) -> list[dict]:
    """Rows of ``ptxas -v`` output, one per entry function (kernel), in order.

    Keys: symbol (mangled), arch, registers, spill_stores_bytes, spill_loads_bytes,
    stack_frame_bytes, smem_bytes (0 when ptxas omits it), cmem_bytes (None when ptxas does
    not report constant memory, as ptxas 13 does not).
    """
    rows: dict[str, dict] = {}
    entry = props = None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            entry = m.group(1)
            rows[entry] = {"symbol": entry, "arch": m.group(2), "registers": None, "spill_stores_bytes": None,
                           "spill_loads_bytes": None, "stack_frame_bytes": None, "smem_bytes": 0,
                           "cmem_bytes": None}
            props = None
        elif m := _PROPS.search(line):
            props = m.group(1)
        elif m := _FRAME.search(line):
            if props in rows:
                row = rows[props]
                frame, stores, loads = map(int, m.groups())
                row.update(stack_frame_bytes=frame, spill_stores_bytes=stores, spill_loads_bytes=loads)
            props = None
        elif (m := _USED.search(line)) and entry in rows:
            row = rows[entry]
            row["registers"] = int(m.group(1))
            if s := _SMEM.search(line):
                row["smem_bytes"] = int(s.group(1))
            if c := _CMEM.search(line):
                row["cmem_bytes"] = int(c.group(1))
    return list(rows.values())


def demangle(symbols: list[str]) -> dict[str, str]:
    """Mangled -> demangled names (c++filt, or cu++filt); unchanged when neither exists."""
    tool = shutil.which("c++filt") or shutil.which("cu++filt")
    if not tool or not symbols:
        return {s: s for s in symbols}
    try:
        out = subprocess.run([tool], input="\n".join(symbols) + "\n", capture_output=True, text=True,
                             timeout=60).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {s: s for s in symbols}
    if len(out) != len(symbols):
        return {s: s for s in symbols}
    return dict(zip(symbols, out, strict=True))


def base_name(symbol: str) -> str:
    """``sgemm_warptile`` from ``_Z14sgemm_warptileILb1EEviiiPKfS1_Pf`` (global-scope names)."""
    m = re.match(r"_Z(\d+)", symbol)
    if m:
        start = m.end()
        return symbol[start:start + int(m.group(1))]
    return symbol

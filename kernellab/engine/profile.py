"""torch.profiler on one implementation at the family's representative shape.

Records the top kernels by device time (names, calls, CPU and device time) and keeps a
Chrome trace (gzip-compressed; open it in chrome://tracing or Perfetto).
"""

from __future__ import annotations

import gzip
import math
import tempfile
from pathlib import Path

from kernellab.engine import runtime
from kernellab.engine.calls import case_call
from kernellab.engine.cases import Case
from kernellab.engine.registry import Family, Impl
from kernellab.io import write_bytes

TOP = 10


def _time(evt, attr_new: str, attr_old: str) -> float:
    return float(getattr(evt, attr_new, getattr(evt, attr_old, 0.0)) or 0.0)


def profile_case(family: Family, impl: Impl, case: Case, device: str, trace_path: Path, calls: int = 3) -> list[dict]:
    from torch.profiler import ProfilerActivity, profile

    made = case_call(family, impl, case, device)
    with runtime.matmul_precision(case.dtype):
        for _ in range(3):  # warm-up: JIT, autotuning and allocation stay out of the table
            made.run()
        runtime.synchronize()
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
        with profile(activities=activities) as prof:
            for _ in range(calls):
                made.run()
            runtime.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(raw))
        write_bytes(trace_path, gzip.compress(raw.read_bytes(), mtime=0))
    events = [e for e in prof.key_averages()]
    if device == "cuda":
        key = lambda e: _time(e, "self_device_time_total", "self_cuda_time_total")  # noqa: E731
        events = [e for e in events if key(e) > 0]
    else:
        key = lambda e: _time(e, "self_cpu_time_total", "self_cpu_time_total")  # noqa: E731
    events.sort(key=lambda e: (-key(e), e.key))
    total = sum(key(e) for e in events) or math.nan
    rows = []
    for rank, e in enumerate(events[:TOP], start=1):
        rows.append({
            "rank": rank,
            "name": e.key,
            "calls": int(e.count),
            "cpu_time_us": _time(e, "cpu_time_total", "cpu_time_total"),
            "device_time_us": _time(e, "self_device_time_total", "self_cuda_time_total"),
            "pct": 100.0 * key(e) / total,
        })
    return rows

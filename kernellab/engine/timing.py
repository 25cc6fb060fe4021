"""Timing one call: warm-up by time, cold or warm samples, noise-based stop, graph replay.

On a GPU each sample is bracketed by CUDA events; in ``cold`` mode a buffer twice the L2
is read before every sample (outside the events), so each sample starts with the data in
device memory, as in nvbench and ``triton.testing.do_bench``, and with no dirty line left
in the L2: their flush writes its buffer, and the write-back of up to an L2 of dirty
lines then lands inside the next timed kernel. As in nvbench,
a spin kernel holds the stream while the host enqueues each batch (``_hold``), so the
events time the GPU's work, not the host's launch overhead (the graph replay below
still tells how much launching the call costs). Samples are
taken in batches; NVML is read between batches and a batch during which the GPU
reported thermal or power throttling is discarded and counted. A start-up transient the
warm-up did not cover (leading samples clearly slower than the rest) is left out, and the
case's ``reason`` says so (``stats.transient_cut``). Sampling stops when the relative
standard deviation of the clean samples reaches the target, or when the case's budget is
spent (``converged`` says which).

For short kernels the call is also captured into a CUDA graph and its replays timed:
the difference between eager and replayed medians is what launching the call's kernels
one by one costs on the GPU (gaps between the kernels of a multi-kernel call).

On the CPU the same loop runs with ``time.perf_counter_ns`` and a flush buffer sized
from the last-level cache.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from kernellab.engine import nvml
from kernellab.engine.stats import StopRule, summarize, transient_cut


@dataclass(frozen=True)
class TimingConfig:
    mode: str = "cold"  # cold | warm
    rel_std: float = 0.005
    min_samples: int = 10
    max_samples: int = 2000
    budget_s: float = 1.0
    warmup_s: float = 0.05
    min_warmup: int = 3
    batch: int = 10
    graph: bool = True
    graph_max_us: float = 200.0  # only time graph replay for kernels shorter than this

    @classmethod
    def from_config(cls, cfg: dict | None) -> TimingConfig:
        cfg = dict(cfg or {})
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in cfg.items() if k in known})

    def stop_rule(self) -> StopRule:
        return StopRule(self.rel_std, self.min_samples, self.max_samples, self.budget_s)


@dataclass
class Timing:
    samples_us: list[float]
    converged: bool
    mode: str
    throttled_samples: int = 0
    graph_samples_us: list[float] = field(default_factory=list)
    graph_note: str = ""
    clocks: dict = field(default_factory=dict)
    note: str = ""

    def record(self) -> dict:
        s = summarize(self.samples_us)
        rec = s.as_dict()
        g = summarize(self.graph_samples_us)
        rec.update(
            mode=self.mode,
            converged=bool(self.converged),
            throttled_samples=int(self.throttled_samples),
            graph_us=g.median,
            sm_clock_mhz=self.clocks.get("sm_clock_mhz", math.nan),
            mem_clock_mhz=self.clocks.get("mem_clock_mhz", math.nan),
            temperature_c=self.clocks.get("temperature_c", math.nan),
            power_w=self.clocks.get("power_w", math.nan),
        )
        return rec


# ------------------------------------------------------------------ L2 flushing
def llc_bytes() -> int:
    """Largest CPU cache (bytes) from sysfs; 32 MiB when unknown."""
    best = 0
    for p in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        txt = p.read_text().strip().upper()
        mult = {"K": 1024, "M": 1024**2}.get(txt[-1], 1)
        try:
            best = max(best, int(txt.rstrip("KM")) * mult)
        except ValueError:
            continue
    return best or 32 * 1024**2


class Flusher:
    """Reads a buffer twice the size of the last-level cache, evicting earlier data: the
    previous sample's dirty lines are written back during the flush, and what the cache
    holds afterwards is clean, so the timed call pays for no write-back of the flush."""

    def __init__(self, device: str):
        import torch

        if device == "cuda":
            l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or 64 * 1024**2
        else:
            l2 = llc_bytes()
        self.bytes = 2 * l2
        self.buf = torch.zeros(self.bytes // 4, dtype=torch.int32, device=device)
        self.sink = torch.empty((), dtype=torch.int32, device=device)
        self.amax = torch.amax

    def __call__(self) -> None:
        self.amax(self.buf, dim=0, out=self.sink)


# ------------------------------------------------------------------ measuring
def measure(fn: Callable[[], object], cfg: TimingConfig, device: str,
            before_sample: Callable[[], None] | None = None) -> Timing:
    """``before_sample``: run before each sample, outside its timing (a backward's gradient reset,
    do_bench's ``grad_to_none``), beside the L2 flush."""
    if cfg.mode not in ("cold", "warm"):
        raise ValueError(f"timing mode must be 'cold' or 'warm', not {cfg.mode!r}")
    flush = Flusher(device) if cfg.mode == "cold" else None
    if before_sample is not None:
        flush = _both(before_sample, flush)
    _warmup(fn, cfg, device)
    if device == "cuda":
        timing = _measure_cuda(fn, cfg, flush)
        if cfg.graph and timing.samples_us and summarize(timing.samples_us).median <= cfg.graph_max_us:
            timing.graph_samples_us, timing.graph_note = _measure_graph(fn, cfg, flush)
        return timing
    return _measure_cpu(fn, cfg, flush)


def _both(first: Callable[[], None], flush):
    def run():
        first()
        if flush is not None:
            flush()

    return run


def _warmup(fn, cfg: TimingConfig, device: str) -> None:
    import torch

    t0 = time.perf_counter()
    n = 0
    while n < cfg.min_warmup or time.perf_counter() - t0 < cfg.warmup_s:
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        n += 1
        if n >= 10_000:
            break


def _settled(samples: list[float]) -> tuple[list[float], str]:
    """The samples after a start-up transient (``stats.transient_cut``), and a note saying
    what was left out ("" when nothing was)."""
    cut = transient_cut(samples)
    if not cut:
        return samples, ""
    before, after = summarize(samples[:cut]).median, summarize(samples[cut:]).median
    return samples[cut:], (f"left out {cut} leading samples of a start-up transient "
                           f"(median {before:,.1f} us, then {after:,.1f} us)")


def _measure_cpu(fn, cfg: TimingConfig, flush) -> Timing:
    rule = cfg.stop_rule()
    samples: list[float] = []
    t0 = time.perf_counter()
    while True:
        if flush is not None:
            flush()
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1e3)
        kept, note = _settled(samples)
        stop, converged = rule.decide(kept, time.perf_counter() - t0)
        if stop:
            return Timing(kept, converged, cfg.mode, note=note)


# ``torch.cuda._sleep`` spins for a number of SM clock cycles; at most this many per second
# (the H200's boost clock is 1.98 GHz): a slower clock only holds the stream longer.
SLEEP_CYCLES_PER_S = 2.0e9
FIRST_HOLD_S = 1e-3  # the first batch's hold, before its enqueue time is known


def _hold(seconds: float) -> None:
    """nvbench's blocking kernel: a spin kernel holds the stream while the host enqueues a
    batch, so the GPU then runs flush, start event, call, end event back to back and the
    events time the GPU's work only, never a gap while the host is still launching (a
    Triton launcher's Python takes tens of microseconds, longer than a small kernel)."""
    import torch

    torch.cuda._sleep(int(seconds * SLEEP_CYCLES_PER_S))


def _measure_cuda(fn, cfg: TimingConfig, flush) -> Timing:
    import torch

    rule = cfg.stop_rule()
    clean: list[float] = []
    everything: list[float] = []
    throttled = 0
    clocks: dict = {}
    mon = nvml.Monitor()
    hold_s = FIRST_HOLD_S
    t0 = time.perf_counter()
    while True:
        before = mon.reading()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(cfg.batch)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(cfg.batch)]
        _hold(hold_s)
        t_enqueue = time.perf_counter()
        for s, e in zip(starts, ends, strict=True):
            if flush is not None:
                flush()
            s.record()
            fn()
            e.record()
        # the next batch's hold: half again this batch's enqueue time
        hold_s = 1.5 * (time.perf_counter() - t_enqueue)
        torch.cuda.synchronize()
        after = mon.reading()
        batch = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True)]
        clocks = after.clocks() or clocks
        everything.extend(batch)
        if nvml.throttled(before, after):
            throttled += len(batch)
        else:
            clean.extend(batch)
        elapsed = time.perf_counter() - t0
        kept, note = _settled(clean)
        stop, converged = rule.decide(kept, elapsed)
        # a GPU that throttles all the time would never stop on clean samples alone
        stop = stop or len(everything) >= rule.max_samples or elapsed >= rule.budget_s
        if stop:
            if len(kept) >= cfg.min_samples:
                return Timing(kept, converged, cfg.mode, throttled, clocks=clocks, note=note)
            note = (f"too few clean samples: {len(clean)} of {len(everything)} "
                    f"({throttled} taken while throttling; statistics include them)")
            return Timing(everything, False, cfg.mode, throttled, clocks=clocks, note=note)


def _measure_graph(fn, cfg: TimingConfig, flush) -> tuple[list[float], str]:
    """Median of CUDA-graph replays of one call; ([], why) when capture is not possible."""
    import torch

    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()  # one eager call on the side stream, as torch.cuda.graphs advises
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - many impls cannot be captured; say why
        torch.cuda.synchronize()
        return [], f"graph capture failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    # replays only estimate the launch overhead of an already measured call: a third
    # of the case's budget is plenty for kernels this short (hundreds of samples)
    timing = _measure_cuda(graph.replay, replace(cfg, budget_s=cfg.budget_s / 3), flush)
    return timing.samples_us, ""
# timer edit

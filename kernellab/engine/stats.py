"""Statistics of timing samples, the noise-based stopping rule and run comparison.

Pure Python/numpy, no GPU: every rule here is unit-tested on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    p20: float
    p80: float
    mean: float
    iqr: float
    stdrel: float  # sample standard deviation over the mean

    def as_dict(self, suffix: str = "_us") -> dict:
        return {
            f"median{suffix}": self.median,
            f"p20{suffix}": self.p20,
            f"p80{suffix}": self.p80,
            f"mean{suffix}": self.mean,
            f"iqr{suffix}": self.iqr,
            "stdrel": self.stdrel,
            "n_samples": self.n,
        }


NAN_SUMMARY = Summary(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)


def summarize(samples) -> Summary:
    """Median, 20th/80th percentiles, mean, inter-quartile range and relative stdev."""
    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return NAN_SUMMARY
    p20, q1, med, q3, p80 = np.percentile(x, [20, 25, 50, 75, 80])
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    stdrel = std / mean if mean > 0 else math.inf
    return Summary(int(x.size), float(med), float(p20), float(p80), mean, float(q3 - q1), stdrel)


def stdrel(samples) -> float:
    return summarize(samples).stdrel


@dataclass(frozen=True)
class StopRule:
    """nvbench-style: stop once the noise is small enough, or when the budget is spent."""

    rel_std: float = 0.005
    min_samples: int = 10
    max_samples: int = 2000
    budget_s: float = 2.0

    def decide(self, samples, elapsed_s: float) -> tuple[bool, bool]:
        """Return (stop, converged) for the clean samples gathered so far."""
        n = len(samples)
        converged = n >= self.min_samples and stdrel(samples) <= self.rel_std
        if converged:
            return True, True
        if n >= self.max_samples or elapsed_s >= self.budget_s:
            return True, False
        return False, False


def transient_cut(samples, max_fraction: float = 0.5, margin: float = 0.10) -> int:
    """How many leading samples belong to a start-up transient and are left out.

    The truncation point of MSER (White, 1997: the cut that minimises the squared deviations
    of what is kept over its count squared), searched over the leading run of samples slower
    than the whole series' median by more than ``margin`` (at most ``max_fraction`` of the
    samples), and kept only when every sample it drops is slower than the median of the rest
    by more than ``margin``. A series without a clear slow start keeps every sample; so does one
    that starts fast (leaving out fast samples would flatter the kernel). Seen on an H100: ten
    samples at 1.3-3.5 ms, then ten at 0.40 ms, whose median was 0.85 ms."""
    x = np.asarray(samples, dtype=np.float64)
    n = x.size
    if n < 4 or not np.isfinite(x).all():
        return 0
    # only the leading run of slow samples may go: a slow burst later in the series (another
    # process on the machine) would otherwise draw MSER's cut past it, and the check below
    # would then refuse the whole cut
    slow = x > (1.0 + margin) * float(np.median(x))
    run = int(np.argmin(slow)) if not slow.all() else n
    last = min(run, int(n * max_fraction))
    if last == 0:
        return 0
    # the kept suffix's sum and sum of squares for every cut d, from the end
    s1 = np.cumsum(x[::-1])[::-1]
    s2 = np.cumsum((x * x)[::-1])[::-1]
    cuts = np.arange(0, last + 1)
    kept = n - cuts
    score = (s2[cuts] - s1[cuts] ** 2 / kept) / kept.astype(np.float64) ** 2
    d = int(cuts[np.argmin(score)])
    if d == 0 or x[:d].min() <= (1.0 + margin) * float(np.median(x[d:])):
        return 0
    return d


# ---------------------------------------------------------------- comparison
SAME, FASTER, SLOWER, AMBIGUOUS = "SAME", "FASTER", "SLOWER", "AMBIGUOUS"


def classify(a: dict, b: dict, threshold: float = 0.03) -> tuple[str, float]:
    """Classify case ``b`` against baseline ``a`` from their sample intervals.

    Each of ``a`` and ``b`` holds ``median_us``, ``p20_us``, ``p80_us`` and ``stdrel``.
    Returns (verdict, relative change of the median, b over a minus one).

    - SAME: the medians differ by no more than the threshold, or than the two runs'
      own noise added together (a difference smaller than the spread is noise);
    - FASTER / SLOWER: the difference is larger than that and the p20..p80
      intervals do not overlap;
    - AMBIGUOUS: larger than the threshold but the intervals overlap.
    """
    ma, mb = float(a["median_us"]), float(b["median_us"])
    if not (ma > 0 and mb > 0 and math.isfinite(ma) and math.isfinite(mb)):
        return AMBIGUOUS, math.nan
    change = mb / ma - 1.0
    noise = _finite(a.get("stdrel")) + _finite(b.get("stdrel"))
    if abs(change) <= max(threshold, noise):
        return SAME, change
    overlap = float(a["p20_us"]) <= float(b["p80_us"]) and float(b["p20_us"]) <= float(a["p80_us"])
    if overlap:
        return AMBIGUOUS, change
    return (FASTER if change < 0 else SLOWER), change


def _finite(x) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return 0.0
    return x if math.isfinite(x) else 0.0


def geomean(values) -> float:
    x = np.asarray([v for v in values if v is not None and math.isfinite(v) and v > 0])
    return float(np.exp(np.log(x).mean())) if x.size else math.nan

"""Statistics, the noise-based stopping rule and run classification."""

import math

import numpy as np
import pytest

from kernellab.engine.stats import (
    AMBIGUOUS,
    FASTER,
    SAME,
    SLOWER,
    StopRule,
    classify,
    geomean,
    summarize,
    transient_cut,
)


def test_summary_statistics_match_numpy():
    x = np.random.default_rng(0).lognormal(3, 0.2, size=501)
    s = summarize(x)
    assert s.n == 501
    assert s.median == pytest.approx(np.median(x))
    assert s.p20 == pytest.approx(np.percentile(x, 20))
    assert s.p80 == pytest.approx(np.percentile(x, 80))
    assert s.iqr == pytest.approx(np.percentile(x, 75) - np.percentile(x, 25))
    assert s.stdrel == pytest.approx(np.std(x, ddof=1) / np.mean(x))


def test_summary_ignores_non_finite_and_handles_empty():
    s = summarize([1.0, 2.0, math.nan, 3.0, math.inf])
    assert s.n == 3 and s.median == 2.0
    assert math.isnan(summarize([]).median) and summarize([]).n == 0


def test_stop_rule_needs_min_samples_even_when_quiet():
    rule = StopRule(rel_std=0.005, min_samples=10, max_samples=100, budget_s=10)
    assert rule.decide([100.0] * 9, 0.1) == (False, False)
    assert rule.decide([100.0] * 10, 0.1) == (True, True)


def test_stop_rule_stops_on_noise_target():
    rule = StopRule(rel_std=0.01, min_samples=5, max_samples=1000, budget_s=10)
    quiet = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1]
    noisy = [100.0, 150.0, 60.0, 120.0, 80.0, 140.0]
    assert rule.decide(quiet, 0.1) == (True, True)
    assert rule.decide(noisy, 0.1) == (False, False)


def test_stop_rule_budget_and_max_samples_end_unconverged():
    rule = StopRule(rel_std=0.001, min_samples=5, max_samples=8, budget_s=1.0)
    noisy = [100.0, 150.0, 60.0, 120.0, 80.0]
    assert rule.decide(noisy, 1.5) == (True, False)
    assert rule.decide(noisy * 2, 0.1) == (True, False)


def _case(median, spread, noise=0.001):
    return {"median_us": median, "p20_us": median - spread, "p80_us": median + spread, "stdrel": noise}


def test_classify_same_within_threshold():
    assert classify(_case(100, 1), _case(102, 1), threshold=0.03)[0] == SAME


def test_classify_same_within_noise_even_above_threshold():
    assert classify(_case(100, 20, noise=0.05), _case(106, 20, noise=0.05), threshold=0.03)[0] == SAME


def test_classify_faster_and_slower_when_intervals_separate():
    verdict, change = classify(_case(100, 1), _case(80, 1), threshold=0.03)
    assert verdict == FASTER and change == pytest.approx(-0.2)
    assert classify(_case(100, 1), _case(125, 1), threshold=0.03)[0] == SLOWER


def test_classify_ambiguous_when_intervals_overlap():
    assert classify(_case(100, 10), _case(110, 10), threshold=0.03)[0] == AMBIGUOUS


def test_classify_missing_data_is_ambiguous():
    assert classify(_case(math.nan, 1), _case(100, 1))[0] == AMBIGUOUS


def test_geomean_skips_missing():
    assert geomean([2.0, 8.0, math.nan, None]) == pytest.approx(4.0)
    assert math.isnan(geomean([]))


def test_transient_cut_leaves_out_a_slow_start():
    """The H100 case that prompted it: ten samples at 1.3-3.5 ms, then ten at 0.40 ms."""
    slow = [3492, 3432, 3192, 1740, 1776, 1704, 1613, 1408, 1298, 1317]
    steady = [402, 399, 402, 404, 401, 401, 403, 401, 400, 401]
    assert transient_cut(slow + steady) == 10
    assert transient_cut([150.0, 140.0] + [100.0 + 0.1 * (i % 3) for i in range(30)]) == 2


def test_transient_cut_survives_a_slow_burst_later_in_the_series():
    """A CI machine's sleep(1 ms) loop: five 20 ms calls first, then a burst of slow calls
    hundreds of samples later (another process). Only the leading run goes, burst or not."""
    steady = [1080.0 + (i % 7) for i in range(800)]
    for at, slow in ((100, 3000.0), (300, 8000.0)):
        x = [20_000.0] * 5 + steady[:at] + [slow] * 40 + steady[at:]
        assert transient_cut(x) == 5


@pytest.mark.parametrize("seed", range(20))
def test_transient_cut_keeps_stationary_noise(seed):
    x = np.random.default_rng(seed).normal(100.0, 2.0, size=int(np.random.default_rng(seed).integers(10, 400)))
    assert transient_cut(x) == 0


def test_transient_cut_never_drops_fast_samples_or_a_late_change():
    assert transient_cut([50.0] * 5 + [100.0] * 20) == 0  # a fast start stays: dropping it would flatter
    assert transient_cut([100.0] * 20 + [300.0] * 5) == 0  # a slowdown late in the series is not a start-up
    assert transient_cut([120.0, 100.0, 100.0]) == 0  # too few to tell

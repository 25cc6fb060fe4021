"""Statistics, the noise-based stopping rule and run classification."""

import math

import numpy as np
import pytest

from kernellab.stats import AMBIGUOUS, FASTER, SAME, SLOWER, StopRule, classify, geomean, summarize


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

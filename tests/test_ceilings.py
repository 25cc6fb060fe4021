"""Ceilings measured the way the benchmark measures: the survey times each matmul ceiling with
the benchmark's own timer (warm-up by time, the median) over several sizes, and keeps the best."""

import pytest

from kernellab.engine import survey, timing


def test_survey_times_ceilings_with_the_benchmark_timer(monkeypatch):
    seen = []

    def fake_measure(fn, cfg, device):
        seen.append(cfg)  # fn is not called: a matmul here would start torch's thread pool in this
        # process, and test_harness, later, forks workers (a fork after that can hang)
        return timing.Timing([3.0, 1.0, 2.0, 100.0, 2.0], True, cfg.mode)  # median 2 us

    monkeypatch.setattr(timing, "measure", fake_measure)
    rate = survey.matmul_tflops("cpu", "fp32", sizes=(16, 32))
    assert rate == pytest.approx(2 * 32**3 / 2e-6 / 1e12)  # the best size, from the median
    assert len(seen) == 2 and all(c.mode == "warm" and c.warmup_s > 0 and c.min_samples >= 10 for c in seen)
    bw = survey.copy_bandwidth_gbps("cpu", nbytes=4096)
    assert bw == pytest.approx(2 * 4096 / 2e-6 / 1e9)


def test_a_matmul_rate_far_below_fp32_is_not_a_ceiling():
    """Issue 41: an EPYC without fp16 arithmetic measured 0.003 fp16 TFLOP/s against 0.158 in fp32.
    Such a rate is named, with why, for survey.json; one merely slower than fp32, one not measured
    and fp32 itself are not."""
    rates = {"fp32": 0.158, "tf32": 0.16, "bf16": 0.05, "fp16": 0.003, "fp8": None}
    got = survey.not_meaningful({"matmul_tflops": rates})
    assert got == {"fp16": "0.003 TFLOP/s, under 10% of this machine's fp32 rate (0.158): "
                           "no native fp16 arithmetic here"}
    assert survey.not_meaningful({"matmul_tflops": {"fp16": 0.003}}) == {}  # no fp32 rate to judge by
    assert survey.not_meaningful({}) == {}

"""Correctness checks, failure isolation and timing, with implementations that only
these tests register (deliberately broken ones among them)."""

import os
import time

import pytest
import torch

from kernellab.engine import isolate, phases, registry, runtime
from kernellab.engine.cases import Case, kernel_plan
from kernellab.engine.harness import check_against_reference, check_impl, measure_family
from kernellab.engine.registry import Impl
from kernellab.engine.timing import TimingConfig, measure

REGISTRY = registry.load()  # the families of the default kernel folders

PLAN_CFG = {"dtypes": ["fp32"], "shapes": [1000], "check_shapes": [33]}


def _example_family():
    """A concrete family for the harness to run, picked from the registry: the first with
    vectors for inputs, no parameters, PyTorch implementations and an autotuned Triton one."""
    for _, fam in sorted(REGISTRY.families.items()):
        if (1 in fam.shape_rank and not fam.params and fam.validate is None and "fp32" in fam.dtypes
                and {"torch_fused", "torch_naive", "triton"} <= set(fam.impls) and fam.impls["triton"].triton_kernels):
            return fam
    pytest.skip("no registered family fits the harness tests")


FAM = _example_family()


def _good(out, *inputs, **params):
    return FAM.impls["torch_fused"].fn(out, *inputs, **params)


def _skip_last(out, *inputs, **params):
    full = _good(torch.empty_like(out), *inputs, **params)
    out.view(-1)[:-1] = full.view(-1)[:-1]
    return out


def _wrong(out, *inputs, **params):
    return _good(out, *inputs, **params).add_(1.0)


def _raises(out, *inputs, **params):
    raise RuntimeError("deliberate failure")


def _oom(out, *inputs, **params):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 TiB")


def _hangs(out, *inputs, **params):
    time.sleep(600)


def _crashes(out, *inputs, **params):
    os._exit(3)


BROKEN = {"skip_last": _skip_last, "wrong": _wrong, "raises": _raises, "oom": _oom, "hangs": _hangs,
          "crashes": _crashes}


@pytest.fixture
def family():
    added = []
    for step, fn in BROKEN.items():
        added.append(FAM.add(Impl("triton", fn, step=step, ladder="broken")).key)
    yield FAM
    for key in added:
        FAM.remove(key)


def _plan(keys):
    return kernel_plan(FAM.name, {**PLAN_CFG, "impls": keys}, "gpu")


def check_family(family, plan, seeds, device, timeout_s):
    return measure_family(family, plan, device, timeout_s, seeds=seeds)[0]


def _by(rows, key):
    return [r for r in rows if r["impl_key"] == key]


def test_poisoned_output_catches_a_skipped_last_element(family):
    rows = check_family(family, _plan(["triton@skip_last"]), [0, 1, 2], "cpu", 60)
    assert rows and all(r["status"] == "failed" for r in rows)
    assert all("non-finite" in r["reason"] for r in rows)


def test_three_seeds_per_case_and_good_impls_pass(family):
    # the machine's device: a compiled Triton kernel takes no CPU tensor (the interpreter does)
    rows = check_family(family, _plan(["torch_fused", "triton"]), [0, 1, 2], runtime.device(), 60)
    assert len(rows) == 2 * 2 * 3  # impls x shapes (1000 and the odd 33) x seeds
    assert {r["seed"] for r in rows} == {0, 1, 2}
    assert all(r["status"] == "ok" for r in rows), [r["reason"] for r in rows if r["status"] != "ok"]


def test_each_failure_is_recorded_and_others_complete(family):
    keys = ["torch_fused", "triton@wrong", "triton@raises", "triton@oom", "triton@hangs", "triton@crashes",
            "torch_naive"]
    rows = check_family(family, _plan(keys), [0, 1, 2], "cpu", timeout_s=8)
    status = {k: {r["status"] for r in _by(rows, k)} for k in keys}
    assert status["torch_fused"] == {"ok"} and status["torch_naive"] == {"ok"}
    assert status["triton@wrong"] == {"failed"}
    assert status["triton@raises"] == {"error"}
    assert "deliberate failure" in _by(rows, "triton@raises")[0]["reason"]
    assert status["triton@oom"] == {"oom"}
    assert status["triton@hangs"] == {"timeout"}
    assert "8 s" in _by(rows, "triton@hangs")[0]["reason"]
    assert status["triton@crashes"] == {"error"}
    assert "died" in _by(rows, "triton@crashes")[0]["reason"]


def test_bench_records_failures_without_losing_other_rows(family):
    cfg = TimingConfig(budget_s=0.02, min_samples=3, warmup_s=0.0, min_warmup=1)
    rows = measure_family(family, _plan(["torch_fused", "triton@raises", "triton@hangs"]), "cpu", 5, cfg=cfg)[1]
    by = {r["impl_key"]: r for r in rows}
    assert by["torch_fused"]["status"] == "ok" and by["torch_fused"]["median_us"] > 0
    assert by["triton@raises"]["status"] == "error"
    assert by["triton@hangs"]["status"] == "timeout"


def test_measure_runs_checks_then_bench_in_one_worker(family):
    """One worker per implementation: the bench sees the process the checks warmed. (It forks
    before any test below runs torch's thread pool in this process: a fork after that can hang.)"""
    cfg = TimingConfig(budget_s=0.02, min_samples=3, warmup_s=0.0, min_warmup=1)
    phases.clear()
    checks, benches, _ = measure_family(family, _plan(["torch_fused", "triton@crashes"]), "cpu", 30, seeds=[0], cfg=cfg)
    # each worker's phases reach the job for its timeline; the crashed worker's are lost with it
    assert [(p["impl"], p["phase"]) for p in phases.recorded()] == [("torch_fused", "check"), ("torch_fused", "bench")]
    assert all(p["start"] <= p["end"] for p in phases.recorded())
    assert {(r["impl_key"], r["status"]) for r in checks} == {("torch_fused", "ok"), ("triton@crashes", "error")}
    assert {(r["impl_key"], r["status"]) for r in benches} == {("torch_fused", "ok"), ("triton@crashes", "error")}
    assert all("died" in r["reason"] for r in checks + benches if r["impl_key"] == "triton@crashes")

def test_measure_tunes_triton_in_the_same_worker_and_reports_a_crash_while_tuning(family):
    """Autotuned Triton implementations are tuned first (the interpreter times each config
    on the smallest shape), then checked; a worker that dies while tuning leaves an error
    row in the autotune table and in the checks."""
    crash = family.add(Impl("triton", _crashes, step="crash_tuning", ladder="broken",
                            triton_kernels=FAM.impls["triton"].triton_kernels)).key
    try:
        tune_cfg = TimingConfig(budget_s=0.01, min_samples=2, warmup_s=0.0, min_warmup=1)
        checks, _, tunes = measure_family(family, _plan(["triton", "torch_fused", crash]), runtime.device(), 60,
                                          seeds=[0], tune_cfg=tune_cfg)
    finally:
        family.remove(crash)
    ok = [r for r in tunes if r["impl_key"] == "triton"]
    assert ok and {r["shape"] for r in ok} == {"1000"} and sum(r["is_best"] for r in ok) == 1
    assert {r["status"] for r in checks if r["impl_key"] != crash} == {"ok"}
    died = [r for r in tunes if r["impl_key"] == crash]
    assert len(died) == 1 and died[0]["status"] == "error" and "died" in died[0]["reason"]
    assert {r["status"] for r in checks if r["impl_key"] == crash} == {"error"}

def test_case_too_large_for_memory_is_skipped_as_oom():
    fam = FAM
    huge = Case(FAM.name, "torch_fused", (1 << 45,), "fp32")
    rows = list(check_impl(fam, fam.impls["torch_fused"], [huge], [0, 1, 2], "cpu"))
    assert [r["status"] for r in rows] == ["oom"] * 3
    assert "GiB" in rows[0]["reason"]


def test_compare_reports_shape_mismatch_and_tolerance():
    ref = torch.ones(10, dtype=torch.float64)
    assert check_against_reference(torch.ones(9), ref, "fp32")["status"] == "failed"
    assert check_against_reference(torch.ones(10) * (1 + 1e-3), ref, "fp32")["status"] == "failed"
    assert check_against_reference(torch.ones(10, dtype=torch.bfloat16), ref, "bf16")["status"] == "ok"


@pytest.mark.parametrize("mode", ["cold", "warm"])
def test_cpu_timing_records_mode_and_stops(mode):
    x = torch.randn(1 << 14)
    t = measure(lambda: x * 2, TimingConfig(mode=mode, budget_s=2.0, min_samples=5, rel_std=100.0), "cpu")
    rec = t.record()
    assert rec["mode"] == mode and rec["n_samples"] >= 5 and rec["median_us"] > 0
    assert rec["converged"] is True  # a loose target is met as soon as min_samples are in


def test_cpu_timing_unconverged_when_budget_runs_out():
    t = measure(lambda: time.sleep(0.002), TimingConfig(mode="warm", budget_s=0.05, rel_std=1e-9), "cpu")
    assert t.converged is False and len(t.samples_us) >= 1


def test_cpu_timing_leaves_out_a_slow_start_and_says_so(monkeypatch):
    """The first calls after a too-short warm-up take 20 ms, the rest 1 ms: the statistics are the
    steady state's and the note names what was left out. The calls' durations are those of a
    clock the call itself advances: on a loaded machine a real 1 ms sleep can take 20."""
    import types

    from kernellab.engine import timing

    clock = [0]
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=time.perf_counter,
                                                              perf_counter_ns=lambda: clock[0]))
    calls = []

    def fn():
        calls.append(1)
        clock[0] += 20_000_000 if len(calls) <= 6 else 1_000_000

    t = measure(fn, TimingConfig(mode="warm", budget_s=1.0, min_samples=12, rel_std=0.5, warmup_s=0.0,
                                 min_warmup=1), "cpu")
    assert "left out 5 leading samples of a start-up transient" in t.note
    assert t.samples_us and set(t.samples_us) == {1000.0}  # the steady state only


# ------------------------------------------------------------------ isolate.run_batch
def _ok(n):
    def w():
        for i in range(n):
            yield {"i": i}
    return w

def _raises():
    yield {"i": 0}
    raise ValueError("bad input")

def _dies():
    yield {"i": 0}
    os._exit(3)

def test_run_batch_keeps_each_work_apart():
    res = isolate.run_batch([("a", _ok(2)), ("b", _raises), ("c", _dies), ("d", _ok(1))], timeout_s=30)
    assert res["a"] == ([{"i": 0}, {"i": 1}], "")
    assert res["b"][0] == [{"i": 0}] and "ValueError: bad input" in res["b"][1]
    assert res["c"][0] == [{"i": 0}] and "died" in res["c"][1]
    assert res["d"] == ([{"i": 0}], "")  # ran in a fresh worker after c killed the first



def _pid_work():
    yield {"pid": os.getpid(), "prepared": os.environ.get("KL_TEST_PREPARED", "")}


def test_a_prepared_batch_prepares_in_its_child_while_the_caller_goes_on(tmp_path):
    """With a preparation, the child starts at once and prepares while the caller goes on (the
    constructor does not wait for it); the works run in that same child, after it, when the
    results are asked for. A crash still gives the works after it a fresh child, unprepared."""
    mark = tmp_path / "prepared"

    def prepare():
        time.sleep(1.0)
        os.environ["KL_TEST_PREPARED"] = "yes"  # the child's own environment: the works see it
        mark.write_text(str(os.getpid()))

    t0 = time.monotonic()
    batch = isolate.Batch([("a", _pid_work), ("b", _dies), ("c", _pid_work)], timeout_s=30, prepare=prepare)
    assert time.monotonic() - t0 < 0.5 and not mark.exists()  # the caller goes on
    time.sleep(1.5)
    assert mark.exists()  # ... while the child prepares
    res = batch.results()
    (a,), (c,) = res["a"][0], res["c"][0]
    assert a == {"pid": int(mark.read_text()), "prepared": "yes"}
    assert "died" in res["b"][1]
    assert c["pid"] not in (a["pid"], os.getpid()) and c["prepared"] == ""


def test_a_prepared_batch_closed_before_its_results_stops_its_child(tmp_path):
    def prepare():
        time.sleep(60)

    batch = isolate.Batch([("a", _pid_work)], timeout_s=30, prepare=prepare)
    child = batch._prepared.proc
    assert child.is_alive()
    batch.close()
    assert not child.is_alive()


# ------------------------------------------------------------------ tuning only the benchmarked shapes
def test_check_only_shapes_run_untuned(monkeypatch):
    """Benchmarked shapes are tuned; shapes that are only checked run the first config."""
    import contextlib

    from kernellab.engine import launch

    seen = []

    @contextlib.contextmanager
    def spy():
        seen.append("untuned")
        yield

    monkeypatch.setattr(launch, "untuned", spy)
    fam = FAM
    plan = kernel_plan(FAM.name, {**PLAN_CFG, "impls": ["torch_fused"]}, "gpu")
    impl = fam.impls["torch_fused"]

    def work():  # in a worker, as in the pipeline (torch's thread pool never starts in this process)
        yield from check_impl(fam, impl, plan.cases(fam, impl, for_check=True), [0, 1], "cpu",
                              tuned_shapes=frozenset({(1000,)}))
        yield {"seen": list(seen)}

    rows, problem = isolate.run(work, 60)
    assert not problem
    assert [r["shape"] for r in rows[:-1]] == ["1000", "1000", "33", "33"]
    assert rows[-1]["seen"] == ["untuned", "untuned"]  # the two seeds of shape 33 only


@pytest.mark.gpu
def test_gpu_timing_excludes_the_hosts_launch_overhead():
    """A call that spends 200 us on the host before a microsecond kernel is timed at the
    kernel's time: the stream is held while the host enqueues each batch."""
    x = torch.randn(1 << 12, device="cuda")

    def slow_host():
        t = time.perf_counter()
        while time.perf_counter() - t < 200e-6:
            pass
        x.mul_(1.0)

    cfg = TimingConfig(budget_s=0.05, graph=False)
    fast = measure(lambda: x.mul_(1.0), cfg, "cuda").record()["median_us"]
    slow = measure(slow_host, cfg, "cuda").record()["median_us"]
    assert slow < 50 and slow < 2 * fast + 5, (fast, slow)

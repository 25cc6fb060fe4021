"""Compiling ahead: workers that prepare while another has the GPU (``isolate.run_in_turn``),
recording Triton launches from shapes only, and lowering torch.compile graphs unrun
(``kernellab.engine.prepare``)."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest
import torch

from kernellab import kit
from kernellab.engine import isolate, launch, registry
from kernellab.engine.cases import Case, kernel_plan
from kernellab.engine.harness import measure_family
from kernellab.engine.testing import in_fresh_interpreter

REGISTRY = registry.load()  # the families of the default kernel folders

_STATE: dict = {}


def _preparing(seconds: float, fail: str = "", until: Path | None = None):
    """A preparation that takes ``seconds``, or (``until``) waits at most 30 s for that file."""
    def prepare():
        _STATE.update(prepared_at=time.time(), cpus_preparing=sorted(os.sched_getaffinity(0)))
        if fail == "raise":
            raise ValueError("cannot prepare")
        if fail == "die":
            os._exit(3)
        deadline = time.time() + (30 if until else seconds)
        while time.time() < deadline and not (until and until.exists()):
            time.sleep(0.01)
        _STATE.update(prepared=True, saw_marker=bool(until and until.exists()))

    return prepare


def _work(name: str, marker: Path | None = None):
    def work():
        if marker is not None:
            marker.touch()
        yield {"name": name, "prepared": _STATE.get("prepared", False), "saw_marker": _STATE.get("saw_marker"),
               "cpus_preparing": _STATE.get("cpus_preparing"), "cpus": sorted(os.sched_getaffinity(0))}

    return work


def test_a_prepared_work_waits_while_a_ready_one_behind_it_takes_the_turn(tmp_path):
    """The first work's preparation lasts until the second work has run: it can only end
    (without its 30 s timeout) if the second one took the turn while it prepared."""
    marker = tmp_path / "eager-ran"
    works = [isolate.Work(_work("slow"), _preparing(0, until=marker)), isolate.Work(_work("eager", marker))]
    done = list(isolate.run_in_turn(works, 60, ahead=2))
    assert [i for i, _, _ in done] == [1, 0]  # the eager work did not wait for the compiler
    (slow,), problem = done[1][1], done[1][2]
    (eager,) = done[0][1]
    assert not problem and slow["prepared"] and slow["saw_marker"] and not eager["prepared"]
    everything = sorted(os.sched_getaffinity(0))
    assert slow["cpus"] == everything  # its turn has every core again
    if len(everything) > 1:  # preparing, it leaves the first core to the work being timed
        assert slow["cpus_preparing"] == everything[1:]


def test_without_ahead_nothing_is_prepared_and_the_order_holds():
    works = [isolate.Work(_work("a"), _preparing(0.0)), isolate.Work(_work("b"))]
    done = list(isolate.run_in_turn(works, 30, ahead=0))
    assert [i for i, _, _ in done] == [0, 1]
    assert not any(rec["prepared"] for _, records, _ in done for rec in records)


def test_a_failed_preparation_leaves_the_work_to_compile_in_its_turn():
    ((_, records, problem),) = list(isolate.run_in_turn([isolate.Work(_work("w"), _preparing(0, "raise"))], 30,
                                                        ahead=1))
    assert not problem and records[0]["name"] == "w" and not records[0]["prepared"]


def test_a_worker_that_dies_while_preparing_is_reported_and_the_rest_run():
    works = [isolate.Work(_work("dies"), _preparing(0, "die")), isolate.Work(_work("after"))]
    done = {i: (records, problem) for i, records, problem in isolate.run_in_turn(works, 30, ahead=1)}
    assert done[0][0] == [] and "died" in done[0][1]
    assert done[1][0][0]["name"] == "after" and not done[1][1]


# ------------------------------------------------------------------ in a measure job
def _example_family():
    for _, fam in sorted(REGISTRY.families.items()):
        if 1 in fam.shape_rank and not fam.params and {"torch_fused", "torch_naive"} <= set(fam.impls):
            return fam
    pytest.skip("no registered family with eager implementations")


def test_measure_rows_keep_the_plans_order_whatever_order_the_workers_ran_in(monkeypatch, caplog):
    """The first implementation prepares (slowly) and so runs last; the tables still list
    the implementations in the plan's order."""
    import logging

    from kernellab.engine import prepare

    fam = _example_family()
    keys = ["torch_fused", "torch_naive"]
    monkeypatch.setattr(prepare, "preparation",
                        lambda family, impl, *a: _preparing(1.0) if impl.key == "torch_fused" else None)
    plan = kernel_plan(fam.name, {"dtypes": ["fp32"], "shapes": [1000], "check_shapes": [33], "impls": keys}, "gpu")
    with caplog.at_level(logging.INFO, logger="kernellab"):
        checks, _, _ = measure_family(fam, plan, "cpu", 60, seeds=[0], ahead=2)
    ran = [key for m in caplog.messages for key in keys if m.startswith(f"{fam.name} {key}: ")]
    assert ran == ["torch_naive", "torch_fused"]  # the workers ran out of the plan's order ...
    # ... not the rows
    assert [r["impl_key"] for r in checks] == ["torch_fused", "torch_fused", "torch_naive", "torch_naive"]
    assert {r["status"] for r in checks} == {"ok"}


# ------------------------------------------------------------------ shapes only
def test_meta_inputs_are_shapes_and_dtypes_only():
    x = kit.randn((4, 3), "bf16", "meta", 0, scale=2.0, offset=1.0)
    assert x.device.type == "meta" and x.shape == (4, 3) and x.dtype == torch.bfloat16
    assert kit.generator("meta", 0) is None and kit.generator("cpu", 0) is not None


def _row_family_with_triton_steps():
    for _, fam in sorted(REGISTRY.families.items()):
        forward = [i for i in fam.impls.values() if i.backend == "triton" and i.pass_ == "forward"]
        plain = [i for i in forward if not i.triton_kernels]
        tuned = [i for i in forward if i.triton_kernels]
        if plain and tuned and 2 in fam.shape_rank:
            return fam, plain[0], tuned[0]
    pytest.skip("no family with a plain and an autotuned Triton implementation")


def test_recording_captures_plain_and_autotuned_launches_and_runs_neither():
    """What compiling ahead compiles: every Triton launch of the call, recorded rather than
    run (a poisoned output stays poisoned), tensors replaced by their dtype."""
    fam, plain, tuned = _row_family_with_triton_steps()
    for impl in (plain, tuned):
        inputs = fam.make_inputs((8, 512), "fp32", "cpu", 0)
        out = fam.out_like(*inputs).fill_(math.nan)
        with launch.recording() as recorded:
            impl.fn(out, *inputs)
        assert recorded, impl.key
        for _fn, configs, args, _ in recorded:
            if impl is plain:
                assert configs == [None]
            else:
                assert configs and all(c is not None for c in configs)
            assert torch.float32 in args and not any(isinstance(a, torch.Tensor) for a in args)
        assert out.isnan().all(), f"{impl.key} ran a kernel while recording"


def test_check_only_shapes_record_only_the_first_config():
    from kernellab.engine.autotune import recorded_launches

    fam, _, tuned = _row_family_with_triton_steps()
    case = Case(fam.name, tuned.key, (8, 512), "fp32")
    every = recorded_launches(fam, tuned, case, "meta")
    first = recorded_launches(fam, tuned, case, "meta", launch.untuned)
    assert len(every[0][1]) > 1 and len(first[0][1]) == 1 and first[0][1][0] is every[0][1][0]


_LOWER_THEN_CALL = """
import json, torch
from torch._dynamo.utils import counters
from kernellab import kit
from kernellab.engine.launch import compile_only

def bump(x):
    x.add_(1.0)  # what the graph does shows on its input
    return torch.relu(x) * 2.0

fn = kit.compiled(bump)
x = torch.randn(64)
before = x.clone()
compile_only(fn, None, x)
unrun = bool(torch.equal(x, before))
ahead = counters["stats"]["unique_graphs"]
got = fn(None, x)
print(json.dumps({"unrun": unrun, "ahead": ahead, "by_the_call": counters["stats"]["unique_graphs"] - ahead,
                  "right": bool(torch.equal(x, before + 1) and torch.equal(got, torch.relu(before + 1) * 2))}))
"""


@pytest.mark.slow  # torch.compile's Inductor, or Snakemake, end to end: CI's second stage
def test_compiling_ahead_runs_nothing_and_the_real_call_compiles_nothing_more(tmp_path):
    """``compile_only`` traces and compiles the graph but does not run it (the input its graph
    mutates is left alone); the real call afterwards, in the same process, finds the graph in
    Dynamo's cache: nothing is traced or compiled again, and it runs (the input is mutated, the
    result right)."""
    got = in_fresh_interpreter(_LOWER_THEN_CALL, {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path)})
    assert got == {"unrun": True, "ahead": 1, "by_the_call": 0, "right": True}
    assert not launch.compiles_ahead(kit.compiled(torch.relu, mode="max-autotune"))
    assert not launch.compiles_ahead(kit.compiled(torch.relu, backend="eager"))
    assert launch.compiles_ahead(kit.compiled(torch.relu, fullgraph=True))


@pytest.mark.parametrize("name", sorted(n for n, f in REGISTRY.families.items() if "compiled" in f.impls))
def test_every_familys_compiled_implementation_lowers_ahead(name):
    """``compiled`` (torch.compile's default mode) is lowered while earlier implementations
    are timed; one that cannot be compiles every graph in its GPU turn (dropout's 76 cases
    took 25 s there on the H100, the other families' 3 to 8 s)."""
    assert launch.compiles_ahead(REGISTRY.family(name).impls["compiled"].fn)


_LOWER_BACKWARD_THEN_CALL = """
import json, torch
from torch._dynamo.utils import counters
from kernellab.engine.launch import compile_only
from kernellab.kit.grads import autograd_backward

def forward(x, w):  # intermediates saved for the backward: what AOTAutograd would donate
    return torch.softmax(torch.tanh(x) * w, -1).sin()

x, w, dy = torch.randn(8, 32), torch.randn(32), torch.randn(8, 32)
save, fn = autograd_backward(forward, ("dx", "dw"), compile=True)
compile_only(save, None, x, w)
ahead = dict(counters["inductor"])
saved = save(x, w)
fn(None, dy, saved, x, w)
dx, dw = fn(None, dy, saved, x, w)  # the same graph again, as a benchmark does
x64, w64 = x.double().requires_grad_(), w.double().requires_grad_()
rx, rw = torch.autograd.grad(forward(x64, w64), (x64, w64), dy.double())
print(json.dumps({"ahead": ahead.get("fxgraph_cache_miss", 0),
                  "by_the_calls": counters["inductor"]["fxgraph_cache_miss"] + counters["inductor"]["fxgraph_cache_hit"]
                                  - ahead.get("fxgraph_cache_miss", 0) - ahead.get("fxgraph_cache_hit", 0),
                  "right": bool(torch.allclose(dx.double(), rx, atol=1e-5)
                                and torch.allclose(dw.double(), rw, atol=1e-4))}))
"""


@pytest.mark.slow  # torch.compile's Inductor: CI's second stage
def test_compiling_a_backward_ahead_compiles_its_backward_graph_too(tmp_path):
    """A compiled backward's preparation compiles the forward with inputs that require a
    gradient, and AOTAutograd compiles the backward with it, not at the first backward call:
    the real forward and backward afterwards compile nothing (no Inductor compile, not even a
    cache lookup) and are right, the backward called again and again on its kept graph (a
    backward compiled with donated buffers refuses that)."""
    got = in_fresh_interpreter(_LOWER_BACKWARD_THEN_CALL, {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path),
                                                         "TORCHINDUCTOR_FX_GRAPH_CACHE": "1"})
    assert got == {"ahead": 2, "by_the_calls": 0, "right": True}


@pytest.mark.parametrize("key", sorted(f"{n}/{k}" for n, f in REGISTRY.families.items()
                                       for k, i in f.impls.items() if i.backward and i.backend == "compile"))
def test_every_compiled_backward_lowers_ahead(key):
    name, impl = key.split("/")
    assert launch.compiles_ahead(REGISTRY.family(name).impls[impl].save)


def test_a_triton_backward_records_its_launches_from_shapes_and_runs_none():
    """A backward step compiles ahead as a forward does: its saved state made from ``meta``
    inputs, every launch of its call recorded, none run."""
    from kernellab.engine.autotune import recorded_launches

    found = [(f, i) for _, f in sorted(REGISTRY.families.items()) for i in f.impls.values()
             if i.backward and i.backend == "triton"]
    assert found, "no Triton backward among the default families"
    tiny = {1: (4096,), 2: (8, 512), 4: (1, 2, 64, 16)}
    for fam, impl in found:
        shape = tiny[max(fam.shape_rank)]
        dtype = fam.dtypes[0]
        params = tuple(sorted(fam.first_params().items()))
        # a save that launches Triton (attention's: the fa2 forward) is recorded with the rest: run on
        # meta tensors it wrote through null pointers, and the worker's CUDA context was lost
        recorded = recorded_launches(fam, impl, Case(fam.name, impl.key, shape, dtype, params), "meta")
        assert recorded, impl.key
        assert not any(isinstance(a, torch.Tensor) for _fn, _c, args, _ in recorded for a in args)
        if impl.save is not None and impl.pass_ == "backward" and fam.name == "attention":
            assert len({fn for fn, *_ in recorded}) >= 2, (impl.key, "the saved forward's kernel is recorded")


def test_a_peer_compiling_on_first_launch_is_called_inside_a_capture_until_one_fails(monkeypatch):
    """``prepare.captured`` makes each case's call inside a CUDA graph capture (here a stand-in that
    notes it), the inputs drawn with no seeded generator while capturing; the first call that fails
    ends the preparation, and the cases after it are left for the turn, not called."""
    import contextlib

    from kernellab.engine import prepare
    from kernellab.kit import data

    state = {"capturing": False, "graphs": 0}
    seen = []

    @contextlib.contextmanager
    def graph(g, capture_error_mode="global"):
        assert capture_error_mode == "relaxed"
        state["capturing"] = True
        try:
            yield
        finally:
            state["capturing"] = False

    class Graph:
        def __init__(self):
            state["graphs"] += 1

    generators = []
    real_generator = data.generator
    monkeypatch.setattr(torch.cuda, "graph", graph)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", Graph)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(data, "capturing", lambda: state["capturing"])
    monkeypatch.setattr(data, "generator", lambda device, seed: generators.append(real_generator(device, seed))
                        or generators[-1])

    def library(out, x):
        seen.append((tuple(x.shape), state["capturing"]))
        if x.shape[0] == 3:
            raise RuntimeError("operation not permitted when stream is capturing")
        return out.copy_(x)

    fam = kit.Family(title="t", dtypes=("fp32",), make_inputs=lambda shape, dtype, device, seed:
                     (kit.randn(shape, dtype, device, seed),), reference=lambda x: x,
                     out_like=lambda x: torch.empty_like(x))
    fam.add("torch_fused", library)
    fam.named("t")
    cases = [Case("t", "", shape, "fp32", ()) for shape in ((4, 8), (3, 5), (2, 6))]
    prepare.captured(fam, fam.impls["torch_fused"], cases, "cpu")
    assert seen == [((4, 8), True), ((3, 5), True)], "the case after the failing one is not called"
    assert state["graphs"] == 2 and generators == [None, None]


# ------------------------------------------------------------------ on the GPU
@pytest.mark.gpu
def test_preparations_launch_no_kernel_on_the_gpu(tmp_path):
    """The preparations of a row family's Triton and torch.compile implementations, under
    the CUDA profiler, with caches of their own (a cold compile): no kernel and no memset;
    Triton's no memcpy either, Inductor's lowering only memcpys under 2 us each (Dynamo's
    and AOTAutograd's bookkeeping: about 0.7 us each on the H200)."""
    from torch.profiler import ProfilerActivity, profile

    from kernellab.engine.prepare import preparation

    fam = REGISTRY.family("softmax")
    plan = kernel_plan("softmax", {"dtypes": ["bf16"], "shapes": ["64x2048"], "check_shapes": ["3x1001"]}, "gpu")

    def work():
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor")
        os.environ["TRITON_CACHE_DIR"] = str(tmp_path / "triton")
        for key in ("triton@autotuned", "triton@fused_row", "compiled"):
            impl = fam.impls[key]
            tuned = plan.cases(fam, impl)
            untuned = [c for c in plan.cases(fam, impl, for_check=True) if c not in tuned]
            prepare = preparation(fam, impl, tuned, untuned, "cuda", 4)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                prepare()
            yield {"impl": key, "gpu_events": [(e.name, e.time_range.end - e.time_range.start) for e in prof.events()
                                               if e.device_type.name == "CUDA"]}

    records, problem = isolate.run(work, 600)
    assert not problem, problem
    events = {r["impl"]: r["gpu_events"] for r in records}
    assert list(events) == ["triton@autotuned", "triton@fused_row", "compiled"]
    assert events["triton@autotuned"] == [] and events["triton@fused_row"] == []
    assert all(name.startswith("Memcpy") and us < 2.0 for name, us in events["compiled"]), events["compiled"]



@pytest.mark.gpu
def test_graphs_compiled_ahead_are_the_ones_the_turn_runs(tmp_path):
    """The torch.compile preparations (softmax forward and backward, attention's FlexAttention
    forward and backward) fill the worker's own Dynamo cache: the turn's checks afterwards trace
    and compile no graph (Dynamo's count unchanged) and pass."""
    from torch._dynamo.utils import counters

    from kernellab.engine.harness import run_case_check
    from kernellab.engine.prepare import preparation

    runs = [("softmax", key, {"dtypes": ["bf16"], "shapes": ["64x2048"], "check_shapes": ["3x1001"]})
            for key in ("compiled", "compiled.bwd")]
    runs += [("attention", key, {"dtypes": ["bf16"], "shapes": ["1x2x256x64"], "check_shapes": ["1x1x100x64"]})
             for key in ("compiled@flex", "compiled@flex.bwd")]

    def work():
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor")
        os.environ["TRITON_CACHE_DIR"] = str(tmp_path / "triton")
        for name, key, cfg in runs:
            fam = REGISTRY.family(name)
            impl = fam.impls[key]
            plan = kernel_plan(name, cfg, "gpu")
            cases = plan.cases(fam, impl, for_check=True)
            before = counters["stats"]["unique_graphs"]
            preparation(fam, impl, cases, [], "cuda", 1)()
            ahead = counters["stats"]["unique_graphs"]
            statuses = [run_case_check(fam, impl, case, 0, "cuda")["status"] for case in cases]
            yield {"impl": key, "ahead": ahead - before, "in_turn": counters["stats"]["unique_graphs"] - ahead,
                   "statuses": sorted(set(statuses))}

    records, problem = isolate.run(work, 900)
    assert not problem, problem
    assert [r["impl"] for r in records] == [key for _, key, _ in runs]
    for r in records:
        assert r["ahead"] > 0 and r["in_turn"] == 0 and r["statuses"] == ["ok"], r


def test_a_peer_compiling_on_fake_tensors_is_called_on_them_forward_and_backward():
    """``prepare.on_fake_tensors`` makes each case's call under FakeTensorMode: the forward and the
    backward (its saved forward, then autograd's backward through the library's function) see fake
    tensors of each case's shape and dtype, the seeded draws included; a case that fails is left
    for its turn and does not stop the others."""
    from torch._subclasses.fake_tensor import FakeTensor

    from kernellab.engine.prepare import on_fake_tensors

    seen = []

    class Library(torch.autograd.Function):  # stands for the peer: it compiles per shape, here it notes it
        @staticmethod
        def forward(ctx, x, scale):
            seen.append(("fwd", type(x), tuple(x.shape), x.dtype))
            if x.shape[0] == 3:
                raise ValueError("no kernel for three rows")
            return x * scale

        @staticmethod
        def backward(ctx, dy):
            seen.append(("bwd", type(dy), tuple(dy.shape), dy.dtype))
            return dy * 2, None

    fam = kit.Family(title="t", dtypes=("fp32", "bf16"), grads=("dx",), params={"scale": [2.0]},
                     make_inputs=lambda shape, dtype, device, seed, scale=2.0: (kit.randn(shape, dtype, device, seed),),
                     reference=lambda x, scale=2.0: x * scale, out_like=lambda x, scale=2.0: torch.empty_like(x))
    fam.add("torch_fused", lambda out, x, scale=2.0: out.copy_(Library.apply(x, scale)))
    fam.add_autograd("torch_fused", lambda x, scale=2.0: Library.apply(x, scale), passes=("backward",))
    fam.named("t")
    cases = [Case("t", "", shape, dtype, (("scale", 2.0),)) for shape, dtype in (((4, 8), "fp32"), ((3, 5), "fp32"),
                                                                               ((2, 6), "bf16"))]
    for key in ("torch_fused", "torch_fused.bwd"):
        seen.clear()
        on_fake_tensors(fam, fam.impls[key], cases, "cpu")
        assert all(kind is FakeTensor for _, kind, _, _ in seen), seen
        calls = [(d, shape, dtype) for d, _, shape, dtype in seen]
        if key == "torch_fused":
            assert calls == [("fwd", (4, 8), torch.float32), ("fwd", (3, 5), torch.float32),
                             ("fwd", (2, 6), torch.bfloat16)]
        else:  # the three rows' case fails at its saved forward; the others run their backward
            assert calls == [("fwd", (4, 8), torch.float32), ("bwd", (4, 8), torch.float32),
                             ("fwd", (3, 5), torch.float32), ("fwd", (2, 6), torch.bfloat16),
                             ("bwd", (2, 6), torch.bfloat16)]


@pytest.mark.gpu
def test_peers_compiled_in_a_capture_run_nothing_and_their_turn_compiles_nothing_more(tmp_path):
    """Liger's and QuACK's preparations (``prepare.captured``) on RMSNorm, forward and backward, from
    cold caches: no kernel on the GPU while they compile, and the real calls after them compile
    nothing more (Triton's compiles and CuTe's, counted)."""
    pytest.importorskip("liger_kernel")
    pytest.importorskip("quack")
    from torch.profiler import ProfilerActivity, profile

    from kernellab.engine.calls import case_call
    from kernellab.engine.prepare import preparation

    fam = REGISTRY.family("rms_norm")
    cases = [Case("rms_norm", "", shape, dtype, ()) for shape, dtype in (((300, 4096), "bf16"), ((64, 2048), "fp32"))]

    def work():
        os.environ["TRITON_CACHE_DIR"] = str(tmp_path / "triton")
        os.environ["QUACK_CACHE_DIR"] = str(tmp_path / "quack")
        import cutlass.cute as cute
        import triton

        compiles = []
        triton.knobs.runtime.jit_post_compile_hook = lambda *args, **kwargs: compiles.append("triton")
        cute_compile = cute.compile

        def counted(*args, **kwargs):
            compiles.append("cute")
            return cute_compile(*args, **kwargs)

        cute.compile = counted
        for key in ("liger", "liger.bwd", "quack", "quack.bwd"):
            compiles.clear()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                preparation(fam, fam.impls[key], cases, [], "cuda", 1)()
                torch.cuda.synchronize()
            ahead = list(compiles)
            compiles.clear()
            for case in cases:
                case_call(fam, fam.impls[key], case, "cuda").run()
            torch.cuda.synchronize()
            yield {"impl": key, "ahead": ahead, "in_turn": list(compiles),
                   "gpu_events": [e.name for e in prof.events() if e.device_type.name == "CUDA"]}

    records, problem = isolate.run(work, 600)
    assert not problem, problem
    assert [r["impl"] for r in records] == ["liger", "liger.bwd", "quack", "quack.bwd"]
    for r in records:
        assert r["gpu_events"] == [], r
        assert r["ahead"], r
        assert r["in_turn"] == [], r

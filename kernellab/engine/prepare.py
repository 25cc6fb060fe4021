"""Compiling an implementation's kernels before its turn on the GPU.

A measure job runs its implementations one at a time, each in a worker of its own
(``isolate.run_in_turn``). Most of a Triton or torch.compile worker's time is CPU work
that touches no GPU: importing Inductor, compiling Triton kernels and autotune configs,
lowering graphs, compiling a peer's kernels. ``preparation`` gives that work, so
the worker can do it on the spare cores while earlier implementations are timed, and only
time when its turn comes.

A preparation launches no kernel on the GPU, so it does not disturb the timing beside it:
Triton kernels are compiled from arguments on the ``meta`` device (shapes and dtypes, no
memory), torch.compile graphs are traced and compiled by the worker's own torch.compile
without being run (compiling does make a few sub-microsecond memcpys per graph, seen under
the CUDA profiler), so the turn's calls find them in Dynamo's cache, a peer
that compiles for fake tensors (FlashAttention-4) is called on them, and one that compiles
on a kernel's first launch (Liger, QuACK) is called inside a CUDA graph capture that is
never replayed. What it compiles lands in the worker's own caches and the run's disk
caches, where the timed part finds it. A preparation is only a head start: if it fails,
the worker compiles as it runs and reports what goes wrong there.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Callable

from kernellab.engine import runtime
from kernellab.engine.cases import Case
from kernellab.engine.registry import Family, Impl
from kernellab.kit.peers import PEERS, load

log = logging.getLogger("kernellab")


def preparation(family: Family, impl: Impl, tuned: list[Case], untuned: list[Case], device: str,
                workers: int) -> Callable[[], None] | None:
    """What ``impl`` can compile ahead for its cases (``tuned``: the benchmarked ones, whose
    autotune configs are all compiled; ``untuned``: the check-only ones, first config only),
    or None when there is nothing (eager PyTorch, CUDA, or no GPU)."""
    if device != "cuda":
        return None
    if impl.backend == "triton":
        from kernellab.engine.autotune import precompile

        return lambda: precompile(family, impl, tuned, "meta", workers, untuned)
    if impl.backend == "compile":
        return lambda: _compiled(family, impl, tuned + untuned)
    peer = PEERS.get(impl.backend)
    if peer is not None and peer.compiles_on_fake_tensors:
        return lambda: on_fake_tensors(family, impl, tuned + untuned, device)
    if peer is not None and peer.compiles_when_captured:
        return lambda: captured(family, impl, tuned + untuned, device)
    return None


def on_fake_tensors(family: Family, impl: Impl, cases: list[Case], device: str) -> None:
    """Make each case's call (its saved forward too, for a backward) on fake tensors of its
    shapes on ``device``: a library that compiles per shape and launches nothing for fake
    tensors (``Peer.compiles_on_fake_tensors``) fills its caches, and the turn finds them.
    A case that fails is left for its turn; the others are still made."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    _calls_within(family, impl, cases, device, FakeTensorMode, "on fake tensors", stop_at_failure=False)


def captured(family: Family, impl: Impl, cases: list[Case], device: str) -> None:
    """Make each case's call inside a CUDA graph capture that is never replayed: a library that
    compiles each kernel on its first launch and launches on torch's current stream
    (``Peer.compiles_when_captured``: Liger's Triton kernels, QuACK's) compiles them there, and
    its launches, like the inputs' draws, go into a graph that is dropped unrun. The capture is
    relaxed (a kernel's first launch loads its module), and its inputs come from the default
    generator (``kit.data.generator``): a seeded one cannot be captured, and a compile needs
    shapes, not values. A call that cannot be captured (a sync, a host read) ends the
    preparation: the rest are left for the turn rather than captured again on a stream that
    refused once."""
    import torch

    def capture():
        return torch.cuda.graph(torch.cuda.CUDAGraph(), capture_error_mode="relaxed")

    _calls_within(family, impl, cases, device, capture, "in a CUDA graph capture", stop_at_failure=True)
    torch.cuda.empty_cache()


def _calls_within(family: Family, impl: Impl, cases: list[Case], device: str, within: Callable, where: str,
                  stop_at_failure: bool) -> None:
    """Each case's call inside a fresh ``within()`` context, after importing the peer's library
    outside it (nothing it makes at import is fake or captured); a failing case is left for its
    turn, and with ``stop_at_failure`` so are the cases after it."""
    from kernellab.engine.calls import case_call

    t0 = time.perf_counter()
    peer = PEERS.get(impl.backend)
    if peer is not None:
        load(peer, peer.module)
    done, first = 0, ""
    for case in cases:
        try:
            with within(), runtime.matmul_precision(case.dtype):
                case_call(family, impl, case, device).run()
            done += 1
        except Exception as exc:  # noqa: BLE001 - its turn compiles it and reports what fails
            first = first or f"{case.shape} {case.dtype}: {type(exc).__name__}: {exc}"[:300]
            if stop_at_failure:
                break
    log.info("%s %s: compiled %d cases ahead %s (%d left for its turn%s) in %.1f s", family.name, impl.key, done,
             where, len(cases) - done, f"; first: {first}" if first else "", time.perf_counter() - t0)


def _compiled(family: Family, impl: Impl, cases: list[Case]) -> None:
    """Import Inductor (seconds per process) and compile every case's graphs without running
    them (``launch.compile_only``), into the worker's Dynamo cache where its turn's calls find
    them, traced and compiled; max-autotune times its choices on the GPU, so it only imports.
    A graph whose compiling wants to time something on the GPU (Inductor's benchmarker:
    matmul padding, say) or breaks (Dynamo would run the rest eagerly) is left for the
    worker's turn."""
    import torch

    from kernellab.engine.launch import compile_only, compiles_ahead

    t0 = time.perf_counter()
    import torch._inductor.compile_fx  # noqa: F401

    lowered, left = 0, 0
    target = impl.save if impl.backward else impl.fn  # a backward's graph is its saved forward's
    if compiles_ahead(target):
        with _gpu_left_alone():
            for case in cases:
                params = case.param_dict
                meta = family.make_inputs(case.shape, case.dtype, "meta", 0, **params)
                # real, uninitialised tensors: Dynamo traces their metadata; nothing is launched
                inputs = [torch.empty_like(t, device="cuda") if isinstance(t, torch.Tensor) else t for t in meta]
                out = family.out_like(*inputs, **params)
                try:
                    with runtime.matmul_precision(case.dtype):
                        compile_only(target, out, *inputs, **params)
                    lowered += 1
                except Exception:  # noqa: BLE001 - its turn compiles it and reports what fails
                    left += 1
                del inputs, out
    log.info("%s %s: imported Inductor and compiled %d cases' graphs ahead (%d left for its turn) in %.1f s",
             family.name, impl.key, lowered, left, time.perf_counter() - t0)


class GpuTimingWhilePreparing(RuntimeError):
    pass


@contextlib.contextmanager
def _gpu_left_alone():
    """While lowering, Inductor's benchmarker refuses to run: timing kernels now would share
    the GPU with the worker being timed. (What lowering still puts on the GPU, under the
    CUDA profiler: pairs of sub-microsecond memcpys per graph, Dynamo's and AOTAutograd's
    bookkeeping, no kernel.)"""
    from torch._inductor.runtime.benchmarking import benchmarker

    def refuse(*args, **kwargs):
        raise GpuTimingWhilePreparing("no GPU timing while compiling ahead")

    names = ("benchmark", "benchmark_gpu")
    try:
        for name in names:
            setattr(benchmarker, name, refuse)
        yield
    finally:
        for name in names:
            benchmarker.__dict__.pop(name, None)

"""kernellab.kit.triton: what the project's autotune wrapper keys a tuning on and times it with."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl

from kernellab.kit.triton import autotune, constexpr_args


@triton.jit
def _flagged(x_ptr, n, BLOCK: tl.constexpr, FLAG: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, tl.where(FLAG, x + 1, x), mask=offs < n)


CONFIGS = [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})]


def test_constexpr_args_of_a_jit_function():
    assert constexpr_args(_flagged) == ["BLOCK", "FLAG"]


def test_tuning_is_keyed_on_the_flags_no_config_sets():
    """Two autotuners of one kernel and one config list, called with FLAG False and True,
    must not share a tuning: FLAG joins the key (BLOCK, which the configs set, does not)."""
    plain = autotune(CONFIGS, key=["n"])(_flagged)
    flagged = autotune(CONFIGS, key=["n"])(_flagged)
    assert plain.keys == flagged.keys == ["n", "FLAG"]
    assert autotune(CONFIGS, key=["n", "FLAG"])(_flagged).keys == ["n", "FLAG"]


def test_autotune_times_each_config_with_the_timer_the_engine_installs(monkeypatch, tmp_path):
    """The kit imports no engine: loading families installs the CUDA ops, the tuning phase the
    benchmark's timer, and an autotuner made before that (a family's module-level kernel) times its
    configs with it all the same."""
    from kernellab.engine import cuda_ext, launch, registry
    from kernellab.kit.hooks import HOOKS

    monkeypatch.setattr(HOOKS, "autotune_timer", None)
    monkeypatch.setattr(HOOKS, "cuda_ops", None)
    tuner = autotune(CONFIGS, key=["n"])(_flagged)
    registry.load([tmp_path])  # a kernel directory without families: only the hooks
    assert HOOKS.cuda_ops is cuda_ext.ops and HOOKS.autotune_timer is None
    launch.time_autotuning()
    assert HOOKS.autotune_timer is launch.bench_config
    calls = []
    monkeypatch.setattr(HOOKS, "autotune_timer", lambda fn, quantiles: calls.append(quantiles) or [1.0])
    assert tuner.do_bench(lambda: None, quantiles=(0.5,)) == [1.0] and calls == [(0.5,)]


def test_a_cuda_op_without_the_engine_says_it_is_unavailable(monkeypatch):
    from kernellab.errors import Unavailable
    from kernellab.kit import cuda_op
    from kernellab.kit.hooks import HOOKS

    monkeypatch.setattr(HOOKS, "cuda_ops", None)
    with pytest.raises(Unavailable, match="no CUDA extension loaded"):
        cuda_op("silu", "silu", "vec4")(None)

"""kernellab.kit.triton: what the project's autotune wrapper keys a tuning on."""

from __future__ import annotations

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

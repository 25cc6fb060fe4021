"""The shared helpers of ``kernellab.kit`` that family folders build on."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("flag", ["LOOPED", "ONLINE"])
def test_row_configs_pruned_by_row_length(flag):
    """Short rows: one pass only, one config per (rows per program, warps); up to 32768
    columns: one row per program in one pass, or the loop in chunks up to the whole row;
    wider: the loop only."""
    from kernellab.kit import prune_row_tile_configs, row_tile_configs

    configs = row_tile_configs(flag)

    def kept(block):
        return prune_row_tile_configs(configs, {}, BLOCK_COLS=block)

    short = kept(1024)
    assert short and not any(c.kwargs[flag] for c in short)
    assert len({(max(c.kwargs["TILE"] // 1024, 1), c.num_warps) for c in short}) == len(short)
    for block in (16384, 32768):
        wide = kept(block)
        assert {c.num_warps for c in wide if not c.kwargs[flag]} == {16, 32}
        assert all(c.kwargs["TILE"] == 1 for c in wide if not c.kwargs[flag])
        loops = [(min(c.kwargs["TILE"], block), c.num_warps) for c in wide if c.kwargs[flag]]
        assert len(set(loops)) == len(loops), "one loop config per (chunk, warps)"
        assert {warps for chunk, warps in loops if chunk == block} == {16, 32}, "whole-row chunks"
        assert {chunk for chunk, _ in loops} >= {1024, 2048, 4096, 8192, block}
    assert kept(65536) and all(c.kwargs[flag] for c in kept(65536))

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


def test_chunk_loop_configs_and_their_pruning():
    """Each (chunk, warps) once per KNOWN_TRIP value asked for, none without the key when not
    asked; on a row shorter than a chunk the chunk is clamped to the row and the configs that
    then coincide are kept once."""
    from kernellab.kit import chunk_loop_configs, prune_chunk_configs

    shapes = [(2048, 8), (8192, 16), (8192, 32), (32768, 32)]
    plain = chunk_loop_configs("CHUNK", shapes, ROWS=1)
    assert [(c.kwargs, c.num_warps) for c in plain] == [({"CHUNK": ch, "ROWS": 1}, w) for ch, w in shapes]
    both = chunk_loop_configs("TILE", shapes, (False, True), LOOPED=True)
    assert len(both) == 2 * len(shapes)
    assert {(c.kwargs["TILE"], c.num_warps, c.kwargs["KNOWN_TRIP"]) for c in both} == {
        (ch, w, k) for ch, w in shapes for k in (False, True)}
    assert prune_chunk_configs(both, {}, BLOCK_COLS=65536) == both
    short = prune_chunk_configs(both, {}, BLOCK_COLS=4096)
    # 8192 and 32768 at 32 warps both become 4096 at 32 warps
    assert sorted((c.kwargs["TILE"], c.num_warps, c.kwargs["KNOWN_TRIP"]) for c in short) == sorted(
        [(2048, 8, k) for k in (False, True)] + [(8192, 16, k) for k in (False, True)]
        + [(8192, 32, k) for k in (False, True)])


def test_row_shape_names_the_family_and_the_problem():
    import torch

    from kernellab.kit import row_shape

    x = torch.zeros(4, 6)
    assert row_shape("fam", x, torch.zeros(4, 6), torch.zeros(4)) == (4, 6)
    with pytest.raises(ValueError, match=r"fam takes a 2-D \(rows, cols\) tensor, got shape \(2, 3, 4\)"):
        row_shape("fam", torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="fam: the last dimension of the input and the output must be contiguous"):
        row_shape("fam", torch.zeros(6, 4).t(), x)
    with pytest.raises(ValueError, match="fam: the last dimension"):
        row_shape("fam", x, torch.zeros(6, 4).t())


ROW_FAMILIES = ["layer_norm", "rms_norm", "row_sum", "softmax"]


@pytest.mark.parametrize("name", ROW_FAMILIES)
def test_row_families_refuse_a_strided_row_before_launching(name):
    """Each Triton implementation of a row family, given the family's own inputs with the
    row's elements strided, refuses them with the family's name; a launch would have read
    the wrong elements (or, under the interpreter, read them without a word)."""
    from kernellab.engine import registry
    REGISTRY = registry.load()

    fam = REGISTRY.families[name]
    impls = [impl for impl in fam.impls.values() if impl.backend == "triton" and impl.pass_ == "forward"]
    assert impls
    for impl in impls:
        dtype = next(d for d in fam.dtypes if impl.supports(d))
        x, *rest = fam.make_inputs((4, 8), dtype, "cpu", 0)
        out = fam.out_like(x, *rest)
        strided = x.new_zeros(8, 4).t().copy_(x)
        with pytest.raises(ValueError, match=f"{name}: the last dimension"):
            impl.fn(out, strided, *rest)


@pytest.mark.gpu
def test_sm_count_on_meta_is_the_gpus_so_launches_recorded_ahead_are_the_real_ones():
    """A backward sizes its grid by the SM count; compiling ahead records its launches from meta
    inputs, and a grid (or a constexpr) sized otherwise there compiled kernels its turn never ran."""
    import torch

    from kernellab.kit.partials import sm_count

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert sm_count("meta") == sm_count("cuda") == sm_count(torch.device("cuda", 0)) == sms

"""What a kernel family's folder builds on: inputs, byte counts, adapters for torch,
torch.compile and CUDA implementations, and the row-kernel autotune helpers.

A family's ``__init__.py`` imports from here and from ``kernellab.engine.registry``
(``Family``, ``Impl``, ``register_family``) and ``kernellab.engine.triton_utils``."""

from __future__ import annotations

import math
import sys
from typing import Callable

from kernellab.engine import cuda_ext
from kernellab.engine.runtime import element_size, torch_dtype


def numel(shape) -> int:
    return int(math.prod(shape))


def randn(shape, dtype: str, device: str, seed: int, scale: float = 1.0, offset: float = 0.0):
    """Standard-normal data from a seeded generator on the target device, drawn in fp32
    then cast (drawing 2^28 numbers on the host and copying them over took seconds)."""
    import torch

    x = torch.randn(tuple(shape), generator=generator(device, seed), dtype=torch.float32, device=device)
    return (x * scale + offset).to(dtype=torch_dtype(dtype))


def generator(device: str, seed: int):
    """A generator on ``device`` seeded with ``seed``; None on ``meta``, where inputs are
    shapes and dtypes only (what ``kernellab.engine.prepare`` compiles from)."""
    import torch

    if torch.device(device).type == "meta":
        return None
    return torch.Generator(device=device).manual_seed(int(seed))


def elementwise_bytes(n_in: int, n_out: int = 1) -> Callable:
    """Bytes of an elementwise op: each input read once, the output written once."""

    def count(shape, dtype, **_):
        return (n_in + n_out) * numel(shape) * element_size(dtype)

    return count


def returns_new(fn: Callable) -> Callable:
    """Adapt ``fn(*inputs)`` (a chain of PyTorch ops) to the ``(out, *inputs)`` convention."""

    def run(out, *inputs, **params):
        return fn(*inputs, **params)

    run.__name__ = getattr(fn, "__name__", "run")
    return run


def compiled(fn: Callable, adapt: Callable | None = None, **compile_kwargs) -> Callable:
    """``torch.compile(fn, dynamic=False)``, built on first call so that importing stays cheap.

    ``adapt(*inputs, **params) -> (inputs, params)``, where given, runs before each call, outside
    the graph: what ``fn`` cannot trace (seeding the device's generator, say) and the arguments
    it takes. Lowering ahead (``compile_only``) adapts the same way, so it compiles the graph the
    call will ask for.

    Static shapes: each shape is compiled for itself, as in a model whose shapes are fixed.
    With the default (automatic dynamic shapes) the worker's second shape would make Dynamo
    recompile one shape-generic graph for all the rest, and Inductor's generic kernels for
    it loop where a static one holds the row on chip: at 4096 x 32768 its layer norm took
    2.5x (fp32) and 3.9x (bf16) the static kernel's time on the H200, a number about dynamic
    shapes rather than about what torch.compile makes of a fixed model."""
    holder: dict = {}

    def build(key: str, **kwargs):
        if key not in holder:
            import torch

            # one worker sees every shape and dtype of its family: allow the recompiles,
            # and never fall back to eager silently (that would time PyTorch, not Inductor)
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
            torch._dynamo.config.fail_on_recompile_limit_hit = True
            holder[key] = torch.compile(fn, **{"dynamic": False, **kwargs})
        return holder[key]

    def adapted(inputs, params):
        return adapt(*inputs, **params) if adapt is not None else (inputs, params)

    def run(out, *inputs, **params):
        inputs, params = adapted(inputs, params)
        return build("fn", **compile_kwargs)(*inputs, **params)

    def lower(out, *inputs, **params):
        inputs, params = adapted(inputs, params)
        build("lower", backend=_lower_only, fullgraph=True)(*inputs, **params)

    if "mode" not in compile_kwargs and "backend" not in compile_kwargs:
        run.lower = lower  # max-autotune times its choices on the GPU while it compiles
    return run


def compiles_ahead(fn: Callable) -> bool:
    """Whether ``fn`` (from ``compiled``) can lower its graphs without running them."""
    return callable(getattr(fn, "lower", None))


def compile_only(fn: Callable, out, *inputs, **params) -> None:
    """Lower ``fn``'s graph for these inputs with Inductor, into the run's caches, without
    running it (``kernellab.engine.prepare``); the real call then finds the compiled graph there."""
    fn.lower(out, *inputs, **params)


def _lower_only(gm, example_inputs):
    """A Dynamo backend: Inductor compiles the graph (and writes its caches) exactly as
    ``torch.compile``'s default backend would, then the graph is not run: the call returns
    uninitialised outputs of the traced shapes, and no kernel is launched."""
    import torch
    from torch._inductor.compile_fx import compile_fx

    compile_fx(gm, example_inputs)
    (result,) = next(n for n in gm.graph.nodes if n.op == "output").args
    vals = [a.meta.get("example_value", a.meta.get("val")) if isinstance(a, torch.fx.Node) else a
            for a in (result if isinstance(result, (tuple, list)) else (result,))]

    def empty(*args):
        return tuple(torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device=v.device)
                     if isinstance(v, torch.Tensor) else v for v in vals)

    return empty


def cuda_op(name: str, variant: str, family: str | None = None) -> Callable:
    """Call ``torch.ops.kernellab.<name>(*inputs, out, *extra, variant)``, an op that ``family``'s
    binding.cpp defines (default: the family whose folder calls this)."""
    if family is None:  # kernellab.families.<family>[.module]: the calling folder's family
        family = sys._getframe(1).f_globals.get("__name__", "").split(".")[2:3] or [name]
        family = family[0]

    def run(out, *inputs, **params):
        getattr(cuda_ext.ops(family), name)(*inputs, out, *params.values(), variant)
        return out

    return run


# Row kernels (softmax, layer norm, RMSNorm) hold a row in registers in one pass, or loop
# over it in chunks (a streaming path, named by a constexpr flag: LOOPED, ONLINE). Rows up
# to REGISTER_ROW_COLS (padded) columns may take one pass; up to ONE_PASS_MAX_COLS the
# autotuner also times one pass with one row per 16 or 32 warps (32 to 64 values per
# thread); the loop is timed at every width, with chunks up to the whole row: a loop of one
# chunk reads the row twice, the second time from the L2, and keeps no value live across
# the reduction (what Inductor's reductions do at 32768 columns). Every config has
# num_stages=1: a loop with no dot gains nothing from the pipeliner's shared-memory stages,
# which only cost occupancy.
REGISTER_ROW_COLS = 8192
ONE_PASS_MAX_COLS = 32768
LOOP_MIN_COLS = 2048  # shorter rows always fit in one pass
ROW_STAGES = 1


def row_tile_configs(flag: str):
    """Autotune configs of a row kernel whose streaming path is selected by the constexpr
    ``flag``. TILE: elements per program (one pass: rows = TILE // BLOCK_COLS, at least
    one) or the chunk (looped), x warps. ``prune_row_tile_configs`` keeps the ones that
    fit a row length; the interpreter runs the first of those."""
    import triton

    def cfg(tile, looped, warps):
        return triton.Config({"TILE": tile, flag: looped}, num_warps=warps, num_stages=ROW_STAGES)

    tiles = [(tile, warps) for tile in (2048, 4096, 8192, 1024) for warps in (4, 8, 16)]
    long_chunks = [(tile, warps) for tile in (16384, 32768) for warps in (16, 32)]
    return ([cfg(tile, False, warps) for tile, warps in tiles]
            + [cfg(1, False, warps) for warps in (16, 32)]
            + [cfg(tile, True, warps) for tile, warps in tiles + long_chunks])


def prune_row_tile_configs(configs, named_args, **kwargs):
    """The configs that fit rows of BLOCK_COLS (padded) columns: one pass up to
    REGISTER_ROW_COLS (one config per rows-per-program and warp count), one pass with one
    row per program up to ONE_PASS_MAX_COLS, and the loop with chunks of at most the row
    (one config per chunk and warp count) from LOOP_MIN_COLS."""
    block_cols = kwargs["BLOCK_COLS"]
    flag = next(k for k in configs[0].kwargs if k != "TILE")
    seen, kept = set(), []
    for cfg in configs:
        tile, looped = cfg.kwargs["TILE"], cfg.kwargs[flag]
        if looped:
            if block_cols < LOOP_MIN_COLS:
                continue
            key = ("loop", min(tile, block_cols), cfg.num_warps)
        elif block_cols > ONE_PASS_MAX_COLS or (block_cols > REGISTER_ROW_COLS and tile != 1):
            continue
        else:
            key = ("one", rows_per_program(tile, block_cols), cfg.num_warps)
        if key not in seen:
            seen.add(key)
            kept.append(cfg)
    return kept


def chunk_loop_configs(chunk_key: str, shapes, known_trip=None, **fixed):
    """Configs of a loop kernel that streams a row in chunks: one per (chunk, warps) of
    ``shapes``, with ``fixed`` meta-parameters, and, for a kernel that takes it, one per
    KNOWN_TRIP of ``known_trip`` (the constexpr that bounds the loops by the padded row
    instead of n_cols, for the tuner to choose per width)."""
    import triton

    knowns = [{}] if known_trip is None else [{"KNOWN_TRIP": k} for k in known_trip]
    return [triton.Config({chunk_key: chunk, **known, **fixed}, num_warps=warps, num_stages=ROW_STAGES)
            for chunk, warps in shapes for known in knowns]


def prune_chunk_configs(configs, named_args, **kwargs):
    """The configs that fit rows of BLOCK_COLS (padded) columns: the chunk (CHUNK, else TILE)
    clamped to the row, one config per distinct result."""
    block_cols = kwargs["BLOCK_COLS"]
    seen, kept = set(), []
    for cfg in configs:
        meta = dict(cfg.kwargs)
        chunk_key = "CHUNK" if "CHUNK" in meta else "TILE"
        meta[chunk_key] = min(meta[chunk_key], block_cols)
        key = (tuple(sorted(meta.items())), cfg.num_warps)
        if key not in seen:
            seen.add(key)
            kept.append(cfg)
    return kept


def row_shape(family: str, x, *outs) -> tuple[int, int]:
    """(rows, cols) of a row kernel's input. Refuses what the row kernels would index
    wrongly: an input that is not 2-D, or an input or output whose last dimension is strided."""
    if x.dim() != 2:
        raise ValueError(f"{family} takes a 2-D (rows, cols) tensor, got shape {tuple(x.shape)}")
    if any(t.stride(-1) != 1 for t in (x, *outs)):
        raise ValueError(f"{family}: the last dimension of the input and the output must be contiguous")
    rows, cols = x.shape
    return rows, cols


def rows_per_program(tile: int, block_cols: int) -> int:
    """Rows of BLOCK_COLS columns that a one-pass program of TILE elements holds."""
    return max(tile // block_cols, 1)


def row_grid(rows: int, block_cols: int, flag: str):
    """The launch grid of a row kernel for the config's meta-parameters: one program per
    row when looping, else one per ``rows_per_program`` rows."""
    import triton

    return lambda meta: (rows if meta[flag] else triton.cdiv(rows, rows_per_program(meta["TILE"], block_cols)),)

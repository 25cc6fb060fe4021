"""Row kernels (softmax, layer norm, RMSNorm): shapes, grids, the autotune configs that fit a row,
the argument types and specs the PTX report cross-compiles, and the byte model."""

from __future__ import annotations

from kernellab.kit.data import numel
from kernellab.kit.dtypes import element_size, triton_type
from kernellab.kit.triton import CompileSpec

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


# the row kernels' integer arguments, all multiples of 16 in the cross-compiled cases
ROW_DIVISIBLE = ("n_rows", "n_cols", "stride_x", "stride_out")


def row_signature(dtype: str, vectors: tuple[str, ...] = (), eps: bool = False) -> dict:
    """The argument types of a row kernel, for cross-compiling: x_ptr, one ``<v>_ptr`` per
    per-column vector (``("w", "b")``), out_ptr, the shape and strides, then an fp32 ``eps``."""
    ty = triton_type(dtype)
    sig = {"x_ptr": f"*{ty}", **{f"{v}_ptr": f"*{ty}" for v in vectors}, "out_ptr": f"*{ty}", "n_rows": "i32",
           "n_cols": "i32", "stride_x": "i32", "stride_out": "i32"}
    if eps:
        sig["eps"] = "fp32"
    return sig


def row_spec(kernel, sig: dict, block_cols: int, tile: int, flag: str, looped: bool, warps: int,
             label: str) -> CompileSpec:
    """A row kernel's config to cross-compile: BLOCK_COLS, TILE and its streaming ``flag``."""
    return CompileSpec(kernel, sig, {"BLOCK_COLS": block_cols, "TILE": tile, flag: looped}, num_warps=warps,
                       label=label, divisible=ROW_DIVISIBLE)


def row_tile_specs(kernel, sig: dict, flag: str = "LOOPED") -> list[CompileSpec]:
    """What the PTX report shows of a kernel tuned over ``row_tile_configs(flag)``: 4096 columns
    in one pass, and 32768 looped in chunks of 4096, both with 8 warps."""
    return [row_spec(kernel, sig, 4096, 4096, flag, False, 8, "cols=4096: one row per program, num_warps=8"),
            row_spec(kernel, sig, 32768, 4096, flag, True, 8, "cols=32768: looped, chunk 4096, num_warps=8")]


def row_bytes(vectors: int = 0):
    """Bytes of a row kernel: x read and the output written once, and ``vectors`` per-column
    vectors (a weight, a bias) read once."""

    def count(shape, dtype, **_):
        return (2 * numel(shape) + vectors * shape[-1]) * element_size(dtype)

    return count

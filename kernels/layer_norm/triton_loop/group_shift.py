"""Layer norm's Triton ladder, step group_shift: the group kernel over one row per program, its statistics merged
in two reductions."""

from __future__ import annotations

from kernellab.kit import step

from ..loop import layer_norm_group_kernel, layer_norm_loop, loop_specs, loop_tuned

layer_norm_group_shift = loop_tuned(layer_norm_group_kernel, (1,))
_run = layer_norm_loop(layer_norm_group_shift, True)


# the spec: (rows per program, chunk, warps) at 32768 columns, as the tuner picked there
@step(
    triton_kernels=(layer_norm_group_shift,),
    compile_specs=loop_specs(1, 16384, 16, True),
)
def group_shift(out, x, w, b):
    return _run(out, x, w, b)

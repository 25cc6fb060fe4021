"""Layer norm's Triton ladder, step shifted: the loop kernel (shifted sums) tuned over one row per program."""

from __future__ import annotations

from kernellab.kit import step

from ..loop import layer_norm_loop, layer_norm_loop_kernel, loop_specs, loop_tuned

layer_norm_shifted = loop_tuned(layer_norm_loop_kernel, (1,))
_run = layer_norm_loop(layer_norm_shifted, False)


# the spec: (rows per program, chunk, warps) at 32768 columns, as the tuner picked there
@step(
    triton_kernels=(layer_norm_shifted,),
    compile_specs=loop_specs(1, 16384, 16, False),
)
def shifted(out, x, w, b):
    return _run(out, x, w, b)

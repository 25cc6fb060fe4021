"""Layer norm's Triton ladder, step one_merge: the group kernel with its statistics merged in one reduction
(Chan's update)."""

from __future__ import annotations

from kernellab.kit import step

from ..loop import layer_norm_group_kernel, layer_norm_loop, loop_specs, loop_tuned

layer_norm_one_merge = loop_tuned(layer_norm_group_kernel, (1,))
_run = layer_norm_loop(layer_norm_one_merge, True, ONE_MERGE=True)


# the spec: (rows per program, chunk, warps) at 32768 columns, as the tuner picked there
@step(
    triton_kernels=(layer_norm_one_merge,),
    compile_specs=loop_specs(1, 16384, 16, True, ONE_MERGE=True),
)
def one_merge(out, x, w, b):
    return _run(out, x, w, b)

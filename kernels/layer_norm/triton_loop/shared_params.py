"""Layer norm's Triton ladder, step shared_params: the loop kernel tuned over two or four rows per program,
sharing the weight and bias loads."""

from __future__ import annotations

from kernellab.kit import step

from ..loop import layer_norm_loop, layer_norm_loop_kernel, loop_specs, loop_tuned

layer_norm_shared_params = loop_tuned(layer_norm_loop_kernel, (2, 4))
_run = layer_norm_loop(layer_norm_shared_params, False)


# the spec: (rows per program, chunk, warps) at 32768 columns, as the tuner picked there
@step(
    triton_kernels=(layer_norm_shared_params,),
    compile_specs=loop_specs(2, 8192, 16, False),
)
def shared_params(out, x, w, b):
    return _run(out, x, w, b)

"""Layer norm's Triton ladder, step known_trip: one_merge with the loops' trip counts known to the compiler where
the tuner finds it pays."""

from __future__ import annotations

from kernellab.kit import step

from ..loop import KNOWN_TRIP_SHAPES, layer_norm_group_kernel, layer_norm_loop, loop_specs, loop_tuned

layer_norm_known_trip = loop_tuned(layer_norm_group_kernel, (1,), KNOWN_TRIP_SHAPES, (False, True))
_run = layer_norm_loop(layer_norm_known_trip, True, ONE_MERGE=True)


# the spec: (rows per program, chunk, warps) at 32768 columns, as the tuner picked there
@step(
    triton_kernels=(layer_norm_known_trip,),
    compile_specs=loop_specs(1, 16384, 16, True, ONE_MERGE=True, EVEN=True, KNOWN_TRIP=True),
)
def known_trip(out, x, w, b):
    return _run(out, x, w, b)

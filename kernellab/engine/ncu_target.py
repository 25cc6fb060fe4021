"""The process ncu profiles: each step warmed up, then one call in an NVTX range.

``python -m kernellab.engine.ncu_target BUILD_JSONS STATUS_JSON KERNEL_DIRS KERNEL:IMPL_KEY:DTYPE:SHAPE[:PARAMS] ...``

(BUILD_JSONS: the families' build.json files, KERNEL_DIRS: the kernel folders, each joined by
``os.pathsep``.)

Inside each step's range a marker kernel (``torch.cuda._sleep``) runs first, so the
profiled kernels can be told apart by step (``ncu.split_steps``). A step that raises
still gets its marker and range (keeping the others aligned); its error goes to
STATUS_JSON, one record per step.
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> int:
    build_json, status_json, kernel_dirs, *steps = argv
    from kernellab.engine import cuda_ext, registry, runtime
    from kernellab.engine.calls import case_call
    from kernellab.engine.cases import Case, parse_shape
    from kernellab.engine.ncu import RANGE, parse_step_spec

    device = runtime.setup()
    cuda_ext.configure(build_json.split(os.pathsep))
    import torch

    reg = registry.load(kernel_dirs.split(os.pathsep))
    status = []
    for spec in steps:
        kernel, impl_key, dtype, shape, given = parse_step_spec(spec)
        call = None
        try:
            family = reg.family(kernel)
            params = tuple(sorted((family.first_params() if given is None else given).items()))
            made = case_call(family, reg.impl(kernel, impl_key), Case(kernel, impl_key, parse_shape(shape), dtype,
                                                                     params), device)
            call = made.run
            with runtime.matmul_precision(dtype):
                for _ in range(3):
                    call()
            runtime.synchronize()
            status.append({"status": "ok", "reason": ""})
        except Exception as exc:  # noqa: BLE001 - recorded; the other steps still run
            call = None
            status.append({"status": "error", "reason": f"{type(exc).__name__}: {exc}"[:300]})
        torch.cuda.nvtx.range_push(RANGE)
        torch.cuda._sleep(1)
        if call is not None:
            with runtime.matmul_precision(dtype):
                call()
        runtime.synchronize()
        torch.cuda.nvtx.range_pop()
        del call
        torch.cuda.empty_cache()
    with open(status_json, "w") as fh:
        json.dump(status, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The process ncu profiles: one implementation, warmed up, then one call in an NVTX range.

``python -m kernellab.ncu_target KERNEL IMPL_KEY SHAPE DTYPE BUILD_JSON``
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    kernel, impl_key, shape, dtype, build_json = argv
    from kernellab import cuda_ext, registry, runtime
    from kernellab.cases import parse_shape
    from kernellab.ncu import RANGE

    device = runtime.setup()
    cuda_ext.configure(build_json)
    import torch

    family = registry.family(kernel)
    impl = registry.impl(kernel, impl_key)
    params = {k: v[0] for k, v in family.params.items()}
    inputs = family.make_inputs(parse_shape(shape), dtype, device, 0, **params)
    out = family.out_like(*inputs, **params)
    with runtime.matmul_precision(dtype):
        for _ in range(3):
            impl.fn(out, *inputs, **params)
        runtime.synchronize()
        torch.cuda.nvtx.range_push(RANGE)
        impl.fn(out, *inputs, **params)
        runtime.synchronize()
        torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

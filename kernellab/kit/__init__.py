"""The kit: everything a kernel family's folder imports, from this one module.

A family is a folder (``kernels/<name>/`` or one of your own ``kernel_dirs``) whose
``__init__.py`` sets ``FAMILY = Family(...)``; the folder's name is the family's. Its concepts:

- ``Family``: the problem. Its inputs (``make_inputs``), the float64 ``reference``, the
  ``bytes_moved`` and ``flops`` the roofline reads, the empty output (``out_like``), its dtypes,
  parameters and accepted shapes, and whether it is ``bound`` by memory or compute.
- An implementation: one way to compute it, ``fn(out, *inputs, **params) -> result``, of one
  kind (``torch_naive``, ``torch_fused``, ``triton``, ``cuda``, ``compiled``, ``liger``,
  ``quack``), added with ``FAMILY.add(kind, fn, ...)``. The backend follows from the kind.
- A ladder step: one implementation on an optimization ladder. Its order, idea, prediction and
  finding are its entry in the folder's ``ladder.yaml``, the one place a ladder is ordered.
  A Triton step is a function marked ``@step`` in a file of the ladder's folder
  (``<ladder>/<step>.py``); a CUDA step is a file ``<ladder>/<step>.cu`` that registers its
  launcher under its name (``KL_STEP``, kernels/common/steps.h), run by
  ``Family.cuda_step(family, step)`` (default: ``cuda_op(family, family, step)``). A CUDA ladder
  declared with ``FAMILY.add_cuda_backward(ladder, save=...)`` is a backward's: its steps run
  ``cuda_backward_op(family, f"{family}_bwd", step)``.
- Data and counts: ``randn`` (seeded, on the target device), ``generator``, ``numel``,
  ``elementwise_bytes``; the dtypes: ``element_size``, ``torch_dtype``, ``triton_type`` and the
  default ``TOLERANCE`` of each.
- Adapters: ``returns_new`` (a chain of PyTorch ops), ``compiled`` (``torch.compile``),
  ``cuda_op`` (an op of the family's CUDA extension; ``cuda_backward_op``, a backward's),
  ``cuda_ops`` (the extension's ops).
- Triton: ``autotune`` (``triton.autotune`` with the benchmark's timer), ``launch`` and
  ``launch_config`` (which run under the interpreter too; ``forced_config``: the config the
  engine imposes), ``elementwise_configs`` (a 1-D kernel's BLOCK x warps), ``triton_interpreted``,
  ``CompileSpec`` (what the PTX/SASS report cross-compiles), and the row-kernel helpers (``row_*``).
- ``peers``: Liger-Kernel's and QuACK's kernels, as implementations beside ours.
- ``builds_on``: another family's package, loaded first; ``builds_on("rms_norm").FAMILY.fork()``
  is that family's problem and field (PyTorch's, torch.compile's, the libraries') for your steps.
- ``Unavailable``: raise it when a kernel cannot run here (a library not installed), with why.

The kit imports nothing of ours above it: the engine plugs in what a family needs of it at run
time (``kernellab.kit.hooks``); how the engine runs the kit's launches (forced configs, untuned
and recorded runs, compiling ahead) is ``kernellab.engine.launch``.
"""

from kernellab.errors import Unavailable
from kernellab.kit import peers
from kernellab.kit.adapters import compiled, cuda_backward_op, cuda_op, returns_new
from kernellab.kit.data import elementwise_bytes, generator, numel, randn
from kernellab.kit.dtypes import TOLERANCE, element_size, torch_dtype
from kernellab.kit.family import Family, builds_on, step
from kernellab.kit.hooks import cuda_ops
from kernellab.kit.rows import (
    LOOP_MIN_COLS,
    ONE_PASS_MAX_COLS,
    REGISTER_ROW_COLS,
    ROW_DIVISIBLE,
    ROW_STAGES,
    chunk_loop_configs,
    prune_chunk_configs,
    prune_row_tile_configs,
    row_bytes,
    row_grid,
    row_shape,
    row_signature,
    row_spec,
    row_tile_configs,
    row_tile_specs,
    rows_per_program,
)
from kernellab.kit.triton import (
    CompileSpec,
    autotune,
    elementwise_configs,
    forced_config,
    launch,
    launch_config,
    triton_interpreted,
    triton_type,
)

__all__ = [
    "LOOP_MIN_COLS", "ONE_PASS_MAX_COLS", "REGISTER_ROW_COLS", "ROW_DIVISIBLE", "ROW_STAGES", "TOLERANCE",
    "CompileSpec", "Family", "Unavailable", "autotune", "builds_on", "chunk_loop_configs", "compiled",
    "cuda_backward_op", "cuda_op",
    "cuda_ops", "element_size", "elementwise_bytes", "elementwise_configs", "forced_config", "generator", "launch",
    "launch_config", "numel", "peers", "prune_chunk_configs", "prune_row_tile_configs", "randn", "returns_new",
    "row_bytes", "row_grid", "row_shape", "row_signature", "row_spec", "row_tile_configs", "row_tile_specs",
    "rows_per_program", "step", "torch_dtype", "triton_interpreted", "triton_type",
]

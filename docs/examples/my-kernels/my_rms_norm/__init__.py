"""RMSNorm, a kernel of your own beside the field: an example of ``Family.fork`` (README, "Your
kernel beside the field").

The problem is the rms_norm family's (its inputs, float64 reference, byte and FLOP models,
tolerances and backward), and so is its field: PyTorch's eager chain and fused op, torch.compile,
Liger-Kernel's and QuACK's kernels, forward and backward. The lab's own RMSNorm ladders stay
behind; this folder's steps (triton_mine/<step>.py, ordered in ladder.yaml) join the field, and
the report's "Our kernels against the field" sets the best of them beside each library's.
"""

from __future__ import annotations

from kernellab.kit import builds_on

rms_norm = builds_on("rms_norm")  # the lab's family, loaded first (its folder is in kernel_dirs)

FAMILY = rms_norm.FAMILY.fork(title="RMSNorm: my kernel beside the field",
                              description="y = x / sqrt(mean(x^2) + eps) * w, one row per program.")

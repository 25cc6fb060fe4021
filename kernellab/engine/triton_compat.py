"""Two bugs of Triton 3.6's interpreter (the CPU stand-in for a GPU), fixed in place.

Applied by ``runtime.setup()`` only when the interpreter is on; compiled Triton (any
GPU) is untouched.

1. With NumPy >= 2.4, a loop bound computed from a kernel argument
   (``range(0, tl.cdiv(K, BLOCK_K))``) fails: the interpreter converts a one-element
   array with ``int()``, which NumPy 2.4 refuses (triton-lang/triton#9171, fixed upstream
   by #9172 with the same change as here).
2. ``tl.dot`` of bf16 operands multiplies their raw uint16 bit patterns (``np.matmul``
   on the storage type). The operands are widened to fp32 first, exactly (products of
   bf16 values are exact in fp32), as the tensor cores do.
"""

from __future__ import annotations

import numpy as np

_APPLIED = False


def _bf16_as_fp32(handle):
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if handle.dtype != tl.bfloat16:
        return handle
    bits = np.asarray(handle.data).astype(np.uint32) << 16
    return TensorHandle(bits.view(np.float32), tl.float32)


def apply_interpreter_fixes() -> None:
    global _APPLIED
    if _APPLIED:
        return
    from triton.runtime import interpreter as interp

    orig_patch = interp._patch_lang_tensor
    orig_dot = interp.InterpreterBuilder.create_dot

    def patch_lang_tensor(tensor, scope):
        orig_patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return orig_dot(self, _bf16_as_fp32(a), _bf16_as_fp32(b), d, input_precision, max_num_imprecise_acc)

    interp._patch_lang_tensor = patch_lang_tensor
    interp.InterpreterBuilder.create_dot = create_dot
    _APPLIED = True

"""Scaled dot-product attention, o = softmax(q k^T / sqrt(d), causal mask) v, per head.

Inputs q, k, v of shape (batch, heads, seq, head_dim), written "BxHxSxD"; ``causal`` (the
parameter) masks key j > query i (top-left aligned: q and k have the same length).

Compute-bound: 4 * B * H * S^2 * D FLOPs (the two matmuls), halved when causal (the FLOPs a
kernel that skips the masked blocks must do), against q, k, v and o moved once. At
1x16x16384x128 bf16 that is 2.2 TFLOP (about 3.7 ms at 600 TFLOP/s) for 268 MB (64 us at
4.2 TB/s): the bytes do not bound it, the tensor cores do. The backward is counted at 2.5x
the forward's FLOPs (five matmuls to the forward's two) and its own bytes: q, k, v, o and dO
read, dq, dk and dv written, and the forward's fp32 log-sum-exp of each row.

Implementations: ``torch_naive`` (matmul, masked softmax, matmul: it materializes the
B * H * S^2 scores, so a case whose scores would not fit is skipped up front by its
``workspace`` estimate), SDPA's backends one per step of the ``pytorch`` ladder (flash,
efficient, cuDNN; a backend that does not run on the device is ``unavailable`` with SDPA's
reason) with FlexAttention beside them, ``compiled`` (torch.compile of the naive chain), and
the Triton ladders: the forward in triton_fwd/<step>.py, the backward in triton_bwd/<step>.py.
"""

from __future__ import annotations

import math
import weakref

import torch

from kernellab.kit import Family, Unavailable, compiled, element_size, peers, randn, returns_new

# the query blocks the float64 reference takes at once: its scores are QUERY_CHUNK x S per head
QUERY_CHUNK = 1024


def dims(shape) -> tuple[int, int, int, int]:
    b, h, s, d = (int(x) for x in shape)
    return b, h, s, d


def causal_mask(rows: int, cols: int, offset: int, device) -> torch.Tensor:
    """True where key j is after query i (masked), for queries offset..offset+rows."""
    i = torch.arange(offset, offset + rows, device=device)[:, None]
    j = torch.arange(cols, device=device)[None, :]
    return j > i


def _probabilities(q, k, causal):
    """(keys, P) of each block of QUERY_CHUNK queries: q k^T scaled, masked, softmax, over the keys
    the block sees (causal: up to its last query; the keys after it would add exact zeros)."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    seq = q.shape[-2]
    for start in range(0, seq, QUERY_CHUNK):
        qc = q[..., start:start + QUERY_CHUNK, :]
        keys = start + qc.shape[-2] if causal else k.shape[-2]
        s = (qc @ k[..., :keys, :].transpose(-2, -1)).mul_(scale)  # in place: a pass fewer (autograd keeps none)
        if causal:
            s.masked_fill_(causal_mask(qc.shape[-2], keys, start, q.device), -math.inf)
        yield keys, torch.softmax(s, dim=-1)


# error_floor needs P as the reference does: the reference of a check (no autograd) sums the floor
# from its own P, and error_floor, called next on the same tensors, takes it. One entry, holding
# the tensors weakly: a later tensor can never be taken for a freed one.
_LAST_FLOOR: list = []


def _floor_squared(p, v) -> float:
    """sum_ij p_ij^2 |v_j|^2 of one block of queries: the squared error floor's share, as P^2 times
    the vector of |v_j|^2 (a matrix-vector product: (P^2)(V^2) summed was a third GEMM per check)."""
    return float((p.square() @ v.square().sum(-1, keepdim=True)).sum())


def _remember_floor(q, k, v, causal, floor: float | None) -> None:
    _LAST_FLOOR.clear()
    if floor is not None:
        _LAST_FLOOR.append((tuple(weakref.ref(t) for t in (q, k, v)), tuple(t._version for t in (q, k, v)),
                            bool(causal), floor))


def _remembered_floor(q, k, v, causal) -> float | None:
    """The floor the last reference summed, if it was of these very tensors, unchanged since."""
    if not _LAST_FLOOR:
        return None
    refs, versions, was_causal, floor = _LAST_FLOOR.pop()
    same = all(r() is t for r, t in zip(refs, (q, k, v), strict=True))
    if same and was_causal == bool(causal) and versions == tuple(t._version for t in (q, k, v)):
        return floor
    return None


def reference(q, k, v, causal=False):
    """Float64 reference: q k^T scaled, masked, softmax, times v; in query blocks of
    QUERY_CHUNK so its scores stay QUERY_CHUNK x S per head (autograd goes through it too)."""
    outs, floor = [], None if torch.is_grad_enabled() else 0.0
    for keys, p in _probabilities(q, k, causal):
        vc = v[..., :keys, :]
        outs.append(p @ vc)
        if floor is not None:
            floor += _floor_squared(p, vc)
    _remember_floor(q, k, v, causal, None if floor is None else math.sqrt(floor))
    return torch.cat(outs, dim=-2)


def attention_naive(q, k, v, causal=False):
    """Matmul, masked softmax, matmul as separate ops, in the input dtype."""
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        s = s.masked_fill(causal_mask(q.shape[-2], k.shape[-2], 0, q.device), -math.inf)
    return torch.softmax(s, dim=-1) @ v


def attention_for_grad(q, k, v, causal=False):
    """``attention_naive`` again, as its own function for the compiled backward (see flex_for_grad)."""
    return attention_naive(q, k, v, causal)


def naive_workspace(shape, dtype, causal=False, **_):
    """The naive chain's B*H*S^2 score matrices: scores, masked scores and probabilities at once
    (the bool mask, S^2, is small beside them)."""
    b, h, s, _d = dims(shape)
    return 3 * b * h * s * s * element_size(dtype)


def naive_backward_workspace(shape, dtype, causal=False, **_):
    """Autograd keeps the probabilities and the masked scores, and its backward makes dP and dS."""
    b, h, s, _d = dims(shape)
    return 5 * b * h * s * s * element_size(dtype)


# SDPA's backends, by the name of their step (the pytorch ladder in ladder.yaml)
SDPA_BACKENDS = {"efficient": "EFFICIENT_ATTENTION", "flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION"}


def sdpa(backend: str):
    """``scaled_dot_product_attention`` with SDPA held to one backend: where that backend does not
    take the case (another device, a dtype or head_dim it lacks), ``Unavailable`` with SDPA's own
    reason, not a fallback to another backend."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    which = getattr(SDPBackend, SDPA_BACKENDS[backend])

    def attention(q, k, v, causal=False):
        if backend != "flash" and q.device.type != "cuda":
            raise Unavailable(f"SDPA's {backend} backend runs on CUDA only, not on {q.device.type}")
        try:
            with sdpa_kernel(which):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        except RuntimeError as exc:
            if "No viable backend" in str(exc) or "No available kernel" in str(exc):
                raise Unavailable(f"SDPA's {backend} backend does not take this case: "
                                  f"{str(exc).splitlines()[0]}") from None
            raise

    attention.__name__ = f"sdpa_{backend}"
    return attention


def _causal_mod(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


_BLOCK_MASKS: dict = {}


def flex_block_mask(q, k, v, causal=False):
    """The inputs and the block mask FlexAttention takes (None: dense), made outside the compiled
    graph and kept per (seq, device), as a model makes it once per sequence length."""
    from torch.nn.attention.flex_attention import create_block_mask

    if q.shape[-1] < 16:
        raise Unavailable(f"FlexAttention takes head_dim 16 or more; got {q.shape[-1]}")
    mask = None
    if causal:
        key = (q.shape[-2], str(q.device))
        if key not in _BLOCK_MASKS:
            _BLOCK_MASKS[key] = create_block_mask(_causal_mod, None, None, q.shape[-2], k.shape[-2],
                                                  device=q.device)
        mask = _BLOCK_MASKS[key]
    return (q, k, v), {"block_mask": mask}


def flex(q, k, v, block_mask=None):
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention(q, k, v, block_mask=block_mask)


def flex_for_grad(q, k, v, block_mask=None):
    """``flex`` again, as its own function for the backward: Dynamo keeps compiled graphs per code
    object, up to its recompile limit (64), and the forward's shapes, dtypes and masks alone come near."""
    return flex(q, k, v, block_mask=block_mask)


flex_compiled = compiled(flex, adapt=flex_block_mask)


# The field: FlashAttention-4's CuTe-DSL kernels (kernellab.kit.peers), as their users call them
_fa4 = peers.entry(peers.FA4, "flash_attn.cute", "flash_attn_func")


def attention_fa4(q, k, v, causal=False):
    """FlashAttention-4 takes (batch, seq, heads, head_dim): q, k and v as transposed views (no copy),
    its output transposed back; it returns (o, lse), its autograd Function's backward its own kernels."""
    o, _lse = _fa4(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), softmax_scale=1.0 / math.sqrt(q.shape[-1]),
                   causal=bool(causal))
    return o.transpose(1, 2)


def flex_grad_block_mask(q, k, v, causal=False):
    """``flex_block_mask`` for the backward, which FlexAttention has on a GPU only."""
    if q.device.type == "cpu":
        raise Unavailable("FlexAttention: no backward on a CPU")
    return flex_block_mask(q, k, v, causal)


def make_inputs(shape, dtype, device, seed, causal=False):
    """q, k, v ~ N(0, 1): the logits q.k / sqrt(d) are ~N(0, 1) whatever head_dim is."""
    b, h, s, d = dims(shape)
    return tuple(randn((b, h, s, d), dtype, device, seed + 7919 * i) for i in range(3))


def out_like(q, k, v, causal=False):
    return torch.empty_like(q)


def attention_flops(shape, dtype, causal=False, **_):
    """q k^T and P v: 2 * 2 * B * H * S^2 * D, half of it when causal (the unmasked half)."""
    b, h, s, d = dims(shape)
    full = 4 * b * h * s * s * d
    return full // 2 if causal else full


def attention_bytes(shape, dtype, **_):
    """q, k, v read and o written once."""
    b, h, s, d = dims(shape)
    return 4 * b * h * s * d * element_size(dtype)


def backward_bytes(shape, dtype, **_):
    """q, k, v, o and dO read, dq, dk and dv written, the forward's fp32 log-sum-exp of each row read."""
    b, h, s, d = dims(shape)
    return 8 * b * h * s * d * element_size(dtype) + 4 * b * h * s


def backward_flops(shape, dtype, causal=False, **_):
    """Five matmuls (S again, dV, dP, dQ, dK) to the forward's two: 2.5x the forward's FLOPs."""
    return int(2.5 * attention_flops(shape, dtype, causal=causal))


# relative-norm tolerance of the output by dtype: P and the result are rounded to the input dtype
# (bf16: 8 bits of mantissa), at about 2^-9 of the terms' norm whatever the sequence
TOLERANCE = {"bf16": 3e-2, "fp16": 1e-2}


def tolerance(shape, dtype):
    """The dtype's, grown by a quarter per doubling of the row past 1024 keys: long rows sum more
    rounded terms (and the backward's dS = P (dP - delta) cancels)."""
    seq = dims(shape)[2]
    return TOLERANCE[dtype] * (1 + max(0.0, math.log2(seq / 1024)) / 4)


def error_floor(q, k, v, causal=False):
    """The norm of the terms each output sums, sqrt(sum_j p_ij^2 v_j^2): the output itself cancels
    (signs of v) where the terms do not, most where a row spreads over many keys."""
    known = _remembered_floor(q, k, v, causal)
    if known is not None:
        return known
    return math.sqrt(sum(_floor_squared(p, v[..., :keys, :]) for keys, p in _probabilities(q, k, causal)))


FAMILY = Family(
    title="Attention (scaled dot-product, causal and not)",
    bound="compute",
    dtypes=("bf16", "fp16"),
    make_inputs=make_inputs,
    reference=reference,
    bytes_moved=attention_bytes,
    flops=attention_flops,
    out_like=out_like,
    tolerance=tolerance,
    error_floor=error_floor,
    params={"causal": [False, True]},
    shape_rank=(4,),
    description="softmax(q k^T / sqrt(d)) v: the naive chain, SDPA's backends, FlexAttention, a FlashAttention ladder.",
    grads=("dq", "dk", "dv"),
    backward_bytes=backward_bytes,
    backward_flops=backward_flops,
)

FAMILY.add("torch_naive", returns_new(attention_naive), workspace=naive_workspace)
# Inductor may keep the chain's scores (or match it to SDPA): counted as the naive chain's, to be safe
FAMILY.add("compiled", compiled(attention_naive), workspace=naive_workspace)
FAMILY.add_autograd("torch_naive", attention_naive, workspace=naive_backward_workspace)
FAMILY.add_autograd("compiled", attention_for_grad, compile=True, workspace=naive_backward_workspace)
# the pytorch ladder: PyTorch's fused kernels, one step each (ladder.yaml orders them); pytorch_bwd:
# the backward of each SDPA backend, autograd's, which runs that backend's own backward kernel
for _name in SDPA_BACKENDS:
    FAMILY.add("torch_fused", returns_new(sdpa(_name)), step=_name, ladder="pytorch")
    FAMILY.add_autograd("torch_fused", sdpa(_name), step=_name, ladder="pytorch_bwd", passes=("backward",))
FAMILY.add("compiled", flex_compiled, step="flex", ladder="pytorch")
FAMILY.add_autograd("compiled", flex_for_grad, compile=True, adapt=flex_grad_block_mask, step="flex",
                     ladder="pytorch_bwd", passes=("backward",))
FAMILY.add("fa4", returns_new(attention_fa4))
FAMILY.add_autograd("fa4", attention_fa4, passes=("backward",))
# The Triton ladders: triton_fwd/<step>.py (forward), triton_bwd/<step>.py (backward); texts in ladder.yaml.

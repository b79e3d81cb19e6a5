"""`scaled_dot_product_attention` lowered as on a CUDA GPU, on any machine.

`aten.scaled_dot_product_attention` is CompositeImplicitAutograd: a trace that does not keep it
runs its C++ kernel, which asks the device which attention kernel to call. On a CPU that is
`_scaled_dot_product_flash_attention_for_cpu`, which no Torch-TensorRT converter takes; on a
CUDA GPU torch's `sdp_utils.cpp` (`select_sdp_backend`) picks cuDNN attention, flash attention,
memory-efficient attention or the math composite, the first in its priority order whose
filters all pass. `sdpa_backend` is that choice made in Python for a `GpuTarget` (the filters
that depend on the inputs and the GPU: dtypes, masks, dropout, head dims, GQA, strides,
sequence lengths, compute capability, cuDNN version, torch's SDPA switches); `sdpa_as_on_gpu`
is the decomposition a trace uses in its place, emitting what the GPU's kernel emits
(`attention.cpp`: the boolean mask made additive, efficient attention's mask padded and
expanded, flash attention's head dim padded to a multiple of 8 and its output sliced back).
Nested tensors and the overrideable backend (neither occurs in a traced model) are left out.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from hierviz.capturing.gpu_target import GpuTarget

aten = torch.ops.aten
HALF = (torch.float16, torch.bfloat16)
NO_KERNEL = "No available kernel"  # the start of torch's error when no SDPA backend may run


def guard_or_false(condition: Any) -> bool:
    """`condition` as torch's filters read it (TORCH_GUARD_OR_FALSE): a symbolic one that is not known
    counts as false. torch's symbolic-shapes module is imported only for a symbolic condition (it takes
    a quarter of a second, and `import hierviz` stays cheap)."""
    if isinstance(condition, bool):
        return condition
    from torch.fx.experimental.symbolic_shapes import guard_or_false as guarded

    return bool(guarded(condition))


def guard_or_true(condition: Any) -> bool:
    """As guard_or_false, a symbolic condition that is not known counting as true (TORCH_GUARD_OR_TRUE)."""
    if isinstance(condition, bool):
        return condition
    from torch.fx.experimental.symbolic_shapes import guard_or_true as guarded

    return bool(guarded(condition))


def _same(a: Any, b: Any) -> bool:
    return guard_or_false(a == b)


def _requires_grad(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """torch's `input_requires_grad` / `should_compute_logsumexp`: an input needs grad and grad mode is on."""
    return torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)


def _four_dims(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    return q.dim() == k.dim() == v.dim() == 4


def _heads_fit(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, enable_gqa: bool, same_kv_heads: bool) -> bool:
    """`check_batch_size_and_num_heads_dense`: equal batch sizes; equal head counts, or with
    `enable_gqa` key/value heads that divide the query's (and equal each other when `same_kv_heads`)."""
    if not (_same(q.size(0), k.size(0)) and _same(q.size(0), v.size(0))):
        return False
    hq, hk, hv = q.size(-3), k.size(-3), v.size(-3)
    if enable_gqa:
        if same_kv_heads and not _same(hk, hv):
            return False
        return _same(hq % hk, 0) and (same_kv_heads or _same(hq % hv, 0))
    return _same(hq, hk) and _same(hq, hv)


def _nonzero_lengths(q: torch.Tensor, k: torch.Tensor) -> bool:
    return not (_same(q.size(-2), 0) or _same(k.size(-2), 0))


def _unit_last_stride(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                      ignore_singleton: bool) -> bool:
    """`check_last_dim_stride_equals_1_dense` on a GPU: q, k, v (and the mask) have stride 1 in their last dim."""
    unit = all(_same(t.stride(-1), 1) for t in (q, k, v))
    if ignore_singleton:
        unit = unit or _same(q.size(-1), 1)
    return unit and (mask is None or _same(mask.stride(-1), 1))


def _capability_in(gpu: GpuTarget, low: tuple[int, int], high: tuple[int, int]) -> bool:
    return low <= gpu.capability <= high


def can_use_flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, dropout_p: float,
                  is_causal: bool, enable_gqa: bool, gpu: GpuTarget) -> bool:
    """`can_use_flash_attention`: no mask, fp16/bf16, equal head dims of at most 256, sm80 to sm121, no causal
    mask over unequal sequence lengths, and the dense-input filters."""
    if "flash" not in gpu.enabled or not _four_dims(q, k, v) or mask is not None:
        return False
    head = q.size(-1)
    if not (_same(head, k.size(-1)) and _same(head, v.size(-1)) and guard_or_false(head <= 256)):
        return False
    if not _capability_in(gpu, (8, 0), (12, 1)):
        return False
    consumer = _capability_in(gpu, (8, 6), (8, 9)) or _capability_in(gpu, (12, 0), (12, 1))
    if _requires_grad(q, k, v) and consumer and not (
            guard_or_false(head <= 192) or (dropout_p <= 0.0 and guard_or_false(head > 224))):
        return False
    if is_causal and not _same(q.size(-2), k.size(-2)):
        return False
    if not (q.dtype == k.dtype == v.dtype and q.dtype in HALF):
        return False
    return (_heads_fit(q, k, v, enable_gqa, same_kv_heads=True) and _nonzero_lengths(q, k)
            and _unit_last_stride(q, k, v, None, ignore_singleton=True))


def _gemm_alignment(q: torch.Tensor, gpu: GpuTarget) -> int:
    """`minimum_gemm_alignment`: the elements a head dim must be a multiple of for efficient attention."""
    half = q.dtype in HALF
    tensor_cores = gpu.capability[0] >= 8 or (gpu.capability[0] >= 7 and half)
    alignment = 4 if gpu.capability[0] >= 8 else 1
    return max(alignment, 128 // (16 if half else 32)) if tensor_cores else alignment


def can_use_efficient(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                      enable_gqa: bool, gpu: GpuTarget) -> bool:
    """`can_use_mem_efficient_attention`: sm50 to sm121, head dims aligned to the GEMM alignment (and q's equal
    to k's), storage offsets aligned on sm80+, the dense-input filters, fp16/fp32/bf16 (fp16/fp32 below sm80)."""
    if "efficient" not in gpu.enabled or not _capability_in(gpu, (5, 0), (12, 1)) or not _four_dims(q, k, v):
        return False
    alignment = _gemm_alignment(q, gpu)
    head, head_v = q.size(-1), v.size(-1)
    if not (_same(head, k.size(-1)) and _same(head % alignment, 0) and guard_or_false(head > 0)
            and _same(head_v % alignment, 0) and guard_or_false(head_v > 0)):
        return False
    if gpu.capability[0] >= 8 and not all(
            _same(t.numel(), 0) or guard_or_true(t.storage_offset() % alignment == 0) for t in (q, k, v)):
        return False
    if not (_nonzero_lengths(q, k) and _unit_last_stride(q, k, v, mask, ignore_singleton=False)
            and _heads_fit(q, k, v, enable_gqa, same_kv_heads=True)):
        return False
    dtypes = (torch.float16, torch.float32, torch.bfloat16) if gpu.capability[0] >= 8 else \
        (torch.float16, torch.float32)
    return q.dtype == k.dtype == v.dtype and q.dtype in dtypes


def _mask_shape_fits(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None) -> bool:
    """`check_attn_mask_shape`: a 2-D mask, or a 4-D one broadcastable over batch and heads."""
    if mask is None:
        return True
    if mask.requires_grad:
        return False
    if not (_same(mask.size(-2), q.size(2)) or _same(mask.size(-2), 1)):
        return False
    if not (_same(mask.size(-1), k.size(2)) or _same(mask.size(-1), 1)):
        return False
    if mask.dim() == 2:
        return True
    return mask.dim() == 4 and (_same(mask.size(0), 1) or _same(mask.size(0), q.size(0))) and \
        (_same(mask.size(1), 1) or _same(mask.size(1), q.size(1)))


def _cudnn_head_limit(q: torch.Tensor, v: torch.Tensor, gpu: GpuTarget) -> int:
    """The largest head dim cuDNN attention takes (`check_cudnn_tensor_shapes`): 256 on sm90/sm10x with cuDNN
    newer than 9.22, 192 there for (192, 128) heads from cuDNN 9.11, else 128."""
    cudnn = gpu.cudnn or 0
    major, minor = gpu.capability
    sm90_or_sm10x = (major == 9 and minor == 0) or major == 10
    if sm90_or_sm10x and not (major == 10 and minor == 7 and cudnn <= 92500) and cudnn > 92200:
        return 256
    if sm90_or_sm10x and cudnn >= 91100 and _same(q.size(3), 192) and _same(v.size(3), 128):
        return 192
    return 128


def can_use_cudnn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, dropout_p: float,
                  enable_gqa: bool, gpu: GpuTarget) -> bool:
    """`can_use_cudnn_attention`: cuDNN 9+, not required deterministic, fp16/bf16, a mask of a shape it takes,
    sm80 to sm121, dropout in steps of 1/16, head dims multiples of 8 within its limit, batch and heads at most
    65535, a key sequence longer than 1, and the dense-input filters (GQA without equal key/value heads)."""
    cudnn = gpu.cudnn
    if cudnn is None or cudnn < 90000 or "cudnn" not in gpu.enabled or gpu.deterministic:
        return False
    if dropout_p > 0.0 and 91100 < cudnn < 91400:
        return False
    if not _four_dims(q, k, v) or not (q.dtype == k.dtype == v.dtype and q.dtype in HALF):
        return False
    if not _mask_shape_fits(q, k, mask) or not _capability_in(gpu, (8, 0), (12, 1)):
        return False
    if dropout_p * 16.0 != math.floor(dropout_p * 16.0):
        return False
    if not (_nonzero_lengths(q, k) and _unit_last_stride(q, k, v, mask, ignore_singleton=True)
            and _heads_fit(q, k, v, enable_gqa, same_kv_heads=False)):
        return False
    if not (guard_or_false(q.size(0) <= 65535) and guard_or_false(q.size(1) <= 65535)):
        return False
    limit = _cudnn_head_limit(q, v, gpu)
    d_qk, d_v = q.size(3), v.size(3)
    if not (guard_or_false(d_qk <= limit) and guard_or_false(d_v <= limit)
            and _same(d_qk % 8, 0) and _same(d_v % 8, 0)):
        return False
    if _same(k.size(2), 1) or (dropout_p != 0.0 and _same(q.size(2), 1)):
        return False
    if _requires_grad(q, k, v) and limit == 256 and not (
            (guard_or_false(d_qk <= 128) and guard_or_false(d_v <= 128))
            or (_same(d_qk, 192) and _same(d_v, 128)) or (_same(d_qk, 256) and _same(d_v, 256))):
        return False
    return True


def sdpa_backend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, dropout_p: float,
                 is_causal: bool, enable_gqa: bool, gpu: GpuTarget) -> str:
    """The SDPA backend torch picks on `gpu` for these inputs: "cudnn", "flash", "efficient" or "math"
    (`select_sdp_backend`: the first in the GPU's order whose filters pass). RuntimeError when none may run,
    as torch raises."""
    for backend in gpu.order():
        if backend == "cudnn" and can_use_cudnn(q, k, v, mask, dropout_p, enable_gqa, gpu):
            return backend
        if backend == "flash" and can_use_flash(q, k, v, mask, dropout_p, is_causal, enable_gqa, gpu):
            return backend
        if backend == "efficient" and can_use_efficient(q, k, v, mask, enable_gqa, gpu):
            return backend
        if backend == "math" and "math" in gpu.enabled:
            return backend
    raise RuntimeError(f"{NO_KERNEL}: no scaled_dot_product_attention backend torch has enabled "
                       f"({', '.join(gpu.enabled) or 'none'}) takes these inputs on {gpu.describe()}.")


def _additive(mask: torch.Tensor | None, dtype: torch.dtype, masked_value: float) -> torch.Tensor | None:
    """`convert_boolean_attn_mask`: a boolean mask made additive (0 where it attends, `masked_value` elsewhere)."""
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.where(mask.logical_not(), masked_value, torch.scalar_tensor(0.0, dtype=dtype, device=mask.device))


def _padded_last_dim(t: torch.Tensor, multiple: int) -> torch.Tensor:
    """`pad_last_dim`: `t` zero-padded in its last dim to a multiple of `multiple`."""
    size = t.size(-1)
    if _same(size % multiple, 0):
        return t
    return aten.pad.default(t, [0, multiple - size % multiple])


def _efficient_mask(mask: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """`preprocess_mask`: the mask padded to aligned strides (then sliced back) and expanded to (B, H, L, S)."""
    aligned = all(_same(mask.stride(d) % 8, 0) for d in range(mask.dim() - 1)) and _same(mask.stride(-1), 1)
    if not aligned:
        size = mask.size(-1)
        mask = aten.pad.default(mask, [0, 8 - size % 8]).narrow(-1, 0, size)
    return mask.expand(q.size(0), q.size(1), q.size(2), k.size(2))


def sdpa_as_on_gpu(gpu: GpuTarget) -> Callable[..., torch.Tensor]:
    """The decomposition of `aten.scaled_dot_product_attention.default` that emits what its kernel emits on
    `gpu` (the backend `sdpa_backend` picks, called as attention.cpp calls it)."""

    def decomposition(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False, *,
                      scale: float | None = None, enable_gqa: bool = False) -> torch.Tensor:
        backend = sdpa_backend(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa, gpu)
        compute_lse = _requires_grad(query, key, value)
        if backend == "cudnn":
            mask = _additive(attn_mask, query.dtype, -65504.0)
            return aten._scaled_dot_product_cudnn_attention.default(
                query, key, value, mask, compute_lse, dropout_p, is_causal, False, scale=scale)[0]
        if backend == "flash":
            head = query.size(-1)
            og_scale = scale if scale is not None else 1.0 / math.sqrt(head)
            out = aten._scaled_dot_product_flash_attention.default(
                _padded_last_dim(query, 8), _padded_last_dim(key, 8), _padded_last_dim(value, 8), dropout_p,
                is_causal, False, scale=og_scale)[0]
            return out if _same(out.size(-1), head) else out.narrow(-1, 0, head)
        mask = _additive(attn_mask, query.dtype, float("-inf"))
        if backend == "efficient":
            if mask is not None:
                mask = _efficient_mask(mask, query, key)
            return aten._scaled_dot_product_efficient_attention.default(
                query, key, value, mask, compute_lse, dropout_p, is_causal, scale=scale)[0]
        return aten._scaled_dot_product_attention_math.default(
            query, key, value, mask, dropout_p, is_causal, None, scale=scale, enable_gqa=enable_gqa)[0]

    return decomposition


__all__ = ["sdpa_backend", "sdpa_as_on_gpu", "can_use_flash", "can_use_efficient", "can_use_cudnn", "NO_KERNEL"]

"""CPU kernels for the GPU-only ops a graph lowered for a CUDA GPU holds, so hierviz can run it anywhere.

A graph traced for the GPU (hierviz.capturing.target_device) calls the kernels torch picks
there: the attention kernels `_scaled_dot_product_flash_attention`,
`_scaled_dot_product_efficient_attention`, `_scaled_dot_product_cudnn_attention`, and the fused
recurrent cells `_thnn_fused_lstm_cell`, `_thnn_fused_gru_cell`, which torch implements for CUDA
only. hierviz runs its graphs on the CPU (the capture cache's check, a build's run stage, CPU
latency), so `register()` gives each a CPU kernel that computes the same thing with plain tensor
ops (attention in float32 for half inputs, as the GPU kernels accumulate), every output in the
layout the op's meta kernel declares, and `_thnn_fused_gru_cell`, which has none, a meta kernel.
It registers a kernel only where torch has none for that op and dispatch key: on CPU tensors
these ops raised NotImplementedError before and compute after; nothing torch already runs
changes. Gradients through them are not provided.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

LIBRARY_NAMESPACE = "aten"
_LIBRARIES: list[torch.library.Library] = []  # kept alive: a Library's registrations end with it


def attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, bias: torch.Tensor | None,
              dropout_p: float, is_causal: bool, scale: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(output, logsumexp) of scaled dot-product attention over (B, H, L, E) inputs: key and value heads
    repeated to the query's (GQA), a causal mask from the top left, an additive or boolean `bias`, rows
    that attend to nothing give 0 (as torch's safe softmax)."""
    q, k, v = query.float(), key.float(), value.float()
    if k.size(1) != q.size(1):
        k = k.repeat_interleave(q.size(1) // k.size(1), dim=1)
    if v.size(1) != q.size(1):
        v = v.repeat_interleave(q.size(1) // v.size(1), dim=1)
    factor = scale if scale is not None else 1.0 / math.sqrt(q.size(-1))
    scores = (q @ k.transpose(-2, -1)) * factor
    if is_causal:
        keep = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    if bias is not None:
        scores = scores.masked_fill(bias.logical_not(), float("-inf")) if bias.dtype == torch.bool \
            else scores + bias.float()
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.softmax(scores, dim=-1)
    probs = torch.where(torch.isneginf(scores).all(dim=-1, keepdim=True), torch.zeros_like(probs), probs)
    if dropout_p > 0.0:
        probs = torch.nn.functional.dropout(probs, dropout_p, training=True)
    return (probs @ v).to(query.dtype), lse


def _like(meta: Any, values: torch.Tensor | None = None) -> Any:
    """A CPU tensor shaped, strided and typed as the meta kernel's output `meta` (holding `values` when
    given, else zeros); None and numbers pass through."""
    if not isinstance(meta, torch.Tensor):
        return meta
    out = torch.empty_strided(meta.shape, meta.stride(), dtype=meta.dtype)
    if values is None:
        return out.zero_() if out.dtype != torch.uint64 else out.fill_(0)
    return out.copy_(values.reshape(meta.shape))


def _on_meta(op: Any, args: tuple, kwargs: dict) -> tuple:
    """What `op`'s meta kernel returns for these arguments: the outputs' shapes, strides and dtypes."""
    metas = tuple(a.to("meta") if isinstance(a, torch.Tensor) else a for a in args)
    return op(*metas, **kwargs)


def _flash(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, dropout_p: float = 0.0,
           is_causal: bool = False, return_debug_mask: bool = False, *, scale: float | None = None) -> tuple:
    metas = _on_meta(torch.ops.aten._scaled_dot_product_flash_attention.default,
                     (query, key, value, dropout_p, is_causal, return_debug_mask), {"scale": scale})
    out, lse = attention(query, key, value, None, dropout_p, is_causal, scale)
    return (_like(metas[0], out), _like(metas[1], lse), torch.empty(0), torch.empty(0), metas[4], metas[5],
            *(_like(m) for m in metas[6:]))


def _efficient(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_bias: torch.Tensor | None,
               compute_log_sumexp: bool, dropout_p: float = 0.0, is_causal: bool = False, *,
               scale: float | None = None) -> tuple:
    metas = _on_meta(torch.ops.aten._scaled_dot_product_efficient_attention.default,
                     (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal), {"scale": scale})
    out, lse = attention(query, key, value, attn_bias, dropout_p, is_causal, scale)
    kept = _like(metas[1])
    if compute_log_sumexp:
        kept[..., :lse.size(-1)] = lse
    return _like(metas[0], out), kept, *(_like(m) for m in metas[2:])


def _cudnn(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_bias: torch.Tensor | None,
           compute_log_sumexp: bool, dropout_p: float = 0.0, is_causal: bool = False,
           return_debug_mask: bool = False, *, scale: float | None = None) -> tuple:
    metas = _on_meta(torch.ops.aten._scaled_dot_product_cudnn_attention.default,
                     (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, return_debug_mask),
                     {"scale": scale})
    out, lse = attention(query, key, value, attn_bias, dropout_p, is_causal, scale)
    return (_like(metas[0], out), _like(metas[1], lse), torch.empty(0), torch.empty(0), metas[4], metas[5],
            _like(metas[6]), _like(metas[7]), torch.empty(0))


def _biased(gates: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return gates if bias is None else gates + bias


def _lstm_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, cx: torch.Tensor,
               input_bias: torch.Tensor | None = None, hidden_bias: torch.Tensor | None = None) -> tuple:
    """The fused LSTM cell: (hy, cy, the activated gates as its workspace)."""
    gates = _biased(input_gates, input_bias) + _biased(hidden_gates, hidden_bias)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return (o * cy.tanh()).contiguous(), cy.contiguous(), torch.cat([i, f, g, o], 1)


def _gru_workspace(hx: torch.Tensor) -> torch.Tensor:
    return hx.new_empty((hx.size(0), 5 * hx.size(1)))


def _gru_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, hx: torch.Tensor,
              input_bias: torch.Tensor | None = None, hidden_bias: torch.Tensor | None = None) -> tuple:
    """The fused GRU cell: (hy, its workspace)."""
    ir, ii, in_ = _biased(input_gates, input_bias).chunk(3, 1)
    hr, hi, hn = _biased(hidden_gates, hidden_bias).chunk(3, 1)
    reset, update = (ir + hr).sigmoid(), (ii + hi).sigmoid()
    new = (in_ + reset * hn).tanh()
    return (new + update * (hx - new)).contiguous(), _gru_workspace(hx).zero_()


def _gru_cell_meta(input_gates: torch.Tensor, hidden_gates: torch.Tensor, hx: torch.Tensor,
                   input_bias: torch.Tensor | None = None, hidden_bias: torch.Tensor | None = None) -> tuple:
    return torch.empty_like(hx, memory_format=torch.contiguous_format), _gru_workspace(hx)


# (op, dispatch key) -> its kernel
KERNELS: dict[tuple[str, str], Callable[..., tuple]] = {
    ("_scaled_dot_product_flash_attention", "CPU"): _flash,
    ("_scaled_dot_product_efficient_attention", "CPU"): _efficient,
    ("_scaled_dot_product_cudnn_attention", "CPU"): _cudnn,
    ("_thnn_fused_lstm_cell", "CPU"): _lstm_cell,
    ("_thnn_fused_gru_cell", "CPU"): _gru_cell,
    ("_thnn_fused_gru_cell", "Meta"): _gru_cell_meta,
}


def register() -> tuple[tuple[str, str], ...]:
    """Give each op of KERNELS the kernel it lacks for its dispatch key (once per process); the
    (op, key) pairs registered now."""
    missing = [(name, key) for name, key in KERNELS
               if not torch._C._dispatch_has_kernel_for_dispatch_key(f"{LIBRARY_NAMESPACE}::{name}", key)]
    if not missing:
        return ()
    library = torch.library.Library(LIBRARY_NAMESPACE, "IMPL")
    for name, key in missing:
        library.impl(name, KERNELS[(name, key)], key)
    _LIBRARIES.append(library)
    return tuple(missing)


__all__ = ["attention", "register", "KERNELS"]

"""Attention that Torch-TensorRT's lowering makes causal although its mask is not causal.

Torch-TensorRT's `force_causal_efficient_attention` pass (on by default: `attn_bias_is_causal=True`)
replaces the mask of each `_scaled_dot_product_efficient_attention` with equal query and key
lengths by `is_causal=True`. That is right for a causal mask and wrong for any other (a BERT's
padding mask): the lowered graph's outputs then differ from the model's, on the GPU as here. A
capture for a CUDA GPU holds the GPU's efficient attention, so the pass acts on it: hierviz shows
the graph as Torch-TensorRT lowers it, and says so.

`recorded(state)` watches the pass while a graph is lowered (hierviz.trt.causal_attention_pass) and
judges each mask before the pass drops it (`mask_kind`): a mask computed from constants (folded by
then) and the model's own tensors (`state`: on torch.compile's path its weights and buffers are the
graph's inputs) is evaluated and compared with a causal mask; one computed from the values of the
graph's other inputs is not a fixed causal mask. `mark(gm, found)` keeps the attentions made causal whose masks were
not causal in the graph's meta (FORCED_CAUSAL, kept by the capture cache), which `note(gm)` says
in words: the capture's note, its CaptureWarning and the report's line.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator, Sequence

import torch
from torch.fx import GraphModule, Node
from torch.utils._python_dispatch import _disable_current_modes

from hierviz import trt
from hierviz.capturing.graph_codec import fetch_attr
from hierviz.foundation.stack_traces import frames

logger = logging.getLogger(__name__)

FORCED_CAUSAL = "hierviz_forced_causal"  # GraphModule.meta key: ((node, where, mask), ...) made causal, mask not
MASKED = -1.0e4  # an additive mask value at or below this masks its key out (exp underflows to 0 in fp16/fp32)
MAX_MASK_NODES = 256  # a mask computed by more nodes than this is not evaluated
FROM_INPUTS = "a mask computed from the graph's inputs"
NOT_CAUSAL = "a constant mask that is not causal"
UNREAD = "a mask hierviz could not evaluate"
OUTCOMES = {  # a kind of mask -> what its replacement does to the lowered graph's outputs
    FROM_INPUTS: "the lowered graph's outputs differ from the model's for every input whose mask is not causal "
                 "(a padded batch, a bidirectional encoder)",
    NOT_CAUSAL: "the lowered graph's outputs differ from the model's",
    UNREAD: "the lowered graph's outputs may differ from the model's",
}
FIX = ("to keep the masks, compile with attn_bias_is_causal=False: torch_tensorrt.compile(..., "
       "attn_bias_is_causal=False), or torch.compile(..., backend='torch_tensorrt', "
       "options={'attn_bias_is_causal': False})")
SHOWN = 4  # attention nodes named in a note; the others are counted


def _shape_only(node: Node) -> bool:
    """Whether `node` is a size (an int, or a symbolic one with a hint): its value is taken from its
    example, not computed from what it reads."""
    val = node.meta.get("val")
    return isinstance(val, (int, torch.SymInt)) and not isinstance(val, bool)


def _size_of(node: Node) -> int | None:
    val = node.meta.get("val")
    if isinstance(val, int):
        return val
    hint = getattr(getattr(val, "node", None), "hint", None)
    return int(hint) if isinstance(hint, int) else None


def _sources(mask: Node) -> list[Node] | None:
    """The nodes `mask` is computed from (itself included), in graph order, up to the sizes it reads;
    None when more than MAX_MASK_NODES."""
    seen = {mask}
    stack = [mask]
    while stack:
        node = stack.pop()
        if node is not mask and _shape_only(node):
            continue
        for source in node.all_input_nodes:
            if source not in seen:
                seen.add(source)
                stack.append(source)
        if len(seen) > MAX_MASK_NODES:
            return None
    return [n for n in mask.graph.nodes if n in seen]


def _evaluate(gm: GraphModule, mask: Node, sources: list[Node], state: dict[Node, torch.Tensor]) -> Any:
    """The mask's value computed from constants, the model's tensors (`state`, by placeholder) and example
    sizes (real tensors, on the CPU)."""
    env: dict[Node, Any] = dict(state)
    for node in sources:
        if node in env:
            continue
        if node is not mask and _shape_only(node):
            env[node] = _size_of(node)
            if env[node] is None:
                raise ValueError(f"{node.name} is a size without a hint")
        elif node.op == "get_attr":
            env[node] = fetch_attr(gm, str(node.target))
        elif node.op == "call_function":
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
            env[node] = node.target(*args, **kwargs)  # type: ignore[operator]  # a call_function's target
        else:
            raise ValueError(f"{node.name} is a {node.op}")
    return env[mask]


def is_causal_mask(value: Any, length: int) -> bool:
    """Whether `value` (a boolean or additive mask broadcast over (..., length, length)) attends to exactly
    the keys at or before each query."""
    if not isinstance(value, torch.Tensor) or value.dim() < 2:
        return False
    value = value.expand(*value.shape[:-2], length, length)
    lower = torch.ones(length, length, dtype=torch.bool).tril()
    if value.dtype == torch.bool:
        return bool(torch.equal(value, lower.expand_as(value)))
    if not value.is_floating_point():
        return False
    return bool(torch.where(lower, value == 0, value <= MASKED).all())


def mask_kind(gm: GraphModule, attention: Node, state: Sequence[torch.Tensor | None] = ()) -> str | None:
    """None when the mask of `attention` (an efficient attention node that has one, query and key of equal
    lengths) is causal; else what it is, in words (FROM_INPUTS, NOT_CAUSAL, UNREAD). `state`: the
    model's own tensor that each placeholder of `gm` stands for, in order (None: an input). It runs inside
    Torch-TensorRT's lowering, under its fake tensor mode: the mask is computed on real tensors, and nothing
    it meets stops the lowering (UNREAD)."""
    try:
        return _kind(gm, attention, state)
    except Exception:  # (an op that does not run on these values, a graph of another shape: not known)
        logger.debug("the mask of %s could not be evaluated", attention.name, exc_info=True)
        return UNREAD


def _kind(gm: GraphModule, attention: Node, state: Sequence[torch.Tensor | None]) -> str | None:
    mask = attention.args[3]
    if not isinstance(mask, Node):
        return None
    sources = _sources(mask)
    if sources is None:
        return UNREAD
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    known = dict(zip(placeholders, state)) if len(state) == len(placeholders) else {}
    read = [n for n in sources if n.op == "placeholder"]
    if any(known.get(n) is None for n in read):
        return FROM_INPUTS
    query = attention.args[0]
    length = _size_of_dim(query, -2) if isinstance(query, Node) else None
    if length is None:
        return UNREAD
    with _disable_current_modes(), torch.no_grad():
        values = {n: value for n in read if (value := known.get(n)) is not None}
        causal = is_causal_mask(_evaluate(gm, mask, sources, values), length)
    return None if causal else NOT_CAUSAL


def _size_of_dim(node: Node, dim: int) -> int | None:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return None
    size = val.size(dim)
    if isinstance(size, int):
        return size
    hint = getattr(getattr(size, "node", None), "hint", None)
    return int(hint) if isinstance(hint, int) else None


def _where(node: Node) -> str:
    """'file:line in function' of the model's code the node was traced from ('' when not recorded)."""
    found = frames(node.meta.get("stack_trace"))
    return f"{found[-1].file}:{found[-1].line} in {found[-1].function}" if found else ""


@contextlib.contextmanager
def recorded(state: Sequence[torch.Tensor | None] = ()) -> Iterator[list[tuple[str, str, str]]]:
    """While the block lowers a graph with Torch-TensorRT's post_lowering in this thread: the list
    yielded gets, once the block ends, (node, where, mask) of each attention the lowering made causal
    whose mask was not causal. `state`: the model's own tensor each placeholder of the lowered graph
    stands for, in order (None for an input; torch.compile's path lifts weights and buffers into
    inputs). Nothing is watched without torch_tensorrt."""
    found: list[tuple[str, str, str]] = []
    if not trt.available():
        yield found
        return
    with trt.force_causal_watched(lambda gm, node: mask_kind(gm, node, state)) as seen:
        yield found
    found.extend((node.name, _where(node), kind) for node, kind in seen if kind is not None)


def mark(gm: GraphModule, found: list[tuple[str, str, str]]) -> GraphModule:
    """`gm` with the attentions made causal whose masks were not causal kept in its meta (FORCED_CAUSAL)."""
    if found:
        gm.meta[FORCED_CAUSAL] = tuple(found)
    return gm


def forced_of(gm: Any) -> tuple[tuple[str, str, str], ...]:
    """(node, where, mask) of each attention of `gm` made causal whose mask was not causal; () for any
    other graph."""
    meta = getattr(gm, "meta", None)
    kept = meta.get(FORCED_CAUSAL, ()) if isinstance(meta, dict) else ()
    return tuple((str(a), str(b), str(c)) for a, b, c in kept)


def note(gm: Any) -> str | None:
    """What a capture says of the attentions Torch-TensorRT made causal although their masks were not,
    with the fix; None when there are none."""
    forced = forced_of(gm)
    if not forced:
        return None
    named = [f"{name} ({where})" if where else name for name, where, _ in forced[:SHOWN]]
    more = f" and {len(forced) - SHOWN} more" if len(forced) > SHOWN else ""
    kinds = list(dict.fromkeys(kind for _, _, kind in forced))
    outcomes = {kind: f"{kind}, so {OUTCOMES.get(kind, OUTCOMES[UNREAD])}" for kind in kinds}
    said = outcomes[kinds[0]] if len(kinds) == 1 else "; ".join(
        f"{', '.join(name for name, _, k in forced if k == kind)} had {outcomes[kind]}" for kind in kinds)
    which = "the attention" if len(forced) == 1 else f"{len(forced)} attentions"
    return (f"Torch-TensorRT's attn_bias_is_causal=True (its default) replaced the mask of {which} "
            f"{', '.join(named)}{more} by causal attention (its force_causal_efficient_attention lowering pass), "
            f"as it does on the GPU: {said}; {FIX}")


__all__ = ["FORCED_CAUSAL", "recorded", "mark", "forced_of", "note", "mask_kind", "is_causal_mask"]

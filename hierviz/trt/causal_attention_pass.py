"""Torch-TensorRT's `force_causal_efficient_attention` lowering pass, watched while hierviz lowers a graph.

With `attn_bias_is_causal=True` (its default), the pass, one of `post_lowering`'s, replaces the mask
(`attn_bias`) of each `_scaled_dot_product_efficient_attention` whose query and key lengths are
equal by `is_causal=True`, whatever the mask was. `force_causal_watched(judge)` wraps the pass in
`post_lowering`'s pass list while the block runs: before the pass, `judge(gm, node)` is asked of
each efficient attention that has a mask (the mask's nodes are gone after the pass); after it,
each of those the pass made causal is kept with its judgement, for this thread only. The pass
itself runs unchanged, in every thread; the first thread in wraps it and the last one out puts
it back.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

import torch
from torch.fx import GraphModule, Node

from hierviz.trt.loading import require

EFFICIENT = "_scaled_dot_product_efficient_attention"

_LOCK = threading.Lock()
_USERS = [0]
_WRAPPED: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {}  # id(watcher) -> (watcher, upstream's pass)
_THREAD = threading.local()  # .judge, .seen: this thread's watch


def _efficient_with_mask(gm: GraphModule) -> list[Node]:
    target = getattr(torch.ops.aten, EFFICIENT).default
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target is target
            and len(n.args) > 3 and isinstance(n.args[3], Node)]


def _made_causal(node: Node) -> bool:
    args = node.args
    return node.graph is not None and (len(args) <= 3 or args[3] is None) and len(args) > 6 and args[6] is True


def _watcher(upstream: Callable[..., Any]) -> Callable[..., Any]:
    def watched(gm: GraphModule, settings: Any) -> GraphModule:
        judge = getattr(_THREAD, "judge", None)
        if judge is None:
            return upstream(gm, settings)
        before = [(node, judge(gm, node)) for node in _efficient_with_mask(gm)]
        out = upstream(gm, settings)
        _THREAD.seen.extend((node, said) for node, said in before if _made_causal(node))
        return out

    watched.__name__ = getattr(upstream, "__name__", "force_causal_efficient_attention")
    watched.__doc__ = upstream.__doc__
    return watched


def _passes() -> tuple[list, Any]:
    require()
    from torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass import ATEN_POST_LOWERING_PASSES
    from torch_tensorrt.dynamo.lowering.passes.force_causal_efficient_attention import (
        force_causal_efficient_attention,
    )

    return ATEN_POST_LOWERING_PASSES.passes, force_causal_efficient_attention


@contextlib.contextmanager
def force_causal_watched(judge: Callable[[GraphModule, Node], Any]) -> Iterator[list[tuple[Node, Any]]]:
    """While the block runs, each efficient attention node Torch-TensorRT's force_causal_efficient_attention
    pass makes causal in this thread's lowering is appended to the list yielded, as (node, judge(gm, node)
    asked before the pass ran)."""
    passes, upstream = _passes()
    with _LOCK:
        if not _USERS[0]:
            for k, step in enumerate(passes):
                if step is upstream:
                    passes[k] = _watcher(step)
                    _WRAPPED[id(passes[k])] = (passes[k], step)
        _USERS[0] += 1
    saved = getattr(_THREAD, "judge", None), getattr(_THREAD, "seen", None)
    seen: list[tuple[Node, Any]] = []
    _THREAD.judge, _THREAD.seen = judge, seen
    try:
        yield seen
    finally:
        _THREAD.judge, _THREAD.seen = saved
        with _LOCK:
            _USERS[0] -= 1
            if not _USERS[0]:
                for k, step in enumerate(passes):
                    if id(step) in _WRAPPED and _WRAPPED[id(step)][0] is step:
                        passes[k] = _WRAPPED[id(step)][1]
                _WRAPPED.clear()


__all__ = ["force_causal_watched", "EFFICIENT"]

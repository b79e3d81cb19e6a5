"""An estimate of each node's work, to split a subgraph's measured time over its nodes.

Subgraphs are timed whole, not op by op, so the cost overlay needs a rule to say how much of
a subgraph's time one node (or one module box) stands for. The estimate is FLOPs plus bytes
moved, both from the tensor metadata the capture recorded (shapes and dtypes of the node's
output and inputs):
  - FLOPs: convolutions 2 x output elements x (input channels / groups) x kernel size;
    matrix products (mm, addmm, bmm, matmul, linear) 2 x M x N x K; attention
    (scaled_dot_product_*) 4 x batch x heads x L x S x E; anything else one per output element;
  - bytes: the bytes of the output and of every tensor input (torch.dtype.itemsize per element);
  - zero for getitem, views and other non-compute nodes (NodeTable.compute False), which
    move no data of their own.
It is an estimate, not a measurement: it ignores how well each backend runs each op.
A subgraph whose nodes all estimate zero splits its time evenly.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from hierviz.partitioner.record import dtype_itemsize

_MATMUL = ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear")


def _numel(shape: Any) -> int:
    if not isinstance(shape, tuple) or not all(isinstance(d, int) for d in shape):
        return 0
    return math.prod(shape)


def _bytes(shape: Any, dtype: str | None) -> int:
    """Bytes of a tensor (torch.dtype.itemsize per element); a dtype not recorded counts as float32's 4."""
    return _numel(shape) * (dtype_itemsize(dtype) or 4)


def _op(target: str) -> str:
    """'torch.ops.aten.convolution.default' -> 'convolution'."""
    parts = str(target).split(".")
    return parts[3] if len(parts) == 5 and parts[0] == "torch" else parts[-1]


def flops(op: str, out_shape: Any, in_shapes: Sequence[Any]) -> int:
    """Floating-point operations of one node, from its output's and inputs' shapes."""
    out = _numel(out_shape)
    shapes = [s for s in in_shapes if isinstance(s, tuple) and all(isinstance(d, int) for d in s)]
    if op.startswith("convolution") or op.startswith("conv"):
        weight = shapes[1] if len(shapes) > 1 else None
        if weight is not None and len(weight) >= 2:
            return 2 * out * weight[1] * math.prod(weight[2:])
    if op in _MATMUL and shapes:
        a = shapes[1] if op in ("addmm", "baddbmm") and len(shapes) > 1 else shapes[0]
        k = a[-1] if a else 1
        return 2 * out * k
    if op.startswith("scaled_dot_product") and len(shapes) >= 2:
        q, k = shapes[0], shapes[1]
        if len(q) >= 2 and len(k) >= 2:
            return 4 * math.prod(q[:-1]) * k[-2] * q[-1]
    return out


def node_work(t: Any) -> list[float]:
    """The work estimate (FLOPs + bytes) of every node of a NodeTable `t`, in graph order."""
    out = [0.0] * len(t)
    for i in range(len(t)):
        if not t.compute[i]:
            continue
        ins = [t.shape[j] for j in t.inputs[i]]
        moved = _bytes(t.shape[i], t.dtype[i]) + sum(_bytes(t.shape[j], t.dtype[j]) for j in t.inputs[i])
        out[i] = float(flops(_op(t.target[i]), t.shape[i], ins) + moved)
    return out


def split_time(ms: float, members: Sequence[int], work: Sequence[float]) -> dict[int, float]:
    """`ms` split over `members` in proportion to their work (evenly when all estimate zero)."""
    total = sum(work[i] for i in members)
    if total <= 0:
        return {i: ms / len(members) for i in members} if members else {}
    return {i: ms * work[i] / total for i in members}


__all__ = ["node_work", "split_time", "flops"]

"""Torch-TensorRT's constant folding told to leave a node as it is.

Its `constant_fold` lowering pass (torch's ConstantFolder) replaces a node computed from constants
alone by its value, except an op that may draw random numbers (torch's `nondeterministic_seeded`
tag: `scaled_dot_product_attention`, whose dropout may) and a node its exclusion rules marked
(`CONSTANT_FOLD_EXCLUSION_META_KEY`). hierviz stands a Python function in for an op while
Torch-TensorRT's post_lowering runs (hierviz.capturing.target_device.retraced_as_on); the folder
would fold that function where it leaves the op alone, so the node is marked (`keep_unfolded`)
while the function stands in, and unmarked after (`unmark`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node

from hierviz.trt.loading import require

RULE = "hierviz: an op Torch-TensorRT's constant folding leaves unfolded"  # the mark's rule id


def _key() -> str:
    require()
    from torch_tensorrt.dynamo.lowering.constant_fold_exclusions import CONSTANT_FOLD_EXCLUSION_META_KEY

    return str(CONSTANT_FOLD_EXCLUSION_META_KEY)


def left_unfolded(op: Any) -> bool:
    """Whether Torch-TensorRT's constant folding leaves a call of `op` unfolded whatever its inputs."""
    return isinstance(op, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in op.tags


def keep_unfolded(node: Node) -> None:
    """Mark `node` so that Torch-TensorRT's constant folding leaves it unfolded."""
    node.meta.setdefault(_key(), set()).add(RULE)


def unmark(node: Node) -> None:
    """Take `keep_unfolded`'s mark off `node` (and the key, when no other rule marked it)."""
    key = _key()
    marks = node.meta.get(key)
    if isinstance(marks, set):
        marks.discard(RULE)
        if not marks:
            del node.meta[key]


__all__ = ["left_unfolded", "keep_unfolded", "unmark"]
